// Precompressed variants of the published documents, written beside each file at build time:
// `<file>.br` (brotli, quality 11) and `<file>.gz` (gzip, level 9). dist/ is immutable per build, so
// compressing once here is free at request time: the service (payments/http/static.ts) and nginx
// (`gzip_static on` in the generated include) send these bytes as they are, with Content-Encoding
// chosen by Accept-Encoding. A variant is written only when it is smaller than the file; both are
// byte-for-byte reproducible (gzip's header carries no time or name).
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Coding, OutputFile } from './types.ts';

/** Files smaller than this gain less than a TCP packet: not worth a variant. */
const MIN_BYTES = 512;

export interface CompressedVariant {
  path: string; // relative to dist/: the file's path plus .br or .gz
  coding: Coding;
  body: Buffer;
}

/** The folders of the hosting configuration (one per web server), beside `_headers`; never served. */
export const HOSTING_DIRS = ['_nginx', '_apache', '_caddy'] as const;

/** Whether a dist/ file is published (served) and so gets variants: not the hosting configuration itself. */
export function isPublished(path: string): boolean {
  return path !== '_headers' && !HOSTING_DIRS.some((d) => path.startsWith(`${d}/`));
}

export function compressedVariants(f: OutputFile): CompressedVariant[] {
  if (!isPublished(f.path)) return [];
  const raw = Buffer.from(f.body, 'utf8');
  if (raw.length < MIN_BYTES) return [];
  const out: CompressedVariant[] = [];
  const br = brotliCompressSync(raw, {
    params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length },
  });
  if (br.length < raw.length) out.push({ path: `${f.path}.br`, coding: 'br', body: br });
  const gz = gzipSync(raw, { level: 9, memLevel: 9 });
  if (gz.length < raw.length) out.push({ path: `${f.path}.gz`, coding: 'gzip', body: gz });
  return out;
}
