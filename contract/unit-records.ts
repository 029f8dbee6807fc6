// Every unit record of a store version, read front to back from its units.dat (format 4: a u32
// byte length, then a StoredUnit as JSON; contract/store-format.ts). For tools that walk a whole
// store: the simulator picks its products' references and words here. Reading needs no lock: the
// files of a published store version never change.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { STORE_FILES, type StoredUnit } from './store-format.ts';

export async function* unitRecords(storeDir: string): AsyncGenerator<StoredUnit> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of createReadStream(join(storeDir, STORE_FILES.units), { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let at = 0;
    while (pending.length - at >= 4) {
      const len = pending.readUInt32LE(at);
      if (pending.length - at - 4 < len) break;
      yield JSON.parse(pending.toString('utf8', at + 4, at + 4 + len)) as StoredUnit;
      at += 4 + len;
    }
    pending = pending.subarray(at);
  }
  if (pending.length) throw new Error(`${join(storeDir, STORE_FILES.units)} ends inside a record`);
}
