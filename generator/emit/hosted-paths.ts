// The published paths with the headers each must be served with: the one list every hosting form
// (headers.ts: _headers; nginx.ts, apache.ts, caddy.ts) renders, so they can never disagree.
import type { Coding, EmitContext, OutputFile } from './types.ts';

const STATIC_MAX_AGE = 3600;

export interface HostedPath {
  urlPath: string; // what a client asks for
  file: string; // path under dist/
  headers: [string, string][];
  /** The precompressed variants beside the file, sent for this URL to a client that accepts them. */
  codings: Coding[];
}

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
