// Issue 50 item 14, on a real `lds serve` that watches for new builds (LDS_RELEASE_CHECK_MS, as
// operators run it): after one refused build, the next correct build must not count as refused.
// A build switches the unit store's CURRENT first and dist/ last (generator/build.ts); between the
// two the service saw the new store beside the dist/ it had just refused, refused that pair again
// ("new build refused", lds_release_refused_total 2) and the documented alert fired on a good
// publish. Here the build is stopped exactly between the two (LDS_TEST_BUILD_CRASH_AT=store-switched,
// the hook test/build-crash uses), checked, and then the correct build is run whole.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { copyBuild, metric, readyz, releaseChecks, runBuildWith, secondVersionSrc, waitReady } from './helpers/releases.ts';
import { CATALOG_SRC } from './helpers/build.ts';
import { buildFixture, postJson, type Fixture } from './helpers/service-harness.ts';

const OPERATOR = randomBytes(32).toString('hex');
const METRICS = randomBytes(32).toString('hex'); // the scrape token: GET /metrics takes only it
const SERVED = 'http://127.0.0.1:8080'; // the fixture's addresses (a local build)
const OTHER = 'http://127.0.0.1:18412'; // a build for another port: refused (base_url)

let fx: Fixture;
let own: { dist: string; store: string };
let inst: Instance;
let v2Src: string;

const refusedTotal = () => metric(inst.base, METRICS, 'lds_release_refused_total');
const refusedLines = () => inst.log().split('\n').filter((l) => l.includes('new build refused')).length;
const build = (src: string, origin: string, env: Record<string, string> = {}) =>
  runBuildWith(['--src', src, '--out', own.dist, '--store-root', own.store, '--local', origin, '--source-date-epoch', '1767225600'], env);

test.before(async () => {
  fx = await buildFixture();
  own = await copyBuild(fx.dist, fx.store, await mkdtemp(join(fx.root, 'refused-')));
  v2Src = await secondVersionSrc(25_000, 12); // another price and fewer rows: a new store version too
  inst = await startInstance(fx, { LDS_DIST_DIR: own.dist, LDS_STORE_DIR: own.store, LDS_RELEASE_CHECK_MS: '200', LDS_OPERATOR_TOKEN: OPERATOR, LDS_METRICS_TOKEN: METRICS, LOG_LEVEL: 'info' });
});

test.after(async () => {
  if (inst) await stopInstance(inst);
});

test('a refused build, then a correct one: refused counted once, the correct one served', async () => {
  const v1 = (await readyz(inst.base)).body;
  // 1. A build for another port (as a newcomer makes one): refused once.
  const r1 = await build(CATALOG_SRC, OTHER);
  assert.is(r1.code, 0, r1.stderr);
  const deadline = Date.now() + 30_000;
  while ((await refusedTotal()) < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.is(await refusedTotal(), 1, 'the build for another port was refused');
  assert.is(refusedLines(), 1);

  // 2. The correct build, stopped after it switched CURRENT and before dist/: the new store beside
  //    the refused dist/ is a build under way, not a second refused build.
  const cut = await build(v2Src, SERVED, { LDS_TEST_BUILD_CRASH_AT: 'store-switched' });
  assert.is(cut.signal, 'SIGKILL', `the build stopped at its hook: ${cut.stderr}`);
  const current = (await readFile(join(own.store, 'CURRENT'), 'utf8')).trim();
  assert.is.not(current, v1.store_version, 'CURRENT names the new store');
  await releaseChecks(inst.base, METRICS, 3);
  assert.is(await refusedTotal(), 1, 'the new store beside the refused dist/ is not another refusal');
  assert.is(refusedLines(), 1, inst.log().slice(-3000));
  assert.is((await readyz(inst.base)).body.store_version, v1.store_version, 'still serving the first release');

  // 3. The correct build, whole: served, and still one refusal.
  const r2 = await build(v2Src, SERVED);
  assert.is(r2.code, 0, r2.stderr);
  const ready = await waitReady(inst.base, (r) => r.body.store_version === current, 30_000);
  assert.is.not(ready.body.catalogue_version, v1.catalogue_version);
  assert.is(await refusedTotal(), 1, 'lds_release_refused_total stays 1 after a good publish');
  assert.is(refusedLines(), 1, inst.log().slice(-3000));
  assert.match(inst.log(), /serving a newly published build/);
  // The good build's price is what is quoted (v2: 0.025 EUR a unit).
  const q = await postJson(`${inst.base}/lds/draw`, { product_id: 'svc-health-eu', query: 'covid', limit: 2 });
  const body = (await q.json()) as { store_version: string; catalogue_version: string };
  assert.is(q.status, 402);
  assert.is(body.store_version, current);
  assert.is(body.catalogue_version, ready.body.catalogue_version);
});

test.run();
