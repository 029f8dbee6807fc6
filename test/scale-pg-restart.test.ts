// @ledger-backends: postgres
// PostgreSQL restarted under load: two instances keep serving a stream of paid draws while their
// database stops and comes back. While it is down every money request is answered with a clear 503
// problem (never a 500, never a stack); no entry is lost or doubled; the instances recover by
// themselves when it returns; and each quote that met a 503 is paid exactly once when resent.
// This suite starts its own PostgreSQL (it must stop it), whatever LDS_TEST_PG_URL says.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { sharedSecrets, startInstances, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerRecords } from './helpers/ledgers.ts';
import { freshDatabase, startEmbeddedPostgres, type PgServer } from './helpers/pg.ts';
import { cli } from './helpers/build.ts';
import { Progress } from './helpers/progress.ts';
import { balanceOf, bearer, buildFixture, cents, postJson, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';

const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let refs: string[];
let pg: PgServer;
let ledgerUrl: string;
let inst: Instance[] = [];

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  pg = await startEmbeddedPostgres();
  ledgerUrl = await freshDatabase(pg);
  // A short connection timeout, so a request waits at most that long for a database that is down.
  const env = { LDS_LEDGER_URL: ledgerUrl, LDS_PG_STATEMENT_TIMEOUT_MS: '2000', ...sharedSecrets() };
  inst = await startInstances(fx, env, 2);
});

test.after(async () => {
  await Promise.all(inst.map(stopInstance));
  await pg?.stop();
});

interface Outcome {
  quote_id: string;
  units: string[];
  status: number;
  /** The phase in which the answer came. */
  phase: 'before' | 'down' | 'after';
  drawId?: string;
  problem?: { type: string; status: number; detail: string };
}

test('a restart under load: 503 problems while it is down, no lost or doubled entry, recovery by itself', async () => {
  const token = await topUp(inst[0].base, '500.00');
  const start = cents(await balanceOf(inst[1].base, token));
  const outcomes: Outcome[] = [];
  let phase: 'before' | 'down' | 'after' = 'before';
  const seenIn = { before: new Set<number>(), down: new Set<number>(), after: new Set<number>() };
  let n = 0;
  let stop = false;
  const progress = new Progress();

  // Four buyers' agents, each quoting and paying distinct unit sets, alternating instances.
  const worker = async (w: number) => {
    while (!stop) {
      const i = n++;
      const base = inst[i % 2].base;
      const units = [refs[i % refs.length], refs[(i * 7 + 3) % refs.length]].filter((u, k, a) => a.indexOf(u) === k);
      const q = await postJson(`${base}/lds/draw`, { product_id: PRODUCT, units });
      assert.is(q.status, 402, 'a quote needs no database');
      const { quote_id } = (await q.json()) as { quote_id: string };
      const res = await postJson(`${base}/lds/draw`, { product_id: PRODUCT, units, quote_id }, bearer(token));
      const body = (await res.json()) as any;
      seenIn[phase].add(res.status);
      outcomes.push({ quote_id, units, status: res.status, phase, drawId: body.receipt?.draw_id, problem: res.status === 200 ? undefined : body });
      progress.signal();
      if (res.status === 503) assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
      void w;
    }
  };
  const workers = [0, 1, 2, 3].map(worker);
  // Paid draws before the outage, 503s during it, paid draws again after it: each phase runs until
  // the buyers have seen what it is about (event counts, not time).
  const paidIn = (p: typeof phase) => () => outcomes.filter((o) => o.phase === p && o.status === 200).length >= 8;
  await progress.until(paidIn('before'), 'paid draws before the outage');
  phase = 'down';
  await pg.stopOnly!();
  await progress.until(() => outcomes.filter((o) => o.phase === 'down' && o.status === 503).length >= 8, '503 answers while PostgreSQL is down');
  // While it is down: balance reads and top-ups are 503 problems too.
  const bal = await fetch(`${inst[0].base}/lds/balance`, { headers: bearer(token) });
  assert.is(bal.status, 503);
  assert.is(((await bal.json()) as any).status, 503);
  await pg.startOnly!();
  phase = 'after';
  await progress.until(() => paidIn('after')() && outcomes.slice(-8).every((o) => o.status === 200), 'paid draws after the restart');
  stop = true;
  await Promise.all(workers);

  const statuses = new Set(outcomes.map((o) => o.status));
  assert.ok(!statuses.has(500), 'never a 500');
  for (const s of statuses) assert.ok(s === 200 || s === 503, `only 200 or 503, saw ${s}: ${JSON.stringify(outcomes.find((o) => o.status === s))}`);
  assert.ok(seenIn.down.has(503), 'requests during the outage were refused with 503');
  for (const o of outcomes.filter((x) => x.status === 503)) {
    assert.is(o.problem!.status, 503);
    assert.ok(o.problem!.type.startsWith(PROBLEM_BASE), `a problem type of the served build: ${o.problem!.type}`);
    assert.not.match(o.problem!.detail, /at \S+ \(|Error:|ECONNREFUSED/, 'no internals in the detail');
  }
  // Recovered by itself: the last draws after the restart were paid.
  const tail = outcomes.slice(-8);
  assert.ok(tail.every((o) => o.status === 200), `recovered: ${tail.map((o) => o.status).join(' ')}`);
  assert.ok(seenIn.after.has(200));

  // Each quote that met a 503 is paid exactly once when the buyer resends it.
  const refused = outcomes.filter((o) => o.status === 503);
  console.log(`# ${outcomes.length} paid draws under load, ${refused.length} answered 503 while PostgreSQL was down`);
  for (const o of refused) {
    const res = await postJson(`${inst[0].base}/lds/draw`, { product_id: PRODUCT, units: o.units, quote_id: o.quote_id }, bearer(token));
    assert.is(res.status, 200);
    o.drawId = ((await res.json()) as any).receipt.draw_id;
  }
  // Nothing lost, nothing doubled: one draw per quote, the one the client was told, and the money adds up.
  const records = await ledgerRecords({ ledgerDir: '', ledgerUrl });
  const draws = [...records.entries()].filter(([k]) => k.startsWith('d:')).map(([, v]) => v as { draw_id: string; quote_id: string; amount_cents: number });
  assert.is(draws.length, outcomes.length);
  const byQuote = new Map(draws.map((d) => [d.quote_id, d]));
  for (const o of outcomes) assert.is(byQuote.get(o.quote_id)?.draw_id, o.drawId, 'the draw the client was told is in the ledger');
  const spent = draws.reduce((s, d) => s + d.amount_cents, 0);
  assert.is(cents(await balanceOf(inst[1].base, token)), start - spent);
  const v = cli(['ledger', 'verify', '--url', ledgerUrl]);
  assert.is(v.code, 0, v.stderr + v.stdout);
});

test.run();
