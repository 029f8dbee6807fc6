// The unit store format: the contract between the generator (which writes the store) and the
// payments service (which reads it). Like the OpenAPI document in dist/, this is data shape only;
// neither half imports the other's code.
//
// Layout on disk: <store_root>/<store_version>/ is one LevelDB; <store_root>/CURRENT holds the
// store_version the service should open. A build writes a new directory and switches CURRENT
// with an atomic rename only once the store is complete.

// The unit as delivered (what a paid draw returns) is wire, not storage: contract/unit.ts.
export type { Citation, Unit, UnitKind, UnitLicence, UnitRow } from './unit.ts';
import type { Unit } from './unit.ts';

export interface StoreProductMeta {
  units: number;
  rows: number;
  by_source: Record<string, { units: number; rows: number }>;
}

export interface StoreMeta {
  format: typeof STORE_FORMAT;
  store_version: string; // `store-<12 hex>` over the canonical unit content and STORE_FORMAT
  built_at: string;
  products: Record<string, StoreProductMeta>;
}

/** Read side, implemented in payments/store/unit-store.ts. */
export interface UnitStoreReader {
  readonly meta: StoreMeta;
  /** Units by reference within a product, in request order; references not in the product are listed in `unknown`. */
  getUnits(productId: string, refs: string[]): Promise<{ units: Unit[]; unknown: string[] }>;
  /** BM25 over each unit's searchable text (see the tokenizer) within a product; order: score desc, then ref asc. */
  search(productId: string, query: string, limit: number): Promise<Unit[]>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// On-disk encoding. Both halves read these constants; nothing else about the store is shared.
//
// Unit references (stable, documented for buyers):
//   eu.eurlex:<CELEX>/<para_idx>               P unit, e.g. eu.eurlex:32006D0213/4
//   eu.aligned_paragraphs:<CELEX>/<para_idx>   R unit (one aligned row)
//   fi.finlex:<akn work IRI>#<eId>             A unit, e.g. fi.finlex:/akn/fi/act/statute/2026/1#sec_1
//   global.ecdc:<key columns joined by '/'>    R unit from CSV, e.g. global.ecdc:AT/cases/2023-27
//   <source>:<dataset>/<dim codes joined by '/'> R unit from JSON-stat
//   eu.eurlex:<CELEX>/<block>                  P unit of a EURLEX57K act: 0 heading, 1 recitals,
//                                              1 + n article n, last the closing part
//   global.esco:occupation/<uuid>, global.esco:skill/<uuid>        R units (ESCO URI segments)
//   global.openaire:<OpenAIRE id>              R unit, e.g. global.openaire:dedup_wf_001::685e…
//   global.eea:airbase/<station>/<component>/<group>/<period>/<year>/<averaging>/<statistic>
//   global.copernicus:clc/<CLC code>           R unit, e.g. global.copernicus:clc/111
// Key parts are URI-escaped (a space as "+", ":" kept), so "/" only ever separates them.
//
// Keys (utf8 strings; values are bytes). Internal document ids (docid) are assigned in ingestion
// order and written as 8 hex digits so the bulky unit records go into LevelDB in key order
// (sequential writes: no compaction rewrites, which is what makes a 1M-unit build fast).
//   meta                              StoreMeta (JSON)
//   licences                          Record<source, UnitLicence> (JSON): stored once, not per unit
//   index                             StoreIndexMeta (JSON)
//   d!<docid>                         StoredUnit (JSON): the unit without its licence + its products
//   r!<ref>                           docid (utf8, 8 hex)
//   f!<docid>                         forward vector (see encodeForward) of the searchable text
//   t!<product_id>!<term>             TermHeader (JSON) of the product's BM25 index
//   c!<product_id>!<termId>!<chunk>   posting chunk (see encodeChunk; termId 8 hex, chunk 4 hex)
//   o!<block>                         ref order (see RANK_BLOCK; block 4 hex)
//
// The store version hashes the unit content and STORE_FORMAT, so a build in a new format never
// reuses a directory written in an older one.
// ---------------------------------------------------------------------------------------------

// 3: tokenizer v2 (folded accents, compound terms), units carry a title and their publisher.
export const STORE_FORMAT = 3 as const;
export const CURRENT_FILE = 'CURRENT';

export const KEY = {
  meta: 'meta',
  licences: 'licences',
  index: 'index',
  doc: (docid: number) => `d!${hex(docid, 8)}`,
  ref: (ref: string) => `r!${ref}`,
  forward: (docid: number) => `f!${hex(docid, 8)}`,
  term: (productId: string, term: string) => `t!${productId}!${term}`,
  chunk: (productId: string, termId: number, chunk: number) => `c!${productId}!${hex(termId, 8)}!${hex(chunk, 4)}`,
  rank: (block: number) => `o!${hex(block, 4)}`,
} as const;

export function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0');
}

