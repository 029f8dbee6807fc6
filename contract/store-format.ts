// The unit store format: the contract between the generator (which writes the store) and the
// payments service (which reads it). Like the OpenAPI document in dist/, this is data shape only;
// neither half imports the other's code.
//
// Layout on disk: <store_root>/<store_version>/ is one store (see "On-disk encoding" below);
// <store_root>/CURRENT holds the store_version the service should open. A build writes a new
// directory and switches CURRENT with an atomic rename only once the store is complete.

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
// Format 4. A store version is one folder, <store_root>/<store_version>/, holding a LevelDB (its
// own files: CURRENT, MANIFEST-*, *.ldb, *.log, LOCK, LOG) for the small keyed part, and beside it
// plain files for the bulk, each written once, front to back, by the build:
//   LevelDB  meta                  StoreMeta (JSON)
//            licences              Record<source, UnitLicence> (JSON): stored once, not per unit
//            index                 StoreIndexMeta (JSON)
//            t!<product_id>!<term> TermHeader (JSON): where the term's posting list is
//   units.dat     unit records, each a u32 byte length then a StoredUnit as JSON (UTF-8), in the
//                 order the build read them
//   units.idx     per docid, 12 bytes: u32 offset (low 32 bits), u32 offset (high bits), u32 length
//                 of the record's JSON in units.dat (the length prefix not included)
//   refs.dat      every unit reference in docid order, each a u16 byte length then UTF-8
//   refs.idx      RefIndex (JSON): where each block of REF_BLOCK references starts, and its first one
//   lengths.dat   per docid, a u32: the token count of the unit's searchable text (0: none), the
//                 dl of BM25, the same in every product
//   postings.dat  every posting list of every product's index (contract/posting-list.ts), each
//                 starting at a multiple of 8 bytes
// Integers are little-endian.
//
// Invariants (the build asserts them as it writes; the reader asserts them where it reads):
//   D1 docid = the position of the unit's reference among all references of the store in
//      JavaScript string order (UTF-16 code units); so refs.dat is strictly increasing, has
//      doc_count entries, and equal scores in search rank by docid ascending.
//   D2 units.idx[docid] points at the record of refs.dat[docid]: the u32 in units.dat just before
//      `offset` equals `length`, and the record's unit.ref is that reference.
//   D3 Every product's index holds exactly the units of the product that have a searchable token;
//      its ProductIndexStats count them (docs) and add up their token counts (total_len).
//   D4 A term's posting list holds one posting per unit of the product containing the term:
//      df postings, docids strictly increasing, and block maxima that bound every impact of their
//      block (see contract/posting-list.ts), computed with lengths.dat.
//   D5 lengths.dat holds doc_count entries; a unit with a posting has a length >= its tf.
//
// The store version hashes, per unit in the order the build read them, the SHA-256 of its JSON and
// its products; then the licences and STORE_FORMAT, so a build in a new format never reuses a
// directory written in an older one.
// ---------------------------------------------------------------------------------------------

// 3: tokenizer v2 (folded accents, compound terms), units carry a title and their publisher.
// 4: docids in reference order; docid-ordered posting lists with block maxima (block-max MaxScore
//    search); units, references and postings in plain files beside the LevelDB.
export const STORE_FORMAT = 4 as const;
export const CURRENT_FILE = 'CURRENT';

export const KEY = {
  meta: 'meta',
  licences: 'licences',
  index: 'index',
  term: (productId: string, term: string) => `t!${productId}!${term}`,
} as const;

/** The plain files of a store version folder (see the layout above). */
export const STORE_FILES = {
  units: 'units.dat',
  unitIndex: 'units.idx',
  refs: 'refs.dat',
  refIndex: 'refs.idx',
  lengths: 'lengths.dat',
  postings: 'postings.dat',
} as const;

/** Bytes per docid in units.idx. */
export const UNIT_ENTRY = 12;
/** References per block of refs.dat: a look-up by reference reads one block. */
export const REF_BLOCK = 128;

/** refs.idx: blocks of REF_BLOCK references; the last block may be shorter. */
export interface RefIndex {
  count: number; // references (= doc_count)
  block: typeof REF_BLOCK;
  offsets: number[]; // byte offset of each block in refs.dat, then the file's length
  first: string[]; // the first reference of each block
}

/** A record of units.dat. Products are stored with the unit so a look-up is one read. */
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

/** One term of one product's index: where its posting list is in postings.dat. */
export interface TermHeader {
  df: number; // postings (units of the product containing the term)
  blocks: number; // ceil(df / POSTING_BLOCK)
  at: number; // byte offset of the list in postings.dat (a multiple of 8)
  bytes: number; // byte length of the list
  max: number; // the largest impact of the list (= the largest block maximum)
}

export const BM25 = { k1: 1.2, b: 0.75 } as const;

export function bm25Idf(docs: number, df: number): number {
  return Math.log(1 + (docs - df + 0.5) / (df + 0.5));
}

/**
 * A term's contribution to a unit's score. The build (block maxima) and the reader (every
 * posting it scores) call this same function with the same numbers, so a block maximum is never
 * below an impact it bounds. A unit's score is the sum of its impacts over the query's distinct
 * terms in sorted order (floating-point addition is not associative: the order is part of the
 * contract, and a brute-force scorer that adds in this order gets the same bits).
 */
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
  // eslint-disable-next-line no-control-regex
  return /[^\u0000-\u007f]/.test(text) ? tokenizeUnicode(foldText(text)) : tokenizeAscii(text.toLowerCase());
}

/** The tokenizer on folded text, by its regular expressions (the definition: see above). */
export function tokenizeUnicode(folded: string): string[] {
  const out: string[] = [];
  for (const m of folded.matchAll(TERM)) {
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

const isAlnum = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * The same tokens as tokenizeUnicode for lower-case ASCII text, by a scan instead of regular
 * expressions (a unit's text is cut once per build and most are ASCII English): letters and
 * digits are [a-z0-9]; a run joins the next one across "-", or across "." or "," between digits.
 */
export function tokenizeAscii(text: string): string[] {
  const out: string[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    while (i < n && !isAlnum(text.charCodeAt(i))) i++;
    if (i >= n) break;
    const start = i;
    let runs = 0;
    let runStart = i;
    // runs of the compound, pushed as parts only once it is known to be one
    let parts: number[] | null = null;
    for (;;) {
      while (i < n && isAlnum(text.charCodeAt(i))) i++;
      runs++;
      const c = text.charCodeAt(i);
      const joins = i + 1 < n && isAlnum(text.charCodeAt(i + 1)) && (c === 0x2d || ((c === 0x2e || c === 0x2c) && isDigit(text.charCodeAt(i - 1)) && isDigit(text.charCodeAt(i + 1))));
      if (!joins) {
        if (runs > 1) (parts ??= []).push(runStart, i);
        break;
      }
      (parts ??= []).push(runStart, i);
      i++;
      runStart = i;
    }
    if (runs === 1) {
      const t = text.slice(start, i);
      if (keep(t)) out.push(t);
      continue;
    }
    for (let k = 0; k < parts!.length; k += 2) {
      const p = text.slice(parts![k], parts![k + 1]);
      if (keep(p)) out.push(p);
    }
    if (i - start <= MAX_TOKEN) out.push(text.slice(start, i));
  }
  return out;
}
