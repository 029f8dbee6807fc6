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
import type { Coding, EmitContext, OutputFile } from './types.ts';
import { TEXT_TYPE } from './types.ts';
import { apacheInclude } from './apache.ts';
import { caddySnippet } from './caddy.ts';
import { nginxInclude } from './nginx.ts';

const STATIC_MAX_AGE = 3600;

export interface HostedPath {
  urlPath: string; // what a client asks for
  file: string; // path under dist/
  headers: [string, string][];
  /** The precompressed variants beside the file, sent for this URL to a client that accepts them. */
  codings: Coding[];
}

/** The hosting configuration's own files: the folders are hidden by every form's rules. */
export const HOSTING_FILES = { headers: '_headers', nginx: '_nginx/lds.conf', apache: '_apache/lds.conf', caddy: '_caddy/lds.caddy' } as const;

export function cacheControl(ctx: EmitContext, f: OutputFile): string {
  const maxAge = f.cache === 'catalogue' ? ctx.cat.settings.cache_ttl_seconds : STATIC_MAX_AGE;
  return `public, max-age=${maxAge}, must-revalidate`;
}

/** index.html / index.md are also served at their folder's URL. */
export function urlPaths(file: string): string[] {
  const m = /^(.*?)index\.(html|md)$/.exec(file);
  return m ? [`/${m[1]}`, `/${file}`] : [`/${file}`];
}

export function hostedPaths(ctx: EmitContext, files: OutputFile[]): HostedPath[] {
  return files.flatMap((f) =>
    urlPaths(f.path).map((urlPath) => ({
      urlPath,
      file: f.path,
      headers: [
        ['Content-Type', f.contentType],
        ['Cache-Control', cacheControl(ctx, f)],
        ['ETag', `"${ctx.version}"`],
        ['X-Content-Type-Options', 'nosniff'],
        ...(f.path.startsWith('.well-known/') || f.path.startsWith('v1/') ? [['Access-Control-Allow-Origin', '*'] as [string, string]] : []),
      ] as [string, string][],
      codings: f.codings ?? [],
    })),
  );
}

/** A listed header of a path (exact name as listed). */
export function headerOf(p: HostedPath, name: string): string {
  const found = p.headers.find(([k]) => k === name);
  if (!found) throw new Error(`${p.urlPath}: no ${name} header`);
  return found[1];
}

function headersFile(paths: HostedPath[]): string {
  return paths.map((p) => `${p.urlPath}\n${p.headers.map(([k, v]) => `  ${k}: ${v}\n`).join('')}`).join('\n');
}

export function emitHostingConfig(ctx: EmitContext, files: OutputFile[]): OutputFile[] {
  const paths = hostedPaths(ctx, files);
  return [
    { path: HOSTING_FILES.headers, contentType: TEXT_TYPE, body: headersFile(paths), cache: 'static' },
    { path: HOSTING_FILES.nginx, contentType: TEXT_TYPE, body: nginxInclude(ctx.version, paths), cache: 'static' },
    { path: HOSTING_FILES.apache, contentType: TEXT_TYPE, body: apacheInclude(ctx.version, paths), cache: 'static' },
    { path: HOSTING_FILES.caddy, contentType: TEXT_TYPE, body: caddySnippet(ctx.version, paths), cache: 'static' },
  ];
}
