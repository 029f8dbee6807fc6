// The shipped catalogue (catalog-src as committed: all 1,504 EUR-Lex-Triples acts, not the suites'
// subset of test-catalog.ts), built once per machine until catalog-src, the generator or this file
// change (fixture-cache.ts), and served in place: a copy is 0.9 GB, and the service only reads
// dist/ and the store (its ledger and secrets go to the caller's own folder, `root`).
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localAddresses } from '../../generator/addresses.ts';
import { SHIPPED_CATALOG_SRC } from './build.ts';
import { cachedFixture } from './fixture-cache.ts';
import { FIXTURE_EPOCH, type Fixture } from './service-harness.ts';

export async function realCatalogue(): Promise<Fixture> {
  const entry = await cachedFixture('real-catalogue', { paths: ['catalog-src', 'generator', 'contract', 'package-lock.json', 'test/helpers/real-catalogue.ts'], params: 'v1' }, async (dir) => {
    const { build } = await import('../../generator/build.ts');
    await build({ srcDir: SHIPPED_CATALOG_SRC, outDir: join(dir, 'dist'), storeRoot: join(dir, 'store'), addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example'), sourceDateEpoch: FIXTURE_EPOCH });
  });
  const root = await mkdtemp(join(tmpdir(), 'lds-real-'));
  const dist = join(entry, 'dist');
  return { root, dist, store: join(entry, 'store'), catalogue: JSON.parse(await readFile(join(dist, 'v1/lds/_catalog'), 'utf8')) };
}
