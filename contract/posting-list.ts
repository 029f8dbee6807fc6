// One posting list of the unit store (format 4, contract/store-format.ts): the units of one
// product that contain one term, in docid order, cut into blocks with the largest impact of each
// block. The build encodes lists (generator/store/index-writer.ts); the reader decodes them a block
// at a time (payments/store/postings.ts) and skips whole blocks by their maxima (block-max
// MaxScore, payments/store/evaluation.ts).
//
// Layout of a list of n postings in B = ceil(n / POSTING_BLOCK) blocks, from its first byte (a
// multiple of 8 in postings.dat, so the f64 array is aligned):
//   blockMax   f64 × B   the largest impact (bm25Impact) of the block's postings
//   blockLast  u32 × B   the docid of the block's last posting
//   blockEnd   u32 × B   where the block's data ends, in bytes from the start of `data`
//   data                 per block, per posting: varint(gap * 2 + (tf === 1 ? 1 : 0)),
//                        varint(tf) only when tf !== 1, varint(dl); gap = docid minus the previous
//                        posting's docid (for the first posting of block b: minus blockLast[b - 1],
//                        or minus -1 for the first posting of the list, so gap >= 1 always)
// Varints are LEB128: 7 bits per byte, low bits first, the high bit set on every byte but the last.
//
// Invariants (asserted by encodePostingList when it writes and by decodeBlock when it reads):
//   P1 docids strictly increase along the list (every gap >= 1); blockLast strictly increases.
//   P2 every block holds POSTING_BLOCK postings but the last, which holds 1 .. POSTING_BLOCK.
//   P3 blockMax[b] = the largest bm25Impact(idf, tf, dl, avgdl) of block b, computed by the build
//      with the product's statistics: so every impact the reader computes in block b is <= it,
//      and no block the reader skips by its maximum holds a posting that would have scored more.
//   P4 tf >= 1 and dl >= tf (a unit's term count is at least its count of this term).
//   P5 blockEnd strictly increases and the last one is the length of `data`.
import { bm25Impact } from './store-format.ts';

export const POSTING_BLOCK = 128;

/** Byte size of the block directory (blockMax, blockLast, blockEnd) of a list of `blocks` blocks. */
export function directoryBytes(blocks: number): number {
  return blocks * 16;
}

function fail(what: string): never {
  throw new Error(`unit store: posting list ${what} (the store is damaged or was written by another build: rebuild it with lds build)`);
}

/** Appends a LEB128 varint (v < 2^32) at `at`; returns the new end. */
function putVarint(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  out[at++] = v;
  return at;
}

/**
 * Encodes one list. `docids` ascending, `tfs` and `dls` per posting (dl: the unit's token count),
 * `idf` and `avgdl` of the product, as the reader will compute them. Returns the bytes and the
 * list's largest impact.
 */
export function encodePostingList(docids: Uint32Array, tfs: Uint32Array, dls: Uint32Array, n: number, idf: number, avgdl: number): { bytes: Uint8Array; max: number } {
  if (n < 1) fail('is empty');
  const blocks = Math.ceil(n / POSTING_BLOCK);
  const head = directoryBytes(blocks);
  // at most 5 bytes per varint, 3 varints per posting
  const out = new Uint8Array(head + n * 15);
  const blockMax = new Float64Array(out.buffer, 0, blocks);
  const blockLast = new Uint32Array(out.buffer, blocks * 8, blocks);
  const blockEnd = new Uint32Array(out.buffer, blocks * 12, blocks);
  let at = head;
  let prev = -1;
  let max = 0;
  for (let b = 0; b < blocks; b++) {
    let bmax = 0;
    for (let i = b * POSTING_BLOCK, end = Math.min(n, i + POSTING_BLOCK); i < end; i++) {
      const d = docids[i];
      const tf = tfs[i];
      const dl = dls[i];
      if (!(d > prev)) fail(`docids do not increase (${prev} then ${d})`); // P1
      if (!(tf >= 1 && dl >= tf)) fail(`has tf ${tf} in a unit of ${dl} tokens`); // P4
      at = putVarint(out, at, (d - prev) * 2 + (tf === 1 ? 1 : 0));
      if (tf !== 1) at = putVarint(out, at, tf);
      at = putVarint(out, at, dl);
      const impact = bm25Impact(idf, tf, dl, avgdl);
      if (impact > bmax) bmax = impact;
      prev = d;
    }
    blockMax[b] = bmax; // P3
    blockLast[b] = prev;
    blockEnd[b] = at - head;
    if (bmax > max) max = bmax;
  }
  return { bytes: out.subarray(0, at), max };
}

