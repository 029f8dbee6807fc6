// @ledger-backends: level postgres
// Publishing a new build to a running `lds serve` (issue 21, the service half): a real process
// under a stream of quotes, paid draws and catalogue reads; a second build (a new draw price for
// one product, and some of its units gone, so both dist/ and the unit store change) is built with
// the real CLI into the very dist/ and store root the service reads. New quotes carry the new
// versions and price within seconds; every quote issued before the switch is paid at its old price
// with exactly its old units (units the new store no longer has included), no request fails or gets
// a 5xx, the balance moves by exactly what was quoted and `ledger verify` is clean. Then a corrupt
// store named by CURRENT is refused: logged, counted in lds_release_refused_total, /readyz still
// ready on the serving version, which keeps serving; SIGHUP retries it (refused again).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { Level } from 'level';
import { join } from 'node:path';
import type { LedgerSettings } from '../payments/ledger/open.ts';
import { CATALOG_SRC, cliAsync } from './helpers/build.ts';
import { sharedSecrets, startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { BACKEND, ledgerEnv, newLedgerSettings } from './helpers/ledgers.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type Fixture } from './helpers/service-harness.ts';
import { PRODUCT, buildInto, centsOf, copyBuild, lastEcdcRefs, metric, readyz, releaseChecks, secondVersionSrc, waitReady } from './helpers/releases.ts';
import { Progress } from './helpers/progress.ts';

const METRICS = randomBytes(32).toString('hex'); // the scrape token (GET /metrics)
const V2_PRICE_MICROS = 25_000; // v1: 10_000 (catalog-src)
const DROPPED = 12; // the last ECDC rows, gone in v2

let fx: Fixture;
let own: { dist: string; store: string };
let ledger: LedgerSettings;
let inst: Instance;
let stable: string[]; // v1 refs of PRODUCT that v2 keeps
let dropped: string[]; // v1 refs of PRODUCT that v2 drops
let v2Src: string;

const at = (s: LedgerSettings) => (s.ledgerUrl ? ['--url', s.ledgerUrl] : ['--dir', s.ledgerDir]);
/** Draw price in cents for n units at a rate in micro-euros: rounded up to the cent, at least 1 (docs/decisions.md, "Prices"). */
const priceCents = (n: number, micros: number) => Math.max(1, Math.ceil((n * micros) / 10_000));

test.before(async () => {
  fx = await buildFixture();
  const refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  dropped = await lastEcdcRefs(CATALOG_SRC, DROPPED);
  for (const r of dropped) assert.ok(refs.includes(r), `${r} is a v1 unit of ${PRODUCT}`);
  stable = refs.filter((r) => !dropped.includes(r));
  v2Src = await secondVersionSrc(V2_PRICE_MICROS, DROPPED);
  own = await copyBuild(fx.dist, fx.store, await mkdtemp(join(fx.root, 'live-')));
  ledger = await newLedgerSettings(BACKEND);
  inst = await startInstance(fx, {
    ...ledgerEnv(ledger),
    ...sharedSecrets(),
    LDS_DIST_DIR: own.dist,
    LDS_STORE_DIR: own.store,
    LDS_RELEASE_CHECK_MS: '250',
    LDS_QUOTE_TTL_SECONDS: '900',
    LDS_METRICS_TOKEN: METRICS,
    LOG_LEVEL: 'info',
  });
});

test.after(async () => {
  if (inst) await stopInstance(inst);
});

interface QuoteBody {
  quote_id: string;
  unit_count: number;
  amount: string;
  resolved_units: string[];
  store_version: string;
  catalogue_version: string;
  pay_with: Record<string, unknown>;
}

async function quote(body: Record<string, unknown>): Promise<QuoteBody> {
  const res = await postJson(`${inst.base}/lds/draw`, { product_id: PRODUCT, ...body });
  const json = (await res.json()) as QuoteBody;
  assert.is(res.status, 402, JSON.stringify(json));
  return json;
}

async function pay(q: QuoteBody, token: string): Promise<{ status: number; body: any }> {
  const res = await postJson(`${inst.base}/lds/draw`, q.pay_with, bearer(token));
  return { status: res.status, body: await res.json() };
}

let v1: { catalogue_version: string; store_version: string };
let v2: { catalogue_version: string; store_version: string };

test(`${BACKEND}: a new build published under load: new quotes switch within seconds, old quotes pay their old price and units`, async () => {
  const ready1 = await readyz(inst.base);
  assert.is(ready1.status, 200);
  v1 = { catalogue_version: ready1.body.catalogue_version!, store_version: ready1.body.store_version! };
  assert.match(v1.store_version, /^store-[0-9a-f]{12}$/);
  const token = await topUp(inst.base, '50.00');
  const opening = centsOf(await balanceOf(inst.base, token));

  // Quotes held by buyers at publish time: units v2 drops, a mix, a query (BM25 over another store
  // may rank differently), a single unit.
  const outstanding = [
    await quote({ units: dropped.slice(0, 4) }),
    await quote({ units: [...dropped.slice(4, 6), stable[0], stable[1]] }),
    await quote({ query: 'covid cases Austria', limit: 5 }),
    await quote({ units: [stable[10]] }),
  ];
  for (const q of outstanding) {
    assert.is(q.store_version, v1.store_version);
    assert.is(q.catalogue_version, v1.catalogue_version);
    assert.is(centsOf(q.amount), priceCents(q.unit_count, 10_000));
  }

  // The stream: quote + pay + a catalogue read, one after another, until stopped (bounded).
  const statuses: number[] = [];
  const paid: { q: QuoteBody; body: any }[] = [];
  let stop = false;
  const progress = new Progress();
  const stream = (async () => {
    for (let i = 0; !stop && i < 3000; i++) {
      const units = [stable[(i * 7) % stable.length], stable[(i * 7 + 3) % stable.length]];
      const res = await postJson(`${inst.base}/lds/draw`, { product_id: PRODUCT, units });
      statuses.push(res.status);
      const q = (await res.json()) as QuoteBody;
      if (res.status !== 402) continue;
      const p = await pay(q, token);
      statuses.push(p.status);
      if (p.status === 200) paid.push({ q, body: p.body });
      progress.signal();
      const cat = await fetch(`${inst.base}/lds/_catalog`);
      statuses.push(cat.status);
      await cat.arrayBuffer();
    }
  })();
  try {
    await progress.until(() => paid.length >= 3, 'paid draws of the serving build before the publish');
    await buildInto(v2Src, own.dist, own.store);
    const built = Date.now();
    const ready2 = await waitReady(inst.base, (r) => r.body.store_version !== v1.store_version, 60_000);
    const switchSeconds = (ready2.at - built) / 1000;
    console.log(`# ${BACKEND}: serving the new build ${switchSeconds.toFixed(2)} s after the build finished`);
    assert.ok(switchSeconds < 15, `switched ${switchSeconds} s after the build`);
    assert.is(ready2.status, 200);
    v2 = { catalogue_version: ready2.body.catalogue_version!, store_version: ready2.body.store_version! };
    assert.is.not(v2.catalogue_version, v1.catalogue_version);

    // The stream runs on until it has paid quotes of the new version too.
    await progress.until(() => paid.some((p) => p.q.store_version === v2.store_version), 'a paid quote of the new build', 60_000);
  } catch (err) {
    console.error(inst.log().slice(-4000));
    throw err;
  } finally {
    stop = true;
    await stream;
  }

  assert.ok(statuses.length > 0);
  assert.equal(statuses.filter((s) => s !== 200 && s !== 402), [], 'every request of the stream answered 200 or 402');
  const before = paid.filter((p) => p.q.store_version === v1.store_version);
  const after = paid.filter((p) => p.q.store_version === v2.store_version);
  assert.ok(before.length > 0 && after.length > 0, `the stream paid quotes of both versions (${before.length}, ${after.length})`);
  for (const { q, body } of paid) {
    const rate = q.catalogue_version === v1.catalogue_version ? 10_000 : V2_PRICE_MICROS;
    assert.is(centsOf(q.amount), priceCents(q.unit_count, rate));
    assert.is(body.receipt.amount, q.amount);
    assert.is(body.receipt.catalogue_version, q.catalogue_version);
  }

  // A new quote: the new version and the new price; the dropped units are gone.
  const fresh = await quote({ units: [stable[0], stable[1]] });
  assert.is(fresh.store_version, v2.store_version);
  assert.is(fresh.catalogue_version, v2.catalogue_version);
  assert.is(centsOf(fresh.amount), priceCents(2, V2_PRICE_MICROS));
  const gone = await postJson(`${inst.base}/lds/draw`, { product_id: PRODUCT, units: dropped.slice(0, 4) });
  assert.is(gone.status, 404);
  assert.is(((await gone.json()) as { type: string }).type, PROBLEM_BASE + 'unknown-units');

  // Every quote issued before the switch: its old price, exactly its old units.
  let outstandingCents = 0;
  for (const q of outstanding) {
    const p = await pay(q, token);
    assert.is(p.status, 200, JSON.stringify(p.body));
    assert.equal(p.body.units.map((u: { ref: string }) => u.ref).sort(), [...q.resolved_units].sort());
    assert.is(p.body.receipt.amount, q.amount);
    assert.is(p.body.receipt.unit_count, q.unit_count);
    assert.is(p.body.receipt.catalogue_version, v1.catalogue_version);
    outstandingCents += centsOf(q.amount);
    // Paying again replays the same draw, nothing debited.
    const again = await pay(q, token);
    assert.is(again.status, 200);
    assert.is(again.body.receipt.draw_id, p.body.receipt.draw_id);
  }

  const spent = paid.reduce((s, p) => s + centsOf(p.q.amount), 0) + outstandingCents;
  assert.is(centsOf(await balanceOf(inst.base, token)), opening - spent);
  assert.is(await metric(inst.base, METRICS, 'lds_release_switches_total'), 1);
  assert.is(await metric(inst.base, METRICS, 'lds_releases_open'), 2, 'the previous release stays open for its quotes');
  assert.is(await metric(inst.base, METRICS, 'lds_release_info', { store_version: v2.store_version, catalogue_version: v2.catalogue_version }), 1);

  const v = await cliAsync(['ledger', 'verify', ...at(ledger)]);
  assert.is(v.code, 0, v.stderr + v.stdout);
  assert.match(v.stdout, /clean/);
});

/** Replaces CURRENT atomically (temp file + rename), as a build does. */
async function setCurrent(version: string): Promise<void> {
  const tmp = join(own.store, `.tmp-test-current-${process.pid}`);
  await writeFile(tmp, version + '\n');
  await rename(tmp, join(own.store, 'CURRENT'));
}

test(`${BACKEND}: a corrupt store named by CURRENT is refused; the serving version keeps serving (SIGHUP retries it)`, async () => {
  assert.ok(v2, 'runs after the publish test');
  const refused = () => metric(inst.base, METRICS, 'lds_release_refused_total', { reason: 'store' });
  const before = await refused();
  // A store folder whose LevelDB files are garbage (a copy that went wrong).
  const bad = 'store-deadbeef0000';
  await mkdir(join(own.store, bad));
  await writeFile(join(own.store, bad, 'CURRENT'), 'MANIFEST-000009\n');
  await writeFile(join(own.store, bad, 'MANIFEST-000009'), randomBytes(4096));
  await setCurrent(bad);

  const deadline = Date.now() + 30_000;
  while ((await refused()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  assert.is(await refused(), before + 1, 'the corrupt store was refused once');
  const r = await readyz(inst.base);
  assert.is(r.status, 200);
  assert.is(r.body.store_version, v2.store_version);
  assert.is(r.body.catalogue_version, v2.catalogue_version);
  assert.match(inst.log(), /new build refused: unit store store-deadbeef0000/);

  // Still serving: a quote of the serving version, paid.
  const token = await topUp(inst.base, '5.00');
  const q = await quote({ units: [stable[2]] });
  assert.is(q.store_version, v2.store_version);
  assert.is((await pay(q, token)).status, 200);

  // Not retried every interval; SIGHUP retries it at once.
  await releaseChecks(inst.base, METRICS, 2);
  assert.is(await refused(), before + 1, 'a refused build is not retried until something changes');
  inst.proc.kill('SIGHUP');
  const hup = Date.now() + 30_000;
  while ((await refused()) === before + 1 && Date.now() < hup) await new Promise((res) => setTimeout(res, 200));
  assert.is(await refused(), before + 2, 'SIGHUP retried the refused build');
  assert.is((await readyz(inst.base)).body.store_version, v2.store_version);

  // CURRENT back on the serving store: nothing to switch.
  await setCurrent(v2.store_version);
  await releaseChecks(inst.base, METRICS, 2);
  assert.is(await metric(inst.base, METRICS, 'lds_release_switches_total'), 1);
  assert.is((await readyz(inst.base)).status, 200);
  assert.ok(inst.proc.exitCode === null, 'the service is still running');
});

test(`${BACKEND}: the previous store is closed once its quotes have expired; a quote of it then gets a fresh quote`, async () => {
  assert.ok(v2, 'runs after the publish test');
  await stopInstance(inst); // its stores are copied below: never copy a LevelDB a process has open
  // In-process, with a clock the test moves: v1 served, a v1 quote, then v2 shipped (store, CURRENT, dist/).
  const mine = await copyBuild(fx.dist, fx.store, await mkdtemp(join(fx.root, 'clock-')));
  let skew = 0;
  const srv = await startTestServer({ ...fx, dist: mine.dist, store: mine.store }, { now: () => Date.now() + skew, env: { LDS_RELEASE_CHECK_MS: '0', LDS_QUOTE_TTL_SECONDS: '60' } });
  try {
    const token = await topUp(srv.base, '5.00');
    const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: dropped.slice(0, 2) });
    assert.is(res.status, 402);
    const q = (await res.json()) as QuoteBody;
    assert.is(q.store_version, v1.store_version);
    const q2 = await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: [stable[3], stable[4]] })).json() as QuoteBody;
    assert.is(q2.store_version, v1.store_version);

    await cp(join(own.store, v2.store_version), join(mine.store, v2.store_version), { recursive: true });
    await writeFile(join(mine.store, '.tmp-current'), v2.store_version + '\n');
    await rename(join(mine.store, '.tmp-current'), join(mine.store, 'CURRENT'));
    assert.is(await srv.releases.check(), 'waiting', 'CURRENT switched, dist/ not yet: keep serving v1');
    await cp(own.dist, `${mine.dist}.new`, { recursive: true, dereference: true });
    await rename(mine.dist, `${mine.dist}.old`);
    await rename(`${mine.dist}.new`, mine.dist);
    await rm(`${mine.dist}.old`, { recursive: true });
    assert.is(await srv.releases.check(), 'switched');
    assert.equal(srv.releases.openVersions(), [v2.store_version, v1.store_version]);

    // The quote lifetime passes: the previous release closes (its LevelDB lock is released).
    skew += 62_000;
    assert.is(await srv.releases.check(), 'unchanged');
    assert.equal(srv.releases.openVersions(), [v2.store_version]);
    const v1Dir = join(mine.store, v1.store_version);
    let reopened = false;
    for (let i = 0; i < 50 && !reopened; i++) {
      const db = new Level(v1Dir, { createIfMissing: false });
      reopened = await db.open().then(() => true, () => false);
      await db.close();
      if (!reopened) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(reopened, 'the previous store was closed');

    // Its quote has expired: a fresh quote of the serving version, at its price; nothing charged.
    const late = await postJson(`${srv.base}/lds/draw`, q.pay_with, bearer(token));
    assert.is(late.status, 404, 'the units are gone from the serving store');
    assert.is(((await late.json()) as { type: string }).type, PROBLEM_BASE + 'unknown-units');
    const late2 = await postJson(`${srv.base}/lds/draw`, q2.pay_with, bearer(token));
    assert.is(late2.status, 402);
    const expired = (await late2.json()) as { type: string; quote: QuoteBody };
    assert.is(expired.type, PROBLEM_BASE + 'quote-expired');
    assert.is(expired.quote.store_version, v2.store_version);
    assert.is(centsOf(expired.quote.amount), priceCents(2, V2_PRICE_MICROS));
    assert.is(await balanceOf(srv.base, token), '5.00');
  } finally {
    await srv.close();
  }
});

test.run();
