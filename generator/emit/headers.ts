// Static-hosting configuration derived from the list of published files, so hosts serve each
// path with its content type, the catalogue version as strong ETag, and the cache rule of its kind.
// Four forms, all from the same list: `_headers` (read by CDNs such as Netlify/Cloudflare Pages,
// and by our own service), an nginx include (`_nginx/lds.conf`), an Apache httpd include
// (`_apache/lds.conf`) and a Caddyfile snippet (`_caddy/lds.caddy`). None of them is itself served.
//
// Each form hard-codes this build's version: it is correct for the folder it sits in and for no
// other. A web server must therefore read it together with the files it describes and keep
// serving that folder until it reads the configuration again (a reload): `lds publish`
// (generator/publish.ts) writes each build into a folder of its own and pins the server to it.
import type { EmitContext, OutputFile } from './types.ts';
import { TEXT_TYPE } from './types.ts';
import { hostedPaths, notFound, type HostedPath } from './hosted-paths.ts';
import { apacheInclude } from './apache.ts';
import { caddySnippet } from './caddy.ts';
import { nginxInclude } from './nginx.ts';

/** The hosting configuration's own files: the folders are hidden by every form's rules. */
export const HOSTING_FILES = { headers: '_headers', nginx: '_nginx/lds.conf', apache: '_apache/lds.conf', caddy: '_caddy/lds.caddy' } as const;

function headersFile(paths: HostedPath[]): string {
  return paths.map((p) => `${p.urlPath}\n${p.headers.map(([k, v]) => `  ${k}: ${v}\n`).join('')}`).join('\n');
}

export function emitHostingConfig(ctx: EmitContext, files: OutputFile[]): OutputFile[] {
  const paths = hostedPaths(ctx, files);
  const missing = notFound(ctx);
  return [
    { path: HOSTING_FILES.headers, contentType: TEXT_TYPE, body: headersFile(paths), cache: 'static' },
    { path: HOSTING_FILES.nginx, contentType: TEXT_TYPE, body: nginxInclude(ctx.version, paths, missing), cache: 'static' },
    { path: HOSTING_FILES.apache, contentType: TEXT_TYPE, body: apacheInclude(ctx.version, paths, missing), cache: 'static' },
    { path: HOSTING_FILES.caddy, contentType: TEXT_TYPE, body: caddySnippet(ctx.version, paths, missing), cache: 'static' },
  ];
}
