// @ledger-backends: postgres  (several instances need the PostgreSQL ledger)
// Stateless instances: two and three `lds serve` processes, each with its own port and var dir,
// share one PostgreSQL ledger and the secrets. Quotes made at one instance are paid at another, an
// MPP challenge issued by one is redeemed at another, balances and statements agree everywhere, and
// neither concurrency, duplicates across instances nor a killed instance can overdraw, double-debit
// or lose a paid answer. A token rotated at one instance is refused at every other at once.
// `ledger verify` runs while the instances serve.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { K } from '../payments/ledger/records.ts';
import { verifyLedgerAt } from '../payments/ledger/ops.ts';
import { formatViolations } from '../payments/ledger/verify.ts';
import type { LedgerSettings } from '../payments/ledger/open.ts';
import { hashToken } from '../payments/tokens.ts';
import { payTopup } from '../payments/topup/client.ts';
import { cli } from './helpers/build.ts';
import { exited, sharedSecrets, startInstance, startInstances, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerEnv, ledgerRecords, newLedgerSettings } from './helpers/ledgers.ts';
import { Progress } from './helpers/progress.ts';
import { balanceOf, bearer, buildFixture, cents, mppxClient, postJson, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';

const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let refs: string[];
let ledger: LedgerSettings;
let env: Record<string, string>;
let inst: Instance[] = [];

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  // A database without the schema: the three instances start at once and migrate it together
  // (payments/ledger/postgres/migrations.ts: a version another instance applied first is skipped).
  ledger = await newLedgerSettings('postgres', { emptyDatabase: true });
  // 200 paid draws at once on one balance queue on its row lock: this file is about what they
  // decide, not how long they may wait, so its bounds are generous (test/ha-bounded-waits has the
  // bounds); with the defaults (5 s, 4 s) a loaded machine answered some of them 503, nothing charged.
  env = { ...ledgerEnv(ledger), ...sharedSecrets(), LDS_PG_QUERY_TIMEOUT_MS: '60000', LDS_PG_STATEMENT_TIMEOUT_MS: '50000' };
  inst = await startInstances(fx, env, 3);
});

test.after(async () => {
  await Promise.all(inst.map(stopInstance));
});

const quote = async (base: string, units: string[]) => {
  const res = await postJson(`${base}/lds/draw`, { product_id: PRODUCT, units });
  assert.is(res.status, 402);
  return (await res.json()) as { quote_id: string; amount: string };
};

/** `ledger verify` (the CLI, as an operator runs it) on the live database. */
function verifyWhileServing(): void {
  const r = cli(['ledger', 'verify', '--url', ledger.ledgerUrl!]);
  assert.is(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /clean/);
}

for (const n of [2, 3]) {
  test(`${n} instances: 200 concurrent paid draws of distinct quotes, each paid at another instance than quoted, against a balance that covers only some`, async () => {
    const live = inst.slice(0, n);
    const token = await topUp(live[0].base, '10.00');
    // 200 distinct unit lists of 1..13 units; every quote made at instance i and paid at i+1
    const jobs = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const k = 1 + ((i * 7) % 13);
        const start = (i * 31) % (refs.length - k);
        const units = refs.slice(start, start + k);
        const at = live[i % n];
        const q = await quote(at.base, units);
        return { units, q, payAt: live[(i + 1) % n] };
      }),
    );
    const distinct = new Set(jobs.map((j) => j.q.quote_id));
    assert.is(distinct.size, 200);
    const results = await Promise.all(
      jobs.map(async (j) => {
        const res = await postJson(`${j.payAt.base}/lds/draw`, { product_id: PRODUCT, units: j.units, quote_id: j.q.quote_id }, bearer(token));
        return { status: res.status, body: (await res.json()) as any, amount: cents(j.q.amount) };
      }),
    );
    const paid = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    assert.is(paid.length + refused.length, 200, JSON.stringify(results.find((r) => r.status !== 200 && r.status !== 402)?.body));
    assert.ok(paid.length > 0 && refused.length > 0, `${paid.length} paid, ${refused.length} refused`);
    for (const r of refused) assert.match(r.body.type, /insufficient-balance$/);
    const spent = paid.reduce((s, r) => s + r.amount, 0);
    // every instance reports the same balance and statement
    const views = await Promise.all(live.map(async (i) => (await fetch(`${i.base}/lds/balance`, { headers: bearer(token) })).json() as Promise<any>));
    for (const v of views) assert.equal(v, views[0]);
    const left = cents(views[0].balance);
    assert.ok(left >= 0);
    assert.is(left + spent, 1000, 'money conserved to the cent');
    assert.is(new Set(paid.map((r) => r.body.receipt.draw_id)).size, paid.length);
    verifyWhileServing();
  });
}

