// Records that must be grouped before they become units (the versions of one Akoma Ntoso
// provision spread over files, the rows of one ESCO skill spread over collection files) are
// staged in the build's scratch LevelDB under a key prefix and read back in key order, so memory
// stays flat however large the input is. The scratch database is opened on first use.
import type { BatchWriter, Db } from './batch.ts';

export class Staging<T> {
  constructor(
    private readonly scratch: () => Promise<{ db: Db; w: BatchWriter }>,
    private readonly prefix: string, // must not be a prefix of another staging's prefix
  ) {}

  async put(key: string, value: T): Promise<void> {
    const { w } = await this.scratch();
    await w.put(this.prefix + key, Buffer.from(JSON.stringify(value)));
  }

  /** Staged values in key order, grouped by groupOf(key) (groups must be contiguous in key order). */
  async *groups(groupOf: (key: string) => string): AsyncGenerator<T[]> {
    const { db, w } = await this.scratch();
    await w.flush();
    let group: T[] = [];
    let current: string | null = null;
    // every key that starts with the prefix sorts below the prefix with its last character incremented
    const end = this.prefix.slice(0, -1) + String.fromCharCode(this.prefix.charCodeAt(this.prefix.length - 1) + 1);
    for await (const [key, value] of db.iterator({ gte: this.prefix, lt: end })) {
      const g = groupOf(key.slice(this.prefix.length));
      if (g !== current && group.length) {
        yield group;
        group = [];
      }
      current = g;
      group.push(JSON.parse(Buffer.from(value).toString('utf8')) as T);
    }
    if (group.length) yield group;
  }
}
