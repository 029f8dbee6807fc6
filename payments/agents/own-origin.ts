// Which requests the MCP endpoint answers: only those addressed to this service (DNS rebinding
// protection; the MCP specification: servers MUST validate the Origin header of every request).
// A web page on evil.example can make its own name resolve to 127.0.0.1 and then POST to /mcp from
// the person's browser: the request reaches a service listening on loopback with `Host:
// evil.example` and `Origin: http://evil.example`. So both headers must name the service itself:
//   - one of its published addresses (the catalogue's base_url, mcp_url and docs_url, by origin);
//   - the address it listens on when that is a specific one (`--host 10.0.0.5`);
//   - any loopback name (localhost, 127.0.0.0/8, [::1], any port) when it listens on loopback or on
//     every address: such a name reaches only this machine, and is what a local client (or a proxy
//     on the same machine) sends. A page cannot send it: its Host is the page's own name.
// A request without Origin (every non-browser client) is judged by Host alone. Pure.
import { isLoopbackHost } from '../../contract/addresses.ts';

export interface OwnOrigins {
  /** origins (scheme://host[:port], as URL.origin writes them) of the published addresses */
  origins: Set<string>;
  /** host[:port] of the same, as a Host header carries them */
  hosts: Set<string>;
  /** the listening host, when it is one specific address */
  listenHost: string | null;
  /** loopback names are the service's own (it listens on loopback, or on every address) */
  loopback: boolean;
}

const WILDCARD = new Set(['', '0.0.0.0', '::', '[::]']);

export function ownOrigins(addresses: string[], listenHost: string | undefined): OwnOrigins {
  const urls = addresses.flatMap((a) => {
    try {
      return [new URL(a)];
    } catch {
      return [];
    }
  });
  const host = (listenHost ?? '127.0.0.1').toLowerCase();
  const wildcard = WILDCARD.has(host);
  return {
    origins: new Set(urls.map((u) => u.origin)),
    hosts: new Set(urls.map((u) => u.host)),
    listenHost: wildcard ? null : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host,
    loopback: wildcard || isLoopbackHost(host),
  };
}

/** host[:port] parsed as a URL's authority; null when it is not one. */
function authority(scheme: string, hostPort: string): URL | null {
  if (/[\s/?#@\\]/.test(hostPort)) return null;
  try {
    return new URL(`${scheme}//${hostPort}`);
  } catch {
    return null;
  }
}

/** The header that names another site, or null when the request is addressed to this service. */
export function foreignHeader(own: OwnOrigins, host: string | undefined, origin: string | undefined): { header: 'Host' | 'Origin'; value: string } | null {
  const ownName = (u: URL) => (own.loopback && isLoopbackHost(u.hostname)) || (own.listenHost !== null && u.hostname === own.listenHost);
  const h = host ? authority('http:', host) : null;
  if (!h || !(own.hosts.has(h.host) || ownName(h))) return { header: 'Host', value: host ?? '' };
  if (origin === undefined) return null;
  let o: URL | null = null;
  try {
    o = new URL(origin);
  } catch {
    // "null" (a sandboxed page, a file) and anything unreadable: not ours
  }
  if (!o || (o.protocol !== 'http:' && o.protocol !== 'https:') || !(own.origins.has(o.origin) || ownName(o))) return { header: 'Origin', value: origin };
  return null;
}
