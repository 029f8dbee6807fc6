// Where a local build puts the service's own addresses: both halves need the layout. The generator
// writes it into every document of a `--local` build (generator/addresses.ts); the service reads
// it back to tell a buyer-facing origin it may serve from one it must refuse (a live switch to a
// build made for another origin, payments/release/own-addresses.ts), and to name the command that
// builds for its own.

/** The service's addresses on a local `origin` (publisher_url is not the service's: a build keeps its own). */
export function localServiceAddresses(origin: string): { base_url: string; mcp_url: string; docs_url: string } {
  const o = origin.replace(/\/$/, '');
  return { base_url: `${o}/v1`, mcp_url: `${o}/mcp`, docs_url: `${o}/docs/` };
}

/**
 * A loopback host name: `localhost` (and its subdomains, RFC 6761), 127.0.0.0/8, or ::1 (bare or in
 * brackets, as URL.hostname gives it). Such an address reaches only the machine it is used on: a
 * build for it is a local one, and a request naming it in Host cannot come through DNS rebinding.
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(h) || h === '::1' || h === '[::1]';
}

/** Is `url` an http(s) address on a loopback host? false for anything that does not parse. */
export function isLoopbackUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && isLoopbackHost(u.hostname);
  } catch {
    return false;
  }
}
