// Open unit stores by version, shared by the releases that use them (payments/release/releases.ts):
// a build that changes only prices keeps its store, so two releases can hold one LevelDB, which
// opens once per process and closes when the last release using it is closed.
import type { UnitStoreReader } from '../../contract/store-format.ts';

export class StorePool {
  private readonly open = new Map<string, { reader: Promise<UnitStoreReader>; refs: number }>();
  constructor(
    private readonly root: string,
    private readonly opener: (root: string, version?: string) => Promise<UnitStoreReader>,
  ) {}

  async acquire(version: string): Promise<UnitStoreReader> {
    let e = this.open.get(version);
    if (!e) {
      e = { reader: this.opener(this.root, version), refs: 0 };
      this.open.set(version, e);
      e.reader.catch(() => this.open.delete(version));
    }
    e.refs++;
    return e.reader;
  }

  /** Adopts a store opened elsewhere (the one opened at start). */
  adopt(version: string, reader: UnitStoreReader): void {
    this.open.set(version, { reader: Promise.resolve(reader), refs: 1 });
  }

  async release(version: string): Promise<void> {
    const e = this.open.get(version);
    if (!e || --e.refs > 0) return;
    this.open.delete(version);
    await (await e.reader).close();
  }

  async closeAll(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map(async (e) => (await e.reader.catch(() => null))?.close()));
  }
}
