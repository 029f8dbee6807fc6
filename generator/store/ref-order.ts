// Docids in reference order (D1 in contract/store-format.ts). References arrive in ingestion
// order; they are kept in runs of RUN_REFS, each sorted in JavaScript string order and spilled to
// a scratch file, then merged: the i-th reference of the merge gets docid i. The merge writes
// refs.dat and refs.idx as it goes and returns docidOf[ingestion number] for the unit records and
// the index. Memory: one run of references, and 4 bytes per unit for the docids.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REF_BLOCK, type RefIndex } from '../../contract/store-format.ts';
import { FileReader, FileWriter } from './file-io.ts';

const RUN_REFS = 500_000;
/** A reference is stored with a u16 byte length. */
const MAX_REF_BYTES = 0xffff;

/** Appends a u32 (when id >= 0), then the reference as u16 length + UTF-8. */
async function writeRef(out: FileWriter, ref: string, id = -1): Promise<void> {
  await out.reserve(6 + ref.length * 3);
  if (id >= 0) {
    out.buf.writeUInt32LE(id, out.used);
    out.used += 4;
  }
  const len = out.buf.write(ref, out.used + 2, 'utf8');
  out.buf.writeUInt16LE(len, out.used);
  out.used += 2 + len;
}

/** Reads back one spilled run: (id, ref) records. */
class RunInput {
  ref = '';
  id = 0;
  done = false;
  constructor(private readonly in_: FileReader) {}
  async next(): Promise<void> {
    const r = this.in_;
    const have = await r.fill(6);
    if (have === 0) {
      this.done = true;
      return;
    }
    if (have < 6) throw new Error('unit store build: a reference run ends inside a record');
    this.id = r.buf.readUInt32LE(r.pos);
    const n = r.buf.readUInt16LE(r.pos + 4);
    if ((await r.fill(6 + n)) < 6 + n) throw new Error('unit store build: a reference run ends inside a record');
    this.ref = r.buf.toString('utf8', r.pos + 6, r.pos + 6 + n);
    r.pos += 6 + n;
  }
  close(): Promise<void> {
    return this.in_.close();
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
    const out = await FileWriter.create(join(this.dir, `${String(this.runs++).padStart(6, '0')}.refs`));
    for (const i of this.sorted()) await writeRef(out, this.refs[i], this.ids[i]);
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
    const out = await FileWriter.create(refsPath);
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
      await writeRef(out, ref);
      docidOf[id] = docid++;
    };
    const inputs: RunInput[] = [];
    try {
      if (this.runs === 0) {
        for (const i of this.sorted()) await emit(this.refs[i], this.ids[i]);
      } else {
        if (this.refs.length) await this.spill();
        for (let r = 0; r < this.runs; r++) inputs.push(new RunInput(await FileReader.open(join(this.dir, `${String(r).padStart(6, '0')}.refs`))));
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
    await writeFile(indexPath, JSON.stringify(index), { flag: 'wx' });
    this.refs = [];
    this.ids = [];
    return docidOf;
  }
}
