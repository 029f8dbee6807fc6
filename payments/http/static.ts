// Serves dist/ exactly as a static host configured by dist/_headers would: only the paths listed
// there, each with its Content-Type, Cache-Control, ETag and other headers, and 304 on a matching
// If-None-Match. The files are read once at start: dist/ is small, immutable per build, and
// answering from memory keeps the catalogue GET as cheap as a static host.
//
// Compression: the build writes `<file>.br` and `<file>.gz` beside each document
// (generator/emit/compress.ts). A request whose Accept-Encoding takes one of them gets those bytes
// with Content-Encoding; every answer of a path that has variants says `Vary: Accept-Encoding`.
// Each representation has its own strong ETag (RFC 9110 8.8.3: a different content coding is a
// different representation): the listed tag for the file itself, and the same tag with the coding
// appended inside the quotes for the variants ("catalogue-…" -> "catalogue-…gzip", "catalogue-…br"),
// which is exactly what the generated nginx include sends (`"<tag>$sent_http_content_encoding"`).
// If-None-Match naming any of them answers 304 (they are all the same version of the document),
// with the tag of the representation this request would get.
import { readFile } from 'node:fs/promises';
import { join, normalize } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';

export type Encoding = 'br' | 'gzip' | 'identity';

/** One representation of a published path: its bytes and every header it is sent with. */
export interface Representation {
  encoding: Encoding;
  etag: string | undefined;
  body: Buffer;
  headers: [string, string][];
  /** The headers of a 304 for this representation: the same without Content-Type and Content-Encoding. */
  notModified: [string, string][];
  /** For the fast path's writeHead, flat (name, value, name, value...): the 200 with Content-Length, and the 304. */
  raw: { ok: string[]; notModified: string[] };
}

export interface StaticEntry {
  urlPath: string;
  /** The headers listed in _headers (identity representation). */
  headers: [string, string][];
  etag: string | undefined;
  /** The file's own bytes (identity). */
  body: Buffer;
  identity: Representation;
  br?: Representation;
  gzip?: Representation;
  /** Every tag of every representation, for If-None-Match. */
  etags: string[];
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
  // A folder URL is listed next to its index file (see generator/emit/hosted-paths.ts urlPaths).
  for (const candidate of [`${urlPath}index.html`, `${urlPath}index.md`]) if (all.has(candidate)) return candidate.slice(1);
  return `${urlPath.slice(1)}index.html`;
}

