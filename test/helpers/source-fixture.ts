// A service fixture built from any catalog-src folder (service-harness.ts builds the repository's
// own): the suites that change a source's licence status or a product's routing build a copy with this.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../../generator/build.ts';
import { localAddresses } from '../../generator/addresses.ts';
import { copyCatalogSrc } from './build.ts';
import { cachedBuild } from './fixture-cache.ts';
import { FIXTURE_EPOCH, type Fixture } from './service-harness.ts';

async function buildInto(srcDir: string, root: string): Promise<void> {
  await build({ srcDir, outDir: join(root, 'dist'), storeRoot: join(root, 'store'), addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example'), sourceDateEpoch: FIXTURE_EPOCH });
}

function fixtureIn(root: string): Fixture {
  const dist = join(root, 'dist');
  return { root, dist, store: join(root, 'store'), catalogue: JSON.parse(readFileSync(join(dist, 'v1/lds/_catalog'), 'utf8')) };
}

export async function buildFixtureFrom(srcDir: string): Promise<Fixture> {
  const root = await mkdtemp(join(tmpdir(), 'lds-svc-src-'));
  await buildInto(srcDir, root);
  return fixtureIn(root);
}

/**
 * The build of a copy of catalog-src that `edit` changed, in a fresh temp dir of the caller's own.
 * Made once per machine (cachedBuild) until the generator, catalog-src or `inputs` (the file that
 * holds `edit`) change, so a suite run once per ledger backend, and in both tiers, builds it once.
 */
export async function cachedFixtureFrom(name: string, edit: (srcDir: string) => Promise<void>, inputs: string[]): Promise<Fixture> {
  const root = await mkdtemp(join(tmpdir(), 'lds-svc-')); // short: the ledger socket beneath it has at most 107 bytes
  await cachedBuild(name, root, async (dir) => {
    const src = await copyCatalogSrc();
    try {
      await edit(src);
      await buildInto(src, dir);
    } finally {
      await rm(dirname(src), { recursive: true, force: true });
    }
  }, ['test/helpers/source-fixture.ts', ...inputs]);
  return fixtureIn(root);
}
