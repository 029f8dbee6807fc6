// How a ledger's location is shown: in messages, logs and Ledger.location. Below open.ts and the
// backends, which both need it.

/** A database URL (one host or libpq's several) without its password, for messages and logs. */
export function redactUrl(url: string): string {
  // Not WHATWG URL: it cannot read a multi-host authority (h1:5432,h2:5432).
  const m = /^(postgres(?:ql)?:\/\/)(?:([^/?#]*)@)?([^/?#]*)([^?#]*)(\?[^#]*)?/i.exec(url.trim());
  if (!m) return 'postgres://(unparseable URL)';
  const [, scheme, userinfo, hosts, path, query] = m;
  const colon = userinfo?.indexOf(':') ?? -1;
  const user = userinfo === undefined ? '' : `${colon >= 0 ? `${userinfo.slice(0, colon)}:***` : userinfo}@`;
  const params = new URLSearchParams((query ?? '').slice(1));
  if (params.has('password')) params.set('password', '***');
  const rest = params.toString().replaceAll('%2A%2A%2A', '***');
  return `${scheme}${user}${hosts}${path}${rest ? `?${rest}` : ''}`;
}
