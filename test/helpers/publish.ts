// Publisher edits to a copy of catalog-src, shared by the diff, CI-recipe and guide tests.
import { join } from 'node:path';
import { CATALOG_SRC, cli, editJson, tempDir } from './build.ts';
import { cachedBuild } from './fixture-cache.ts';
import { readLocalBuild, writeLocalBuild } from '../../generator/local-build.ts';

/** The fixed build clock of these tests (2026-01-01T00:00:00Z). */
export const EPOCH = '1767225600';

/** Holds a source as a publisher does: the ruling and data go, a `held` reason comes. */
export async function holdSource(srcDir: string, id: string, reason: string): Promise<void> {
  await editJson(join(srcDir, 'sources', `${id}.json`), (d) => {
    delete d.ruling;
    delete d.data;
    delete d.checked;
    delete d.no_data_reason;
    d.held = { reason, since: '2026-11-25' };
  });
}

/** Sets a product's draw price per unit (micro-euros); returns the old one. */
export async function setDrawPrice(srcDir: string, productId: string, micros: number): Promise<number> {
  let old = 0;
  await editJson(join(srcDir, 'products', `${productId}.json`), (d) => {
    old = d.pricing.draw_unit_price_micro_eur;
    d.pricing.draw_unit_price_micro_eur = micros;
  });
  return old;
}

/** A real build (unit store included unless noStore) into a fresh folder, with the fixed clock. */
export async function buildInto(src: string, opts: { noStore?: boolean } = {}) {
  const root = await tempDir('build');
  await lds(src, root, opts);
  return { out: join(root, 'dist'), root, store: join(root, 'store') };
}

/** `lds build --local` of `src` into root/dist and root/store at the fixed clock. */
function lds(src: string, root: string, opts: { noStore?: boolean }): void {
  const r = cli(['build', '--local', '--src', src, '--out', join(root, 'dist'), '--store-root', join(root, 'store'), ...(opts.noStore ? ['--no-store'] : [])], { SOURCE_DATE_EPOCH: EPOCH });
  if (r.code !== 0) throw new Error(`build of ${src} failed (${r.code}):\n${r.stderr}\n${r.stdout}`);
}

/**
 * buildInto(CATALOG_SRC): the build of catalog-src itself that several suites start from (the
 * catalogue's content, the diff's base, one of the two builds compared for reproducibility). Its
 * inputs are fixed, so it is made once per machine (test/helpers/fixture-cache.ts, until
 * catalog-src, the generator, the CLI or this file change) and each caller gets a copy of its own.
 * The record of a local build beside dist/ (generator/local-build.ts) names catalog-src relative to
 * where it lies, so the copy's is written again for the copy: `lds serve` on another port rebuilds
 * the copy from catalog-src, as it would the build itself.
 */
export async function catalogSrcBuild(opts: { noStore?: boolean } = {}) {
  const root = await tempDir('build');
  await cachedBuild(opts.noStore ? 'cli-build-no-store' : 'cli-build', root, async (dir) => lds(CATALOG_SRC, dir, opts), ['cli.ts', 'cli', 'test/helpers/publish.ts']);
  const out = join(root, 'dist');
  const made = await readLocalBuild(out);
  if (!made) throw new Error(`the cached build of catalog-src has no local build record beside ${out}`);
  await writeLocalBuild(out, made.local_origin, CATALOG_SRC);
  return { out, root, store: join(root, 'store'), localOrigin: made.local_origin };
}
