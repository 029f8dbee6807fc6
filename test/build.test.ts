// Issue 2: reproducible builds, version sensitivity, and bad inputs that never touch dist/.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CATALOG_SRC, cli, copyCatalogSrc, editJson, tempDir, treeDigest } from './helpers/build.ts';
import { catalogSrcBuild } from './helpers/publish.ts';

const EPOCH = { SOURCE_DATE_EPOCH: '1767225600' };

async function buildInto(src: string, extra: string[] = []) {
  const root = await tempDir('build');
  const out = join(root, 'dist');
  const r = cli(['build', '--local', '--src', src, '--out', out, '--store-root', join(root, 'store'), ...extra], EPOCH);
  return { ...r, out, root };
}

async function versionOf(dist: string): Promise<string> {
  return JSON.parse(await readFile(join(dist, 'v1/lds/_catalog'), 'utf8')).version;
}

test('same inputs and SOURCE_DATE_EPOCH give byte-identical dist/ (store included)', async () => {
  // The shared build of catalog-src (made by an earlier suite, or run, on this machine: the same
  // command) against one made now.
  const a = await catalogSrcBuild();
  const b = await buildInto(CATALOG_SRC);
  assert.is(b.code, 0, b.stderr);
  const da = await treeDigest(a.out);
  const db = await treeDigest(b.out);
  assert.ok(da.size > 20, `expected a full dist/, got ${da.size} files`);
  assert.equal([...da.entries()].sort(), [...db.entries()].sort());
});

test('changing any product field changes the version', async () => {
  const v0 = await versionOf((await catalogSrcBuild({ noStore: true })).out);
  const edits: [string, (d: any) => void][] = [
    ['description', (d) => { d.description += ' Updated.'; }],
    ['data_themes', (d) => { d.data_themes = ['ENVI']; }],
    ['pricing', (d) => { d.pricing.draw_unit_price_micro_eur += 1; }],
    ['routing', (d) => { d.routing.descriptors.push('1234'); }],
  ];
  const seen = new Set([v0]);
  for (const [field, edit] of edits) {
    const src = await copyCatalogSrc();
    await editJson(join(src, 'products/svc-energy-eu.json'), edit);
    const r = await buildInto(src, ['--no-store']);
    assert.is(r.code, 0, r.stderr);
    const v = await versionOf(r.out);
    assert.ok(!seen.has(v), `changing ${field} must give a new version (got ${v})`);
    seen.add(v);
  }
  // and the same clock with a different address gives a different version too
  const moved = await buildInto(CATALOG_SRC, ['--no-store', '--base-url', 'https://elsewhere.example/v1']);
  assert.ok(!seen.has(await versionOf(moved.out)));
});

/**
 * A good build for a case to break over: the `--no-store` build of catalog-src, a copy of its own
 * for each case (each checks that its dist/ is left as it was and that nothing is left beside it).
 */
const goodBuildCopy = () => catalogSrcBuild({ noStore: true });

/** Breaks a copy of catalog-src, builds over an existing dist/, and checks the failure is located and harmless. */
async function expectRejected(name: string, breakIt: (src: string) => Promise<void>, file: string, pointer: string) {
  const src = await copyCatalogSrc();
  const good = await goodBuildCopy();
  const before = await treeDigest(good.out);
  assert.ok(before.size > 20, `${name}: expected a full dist/ to break over, got ${before.size} files`);
  await breakIt(src);
  for (const cmd of [['check', '--src', src], ['build', '--local', '--no-store', '--src', src, '--out', good.out]]) {
    const r = cli(cmd, EPOCH);
    assert.ok(r.code !== 0, `${name}: ${cmd[0]} must exit non-zero`);
    // check reports on stdout (its output is the report); a refused build says why on stderr
    const out = cmd[0] === 'check' ? r.stdout : r.stderr;
    assert.ok(out.includes(`${file}#${pointer}`), `${name}: ${cmd[0]} must name ${file}#${pointer}, got:\n${out}`);
  }
  assert.equal([...(await treeDigest(good.out)).entries()].sort(), [...before.entries()].sort(), `${name}: dist/ must be untouched`);
  const leftovers = (await readdir(good.root)).filter((f) => f.startsWith('dist.'));
  assert.equal(leftovers, [], `${name}: no temporary folders left behind`);
}

test('a missing required field is reported with file and pointer', () =>
  expectRejected('missing field', (src) => editJson(join(src, 'products/svc-media-eu.json'), (d) => { delete d.title; }), 'products/svc-media-eu.json', '/title'));

test('a product naming an unknown source is reported', () =>
  expectRejected('unknown source', (src) => editJson(join(src, 'products/svc-media-eu.json'), (d) => { d.sources[1].source = 'global.nowhere'; }), 'products/svc-media-eu.json', '/sources/1/source'));

test('a malformed licence ruling is reported (quote hash not matching the text beside it)', () =>
  expectRejected('bad ruling', (src) => editJson(join(src, 'sources/fi.finlex.json'), (d) => { d.ruling.quote_sha256 = '0'.repeat(64); }), 'sources/fi.finlex.json', '/ruling/quote_sha256'));

test('a ruling missing its attribution is reported', () =>
  expectRejected('ruling without attribution', (src) => editJson(join(src, 'sources/global.ecdc.json'), (d) => { delete d.ruling.attribution; }), 'sources/global.ecdc.json', '/ruling/attribution'));

test('invalid JSON is reported with its file and position', () =>
  expectRejected('invalid JSON', (src) => writeFile(join(src, 'sources/eu.eurlex.json'), '{ "id": "eu.eurlex", }\n'), 'sources/eu.eurlex.json', ''));

test('every error is reported at once', async () => {
  const src = await copyCatalogSrc();
  await editJson(join(src, 'products/svc-media-eu.json'), (d) => { delete d.title; });
  await editJson(join(src, 'products/svc-energy-eu.json'), (d) => { d.launch_state = 'live'; });
  await writeFile(join(src, 'sources/eu.ecb.json'), 'not json');
  const r = cli(['check', '--src', src]);
  assert.is(r.code, 1);
  for (const where of ['products/svc-media-eu.json#/title', 'products/svc-energy-eu.json#/launch_state', 'sources/eu.ecb.json#']) assert.ok(r.stdout.includes(where), `missing ${where} in\n${r.stdout}`);
  assert.match(r.stdout, /3 errors/);
});

test.run();
