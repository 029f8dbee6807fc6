// The unit records of a store being built (units.dat and units.idx, contract/store-format.ts).
// Records are appended in the order the build reads them, through one large buffer written with
// plain sequential writes: no database, no write-ahead log, no compaction, each byte written once.
// Their places are kept in memory by ingestion number (12 bytes a unit); once every reference is
// known, finish() writes units.idx in docid order (D2).
import type { Hash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { UNIT_ENTRY } from '../../contract/store-format.ts';

const BUFFER = 8 << 20;

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
   * Appends one record (StoredUnit JSON) given as a string, and its UTF-8 bytes and a newline to
   * `hash` (the store version); returns its ingestion number.
   */
  async append(json: string, hash: Hash): Promise<number> {
    // a UTF-8 string is at most 3 bytes per UTF-16 code unit
    if (this.used + 4 + json.length * 3 > BUFFER) await this.flush();
    let length: number;
    if (4 + json.length * 3 <= BUFFER) {
      length = this.buf.write(json, this.used + 4, 'utf8');
      this.buf.writeUInt32LE(length, this.used);
      hash.update(this.buf.subarray(this.used + 4, this.used + 4 + length));
      this.used += 4 + length;
    } else {
      const bytes = Buffer.from(json, 'utf8');
      length = bytes.length;
      const head = Buffer.allocUnsafe(4);
      head.writeUInt32LE(length, 0);
      hash.update(bytes);
      await this.fh.write(head);
      await this.fh.write(bytes);
      this.written += 4 + length;
    }
    hash.update('\n');
    const n = this.count++;
    if (n === this.offsets.length) this.grow();
    this.offsets[n] = this.written + this.used - length;
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
