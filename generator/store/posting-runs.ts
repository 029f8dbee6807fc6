// The index writer's spilled postings, as plain run files read back with read(2).
//
// Each run is one file of records in (product, term) order: a 12-byte head (product index, term id,
// pair count; u32 little-endian) and the pairs (docid, tf; u32 each). merge() walks every run at
// once, term by term, through one fixed buffer per run (file-io.ts). They were LevelDB keys before: LevelDB
// reads its tables through mmap, so every posting read back stayed in the process's resident
// memory until the end of the build (1 GiB of the 5M-unit build's peak; BENCHMARKS.md, issue 24).
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FileReader, FileWriter } from './file-io.ts';

const HEAD = 12;

/** Writes one run; records must come in ascending (product, term) order. */
export class RunWriter {
  private constructor(private readonly out: FileWriter) {}

  static async create(dir: string, run: number): Promise<RunWriter> {
    await mkdir(dir, { recursive: true });
    return new RunWriter(await FileWriter.create(join(dir, `${String(run).padStart(6, '0')}.run`)));
  }

  /** Appends the record of one term: `pairs` holds n (docid, tf) pairs. */
  async add(product: number, term: number, pairs: Uint32Array, n: number): Promise<void> {
    const { out } = this;
    await out.reserve(HEAD);
    out.buf.writeUInt32LE(product, out.used);
    out.buf.writeUInt32LE(term, out.used + 4);
    out.buf.writeUInt32LE(n, out.used + 8);
    out.used += HEAD;
    await out.write(new Uint8Array(pairs.buffer, pairs.byteOffset, n * 8));
  }

  /** Writes what is buffered and closes the file (no fsync: runs are scratch, gone after the build). */
  close(): Promise<void> {
    return this.out.close();
  }
}

class RunReader {
  /** The record under the cursor (done: past the last one). */
  product = 0;
  term = 0;
  n = 0;
  done = false;

  /** The current record's (product, term) as one number, ordered as the runs are. */
  get key(): number {
    return this.product * 2 ** 32 + this.term;
  }

  constructor(private readonly in_: FileReader) {}

  /** Moves to the next record's head. */
  async next(): Promise<void> {
    const r = this.in_;
    const have = await r.fill(HEAD);
    if (have === 0) {
      this.done = true;
      return;
    }
    if (have < HEAD) throw new Error('index: a postings run ends inside a record');
    this.product = r.buf.readUInt32LE(r.pos);
    this.term = r.buf.readUInt32LE(r.pos + 4);
    this.n = r.buf.readUInt32LE(r.pos + 8);
    r.pos += HEAD;
  }

  /** Copies the current record's pairs into `into` from pair `at`. */
  async pairsInto(into: Uint32Array, at: number): Promise<void> {
    const r = this.in_;
    const target = new Uint8Array(into.buffer, into.byteOffset + at * 8, this.n * 8);
    let done = 0;
    while (done < target.byteLength) {
      const have = await r.fill(1);
      if (have === 0) throw new Error('index: a postings run ends inside a record');
      const take = Math.min(have, target.byteLength - done);
      target.set(r.buf.subarray(r.pos, r.pos + take), done);
      r.pos += take;
      done += take;
    }
  }

  close(): Promise<void> {
    return this.in_.close();
  }
}

/**
 * Calls `term` once per (product, term) across every run in `dir`, in ascending order, with all of
 * its pairs in run order (so in docid order: runs are spilled as docids grow). `pairs` is reused
 * from one call to the next.
 */
export async function mergeRuns(dir: string, term: (product: number, term: number, pairs: Uint32Array, n: number) => Promise<void>): Promise<void> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.run')).sort();
  const readers: RunReader[] = [];
  try {
    for (const name of names) readers.push(new RunReader(await FileReader.open(join(dir, name))));
    for (const r of readers) await r.next();
    let pairs = new Uint32Array(1 << 16);
    for (;;) {
      // ~30 runs at 5M units: a scan for the smallest head costs less than a heap would
      let key = Infinity;
      let n = 0;
      for (const r of readers) {
        if (r.done) continue;
        if (r.key < key) {
          key = r.key;
          n = 0;
        }
        if (r.key === key) n += r.n;
      }
      if (key === Infinity) return;
      if (pairs.length < n * 2) pairs = new Uint32Array(Math.max(n * 2, pairs.length * 2));
      let at = 0;
      for (const r of readers) {
        if (r.done || r.key !== key) continue;
        await r.pairsInto(pairs, at);
        at += r.n;
        await r.next();
      }
      await term(Math.floor(key / 2 ** 32), key % 2 ** 32, pairs, n);
    }
  } finally {
    await Promise.all(readers.map((r) => r.close()));
  }
}
