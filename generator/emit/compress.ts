// Precompressed variants of the published documents, written beside each file at build time:
// `<file>.br` (brotli, quality 11) and `<file>.gz` (gzip, level 9). dist/ is immutable per build, so
// compressing once here is free at request time: the service (payments/http/static.ts) and nginx
// (`gzip_static on` in the generated include) send these bytes as they are, with Content-Encoding
// chosen by Accept-Encoding. A variant is written only when it is smaller than the file; both are
// byte-for-byte reproducible (gzip's header carries no time or name), which is what lets the build
// take them from a cache of earlier builds' variants (generator/compress-cache.ts).
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import type { Coding, OutputFile } from './types.ts';

/** Files smaller than this gain less than a TCP packet: not worth a variant. */
const MIN_BYTES = 512;

export interface CompressedVariant {
  path: string; // relative to dist/: the file's path plus .br or .gz
  coding: Coding;
  body: Buffer;
}

/** One content coding: how its bytes are made, and how they are read back (to check a cached variant). */
export interface Codec {
  coding: Coding;
  suffix: '.br' | '.gz';
  /** Everything the compressed bytes depend on besides the input: the parameters and the library's version. */
  id: string;
  compress(raw: Buffer): Buffer;
  /** The decompressed bytes; throws on a damaged body or one that decompresses to more than `maxLength` bytes. */
  decompress(body: Buffer, maxLength: number): Buffer;
}

const GZIP = { level: 9, memLevel: 9 } as const;

export const CODECS: readonly Codec[] = [
  {
    coding: 'br',
    suffix: '.br',
    id: `br quality=11 mode=text size_hint=input brotli=${process.versions.brotli}`,
    compress: (raw) =>
      brotliCompressSync(raw, {
        params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length },
      }),
    decompress: (body, maxLength) => brotliDecompressSync(body, { maxOutputLength: maxLength }),
  },
  {
    coding: 'gzip',
    suffix: '.gz',
    id: `gzip level=${GZIP.level} memLevel=${GZIP.memLevel} zlib=${process.versions.zlib}`,
    compress: (raw) => gzipSync(raw, GZIP),
    decompress: (body, maxLength) => gunzipSync(body, { maxOutputLength: maxLength }),
  },
];

/** Makes the bytes of one coding of `raw`: the codec itself, or a cache in front of it. */
export type Compressor = (codec: Codec, raw: Buffer) => Buffer;

const compressDirectly: Compressor = (codec, raw) => codec.compress(raw);

/** The folders of the hosting configuration (one per web server), beside `_headers`; never served. */
export const HOSTING_DIRS = ['_nginx', '_apache', '_caddy'] as const;

/** Whether a dist/ file is published (served) and so gets variants: not the hosting configuration itself. */
export function isPublished(path: string): boolean {
  return path !== '_headers' && !HOSTING_DIRS.some((d) => path.startsWith(`${d}/`));
}

export function compressedVariants(f: OutputFile, compress: Compressor = compressDirectly): CompressedVariant[] {
  if (!isPublished(f.path)) return [];
  const raw = Buffer.from(f.body, 'utf8');
  if (raw.length < MIN_BYTES) return [];
  const out: CompressedVariant[] = [];
  for (const codec of CODECS) {
    const body = compress(codec, raw);
    if (body.length < raw.length) out.push({ path: `${f.path}${codec.suffix}`, coding: codec.coding, body });
  }
  return out;
}
