// Docids in reference order (D1 in contract/store-format.ts). References arrive in ingestion
// order; they are kept in runs of RUN_REFS, each sorted in JavaScript string order and spilled to
// a scratch file, then merged: the i-th reference of the merge gets docid i. The merge writes
// refs.dat and refs.idx as it goes and returns docidOf[ingestion number] for the unit records and
// the index. Memory: one run of references, and 4 bytes per unit for the docids.
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { REF_BLOCK, type RefIndex } from '../../contract/store-format.ts';

const RUN_REFS = 500_000;
const BUFFER = 1 << 20;
/** A reference is stored with a u16 byte length. */
const MAX_REF_BYTES = 0xffff;

/** A buffered sequential writer of one file. */
class Output {
  private readonly buf = Buffer.allocUnsafe(BUFFER);
  private used = 0;
  written = 0;
  private constructor(private readonly fh: FileHandle) {}
  static async create(path: string): Promise<Output> {
    return new Output(await open(path, 'wx'));
  }
  /** Appends a u32 (when id >= 0), then the reference as u16 length + UTF-8. */
  async ref(ref: string, id = -1): Promise<void> {
    if (this.used + 6 + ref.length * 3 > BUFFER) await this.flush();
    if (id >= 0) {
      this.buf.writeUInt32LE(id, this.used);
      this.used += 4;
    }
    const len = this.buf.write(ref, this.used + 2, 'utf8');
    this.buf.writeUInt16LE(len, this.used);
    this.used += 2 + len;
  }
  get position(): number {
    return this.written + this.used;
  }
  private async flush(): Promise<void> {
    if (this.used) await this.fh.write(this.buf, 0, this.used);
    this.written += this.used;
    this.used = 0;
  }
  async close(): Promise<void> {
    await this.flush();
    await this.fh.close();
  }
}

/** Reads back one spilled run: (id, ref) records. */
class RunInput {
  private buf = Buffer.allocUnsafe(BUFFER);
  private pos = 0;
  private len = 0;
  private eof = false;
  ref = '';
  id = 0;
  done = false;
  constructor(private readonly fh: FileHandle) {}
  private async fill(want: number): Promise<void> {
    if (this.len - this.pos >= want || this.eof) return;
    this.buf.copy(this.buf, 0, this.pos, this.len);
    this.len -= this.pos;
    this.pos = 0;
    while (this.len < want && !this.eof) {
      const { bytesRead } = await this.fh.read(this.buf, this.len, BUFFER - this.len, null);
      if (bytesRead === 0) this.eof = true;
      this.len += bytesRead;
    }
  }
  async next(): Promise<void> {
    await this.fill(6);
    if (this.len - this.pos === 0) {
      this.done = true;
      return;
    }
    if (this.len - this.pos < 6) throw new Error('unit store build: a reference run ends inside a record');
    this.id = this.buf.readUInt32LE(this.pos);
    const n = this.buf.readUInt16LE(this.pos + 4);
    await this.fill(6 + n);
    if (this.len - this.pos < 6 + n) throw new Error('unit store build: a reference run ends inside a record');
    this.ref = this.buf.toString('utf8', this.pos + 6, this.pos + 6 + n);
    this.pos += 6 + n;
  }
  close(): Promise<void> {
    return this.fh.close();
  }
}

export class RefOrder {
  private refs: string[] = [];
  private ids: number[] = [];
  private runs = 0;
  private count = 0;

  constructor(
    /** A scratch folder for the runs (the caller removes it). */
    private readonly dir: string,
    private readonly runRefs = RUN_REFS,
  ) {}

  /** Records the reference of the unit with ingestion number `id` (ids come 0, 1, 2, ...). */
  async add(ref: string, id: number): Promise<void> {
    if (id !== this.count) throw new Error(`unit store build: reference ${id} recorded out of order`);
    if (Buffer.byteLength(ref, 'utf8') > MAX_REF_BYTES) throw new Error(`unit reference ${ref.slice(0, 80)}… is longer than ${MAX_REF_BYTES} bytes`);
    this.count++;
    this.refs.push(ref);
    this.ids.push(id);
    if (this.refs.length >= this.runRefs) await this.spill();
  }

  /** The buffered references, sorted: indices into refs/ids. */
  private sorted(): number[] {
    const { refs } = this;
    return refs.map((_, i) => i).sort((a, b) => (refs[a] < refs[b] ? -1 : refs[a] > refs[b] ? 1 : 0));
  }

  private async spill(): Promise<void> {
    const out = await Output.create(join(this.dir, `${String(this.runs++).padStart(6, '0')}.refs`));
    for (const i of this.sorted()) await out.ref(this.refs[i], this.ids[i]);
    await out.close();
    this.refs = [];
    this.ids = [];
  }

  /**
   * Merges every reference into refs.dat and refs.idx (paths given) and returns docidOf:
   * docidOf[ingestion number] = the docid of that unit. Throws on a repeated reference (the
   * build rejects duplicates as they come; this is the last check of D1).
   */
  async finish(refsPath: string, indexPath: string): Promise<Uint32Array> {
    const docidOf = new Uint32Array(this.count);
    const out = await Output.create(refsPath);
    const index: RefIndex = { count: this.count, block: REF_BLOCK, offsets: [], first: [] };
    let docid = 0;
    let prev: string | null = null;
    const emit = async (ref: string, id: number) => {
      if (prev !== null && !(prev < ref)) throw new Error(`unit store build: reference ${ref} is ${prev === ref ? 'repeated' : 'out of order'}`);
      prev = ref;
      if (docid % REF_BLOCK === 0) {
        index.offsets.push(out.position);
        index.first.push(ref);
      }
      await out.ref(ref);
      docidOf[id] = docid++;
    };
    const inputs: RunInput[] = [];
    try {
      if (this.runs === 0) {
        for (const i of this.sorted()) await emit(this.refs[i], this.ids[i]);
      } else {
        if (this.refs.length) await this.spill();
        for (let r = 0; r < this.runs; r++) inputs.push(new RunInput(await open(join(this.dir, `${String(r).padStart(6, '0')}.refs`), 'r')));
        for (const input of inputs) await input.next();
        for (;;) {
          // a handful of runs: a scan for the smallest beats a heap
          let best: RunInput | null = null;
          for (const input of inputs) if (!input.done && (best === null || input.ref < best.ref)) best = input;
          if (best === null) break;
          await emit(best.ref, best.id);
          await best.next();
        }
      }
    } finally {
      await Promise.all(inputs.map((i) => i.close()));
      await out.close();
    }
    if (docid !== this.count) throw new Error(`unit store build: ${docid} references merged for ${this.count} units`);
    index.offsets.push(out.position);
    const fh = await open(indexPath, 'wx');
    try {
      await fh.writeFile(JSON.stringify(index));
    } finally {
      await fh.close();
    }
    this.refs = [];
    this.ids = [];
    return docidOf;
  }
}
