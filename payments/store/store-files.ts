// The plain files of a unit store version (layout and invariants D1-D4: contract/store-format.ts),
// read with positioned reads: unit records by docid, docids by reference, posting lists. Held in
// memory: units.idx (12 bytes a unit, so a unit costs one read), lengths.dat (4 bytes a unit,
// read for every posting scored), the reference index (the first
// reference of every REF_BLOCK) and the posting lists read last, up to a byte budget (the lists of
// frequent words are long and asked for again and again; copying them from the page cache on every
// search would cost more than scoring them).
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { REF_BLOCK, STORE_FILES, UNIT_ENTRY, type RefIndex, type StoredUnit, type TermHeader } from '../../contract/store-format.ts';

/** JSON.parse, or `otherwise()` (which throws) when the text is not JSON. */
export function parseJson<T>(text: string, otherwise: () => never): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    return otherwise();
  }
}

export function damaged(version: string, what: string): never {
  throw new Error(`unit store ${version}: ${what} (the store is damaged: rebuild it with lds build)`);
}

/**
 * Reads exactly `length` bytes at `position` into a buffer of its own (so 8-byte aligned); `shared`:
 * one in a SharedArrayBuffer, which search threads read without a copy (search-threads.ts).
 */
async function readAt(fh: FileHandle, position: number, length: number, shared = false): Promise<Buffer> {
  const buf = shared ? Buffer.from(new SharedArrayBuffer(length)) : Buffer.allocUnsafeSlow(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done === length ? buf : buf.subarray(0, done);
}

export class StoreFiles {
  /** Posting lists by their offset (reads in flight too), least recently used first, and their bytes. */
  private readonly lists = new Map<number, { read: Promise<Buffer>; bytes: number }>();
  private listBytes = 0;

  private constructor(
    private readonly version: string,
    private readonly unitFile: FileHandle,
    private readonly unitIndex: Buffer,
    private readonly refFile: FileHandle,
    private readonly postingFile: FileHandle,
    private readonly refIndex: RefIndex,
    private readonly docCount: number,
    private readonly listCacheBytes: number,
    /** Unit lengths by docid (lengths.dat), for every posting's impact. */
    readonly lengths: Uint32Array,
  ) {}

  static async open(dir: string, version: string, docCount: number, listCacheBytes: number): Promise<StoreFiles> {
    const handles: FileHandle[] = [];
    const openOne = async (name: string) => {
      const fh = await open(join(dir, name), 'r').catch((err: NodeJS.ErrnoException) => damaged(version, `${name} cannot be opened (${err.code ?? err.message})`));
      handles.push(fh);
      return fh;
    };
    try {
      const units = await openOne(STORE_FILES.units);
      const unitIndex = await readFile(join(dir, STORE_FILES.unitIndex)).catch((err: NodeJS.ErrnoException) => damaged(version, `${STORE_FILES.unitIndex} cannot be read (${err.code ?? err.message})`));
      const refs = await openOne(STORE_FILES.refs);
      const postings = await openOne(STORE_FILES.postings);
      const refIndexText = await readFile(join(dir, STORE_FILES.refIndex), 'utf8').catch((err: NodeJS.ErrnoException) => damaged(version, `${STORE_FILES.refIndex} cannot be read (${err.code ?? err.message})`));
      const refIndex = parseJson<RefIndex>(refIndexText, () => damaged(version, `${STORE_FILES.refIndex} is not JSON`));
      const blocks = Math.ceil(docCount / REF_BLOCK);
      if (refIndex.count !== docCount || refIndex.block !== REF_BLOCK || refIndex.first.length !== blocks || refIndex.offsets.length !== blocks + 1) damaged(version, `${STORE_FILES.refIndex} does not describe ${docCount} references`);
      for (let b = 1; b < blocks; b++) if (!(refIndex.first[b - 1] < refIndex.first[b])) damaged(version, `${STORE_FILES.refIndex} is not in reference order`); // D1
      if (unitIndex.length !== docCount * UNIT_ENTRY) damaged(version, `${STORE_FILES.unitIndex} does not hold ${docCount} entries`);
      const lengthBytes = await readFile(join(dir, STORE_FILES.lengths)).catch((err: NodeJS.ErrnoException) => damaged(version, `${STORE_FILES.lengths} cannot be read (${err.code ?? err.message})`));
      if (lengthBytes.length !== docCount * 4) damaged(version, `${STORE_FILES.lengths} does not hold ${docCount} lengths`); // D5
      const lengths = new Uint32Array(new SharedArrayBuffer(docCount * 4)); // shared with the search threads
      lengths.set(new Uint32Array(lengthBytes.buffer, lengthBytes.byteOffset, docCount));
      return new StoreFiles(version, units, unitIndex, refs, postings, refIndex, docCount, listCacheBytes, lengths);
    } catch (err) {
      await Promise.all(handles.map((h) => h.close()));
      throw err;
    }
  }

  /** The docid of each reference (-1: not in the store), by reading the blocks of refs.dat they fall in. */
  async docids(refs: string[]): Promise<number[]> {
    const { first } = this.refIndex;
    const blockOf = (ref: string) => {
      // the last block whose first reference is <= ref
      let lo = 0;
      let hi = first.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (first[mid] <= ref) lo = mid + 1;
        else hi = mid;
      }
      return lo - 1;
    };
    const wanted = refs.map(blockOf);
    const blocks = new Map<number, Promise<string[]>>();
    for (const b of wanted) if (b >= 0 && !blocks.has(b)) blocks.set(b, this.refBlock(b));
    const out: number[] = [];
    for (let i = 0; i < refs.length; i++) {
      const b = wanted[i];
      const at = b < 0 ? -1 : (await blocks.get(b)!).indexOf(refs[i]);
      out.push(at < 0 ? -1 : b * REF_BLOCK + at);
    }
    return out;
  }

  private async refBlock(b: number): Promise<string[]> {
    const { offsets } = this.refIndex;
    const buf = await readAt(this.refFile, offsets[b], offsets[b + 1] - offsets[b]);
    const n = Math.min(REF_BLOCK, this.docCount - b * REF_BLOCK);
    const out: string[] = [];
    let at = 0;
    for (let i = 0; i < n; i++) {
      if (at + 2 > buf.length) damaged(this.version, `${STORE_FILES.refs} block ${b} is short`);
      const len = buf.readUInt16LE(at);
      out.push(buf.toString('utf8', at + 2, at + 2 + len));
      at += 2 + len;
      if (i > 0 && !(out[i - 1] < out[i])) damaged(this.version, `${STORE_FILES.refs} is not in reference order at docid ${b * REF_BLOCK + i}`); // D1
    }
    if (at !== buf.length || out[0] !== this.refIndex.first[b]) damaged(this.version, `${STORE_FILES.refs} block ${b} does not match ${STORE_FILES.refIndex}`);
    return out;
  }

  /** The unit records of the docids, in their order. */
  async units(docids: number[]): Promise<StoredUnit[]> {
    return Promise.all(
      docids.map(async (d) => {
        if (!(d >= 0 && d < this.docCount)) throw new Error(`unit store ${this.version}: no docid ${d}`);
        const e = this.unitIndex;
        const at = d * UNIT_ENTRY;
        const offset = e.readUInt32LE(at) + e.readUInt32LE(at + 4) * 2 ** 32;
        const length = e.readUInt32LE(at + 8);
        // the record with its length prefix, which must agree with the index (D2)
        const rec = await readAt(this.unitFile, offset - 4, length + 4);
        if (rec.length !== length + 4 || rec.readUInt32LE(0) !== length) damaged(this.version, `${STORE_FILES.unitIndex} entry of docid ${d} does not point at a record`);
        return JSON.parse(rec.toString('utf8', 4)) as StoredUnit;
      }),
    );
  }

  /** A term's posting list (8-byte aligned in memory, as contract/posting-list.ts needs; shared with the search threads). */
  postingList(h: TermHeader): Promise<Uint8Array> {
    const cached = this.lists.get(h.at);
    if (cached) {
      this.lists.delete(h.at); // to the young end
      this.lists.set(h.at, cached);
      return cached.read;
    }
    const read = readAt(this.postingFile, h.at, h.bytes, true).then((buf) => {
      if (buf.length !== h.bytes) damaged(this.version, `${STORE_FILES.postings} ends inside a posting list`);
      return buf;
    });
    if (h.bytes <= this.listCacheBytes) {
      const entry = { read, bytes: h.bytes };
      this.lists.set(h.at, entry);
      this.listBytes += h.bytes;
      read.catch(() => this.lists.get(h.at) === entry && this.drop(h.at));
      for (const at of this.lists.keys()) {
        if (this.listBytes <= this.listCacheBytes) break;
        this.drop(at);
      }
    }
    return read;
  }

  private drop(at: number): void {
    const e = this.lists.get(at);
    if (!e) return;
    this.lists.delete(at);
    this.listBytes -= e.bytes;
  }

  async close(): Promise<void> {
    await Promise.all([this.unitFile, this.refFile, this.postingFile].map((h) => h.close()));
  }
}
