// Real Caddy (Debian's caddy) for the hosting tests, started as `lds preview caddy` starts it
// (generator/web-servers.ts) on 127.0.0.1 and a free port, its admin endpoint on another free port
// (what `caddy reload` talks to), its state in a temp folder, plain HTTP (auto_https off).
import { startWebServer, type WebServer } from '../../generator/web-servers.ts';
import { tempDir } from './build.ts';

export type Caddy = WebServer;

/** Starts Caddy on `port` with `site` (the body of one site block); resolves once it accepts connections. */
export async function startCaddy(site: string, port: number): Promise<Caddy> {
  return startWebServer('caddy', { dir: await tempDir('caddy'), host: '127.0.0.1', port, site });
}
