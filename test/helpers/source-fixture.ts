// A service fixture built from any catalog-src folder (service-harness.ts builds the repository's
// own): the suites that change a source's licence status build a copy with this.
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../generator/build.ts';
import { localAddresses } from '../../generator/addresses.ts';
import type { Fixture } from './service-harness.ts';

export async function buildFixtureFrom(srcDir: string): Promise<Fixture> {
  const root = await mkdtemp(join(tmpdir(), 'lds-svc-src-'));
  const dist = join(root, 'dist');
  const store = join(root, 'store');
  await build({ srcDir, outDir: dist, storeRoot: store, addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example'), sourceDateEpoch: 1767225600 });
  return { root, dist, store, catalogue: JSON.parse(await readFile(join(dist, 'v1/lds/_catalog'), 'utf8')) };
}
