// Buffered LevelDB writes: ops are grouped into ~4 MB batches, and one batch is written while the
// next is being filled, so parsing and disk work overlap without unbounded buffering.
import type { Level } from 'level';

export type Db = Level<string, Uint8Array>;

export class BatchWriter {
  private ops: { type: 'put'; key: string; value: Uint8Array }[] = [];
  private bytes = 0;
  private inflight: Promise<void> | null = null;
  written = 0;

  constructor(private readonly db: Db, private readonly limitBytes = 4 << 20) {}

  /** Queues a put; resolves at once unless a full batch has to wait for the one before it. */
  async put(key: string, value: Uint8Array): Promise<void> {
    this.ops.push({ type: 'put', key, value });
    this.bytes += key.length + value.byteLength + 16;
    if (this.bytes >= this.limitBytes) await this.kick();
  }

  private async kick(): Promise<void> {
    if (this.inflight) await this.inflight;
    const ops = this.ops;
    this.ops = [];
    this.bytes = 0;
    this.written += ops.length;
    this.inflight = ops.length ? this.db.batch(ops) : null;
  }

  /** Writes everything queued. (Durability comes from the build's final synced write and fsync pass.) */
  async flush(): Promise<void> {
    await this.kick();
    if (this.inflight) await this.inflight;
    this.inflight = null;
  }
}
