// Absolute folder paths written into web-server configuration (the release pins of `lds publish`).
// nginx, Apache and Caddy each quote differently; a path that needs no quoting rules at all is
// the one that is safe in every form, so anything else is refused with the reason.
import { isAbsolute } from 'node:path';

export function safeConfigPath(path: string): string {
  if (!isAbsolute(path)) throw new Error(`a web-server path must be absolute: ${path}`);
  const bad = /["'\\$`{};#\s\x00-\x1f]/.exec(path);
  if (bad) throw new Error(`the path ${JSON.stringify(path)} cannot be written into web-server configuration (it contains ${JSON.stringify(bad[0])}); choose a web root without spaces, quotes or $ { } ; #`);
  return path.replace(/\/+$/, '') || '/';
}

/** A host as it is written before `:port` in a URL or a listen address (an IPv6 address in brackets). */
export function hostForPort(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
