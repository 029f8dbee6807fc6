// The index writer's spilled postings, as plain run files read back with read(2).
//
// Each run is one file of records in (product, term) order: a 12-byte head (product index, term id,
// pair count; u32 little-endian) and the pairs (docid, tf; u32 each). merge() walks every run at
// once, term by term, through one fixed buffer per run. They were LevelDB keys before: LevelDB
// reads its tables through mmap, so every posting read back stayed in the process's resident
// memory until the end of the build (1 GiB of the 5M-unit build's peak; BENCHMARKS.md, issue 24).
import { mkdir, open, readdir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

const HEAD = 12;
const BUFFER = 1 << 20;

/** Writes one run; records must come in ascending (product, term) order. */
export class RunWriter {
  private readonly buf = Buffer.allocUnsafe(BUFFER);
  private used = 0;

  private constructor(private readonly fh: FileHandle) {}

  static async create(dir: string, run: number): Promise<RunWriter> {
    await mkdir(dir, { recursive: true });
    return new RunWriter(await open(join(dir, `${String(run).padStart(6, '0')}.run`), 'wx'));
  }

  /** Appends the record of one term: `pairs` holds n (docid, tf) pairs. */
  async add(product: number, term: number, pairs: Uint32Array, n: number): Promise<void> {
    if (this.used + HEAD > BUFFER) await this.flush();
    this.buf.writeUInt32LE(product, this.used);
    this.buf.writeUInt32LE(term, this.used + 4);
    this.buf.writeUInt32LE(n, this.used + 8);
    this.used += HEAD;
    const bytes = new Uint8Array(pairs.buffer, pairs.byteOffset, n * 8);
    if (this.used + bytes.byteLength <= BUFFER) {
      this.buf.set(bytes, this.used);
      this.used += bytes.byteLength;
    } else {
      await this.flush();
      await this.fh.write(bytes);
    }
  }

  private async flush(): Promise<void> {
    if (this.used) await this.fh.write(this.buf, 0, this.used);
    this.used = 0;
  }

  /** Writes what is buffered and closes the file (no fsync: runs are scratch, gone after the build). */
  async close(): Promise<void> {
    await this.flush();
    await this.fh.close();
  }
}

class RunReader {
  private readonly buf = Buffer.allocUnsafe(BUFFER);
  private pos = 0;
  private len = 0;
  private eof = false;
  /** The record under the cursor, or null at the end of the run. */
  product = 0;
  term = 0;
  n = 0;
  done = false;

  /** The current record's (product, term) as one number, ordered as the runs are. */
  get key(): number {
    return this.product * 2 ** 32 + this.term;
  }

  constructor(private readonly fh: FileHandle) {}

  /** Makes at least `want` bytes (≤ BUFFER) available from `pos`, unless the file ends first. */
  private async fill(want: number): Promise<number> {
    if (this.len - this.pos >= want || this.eof) return this.len - this.pos;
    this.buf.copy(this.buf, 0, this.pos, this.len);
    this.len -= this.pos;
    this.pos = 0;
    while (this.len < want && !this.eof) {
      const { bytesRead } = await this.fh.read(this.buf, this.len, BUFFER - this.len, null);
      if (bytesRead === 0) this.eof = true;
      this.len += bytesRead;
    }
    return this.len;
  }

  /** Moves to the next record's head. */
  async next(): Promise<void> {
    const have = await this.fill(HEAD);
    if (have === 0) {
      this.done = true;
      return;
    }
    if (have < HEAD) throw new Error('index: a postings run ends inside a record');
    this.product = this.buf.readUInt32LE(this.pos);
    this.term = this.buf.readUInt32LE(this.pos + 4);
    this.n = this.buf.readUInt32LE(this.pos + 8);
    this.pos += HEAD;
  }

  /** Copies the current record's pairs into `into` from pair `at`. */
  async pairsInto(into: Uint32Array, at: number): Promise<void> {
    const target = new Uint8Array(into.buffer, into.byteOffset + at * 8, this.n * 8);
    let done = 0;
    while (done < target.byteLength) {
      const have = await this.fill(1);
      if (have === 0) throw new Error('index: a postings run ends inside a record');
      const take = Math.min(have, target.byteLength - done);
      target.set(this.buf.subarray(this.pos, this.pos + take), done);
      this.pos += take;
      done += take;
    }
  }

  close(): Promise<void> {
    return this.fh.close();
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
    for (const name of names) readers.push(new RunReader(await open(join(dir, name), 'r')));
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
