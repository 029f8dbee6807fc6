// Serves dist/ exactly as a static host configured by dist/_headers would: only the paths listed
// there, each with its Content-Type, Cache-Control, ETag and other headers, and 304 on a matching
// If-None-Match. The files are read once at start: dist/ is small, immutable per build, and
// answering from memory keeps the catalogue GET as cheap as a static host.
import { readFile } from 'node:fs/promises';
import { join, normalize } from 'node:path';
import type { Middleware } from 'koa';

export interface StaticEntry {
  urlPath: string;
  headers: [string, string][];
  etag: string | undefined;
  body: Buffer;
}

export interface StaticSite {
  entries: Map<string, StaticEntry>;
  /** The dist file behind a URL path, parsed as JSON (the service reads the catalogue and OpenAPI from here). */
  json(urlPath: string): unknown;
}

/** Parses the `_headers` format: a URL path at column 0, then indented `Name: value` lines. */
export function parseHeadersFile(text: string): Map<string, [string, string][]> {
  const out = new Map<string, [string, string][]>();
  let current: [string, string][] | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    if (!/^\s/.test(line)) {
      current = [];
      out.set(line.trim(), current);
      continue;
    }
    const m = /^\s+([^:\s]+):\s*(.*)$/.exec(line);
    if (!m || !current) throw new Error(`_headers: cannot read line ${JSON.stringify(line)}`);
    current.push([m[1], m[2].trim()]);
  }
  return out;
}

/** The file behind a URL path: /docs/ -> docs/index.html is already a separate _headers entry with its own path. */
function fileFor(urlPath: string, all: Map<string, [string, string][]>): string {
  if (!urlPath.endsWith('/')) return urlPath.slice(1);
  // A folder URL is listed next to its index file (see generator/emit/headers.ts urlPaths).
  for (const candidate of [`${urlPath}index.html`, `${urlPath}index.md`]) if (all.has(candidate)) return candidate.slice(1);
  return `${urlPath.slice(1)}index.html`;
}

export async function loadStaticSite(distDir: string): Promise<StaticSite> {
  const listed = parseHeadersFile(await readFile(join(distDir, '_headers'), 'utf8'));
  const entries = new Map<string, StaticEntry>();
  for (const [urlPath, headers] of listed) {
    const rel = normalize(fileFor(urlPath, listed));
    if (rel.startsWith('..') || rel.startsWith('/')) throw new Error(`_headers lists a path outside dist/: ${urlPath}`);
    const body = await readFile(join(distDir, rel));
    const etag = headers.find(([k]) => k.toLowerCase() === 'etag')?.[1];
    entries.set(urlPath, { urlPath, headers, etag, body });
  }
  return {
    entries,
    json(urlPath) {
      const e = entries.get(urlPath);
      if (!e) throw new Error(`dist/ has no ${urlPath}`);
      return JSON.parse(e.body.toString('utf8'));
    },
  };
}

/** RFC 9110 13.1.2: weak comparison; `*` matches any current representation. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => strip(t) === strip(etag));
}

/** GET/HEAD of a published path. Anything else falls through (to the API routes or the 404). */
export function staticMiddleware(site: StaticSite): Middleware {
  // Not async: a request that falls through (every API POST) costs no extra promise here.
  return (ctx, next) => {
    const method = ctx.method;
    if (method !== 'GET' && method !== 'HEAD') return next();
    const entry = site.entries.get(ctx.path);
    if (!entry) return next();
    for (const [k, v] of entry.headers) ctx.set(k, v);
    const inm = ctx.get('if-none-match');
    if (inm && entry.etag && etagMatches(inm, entry.etag)) {
      ctx.status = 304;
      ctx.remove('Content-Type');
      return undefined;
    }
    ctx.status = 200;
    ctx.body = entry.body;
    // Koa sets Content-Type from a Buffer body only when none is set; restore the published one.
    const type = entry.headers.find(([k]) => k.toLowerCase() === 'content-type');
    if (type) ctx.set('Content-Type', type[1]);
    return undefined;
  };
}
