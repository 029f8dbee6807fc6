// One posting list of the unit store (format 4, contract/store-format.ts): the units of one
// product that contain one term, in docid order, cut into blocks with the largest impact of each
// block. The build encodes lists (generator/store/index-writer.ts); the reader walks them
// (payments/store/postings.ts), skips whole blocks by their maxima (block-max MaxScore,
// payments/store/evaluation.ts), and reads single postings inside a block without decoding the
// others: every field of a block is bit-packed at a fixed width, so posting i is found by
// arithmetic, and a unit that only needs checking against a frequent word costs a few reads.
//
// Layout of a list of n postings in B = ceil(n / POSTING_BLOCK) blocks, from its first byte (a
// multiple of 8 in postings.dat, so the f64 array is aligned):
//   blockMax   f64 × B   the largest impact (bm25Impact) of the block's postings
//   blockLast  u32 × B   the docid of the block's last posting
//   blockEnd   u32 × B   where the block ends, in bytes from the start of `data`
//   data       the blocks, each starting at a multiple of 4 bytes:
//     u32 first           the docid of the block's first posting
//     u32 widths          bits 0-5: w (offsets), 6-11: t (tf - 1)
//     offsets             m × w bits: docid - first, for the block's m postings
//     tfs                 m × t bits: tf - 1
//   Each array starts on a u32; values are packed from bit 0 of a u32 upwards and may straddle
//   two u32s. A width is 0 when every value is 0. A posting's unit length (dl, its token count) is
//   not in the list: it is the unit's, in lengths.dat (contract/store-format.ts), for every term.
//
// Invariants (asserted by encodePostingList when it writes, and by the reader where it reads):
//   P1 docids strictly increase along the list: offsets strictly increase in a block, a block's
//      first docid is above the previous block's last, and blockLast[b] = first + offsets[m - 1].
//   P2 every block holds POSTING_BLOCK postings but the last, which holds 1 .. POSTING_BLOCK.
//   P3 blockMax[b] = the largest bm25Impact(idf, tf, dl, avgdl) of block b, computed by the build
//      with the product's statistics and lengths.dat's dl: so every impact the reader computes in
//      block b is <= it, and no block the reader skips by its maximum holds a posting that would
//      have scored more.
//   P4 tf >= 1 and dl >= tf (a unit's token count is at least its count of this term).
//   P5 blockEnd strictly increases and the last one is the length of `data`.
import { bm25Impact } from './store-format.ts';

export const POSTING_BLOCK = 128;

/** Byte size of the block directory (blockMax, blockLast, blockEnd) of a list of `blocks` blocks. */
export function directoryBytes(blocks: number): number {
  return blocks * 16;
}

export function postingListFailure(what: string): never {
  throw new Error(`unit store: posting list ${what} (the store is damaged or was written by another build: rebuild it with lds build)`);
}

/** Bits needed for v (0 for 0). */
function bitsOf(v: number): number {
  return v === 0 ? 0 : 32 - Math.clz32(v);
}

/** u32 words of `count` values of `width` bits. */
function wordsOf(count: number, width: number): number {
  return Math.ceil((count * width) / 32);
}

/** Packs values[from .. from + count) at `width` bits into words from `at`. */
function pack(words: Uint32Array, at: number, values: Uint32Array, from: number, count: number, width: number): void {
  if (width === 0) return;
  for (let i = 0; i < count; i++) {
    const v = values[from + i];
    const bit = i * width;
    const k = at + (bit >>> 5);
    const s = bit & 31;
    words[k] |= v << s;
    if (s + width > 32) words[k + 1] |= v >>> (32 - s);
  }
}

/** Value i of an array packed at `width` bits from word `at`. */
export function unpack(words: Uint32Array, at: number, width: number, i: number): number {
  if (width === 0) return 0;
  const bit = i * width;
  const k = at + (bit >>> 5);
  const s = bit & 31;
  let v = words[k] >>> s;
  if (s + width > 32) v |= words[k + 1] << (32 - s);
  return width === 32 ? v >>> 0 : v & ((1 << width) - 1);
}

/** One block's offsets and tf - 1 while it is packed: reused by every call (encoding is synchronous). */
const scratch = { offsets: new Uint32Array(POSTING_BLOCK), tf1: new Uint32Array(POSTING_BLOCK) };

/**
 * Encodes one list. `docids` ascending, `tfs` and `dls` per posting (dl: the unit's token count,
 * for the block maxima; it is stored once per unit, in lengths.dat), `idf` and `avgdl` of the
 * product, as the reader will compute them. Returns the bytes and the list's largest impact.
 */
