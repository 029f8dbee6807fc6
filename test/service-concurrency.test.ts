// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Concurrency over real HTTP: many paid draws racing on one balance must never overdraw it, must
// conserve money to the cent, and must leave a ledger that verifies; one quote submitted many
// times at once is debited once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifyLedgerAt } from '../payments/ledger/ops.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, buildFixture, cents, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const PRODUCT = 'svc-agriculture-eu';
let fx: Fixture;
let srv: TestServer;
let refs: string[];

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  srv = await startTestServer(fx);
});
test.after(async () => {
  await srv?.close();
});

async function quote(units: string[]): Promise<{ quote_id: string; amount: string }> {
  const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units });
  assert.is(res.status, 402);
  return (await res.json()) as { quote_id: string; amount: string };
}

test('200 concurrent paid draws of distinct quotes: no overdraft, money conserved, ledger clean', async () => {
  const token = await topUp(srv.base, '5.00');
  // Sizes 1..40 units (0.01..0.40 EUR): 200 draws ask for far more than 5.00.
  const draws = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const n = 1 + ((i * 7) % 40);
      const start = (i * 13) % (refs.length - n);
      const units = refs.slice(start, start + n);
      return { units, quote: await quote(units) };
    }),
  );
  const asked = draws.reduce((s, d) => s + cents(d.quote.amount), 0);
  assert.ok(asked > 500, `the draws ask for ${asked} cents, more than the balance`);

  const results = await Promise.all(
    draws.map(async (d) => {
      const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: d.units, quote_id: d.quote.quote_id }, bearer(token));
      return { status: res.status, body: (await res.json()) as any, amount: cents(d.quote.amount) };
    }),
  );
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  assert.ok(ok.length > 0 && refused.length > 0, `some paid (${ok.length}), some refused (${refused.length})`);
  for (const r of refused) {
    assert.is(r.status, 402);
    assert.is(r.body.type, `${PROBLEM_BASE}insufficient-balance`);
  }
  const spent = ok.reduce((s, r) => s + r.amount, 0);
  const left = cents(await balanceOf(srv.base, token));
  assert.ok(left >= 0, 'never negative');
  assert.is(spent + left, 500, 'money conserved to the cent');
  // Every receipt's balance_after is distinct and non-negative: each debit saw the one before.
  const afters = ok.map((r) => cents(r.body.receipt.balance_after));
  assert.is(new Set(afters).size, afters.length);
  assert.ok(afters.every((a) => a >= 0));
  assert.is(Math.min(...afters), left);
  // Whatever is left is smaller than every refused draw (otherwise a refusal was wrong).
  assert.ok(refused.every((r) => r.amount > left), 'no draw was refused that the final balance could pay');
  assert.equal(await srv.ledger.verify(), []);
});

test('50 concurrent submissions of one paid quote: one debit, one draw', async () => {
  const token = await topUp(srv.base, '5.00');
  const units = refs.slice(100, 110);
  const q = await quote(units);
  const results = await Promise.all(
    Array.from({ length: 50 }, async () => {
      const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
      return { status: res.status, body: (await res.json()) as any };
    }),
  );
  assert.ok(results.every((r) => r.status === 200), JSON.stringify(results.find((r) => r.status !== 200)?.body));
  assert.is(new Set(results.map((r) => r.body.receipt.draw_id)).size, 1);
  assert.is(await balanceOf(srv.base, token), '4.90');
  const stmt = ((await (await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) })).json()) as any).statement;
  assert.is(stmt.filter((s: any) => s.kind === 'draw').length, 1);
});

test('the ledger verifies from disk after the server closes', async () => {
  await srv.close();
  assert.equal(await verifyLedgerAt(srv.ledgerSettings), []);
  srv = await startTestServer(fx, { varDir: srv.varDir, env: srv.ledgerEnv });
});

test.run();