/** Value under d!<docid>. Products are stored with the unit so a look-up is one read. */
export interface StoredUnit {
  unit: Omit<Unit, 'licence'>;
  products: string[];
}

/** BM25 statistics of one product's index. */
export interface ProductIndexStats {
  docs: number; // indexed units
  total_len: number; // sum of token counts (for avgdl)
}

export interface StoreIndexMeta {
  tokenizer: typeof TOKENIZER;
  doc_count: number; // documents (units) in the store; docids are 0 .. doc_count-1
  bm25: { k1: number; b: number };
  products: Record<string, ProductIndexStats>;
}

/**
 * One term of one product's index. Postings are ordered by impact (the term's BM25 contribution)
 * descending, then docid, and cut into chunks of growing size; max[i] is the impact of the first
 * posting of chunk i, i.e. an upper bound of everything from chunk i on. The reader uses these
 * bounds to stop early instead of reading whole lists of frequent terms.
 */
export interface TermHeader {
  id: number; // termId used in chunk keys and forward vectors
  df: number;
  n: number[]; // postings per chunk
  max: number[]; // impact upper bound per chunk
}

/**
 * A posting chunk: Float64LE [r, impact_1, count_1, ..., impact_r, count_r] followed by
 * Uint32LE docids. The first count_1 docids have impact_1, and so on: postings of equal impact
 * are stored once per run, exactly as the build computed them, so the reader accumulates scores
 * without touching the documents.
 */
export function encodeChunk(docids: Uint32Array, impacts: Float64Array): Uint8Array {
  const runs: number[] = [];
  for (let i = 0; i < impacts.length; i++) {
    if (runs.length && runs[runs.length - 2] === impacts[i]) runs[runs.length - 1]++;
    else runs.push(impacts[i], 1);
  }
  const head = new Float64Array(1 + runs.length);
  head[0] = runs.length / 2;
  head.set(runs, 1);
  const out = new Uint8Array(head.byteLength + docids.byteLength);
  out.set(new Uint8Array(head.buffer), 0);
  out.set(new Uint8Array(docids.buffer, docids.byteOffset, docids.byteLength), head.byteLength);
  return out;
}

export function decodeChunk(v: Uint8Array): { runs: Float64Array; docids: Uint32Array } {
  let buf = v.buffer;
  let off = v.byteOffset;
  if (off % 8 !== 0) {
    // values from LevelDB need not be 8-byte aligned
    const copy = new Uint8Array(v.byteLength);
    copy.set(v);
    buf = copy.buffer;
    off = 0;
  }
  const r = new Float64Array(buf, off, 1)[0];
  const runs = new Float64Array(buf, off + 8, 2 * r);
  return { runs, docids: new Uint32Array(buf, off + 8 * (1 + 2 * r), (v.byteLength - 8 * (1 + 2 * r)) / 4) };
}

/**
 * Ref order: o!<b> holds Uint32LE rank[docid] for docids b * RANK_BLOCK .. (b + 1) * RANK_BLOCK - 1
 * (the last block is shorter), where rank is the position of the unit's ref among all refs of the
 * store in JavaScript string order (UTF-16 code units, the order search results break ties by).
 * The reader breaks score ties with it without reading any unit.
 */
export const RANK_BLOCK = 1 << 16;

export const BM25 = { k1: 1.2, b: 0.75 } as const;

/** Chunk i holds min(64 * 2^i, 8192) postings: fine-grained bounds where the best hits are. */
export function chunkSize(i: number): number {
  return Math.min(64 * 2 ** i, 8192);
}

export function bm25Idf(docs: number, df: number): number {
  return Math.log(1 + (docs - df + 0.5) / (df + 0.5));
}

export function bm25Impact(idf: number, tf: number, dl: number, avgdl: number): number {
  return (idf * (tf * (BM25.k1 + 1))) / (tf + BM25.k1 * (1 - BM25.b + (BM25.b * dl) / avgdl));
}