export function encodePostingList(docids: Uint32Array, tfs: Uint32Array, dls: Uint32Array, n: number, idf: number, avgdl: number): { bytes: Uint8Array; max: number } {
  if (n < 1) postingListFailure('is empty');
  const blocks = Math.ceil(n / POSTING_BLOCK);
  const head = directoryBytes(blocks);
  // The largest the blocks can be: two header words each, and two arrays of at most 32-bit values
  // per posting. Sized by n, not by full blocks: most terms have a few postings, and a build
  // encodes one list per term and product, each zeroing over 1 KB (a catalog-src build: 52k lists).
  const out = new Uint8Array(head + 4 * (2 * blocks + 2 * n));
  const blockMax = new Float64Array(out.buffer, 0, blocks);
  const blockLast = new Uint32Array(out.buffer, blocks * 8, blocks);
  const blockEnd = new Uint32Array(out.buffer, blocks * 12, blocks);
  const words = new Uint32Array(out.buffer, head);
  const { offsets, tf1 } = scratch;
  let at = 0; // in words
  let prev = -1;
  let max = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b * POSTING_BLOCK;
    const m = Math.min(n, from + POSTING_BLOCK) - from;
    const first = docids[from];
    let bmax = 0;
    let maxOffset = 0;
    let maxTf = 0;
    for (let i = 0; i < m; i++) {
      const d = docids[from + i];
      const tf = tfs[from + i];
      const dl = dls[from + i];
      if (!(d > prev)) postingListFailure(`docids do not increase (${prev} then ${d})`); // P1
      if (!(tf >= 1 && dl >= tf)) postingListFailure(`has tf ${tf} in a unit of ${dl} tokens`); // P4
      offsets[i] = d - first;
      tf1[i] = tf - 1;
      if (offsets[i] > maxOffset) maxOffset = offsets[i];
      if (tf - 1 > maxTf) maxTf = tf - 1;
      const impact = bm25Impact(idf, tf, dl, avgdl);
      if (impact > bmax) bmax = impact;
      prev = d;
    }
    const w = bitsOf(maxOffset);
    const t = bitsOf(maxTf);
    words[at] = first;
    words[at + 1] = w | (t << 6);
    let k = at + 2;
    pack(words, k, offsets, 0, m, w);
    k += wordsOf(m, w);
    pack(words, k, tf1, 0, m, t);
    k += wordsOf(m, t);
    at = k;
    blockMax[b] = bmax; // P3
    blockLast[b] = prev;
    blockEnd[b] = at * 4;
    if (bmax > max) max = bmax;
  }
  return { bytes: out.subarray(0, head + at * 4), max };
}

/** A list's block directory, as views over the list's bytes (which must start 8-byte aligned). */
export interface ListDirectory {
  blocks: number;
  blockMax: Float64Array;
  blockLast: Uint32Array;
  blockEnd: Uint32Array;
  /** the blocks, as u32 words */
  words: Uint32Array;
}

export function listDirectory(list: Uint8Array, blocks: number, df: number): ListDirectory {
  if (list.byteOffset % 8 !== 0) postingListFailure('is not 8-byte aligned in memory');
  const head = directoryBytes(blocks);
  if (blocks !== Math.ceil(df / POSTING_BLOCK) || list.byteLength < head + blocks * 8 || (list.byteLength - head) % 4 !== 0) postingListFailure(`of ${df} postings is ${list.byteLength} bytes in ${blocks} blocks`);
  const dir: ListDirectory = {
    blocks,
    blockMax: new Float64Array(list.buffer, list.byteOffset, blocks),
    blockLast: new Uint32Array(list.buffer, list.byteOffset + blocks * 8, blocks),
    blockEnd: new Uint32Array(list.buffer, list.byteOffset + blocks * 12, blocks),
    words: new Uint32Array(list.buffer, list.byteOffset + head, (list.byteLength - head) / 4),
  };
  if (dir.blockEnd[blocks - 1] !== list.byteLength - head) postingListFailure(`data ends at ${list.byteLength - head}, its directory says ${dir.blockEnd[blocks - 1]}`); // P5
  return dir;
}

/**
 * Checks a list's directory as a whole, once per list read from disk (the reader caches lists):
 * the block maxima are what the search skips by, so a damaged one would drop units from a top k
 * silently, where a damaged posting fails loudly when it is read (P3). Every maximum is a finite
 * positive impact, the largest is the term header's `max`, and blockLast and blockEnd strictly
 * increase (P1, P5).
 */
export function checkListDirectory(dir: ListDirectory, max: number): void {
  let largest = 0;
  for (let b = 0; b < dir.blocks; b++) {
    const m = dir.blockMax[b];
    if (!(m > 0 && m < Infinity)) postingListFailure(`block ${b} has the maximum ${m}`); // P3
    if (m > largest) largest = m;
    if (b > 0 && !(dir.blockLast[b] > dir.blockLast[b - 1] && dir.blockEnd[b] > dir.blockEnd[b - 1])) postingListFailure(`block ${b} does not follow block ${b - 1}`); // P1, P5
  }
  if (largest !== max) postingListFailure(`has the largest block maximum ${largest}, its term header says ${max}`); // P3
}

/** Where block b's fields are: its first docid, its size, and each packed array's word and width. */
export interface BlockFields {
  first: number;
  size: number;
  offsetAt: number;
  offsetWidth: number;
  tfAt: number;
  tfWidth: number;
}

/** Reads block b's header into `f`, checking it against the directory (P1, P2, P5). */
export function blockFields(dir: ListDirectory, b: number, df: number, f: BlockFields): void {
  const { words } = dir;
  const at = b === 0 ? 0 : dir.blockEnd[b - 1] / 4;
  const size = b === dir.blocks - 1 ? df - b * POSTING_BLOCK : POSTING_BLOCK;
  const widths = words[at + 1];
  f.first = words[at];
  f.size = size;
  f.offsetWidth = widths & 63;
  f.tfWidth = (widths >>> 6) & 63;
  f.offsetAt = at + 2;
  f.tfAt = f.offsetAt + wordsOf(size, f.offsetWidth);
  const end = f.tfAt + wordsOf(size, f.tfWidth);
  if (
    size < 1 ||
    widths >>> 12 !== 0 ||
    f.offsetWidth > 32 ||
    f.tfWidth > 32 ||
    end * 4 !== dir.blockEnd[b] ||
    (b > 0 && !(f.first > dir.blockLast[b - 1])) ||
    f.first + unpack(words, f.offsetAt, f.offsetWidth, size - 1) !== dir.blockLast[b]
  )
    postingListFailure(`block ${b} does not agree with its directory`);
}