async function readIfPresent(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `"v"` -> `"vgzip"` (W/"v" -> W/"vgzip"): the tag of the representation in that content coding. */
export function variantTag(etag: string, coding: 'br' | 'gzip'): string {
  return etag.endsWith('"') ? `${etag.slice(0, -1)}${coding}"` : `${etag}${coding}`;
}

function representation(encoding: Encoding, listed: [string, string][], body: Buffer, etag: string | undefined, vary: boolean): Representation {
  const headers: [string, string][] = [];
  for (const [k, v] of listed) {
    if (k.toLowerCase() === 'etag') continue;
    headers.push([k, v]);
  }
  if (etag) headers.push(['ETag', etag]);
  if (encoding !== 'identity') headers.push(['Content-Encoding', encoding]);
  if (vary) headers.push(['Vary', 'Accept-Encoding']);
  const notModified = headers.filter(([k]) => k !== 'Content-Type' && k !== 'Content-Encoding');
  const raw = { ok: [...headers, ['Content-Length', String(body.length)]].flat(), notModified: notModified.flat() };
  return { encoding, etag, body, headers, notModified, raw };
}

export async function loadStaticSite(distDir: string): Promise<StaticSite> {
  const listed = parseHeadersFile(await readFile(join(distDir, '_headers'), 'utf8'));
  const entries = new Map<string, StaticEntry>();
  const files = new Map<string, { body: Buffer; br?: Buffer; gz?: Buffer }>();
  for (const [urlPath, headers] of listed) {
    const rel = normalize(fileFor(urlPath, listed));
    if (rel.startsWith('..') || rel.startsWith('/')) throw new Error(`_headers lists a path outside dist/: ${urlPath}`);
    let file = files.get(rel);
    if (!file) {
      const path = join(distDir, rel);
      file = { body: await readFile(path), br: await readIfPresent(`${path}.br`), gz: await readIfPresent(`${path}.gz`) };
      files.set(rel, file);
    }
    const etag = headers.find(([k]) => k.toLowerCase() === 'etag')?.[1];
    const vary = !!(file.br || file.gz);
    const entry: StaticEntry = {
      urlPath,
      headers,
      etag,
      body: file.body,
      identity: representation('identity', headers, file.body, etag, vary),
      etags: etag ? [etag] : [],
    };
    if (file.br) entry.br = representation('br', headers, file.br, etag && variantTag(etag, 'br'), true);
    if (file.gz) entry.gzip = representation('gzip', headers, file.gz, etag && variantTag(etag, 'gzip'), true);
    for (const r of [entry.br, entry.gzip]) if (r?.etag) entry.etags.push(r.etag);
    entries.set(urlPath, entry);
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

/**
 * The content coding to send (RFC 9110 12.5.3): the acceptable one of br and gzip with the higher
 * q (br on a tie; `*` stands for any coding not named; `x-gzip` is gzip), identity when neither is
 * acceptable or there is no Accept-Encoding.
 */
export function chooseEncoding(acceptEncoding: string | undefined, has: { br: boolean; gzip: boolean }): Encoding {
  if (!acceptEncoding || !(has.br || has.gzip)) return 'identity';
  let { br, gzip } = acceptedCodings(acceptEncoding);
  if (!has.br) br = 0;
  if (!has.gzip) gzip = 0;
  if (br > 0 && br >= gzip) return 'br';
  if (gzip > 0) return 'gzip';
  return 'identity';
}

/**
 * The q of br and of gzip in an Accept-Encoding value (`*` counted for whichever is not named).
 * Remembered per value: clients repeat one header on every request, so a catalogue GET or a 304
 * is a Map look-up instead of a parse. Bounded, since the values are the clients' to choose.
 */
function acceptedCodings(acceptEncoding: string): { br: number; gzip: number } {
  let q = codingsMemo.get(acceptEncoding);
  if (q === undefined) {
    q = parseAcceptEncoding(acceptEncoding);
    if (codingsMemo.size >= CODINGS_MEMO) codingsMemo.clear();
    codingsMemo.set(acceptEncoding, q);
  }
  return q;
}

const CODINGS_MEMO = 256;
const codingsMemo = new Map<string, { readonly br: number; readonly gzip: number }>();

function parseAcceptEncoding(acceptEncoding: string): { br: number; gzip: number } {
  let br = -1;
  let gzip = -1;
  let star = -1;
  for (const part of acceptEncoding.split(',')) {
    const semi = part.indexOf(';');
    const name = (semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase();
    let q = 1;
    if (semi >= 0) {
      const m = /(?:^|;)\s*q\s*=\s*([0-9.]+)/i.exec(part.slice(semi));
      if (m) q = Number(m[1]);
      if (!Number.isFinite(q)) q = 0;
    }
    if (name === 'br') br = q;
    else if (name === 'gzip' || name === 'x-gzip') gzip = Math.max(gzip, q);
    else if (name === '*') star = q;
  }
  if (br < 0) br = star;
  if (gzip < 0) gzip = star;
  return { br, gzip };
}

/** The representation of `entry` this Accept-Encoding gets. */
export function representationFor(entry: StaticEntry, acceptEncoding: string | undefined): Representation {
  if (!entry.br && !entry.gzip) return entry.identity;
  const enc = chooseEncoding(acceptEncoding, { br: !!entry.br, gzip: !!entry.gzip });
  return (enc === 'br' ? entry.br : enc === 'gzip' ? entry.gzip : undefined) ?? entry.identity;
}

/** RFC 9110 13.1.2: weak comparison; `*` matches any current representation. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => strip(t) === strip(etag));
}

/** Whether If-None-Match names any of a document's tags (a 304). */
function notModified(ifNoneMatch: string | undefined, entry: StaticEntry): boolean {
  if (!ifNoneMatch) return false;
  // A revalidating client sends back one tag exactly as it got it: compare all first, parse after.
  for (const t of entry.etags) if (ifNoneMatch === t) return true;
  for (const t of entry.etags) if (etagMatches(ifNoneMatch, t)) return true;
  return false;
}

/** GET/HEAD of a published path. Anything else falls through (to the API routes or the 404). */
export function staticMiddleware(site: StaticSite): Middleware {
  // Not async: a request that falls through (every API POST) costs no extra promise here.
  return (ctx, next) => {
    const method = ctx.method;
    if (method !== 'GET' && method !== 'HEAD') return next();
    const entry = site.entries.get(ctx.path);
    if (!entry) return next();
    (ctx.state as { route?: string }).route = 'static'; // the metrics label of every published document
    const req = ctx.req;
    const rep = representationFor(entry, req.headers['accept-encoding']);
    const res = ctx.res;
    if (notModified(req.headers['if-none-match'], entry)) {
      for (const [k, v] of rep.notModified) res.setHeader(k, v);
      ctx.status = 304;
      return undefined;
    }
    for (const [k, v] of rep.headers) res.setHeader(k, v);
    ctx.status = 200;
    // Koa sets Content-Type from a Buffer body only when none is set: the published one is kept.
    ctx.body = rep.body;
    return undefined;
  };
}

/**
 * The same answers as staticMiddleware, written straight to Node's response for a GET or HEAD of
 * a published path, before Koa makes a context and runs its middleware (serve.ts calls it first for
 * every request; false = not a published path, Koa handles it). A published document is bytes in
 * memory with fixed headers, so nothing in the Koa stack applies to it except the access log,
 * which `log` writes. Measured on the benchmark: the br catalogue GET costs ~58 µs of server CPU
 * through Koa; see BENCHMARKS.md for the fast path's figure.
 */
export function staticFastPath(site: StaticSite, log?: (method: string, path: string, status: number, ms: number) => void): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') return false;
    if (!req.headers.host) return false; // Koa answers it: a 400 problem naming Host (app.ts)
    const url = req.url ?? '';
    if (url.charCodeAt(0) !== 47 /* '/' */) return false;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const entry = site.entries.get(path);
    if (!entry) return false;
    const started = log ? performance.now() : 0;
    const rep = representationFor(entry, req.headers['accept-encoding']);
    let status = 200;
    // writeHead with the prepared flat list: no per-header setHeader (name check, lower-casing, map).
    if (notModified(req.headers['if-none-match'], entry)) {
      status = 304;
      res.writeHead(304, rep.raw.notModified);
      res.end();
    } else {
      res.writeHead(200, rep.raw.ok);
      if (method === 'HEAD') res.end();
      else res.end(rep.body);
    }
    log?.(method, path, status, performance.now() - started);
    return true;
  };
}
