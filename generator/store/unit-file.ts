// The unit records of a store being built (units.dat and units.idx, contract/store-format.ts).
// Records are appended in the order the build reads them, through one large buffer written with
// plain sequential writes: no database, no write-ahead log, no compaction, each byte written once.
// Their places are kept in memory by ingestion number (12 bytes a unit); once every reference is
// known, finish() writes units.idx in docid order (D2).
import { open, type FileHandle } from 'node:fs/promises';
import { UNIT_ENTRY } from '../../contract/store-format.ts';

const BUFFER = 8 << 20;
const HEAD = '{"unit":';

export class UnitFile {
  private readonly buf = Buffer.allocUnsafe(BUFFER);
  private used = 0;
  private written = 0; // bytes of units.dat on disk
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
    const most = HEAD.length + (typeof unitJson === 'string' ? unitJson.length * 3 : unitJson.byteLength) + tail.length * 3;
    if (this.used + 4 + most > BUFFER) await this.flush();
    const buf = most + 4 <= BUFFER ? this.buf : Buffer.allocUnsafe(most + 4);
    const start = buf === this.buf ? this.used : 0;
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
    if (buf === this.buf) this.used = at;
    else {
      await this.fh.write(buf, 0, at);
      this.written += at;
    }
    const n = this.count++;
    if (n === this.offsets.length) this.grow();
    this.offsets[n] = this.written + (buf === this.buf ? this.used : 0) - length;
    this.lengths[n] = length;
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

  private async flush(): Promise<void> {
    if (this.used === 0) return;
    await this.fh.write(this.buf, 0, this.used);
    this.written += this.used;
    this.used = 0;
  }

  /** The JSON of record n as appended (the duplicate check reads an earlier unit's reference back). */
  async read(n: number): Promise<string> {
    if (!(n >= 0 && n < this.count)) throw new Error(`unit file: no record ${n}`);
    const at = this.offsets[n];
    const len = this.lengths[n];
    if (at >= this.written) return this.buf.toString('utf8', at - this.written, at - this.written + len);
    const out = Buffer.allocUnsafe(len);
    await this.fh.read(out, 0, len, at);
    return out.toString('utf8');
  }

  /**
   * Writes what is buffered, closes units.dat and writes units.idx: entry docid = the place of
   * the record whose ingestion number n has docidOf[n] = docid.
   */
  async finish(indexPath: string, docidOf: Uint32Array): Promise<void> {
    await this.flush();
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
      await fh.write(out);
    } finally {
      await fh.close();
    }
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => {});
  }
}
