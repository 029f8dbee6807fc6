// The published paths with the headers each must be served with: the one list every hosting form
// (headers.ts: _headers; nginx.ts, apache.ts, caddy.ts) renders, so they can never disagree; and
// the one answer every web server form gives for any other path (notFound).
import { problemBase } from '../../contract/problems.ts';
import type { Coding, EmitContext, OutputFile } from './types.ts';
import { PAGE_CSP, PAGE_REFERRER_POLICY } from './page.ts';

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

/**
 * The URLs of a published file: its own, and its folder's for index.html, or for index.md when the
 * folder has no index.html (the documentation's page takes /docs/; its Markdown is /docs/index.md).
 */
export function urlPaths(file: string, published: ReadonlySet<string>): string[] {
  const m = /^(.*?)index\.(html|md)$/.exec(file);
  const servesFolder = m && (m[2] === 'html' || !published.has(`${m[1]}index.html`));
  return servesFolder ? [`/${m[1]}`, `/${file}`] : [`/${file}`];
}

export function hostedPaths(ctx: EmitContext, files: OutputFile[]): HostedPath[] {
  const published = new Set(files.map((f) => f.path));
  return files.flatMap((f) =>
    urlPaths(f.path, published).map((urlPath) => ({
      urlPath,
      file: f.path,
      headers: [
        ['Content-Type', f.contentType],
        ['Cache-Control', cacheControl(ctx, f)],
        ['ETag', `"${ctx.version}"`],
        ['X-Content-Type-Options', 'nosniff'],
        // The pages for people (every one drawn by page.ts): a strict policy, and no referrer.
        ...(f.contentType.startsWith('text/html') ? ([['Content-Security-Policy', PAGE_CSP], ['Referrer-Policy', PAGE_REFERRER_POLICY]] as [string, string][]) : []),
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

/** The answer to a path the build did not publish: 404 with these headers and this body. */
export interface NotFound {
  headers: [string, string][];
  body: string;
}

/**
 * What nginx, Apache and Caddy answer for every path the build did not publish (and for the hosting
 * files and variant URLs): 404 with one RFC 9457 problem document, byte for byte the same from each,
 * of the `not-found` type the service answers too (its own names the path; a static rule cannot).
 * Each server writes the body into its configuration, so it must hold nothing any of them would
 * read as syntax: no backslash, single quote, backtick, `$` or `%{` (a docs_url holding one is refused).
 */
export function notFound(ctx: Pick<EmitContext, 'addresses'>): NotFound {
  const body = JSON.stringify({
    type: `${problemBase(ctx.addresses.docs_url)}not-found`,
    title: 'Not found',
    status: 404,
    detail: 'Nothing is published at this address. The well-known index (/.well-known/api-catalog) lists every document.',
  });
  const unsafe = /[\\$'`]|%\{/.exec(body);
  if (unsafe) throw new Error(`docs_url ${JSON.stringify(ctx.addresses.docs_url)} cannot be written into web-server configuration (it contains ${JSON.stringify(unsafe[0])}): choose one without \\ $ ' \` or %{`);
  return { headers: [['Content-Type', 'application/problem+json'], ['Cache-Control', 'no-store'], ['X-Content-Type-Options', 'nosniff']], body };
}