// Tokenizer (v2). What a buyer types must find what the text says, so both sides fold the same way:
//  - case and accents: NFKD, combining marks dropped, lower case, and the few letters NFKD does not
//    decompose mapped by hand (Köln -> koln, Straße -> strasse, Ærø -> aero);
//  - words are runs of letters and digits; a compound (runs joined by one hyphen, or digits joined
//    by "." or ",") gives its parts and the whole: COVID-19 -> covid, 19, covid-19; PM2.5 -> pm2,
//    pm2.5 (the part "5" is one character); 2023-27 -> 2023, 27, 2023-27. So "covid", "COVID-19"
//    and "covid 19" all match a COVID-19 record, and the exact compound ranks it first;
//  - English stop words and 1-character tokens are dropped; no stemming (exact word forms keep
//    results explainable).
// The searchable text of a unit is its English pivot row (P), its descriptive columns (R) or its
// provision text (A: Finlex is Finnish only, so Finnish words are indexed as they are, folded).
// An IATE concept (P) is found by any of its terms: its searchable text is its English definition
// and its terms in every language (every row but the domain paths).
// Changing anything here changes every index: bump TOKENIZER and STORE_FORMAT.
export const TOKENIZER = 'fold-nfkd-compound-en-stop-v2' as const;

export const STOP_WORDS: ReadonlySet<string> = new Set(
  ('a an and are as at be been but by for from had has have he her his i if in into is it its ' +
    'no not of on or such that the their then there these they this those to was were which will with ' +
    'shall may any all other than also under where whereas been being do does so who whom whose')
    .split(' '),
);

// Letters NFKD leaves whole, folded to what a buyer on an ASCII keyboard types.
const LETTER_FOLD: Record<string, string> = { ß: 'ss', ẞ: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ð: 'd', ł: 'l', ı: 'i', þ: 'th', ħ: 'h', ŧ: 't', ŋ: 'n', ſ: 's', ς: 'σ' };
const UNFOLDED = new RegExp(`[${Object.keys(LETTER_FOLD).join('')}]`, 'g');
const MARKS = /[\p{M}\u00ad]/gu; // combining marks, and soft hyphens (invisible inside words)

/** Case- and accent-folded text (see the tokenizer notes above). ASCII text skips normalisation. */
export function foldText(text: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/[^\u0000-\u007f]/.test(text)) return text.toLowerCase();
  return text.normalize('NFKD').replace(MARKS, '').toLowerCase().replace(UNFOLDED, (c) => LETTER_FOLD[c]!);
}

// A word, or a compound: words joined by one hyphen (-, U+2010, U+2011), or digits joined by "." or ",".
const TERM = /[\p{L}\p{N}]+(?:(?:[-\u2010\u2011]|(?<=\p{N})[.,](?=\p{N}))[\p{L}\p{N}]+)*/gu;
const JOINER = /[-\u2010\u2011.,]/;
const PART = /[\p{L}\p{N}]+/gu;
const MAX_TOKEN = 64;

const keep = (t: string) => t.length >= 2 && t.length <= MAX_TOKEN && !STOP_WORDS.has(t);

export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const m of foldText(text).matchAll(TERM)) {
    const t = m[0];
    if (!JOINER.test(t)) {
      if (keep(t)) out.push(t);
      continue;
    }
    for (const p of t.matchAll(PART)) if (keep(p[0])) out.push(p[0]);
    if (t.length <= MAX_TOKEN) out.push(t); // the compound itself: always two parts or more, never a stop word
  }
  return out;
}

/**
 * Forward vector of one unit: Uint32LE [dl, nTerms, termId_1, tf_1, ...] followed by the unit
 * ref in UTF-8. The reader scores a candidate exactly from it (and breaks score ties by ref).
 */
export function encodeForward(dl: number, terms: Iterable<[number, number]> & { size?: number; length?: number }, ref: string): Buffer {
  const n = terms.size ?? terms.length ?? [...terms].length;
  const out = Buffer.allocUnsafe(8 + n * 8 + Buffer.byteLength(ref, 'utf8'));
  out.writeUInt32LE(dl, 0);
  out.writeUInt32LE(n, 4);
  let at = 8;
  for (const [id, tf] of terms) {
    out.writeUInt32LE(id, at);
    out.writeUInt32LE(tf, at + 4);
    at += 8;
  }
  out.write(ref, at, 'utf8');
  return out;
}

export function decodeForward(buf: Uint8Array): { dl: number; terms: Map<number, number>; ref: string } {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const dl = b.readUInt32LE(0);
  const n = b.readUInt32LE(4);
  const terms = new Map<number, number>();
  for (let i = 0; i < n; i++) terms.set(b.readUInt32LE(8 + i * 8), b.readUInt32LE(12 + i * 8));
  return { dl, terms, ref: b.toString('utf8', 8 + n * 8) };
}
