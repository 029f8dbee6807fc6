// How a ledger's location is shown: in messages, logs and Ledger.location. Below open.ts and the
// backends, which both need it.

/** A database URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}