/** A list's block directory, as views over the list's bytes (which must start 8-byte aligned). */
export interface ListDirectory {
  blocks: number;
  blockMax: Float64Array;
  blockLast: Uint32Array;
  blockEnd: Uint32Array;
  data: Uint8Array;
}

export function listDirectory(list: Uint8Array, blocks: number, df: number): ListDirectory {
  if (list.byteOffset % 8 !== 0) fail('is not 8-byte aligned in memory');
  if (blocks !== Math.ceil(df / POSTING_BLOCK) || list.byteLength < directoryBytes(blocks) + df * 2) fail(`of ${df} postings is ${list.byteLength} bytes in ${blocks} blocks`);
  const dir: ListDirectory = {
    blocks,
    blockMax: new Float64Array(list.buffer, list.byteOffset, blocks),
    blockLast: new Uint32Array(list.buffer, list.byteOffset + blocks * 8, blocks),
    blockEnd: new Uint32Array(list.buffer, list.byteOffset + blocks * 12, blocks),
    data: list.subarray(directoryBytes(blocks)),
  };
  if (dir.blockEnd[blocks - 1] !== dir.data.byteLength) fail(`data ends at ${dir.data.byteLength}, its directory says ${dir.blockEnd[blocks - 1]}`); // P5
  return dir;
}

/**
 * Decodes block b of a list: its docids into `docs` and their impacts into `imps`; returns the
 * number of postings. Checks P1-P5 for the block as it goes (a comparison per posting).
 */
export function decodeBlock(dir: ListDirectory, b: number, df: number, idf: number, avgdl: number, docs: Int32Array, imps: Float64Array): number {
  const { data } = dir;
  const n = b === dir.blocks - 1 ? df - b * POSTING_BLOCK : POSTING_BLOCK;
  let at = b === 0 ? 0 : dir.blockEnd[b - 1];
  const end = dir.blockEnd[b];
  const max = dir.blockMax[b];
  let doc = b === 0 ? -1 : dir.blockLast[b - 1];
  for (let i = 0; i < n; i++) {
    // three varints, unrolled for their usual one or two bytes
    let c = data[at++];
    let v = c & 0x7f;
    for (let shift = 128; c & 0x80; shift *= 128) v += ((c = data[at++]) & 0x7f) * shift;
    let tf = 1;
    if (!(v & 1)) {
      c = data[at++];
      tf = c & 0x7f;
      for (let shift = 128; c & 0x80; shift *= 128) tf += ((c = data[at++]) & 0x7f) * shift;
    }
    c = data[at++];
    let dl = c & 0x7f;
    for (let shift = 128; c & 0x80; shift *= 128) dl += ((c = data[at++]) & 0x7f) * shift;
    doc += Math.floor(v / 2);
    const impact = bm25Impact(idf, tf, dl, avgdl);
    if (!(impact <= max) || !(tf >= 1 && dl >= tf) || v < 2) fail(`block ${b}: impact ${impact} above the block maximum ${max}, tf ${tf} in a unit of ${dl} tokens, or a repeated docid`); // P1, P3, P4
    docs[i] = doc;
    imps[i] = impact;
  }
  if (at !== end || n < 1 || doc !== dir.blockLast[b] || (b > 0 && !(doc > dir.blockLast[b - 1]))) fail(`block ${b} does not end where its directory says`); // P1, P2, P5
  return n;
}
