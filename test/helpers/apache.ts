// Real Apache httpd (Debian's apache2) for the hosting tests, started as `lds preview apache` starts
// it (generator/web-servers.ts) on 127.0.0.1 and a free port with a configuration of its own in a
// temp folder (no system service). The modules are Debian's default set (mods-enabled: mime.conf
// with its AddLanguage .br, deflate, negotiation, ...) plus rewrite and headers, which the generated
// include needs: the rules are tested against what an operator's `a2enmod rewrite headers` server
// really has.
import { readableByServer, startWebServer, type WebServer } from '../../generator/web-servers.ts';
import { tempDir } from './build.ts';

export { readableByServer };
export type Apache = WebServer;

/** Starts apache2 on `port` with `vhost` (the body of one <VirtualHost>); resolves once it accepts connections. */
export async function startApache(vhost: string, port: number): Promise<Apache> {
  return startWebServer('apache', { dir: await tempDir('apache'), host: '127.0.0.1', port, site: vhost });
}