test('30 concurrent submissions of one quote across 3 instances: exactly one debit, every 200 carries the same draw id', async () => {
  const token = await topUp(inst[1].base, '5.00');
  const units = refs.slice(0, 4);
  const q = await quote(inst[2].base, units);
  const results = await Promise.all(
    Array.from({ length: 30 }, async (_, i) => {
      const res = await postJson(`${inst[i % 3].base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
      return { status: res.status, body: (await res.json()) as any };
    }),
  );
  assert.ok(results.every((r) => r.status === 200), JSON.stringify(results.find((r) => r.status !== 200)));
  assert.is(new Set(results.map((r) => r.body.receipt.draw_id)).size, 1);
  for (const i of inst) assert.is(cents(await balanceOf(i.base, token)), 500 - cents(q.amount));
  const records = await ledgerRecords(ledger);
  const debits = [...records].filter(([k, v]) => k.startsWith('d:') && v.quote_id === q.quote_id);
  assert.is(debits.length, 1);
  verifyWhileServing();
});

test('one MPP challenge issued by one instance, its credential sent to two others at once: credited once', async () => {
  const first = await postJson(`${inst[0].base}/lds/balance/topup`, { amount: '7.00', currency: 'EUR' });
  assert.is(first.status, 402);
  const credential = await mppxClient('spt_test_two_instances').createCredential(first);
  const send = (i: Instance) => postJson(`${i.base}/lds/balance/topup`, { amount: '7.00', currency: 'EUR' }, { Authorization: credential });
  const [a, b] = await Promise.all([send(inst[1]), send(inst[2])]);
  const bodies = [(await a.json()) as any, (await b.json()) as any];
  const statuses = [a.status, b.status].sort();
  assert.ok(statuses.includes(200), JSON.stringify(bodies));
  // the other one was either told it is in progress (409), or answered again with the same token
  assert.ok(statuses.every((s) => s === 200 || s === 409), JSON.stringify(bodies));
  const tokens = new Set(bodies.filter((x) => x.balance_token).map((x) => x.balance_token));
  assert.is(tokens.size, 1);
  const token = [...tokens][0] as string;
  for (const i of inst) assert.is(await balanceOf(i.base, token), '7.00');
  // resent later to the third instance: the same answer, nothing credited again
  const again = await send(inst[0]);
  assert.is(again.status, 200);
  assert.is(((await again.json()) as any).balance_token, token);
  const records = await ledgerRecords(ledger);
  assert.is([...records].filter(([k, v]) => k.startsWith('t:') && v.token_hash === hashToken(token)).length, 1);
  verifyWhileServing();
});

test('a token rotated at one instance while draws with it run at the others: each draw is wholly before (200) or after (401) it, money adds up, and every instance refuses the old token and takes the new one at once', async () => {
  const token = await topUp(inst[0].base, '10.00', 'spt_test_rotation_race');
  const jobs = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const units = refs.slice(i % (refs.length - 2), (i % (refs.length - 2)) + 2);
      return { units, q: await quote(inst[i % 3].base, units), at: inst[1 + (i % 2)] };
    }),
  );
  const draws = jobs.map(async (j) => {
    const res = await postJson(`${j.at.base}/lds/draw`, { product_id: PRODUCT, units: j.units, quote_id: j.q.quote_id }, bearer(token));
    return { status: res.status, body: (await res.json()) as any, amount: cents(j.q.amount), quoteId: j.q.quote_id };
  });
  const rotation = (async () => {
    await new Promise((r) => setTimeout(r, 5)); // land among the draws
    const res = await postJson(`${inst[0].base}/lds/balance/token`, {}, bearer(token));
    return { status: res.status, body: (await res.json()) as any };
  })();
  const [rotated, ...results] = await Promise.all([rotation, ...draws]);
  assert.is(rotated.status, 200, JSON.stringify(rotated.body));
  const fresh = rotated.body.balance_token as string;
  assert.match(rotated.body.balance, /^\d+\.\d\d$/); // the amount at the moment of the rotation, between the draws
  const paid = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 401);
  assert.is(paid.length + refused.length, 40, JSON.stringify(results.find((r) => r.status !== 200 && r.status !== 401)?.body));
  for (const r of refused) assert.match(r.body.type, /balance-token-revoked$/);
  // the ledger holds exactly the draws answered 200, all on the balance's own id
  const records = await ledgerRecords(ledger);
  const quoteIds = new Set(jobs.map((j) => j.q.quote_id));
  const debits = [...records].filter(([k, v]) => k.startsWith('d:') && quoteIds.has(v.quote_id));
  assert.equal(debits.map(([, v]) => v.quote_id).sort(), paid.map((r) => r.quoteId).sort());
  for (const [, v] of debits) assert.is(v.token_hash, hashToken(token));
  const spent = paid.reduce((s, r) => s + r.amount, 0);
  // every instance: the old token refused, for a draw and for the balance; the new one shows the same balance
  for (const i of inst) {
    assert.is((await fetch(`${i.base}/lds/balance`, { headers: bearer(token) })).status, 401);
    assert.is(cents(await balanceOf(i.base, fresh)), 1000 - spent, 'money conserved to the cent');
  }
  const units = refs.slice(0, 3);
  const late = await quote(inst[2].base, units);
  const old = await postJson(`${inst[1].base}/lds/draw`, { product_id: PRODUCT, units, quote_id: late.quote_id }, bearer(token));
  assert.is(old.status, 401);
  const ok = await postJson(`${inst[2].base}/lds/draw`, { product_id: PRODUCT, units, quote_id: late.quote_id }, bearer(fresh));
  assert.is(ok.status, 200);
  assert.is(cents(await balanceOf(inst[0].base, fresh)), 1000 - spent - cents(late.amount));
  // rotating the old token again, at another instance, is refused
  assert.is((await postJson(`${inst[2].base}/lds/balance/token`, {}, bearer(token))).status, 401);
  verifyWhileServing();
});

test('SIGKILL one instance during a stream of paid draws and top-ups across all: the others keep answering, every 200 is in the ledger, verify is clean while they serve', async () => {
  const tokens = await Promise.all([0, 1, 2].map((i) => topUp(inst[i].base, '50.00')));
  const paidDraws: { draw_id: string; token: string }[] = [];
  const okTopups: string[] = [];
  const afterKill: number[] = [];
  let killed = false;
  let stop = false;
  let seq = 0;
  const progress = new Progress();
  async function drawWorker(w: number) {
    while (!stop) {
      const i = seq++;
      const at = inst[i % 3];
      const payAt = inst[(i + 1) % 3];
      const k = 1 + (i % 5);
      const units = refs.slice((i * 13) % (refs.length - k), ((i * 13) % (refs.length - k)) + k);
      try {
        const q = (await (await postJson(`${at.base}/lds/draw`, { product_id: PRODUCT, units })).json()) as any;
        const res = await postJson(`${payAt.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(tokens[w % 3]));
        if (res.status === 200) {
          paidDraws.push({ draw_id: ((await res.json()) as any).receipt.draw_id, token: tokens[w % 3] });
          if (killed && payAt !== inst[0]) afterKill.push(1);
          progress.signal();
        } else await res.body?.cancel();
      } catch {
        // the killed instance: only answers actually received count
      }
    }
  }
  async function topupWorker(w: number) {
    while (!stop) {
      const at = inst[(w + seq) % 3];
      try {
        const res = await payTopup(`${at.base}/lds/balance/topup`, '5.00', { spt: 'spt_test_stream', balanceToken: tokens[w % 3] });
        if (res.status === 200) {
          okTopups.push(tokens[w % 3]);
          progress.signal();
        } else await res.body?.cancel();
      } catch {
        // as above
      }
    }
  }
  const workers = [...[0, 1, 2, 3, 4, 5].map(drawWorker), topupWorker(0), topupWorker(1)];
  // The stream runs (draws paid at every instance, a top-up credited) before the kill ...
  await progress.until(() => paidDraws.length > 10 && okTopups.length > 0, 'paid draws and a top-up before the kill');
  const before = paidDraws.length;
  inst[0].proc.kill('SIGKILL');
  await exited(inst[0].proc);
  killed = true;
  // ... and goes on at the survivors after it.
  await progress.until(() => afterKill.length > 10, 'paid draws at the survivors after the kill');
  // verify while the survivors are still being driven
  verifyWhileServing();
  stop = true;
  await Promise.all(workers);
  assert.ok(before > 10, `the stream was running (${before} paid draws before the kill)`);
  assert.ok(afterKill.length > 10, `the survivors kept answering (${afterKill.length} paid draws after the kill)`);
  assert.ok(okTopups.length > 0);

  const records = await ledgerRecords(ledger);
  for (const d of paidDraws) {
    const rec = records.get(K.draw(d.draw_id));
    assert.ok(rec, `draw ${d.draw_id} answered 200 but is not in the ledger`);
    assert.is(rec.token_hash, hashToken(d.token));
  }
  // every 200 top-up is a credit of that balance; the ledger has at least as many as were answered
  for (const t of new Set(okTopups)) {
    const answered = okTopups.filter((x) => x === t).length;
    const credited = [...records].filter(([k, v]) => k.startsWith('t:') && v.token_hash === hashToken(t)).length - 1; // minus the opening top-up
    assert.ok(credited >= answered, `${answered} top-ups answered 200, ${credited} credited`);
  }
  const v = await verifyLedgerAt(ledger);
  assert.equal(v, [], formatViolations(v));
  // a restarted instance on the same ledger serves the same balances
  inst[0] = await startInstance(fx, env);
  for (const t of tokens) assert.is(await balanceOf(inst[0].base, t), await balanceOf(inst[1].base, t));
});

test.run();
