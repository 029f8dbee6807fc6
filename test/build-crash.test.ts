// A build killed at any step leaves the previous build served (issue 26 item 6). The build is the
// real `lds build` child process, killed with SIGKILL (as an OOM kill or a power cut would stop it)
// at each step by LDS_TEST_BUILD_CRASH_AT (generator/build.ts crashPoint): after the new unit store
// became CURRENT, after the new dist tree was written, after its link was made, and after the link
// was switched. Before the switch, dist/ must still be the whole previous build and a service
// started then must serve it with the store it was built against; from the switch on, the new one.
// A later build cleans up what the killed ones left.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lstat, readdir, readFile, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { buildInto, runBuild, secondVersionSrc } from './helpers/releases.ts';
import { catalogSrcBuild } from './helpers/publish.ts';
import { postJson, startTestServer } from './helpers/service-harness.ts';

let root: string;
let dist: string;
let store: string;
let srcB: string;
let first: { target: string; version: string; storeVersion: string; files: string[] };

/** Every file of a build (relative paths, sorted) and the catalogue's versions. */
async function served(): Promise<{ target: string; version: string; storeVersion: string; files: string[] }> {
  const files = (await readdir(dist, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice((dist + '/').length)).sort();
  const cat = JSON.parse(await readFile(join(dist, 'v1/lds/_catalog'), 'utf8'));
  return { target: await realpath(dist), version: cat.version, storeVersion: cat.store_version, files };
}

test.before(async () => {
  // The previous build: `lds build --local` of catalog-src, the one the suites share (made once per machine).
  ({ root, out: dist, store } = await catalogSrcBuild());
  first = await served();
  srcB = await secondVersionSrc(25_000, 12); // a new price and fewer rows: a new catalogue and a new store
});

test('dist is a link to a build kept beside it', async () => {
  assert.ok((await lstat(dist)).isSymbolicLink(), 'dist is a symbolic link');
  assert.is(dirname(first.target), join(root, '.dist.builds'));
  assert.ok(first.files.includes('v1/lds/_catalog') && first.files.length > 50, `${first.files.length} files`);
});

for (const step of ['store-switched', 'dist-written', 'dist-linked'] as const) {
  test(`a build killed at ${step} leaves the previous build served, whole, with its own store`, async () => {
    const run = await runBuild(srcB, dist, store, { LDS_TEST_BUILD_CRASH_AT: step });
    assert.is(run.signal, 'SIGKILL', `the build was killed at ${step} (exit ${run.code}: ${run.stderr.slice(-400)})`);
    const now = await served();
    assert.is(now.target, first.target, 'dist still names the previous build');
    assert.is(now.version, first.version);
    assert.equal(now.files, first.files, 'every file of the previous build is there');
    // A service started now serves that build with the store it was built against, even after
    // CURRENT moved on to the new store.
    const current = (await readFile(join(store, 'CURRENT'), 'utf8')).trim();
    assert.is.not(current, first.storeVersion, 'CURRENT already names the new store (switched before dist/)');
    const fx = { root, dist, store, catalogue: JSON.parse(await readFile(join(dist, 'v1/lds/_catalog'), 'utf8')) };
    const srv = await startTestServer(fx);
    try {
      const q = await postJson(`${srv.base}/lds/draw`, { product_id: 'svc-health-eu', query: 'covid', limit: 1 });
      assert.is(q.status, 402);
      const quote = (await q.json()) as { catalogue_version: string; store_version: string };
      assert.is(quote.catalogue_version, first.version);
      assert.is(quote.store_version, first.storeVersion, 'the store dist/ was built against, not the one CURRENT names');
    } finally {
      await srv.close();
    }
  });
}

test('a build killed right after the switch serves the new build, and keeps the previous one', async () => {
  const run = await runBuild(srcB, dist, store, { LDS_TEST_BUILD_CRASH_AT: 'dist-switched' });
  assert.is(run.signal, 'SIGKILL');
  const now = await served();
  assert.is.not(now.version, first.version, 'the new catalogue is served');
  assert.is(now.storeVersion, (await readFile(join(store, 'CURRENT'), 'utf8')).trim(), 'with the store CURRENT names');
  assert.ok((await lstat(first.target)).isDirectory(), 'the previous build is kept');
});

test('the next build removes what the killed builds left, and keeps two builds', async () => {
  const builds = join(root, '.dist.builds');
  const before = await readdir(builds);
  assert.ok(before.some((n) => n.startsWith('.tmp-')) || before.length > 2, `leftovers to clean: ${before.join(', ')}`);
  await buildInto(srcB, dist, store);
  const after = await readdir(builds);
  assert.equal(after.filter((n) => n.startsWith('.')), [], 'no temporary trees left');
  assert.is(after.length, 2, `the served build and the previous one: ${after.join(', ')}`);
  assert.ok(after.includes(basename(await readlink(dist))));
  assert.equal((await readdir(root)).filter((n) => n.startsWith('.dist.tmp-')), [], 'no temporary links left');
});

test.run();
