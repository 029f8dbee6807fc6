// What every emitter gets and gives. Emitters are pure: (context) -> files. build.ts writes them.
import type { CatalogueDoc } from '../catalog.ts';
import type { Addresses, CatalogSrc, PreviewUnit } from '../model.ts';

export interface EmitContext {
  cat: CatalogSrc;
  addresses: Addresses;
  catalogue: CatalogueDoc; // the finished v1/lds/_catalog document, version included
  version: string; // catalogue-<12 hex>: the strong ETag of every document
  builtAt: string; // ISO timestamp from SOURCE_DATE_EPOCH or the clock
  /** Per product: the units of its free preview (never their text); empty without a store. */
  previews: Record<string, PreviewUnit[]>;
}

export interface OutputFile {
  path: string; // relative to dist/, no leading slash (v1/lds/_catalog)
  contentType: string; // full Content-Type header value
  body: string;
  /** 'catalogue' documents carry live counts or prices: cached for cache_ttl_seconds; 'static' ones for an hour (see headers.ts). */
  cache: 'catalogue' | 'static';
  /** Content codings the build writes beside the file (`<path>.br`, `<path>.gz`); set by build.ts before the hosting config is derived. */
  codings?: Coding[];
}

/** A precompressed content coding of a published document. */
export type Coding = 'br' | 'gzip';

export type Emitter = (ctx: EmitContext) => OutputFile[];

export const JSON_TYPE = 'application/json; charset=utf-8';
export const JSONLD_TYPE = 'application/ld+json; charset=utf-8';
export const LINKSET_TYPE = 'application/linkset+json; charset=utf-8';
export const HTML_TYPE = 'text/html; charset=utf-8';
export const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

/** Stable pretty JSON with a trailing newline (byte-identical for identical input). */
export function jsonBody(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** The dist/ path of an absolute URL under the service origin (/v1/x -> v1/x). */
export function distPath(url: string): string {
  return new URL(url).pathname.replace(/^\//, '');
}
