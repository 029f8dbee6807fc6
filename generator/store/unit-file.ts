// The unit records of a store being built (units.dat and units.idx, contract/store-format.ts).
// Records are appended in the order the build reads them, through two large buffers (one filled
// while the other is written) with plain sequential writes: no database, no write-ahead log, no
// compaction, each byte written once.
// Their places are kept in memory by ingestion number (12 bytes a unit); once every reference is
// known, finish() writes units.idx in docid order (D2).
import { open, type FileHandle } from 'node:fs/promises';
import { UNIT_ENTRY } from '../../contract/store-format.ts';
import { readFully, writeFully } from './file-io.ts';

const BUFFER = 8 << 20;
const HEAD = '{"unit":';

export class UnitFile {
  /** Two buffers: one is filled while the other is being written. */
  private readonly bufs = [Buffer.allocUnsafe(BUFFER), Buffer.allocUnsafe(BUFFER)];
  private buf = this.bufs[0];
  private used = 0;
  /** Bytes of units.dat whose writes have been started: `buf` starts at this offset of the file. */
  private issued = 0;
  /** The write in progress: of which buffer, and where in the file. */
  private inflight: { done: Promise<void>; buf: Buffer; start: number } | null = null;
  private offsets = new Float64Array(1 << 16); // by ingestion number: where the record's JSON starts
  private lengths = new Uint32Array(1 << 16);
  /** Records appended: their ingestion numbers are 0 .. count-1. */
  count = 0;

  private constructor(private readonly fh: FileHandle) {}

  static async create(path: string): Promise<UnitFile> {
    return new UnitFile(await open(path, 'wx'));
  }

  /**
   * Appends the record of one unit: {"unit":<unitJson>,"products":<productsJson>} (the bytes of
   * JSON.stringify({ unit, products }) when the parts are JSON.stringify of unit and products).
   * Returns the record's ingestion number.
   */
  async append(unitJson: string | Uint8Array, productsJson: string): Promise<number> {
    const tail = `,"products":${productsJson}}`;
    // a UTF-8 string is at most 3 bytes per UTF-16 code unit
    const most = 4 + HEAD.length + (typeof unitJson === 'string' ? unitJson.length * 3 : unitJson.byteLength) + tail.length * 3;
    if (this.used + most > BUFFER) await this.flush();
    const big = most > BUFFER;
    if (big) await this.settle(); // written on its own, right here
    const buf = big ? Buffer.allocUnsafe(most) : this.buf;
    const start = big ? 0 : this.used;
    let at = start + 4;
    at += buf.write(HEAD, at, 'latin1');
    if (typeof unitJson === 'string') at += buf.write(unitJson, at, 'utf8');
    else {
      buf.set(unitJson, at);
      at += unitJson.byteLength;
    }
    at += buf.write(tail, at, 'utf8');
    const length = at - start - 4;
    buf.writeUInt32LE(length, start);
    const n = this.count++;
    if (n === this.offsets.length) this.grow();
    this.offsets[n] = this.issued + start + 4;
    this.lengths[n] = length;
    if (big) {
      await this.writeAt(buf, at, this.issued);
      this.issued += at;
    } else this.used = at;
    return n;
  }

  private grow(): void {
    const offsets = new Float64Array(this.offsets.length * 2);
    offsets.set(this.offsets);
    this.offsets = offsets;
    const lengths = new Uint32Array(this.lengths.length * 2);
    lengths.set(this.lengths);
    this.lengths = lengths;
  }

  private async writeAt(buf: Buffer, length: number, position: number): Promise<void> {
    await writeFully(this.fh, buf, 0, length, position);
  }

  /** Starts writing the buffer filled so far and switches to the other one (once its own write is done). */
  private async flush(): Promise<void> {
    await this.settle();
    if (this.used === 0) return;
    const buf = this.buf;
    this.inflight = { done: this.writeAt(buf, this.used, this.issued), buf, start: this.issued };
    this.issued += this.used;
    this.buf = this.bufs[buf === this.bufs[0] ? 1 : 0];
    this.used = 0;
  }

  /** Waits for the write in progress. */
  private async settle(): Promise<void> {
    if (!this.inflight) return;
    await this.inflight.done;
    this.inflight = null;
  }

  /** The JSON of record n as appended (the duplicate check reads an earlier unit's reference back). */
  async read(n: number): Promise<string> {
    if (!(n >= 0 && n < this.count)) throw new Error(`unit file: no record ${n}`);
    const at = this.offsets[n];
    const len = this.lengths[n];
    if (at >= this.issued) return this.buf.toString('utf8', at - this.issued, at - this.issued + len);
    const w = this.inflight;
    if (w && at >= w.start) return w.buf.toString('utf8', at - w.start, at - w.start + len);
    // written before the write in progress started, and that one waited for it
    const out = Buffer.allocUnsafe(len);
    await readFully(this.fh, out, len, at);
    return out.toString('utf8');
  }

  /**
   * Writes what is buffered, closes units.dat and writes units.idx: entry docid = the place of
   * the record whose ingestion number n has docidOf[n] = docid.
   */
  async finish(indexPath: string, docidOf: Uint32Array): Promise<void> {
    await this.flush();
    await this.settle();
    await this.fh.close();
    const n = this.count;
    if (docidOf.length !== n) throw new Error(`unit file: ${docidOf.length} docids for ${n} records`);
    const out = Buffer.alloc(n * UNIT_ENTRY);
    const seen = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const d = docidOf[i];
      if (!(d < n) || seen[d]) throw new Error(`unit file: docid ${d} given twice or out of range`); // D2: one record per docid
      seen[d] = 1;
      const at = d * UNIT_ENTRY;
      const offset = this.offsets[i];
      out.writeUInt32LE(offset % 2 ** 32, at);
      out.writeUInt32LE(Math.floor(offset / 2 ** 32), at + 4);
      out.writeUInt32LE(this.lengths[i], at + 8);
    }
    const fh = await open(indexPath, 'wx');
    try {
      await writeFully(fh, out);
    } finally {
      await fh.close();
    }
  }

  async abort(): Promise<void> {
    await this.inflight?.done.catch(() => {});
    await this.fh.close().catch(() => {});
  }
}
