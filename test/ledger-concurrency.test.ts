// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Ledger under concurrency: no negative balance, money conserved to the cent, each quote debited
// once, and the independent verifier agrees, on either backend (LDS_TEST_BACKEND). Also the LevelDB
// group committer's grouping and fail-stop.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { rejects } from 'node:assert/strict';
import { GroupCommitter, type BatchOp } from '../payments/ledger/level/commit.ts';
import { BACKEND, debit, fund, openTestLedger } from './helpers/ledgers.ts';
import { newBalanceToken } from '../payments/tokens.ts';


test('200 concurrent debits of distinct quotes against a balance covering only some', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const hash = await fund(ledger, 1_000);
  // amounts 1..13 cents, deterministic; total asked far exceeds 10.00
  const amounts = Array.from({ length: 200 }, (_, i) => 1 + ((i * 7) % 13));
  const results = await Promise.all(amounts.map((a, i) => debit(ledger, hash, `q_${i}`, a)));

  const ok = results.flatMap((r, i) => (r.kind === 'ok' ? [{ r, amount: amounts[i] }] : []));
  const insufficient = results.filter((r) => r.kind === 'insufficient');
  assert.is(ok.length + insufficient.length, 200);
  assert.ok(ok.length > 0 && insufficient.length > 0);
  const spent = ok.reduce((s, x) => s + x.amount, 0);
  const bal = await ledger.getBalance(hash);
  assert.ok(bal!.cents >= 0);
  assert.is(bal!.cents + spent, 1_000); // conserved to the cent
  // every refusal was correct at its moment: the balance it saw could not cover it
  for (const r of insufficient) if (r.kind === 'insufficient') assert.ok(r.balanceCents >= 0);
  // balance_after values are a strictly decreasing chain ending at the final balance
  const afters = ok.map((x) => x.r.kind === 'ok' && x.r.balanceAfterCents).sort((a, b) => Number(b) - Number(a));
  assert.is(afters[afters.length - 1], bal!.cents);
  assert.is(new Set(afters).size, afters.length);

  const stmt = await ledger.statement(hash, 1000);
  assert.is(stmt.filter((s) => s.kind === 'draw').length, ok.length);
  assert.is(stmt[0].balanceAfterCents, bal!.cents);
  assert.equal(await ledger.verify(), []);
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('50 concurrent debits of one quote: exactly one debit, the rest replay the same draw', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const hash = await fund(ledger, 500);
  const results = await Promise.all(Array.from({ length: 50 }, () => debit(ledger, hash, 'q_same', 120)));
  const ok = results.filter((r) => r.kind === 'ok');
  const replays = results.filter((r) => r.kind === 'replay');
  assert.is(ok.length, 1);
  assert.is(replays.length, 49);
  const drawId = ok[0].kind === 'ok' && ok[0].draw.draw_id;
  for (const r of replays) if (r.kind === 'replay') {
    assert.is(r.draw.draw_id, drawId);
    assert.is(r.draw.balance_after_cents, 380);
    assert.equal(r.draw.draw, { units_sha256: 'ab'.repeat(32), quote: 'q_same' });
  }
  assert.is((await ledger.getBalance(hash))!.cents, 380);
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('one quote raced by two balances: one pays, the other is told other_balance', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const a = await fund(ledger, 500);
  const b = await fund(ledger, 500);
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => debit(ledger, i % 2 ? a : b, 'q_contested', 100)));
  assert.is(results.filter((r) => r.kind === 'ok').length, 1);
  const payer = (await ledger.getBalance(a))!.cents === 400 ? a : b;
  const other = payer === a ? b : a;
  assert.is((await ledger.getBalance(other))!.cents, 500);
  results.forEach((r, i) => {
    const who = i % 2 ? a : b;
    if (r.kind !== 'ok') assert.is(r.kind, who === payer ? 'replay' : 'other_balance');
  });
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('refusals change nothing: insufficient, unknown balance, currency mismatch, bad input', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const hash = await fund(ledger, 500);
  assert.equal(await debit(ledger, hash, 'q_big', 501), { kind: 'insufficient', balanceCents: 500, currency: 'EUR' });
  assert.equal(await debit(ledger, newBalanceToken().hash, 'q_x', 1), { kind: 'unknown_balance' });
  assert.equal(await debit(ledger, 'not-a-hash', 'q_x', 1), { kind: 'unknown_balance' });
  assert.equal(await ledger.debitDraw(hash, { quoteId: 'q_usd', amountCents: 1, currency: 'USD', draw: null }), { kind: 'currency_mismatch', balanceCurrency: 'EUR' });
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    await rejects(() => ledger.debitDraw(hash, { quoteId: 'q_bad', amountCents: bad, currency: 'EUR', draw: null }), RangeError);
  }
  // a refused quote can still be paid later
  assert.is((await debit(ledger, hash, 'q_big', 500)).kind, 'ok');
  assert.is((await ledger.getBalance(hash))!.cents, 0);
  assert.is((await debit(ledger, hash, 'q_more', 1)).kind, 'insufficient');
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('top-ups credit at most once per challenge and per payment reference, even concurrently', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const hash = newBalanceToken().hash;
  const first = await ledger.creditTopup({ tokenHash: hash, createBalance: true, amountCents: 500, currency: 'EUR', processor: 'stripe', challengeId: 'ch_A', paymentRef: 'pi_A' });
  assert.is(first.kind, 'ok');
  const races = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      ledger.creditTopup({ tokenHash: hash, createBalance: false, amountCents: 700, currency: 'EUR', processor: 'stripe', challengeId: i % 2 ? 'ch_B' : 'ch_A', paymentRef: i % 2 ? 'pi_B' : 'pi_C' }),
    ),
  );
  assert.is(races.filter((r) => r.kind === 'ok').length, 1); // only ch_B/pi_B is new
  assert.ok(races.every((r) => r.kind === 'ok' || r.kind === 'already_credited'));
  // a new challenge reusing a credited payment reference is refused too
  const samePi = await ledger.creditTopup({ tokenHash: hash, createBalance: false, amountCents: 500, currency: 'EUR', processor: 'stripe', challengeId: 'ch_D', paymentRef: 'pi_A' });
  assert.is(samePi.kind, 'already_credited');
  assert.is((await ledger.getBalance(hash))!.cents, 1_200);
  assert.is((await ledger.findTopupByChallenge('ch_B'))!.payment_ref, 'pi_B');
  assert.is(await ledger.findTopupByChallenge('ch_D'), null);
  assert.equal(
    await ledger.creditTopup({ tokenHash: newBalanceToken().hash, createBalance: false, amountCents: 500, currency: 'EUR', processor: 'stripe', challengeId: 'ch_E', paymentRef: 'pi_E' }),
    { kind: 'unknown_balance' },
  );
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('state survives close and reopen; sequence numbers continue', async () => {
  const t = await openTestLedger();
  let ledger = t.ledger;
  const hash = await fund(ledger, 900);
  await Promise.all([debit(ledger, hash, 'q1', 100), debit(ledger, hash, 'q2', 200)]);
  await ledger.close();
  await rejects(() => ledger.getBalance(hash), /closed/);
  ledger = await t.reopen();
  assert.is((await ledger.getBalance(hash))!.cents, 600);
  assert.is((await debit(ledger, hash, 'q1', 100)).kind, 'replay');
  assert.is((await debit(ledger, hash, 'q3', 50)).kind, 'ok');
  const stmt = await ledger.statement(hash, 2);
  assert.is(stmt.length, 2);
  assert.is(stmt[0].quoteId, 'q3');
  assert.is(stmt[0].productId, 'svc-language-eu');
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('property: random concurrent top-ups and draws keep every invariant', async () => {
  const op = fc.oneof(
    fc.record({ t: fc.constant('draw' as const), who: fc.nat(3), quote: fc.nat(30), cents: fc.integer({ min: 1, max: 400 }) }),
    fc.record({ t: fc.constant('topup' as const), who: fc.nat(3), cents: fc.integer({ min: 500, max: 2_000 }) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 80 }), async (ops) => {
      const t = await openTestLedger();
      const ledger = t.ledger;
      const hashes: string[] = [];
      for (let i = 0; i < 4; i++) hashes.push(await fund(ledger, 300));
      const results = await Promise.all(
        ops.map((o, i) =>
          o.t === 'draw'
            ? debit(ledger, hashes[o.who], `q${o.quote}`, o.cents).then((r) => ({ o, r }))
            : ledger.creditTopup({ tokenHash: hashes[o.who], createBalance: false, amountCents: o.cents, currency: 'EUR', processor: 'sandbox', challengeId: `p_${i}`, paymentRef: `p_${i}` }).then((r) => ({ o, r })),
        ),
      );
      // model: credited minus debited per balance
      const model = hashes.map(() => 300);
      const paidQuotes = new Map<string, number>();
      for (const { o, r } of results) {
        if (o.t === 'topup' && r.kind === 'ok') model[o.who] += o.cents;
        if (o.t === 'draw' && r.kind === 'ok') {
          model[o.who] -= o.cents;
          paidQuotes.set(`q${o.quote}`, (paidQuotes.get(`q${o.quote}`) ?? 0) + 1);
        }
      }
      for (const n of paidQuotes.values()) if (n !== 1) return false;
      for (let i = 0; i < 4; i++) {
        const b = await ledger.getBalance(hashes[i]);
        if (!b || b.cents !== model[i] || b.cents < 0) return false;
      }
      await ledger.close();
      const v = await t.verifyClosed();
      return v.length === 0;
    }),
    { numRuns: BACKEND === 'level' ? 12 : 6 },
  );
});

if (BACKEND === 'level') test('group commit: concurrent changes share one synced batch, in order', async () => {
  const batches: { ops: BatchOp[]; sync: boolean }[] = [];
  const db = {
    async batch(ops: BatchOp[], o: { sync: boolean }) {
      batches.push({ ops, sync: o.sync });
      await new Promise((r) => setTimeout(r, 5));
    },
  };
  const gc = new GroupCommitter(db);
  const put = (k: string): BatchOp[] => [{ type: 'put', key: k, value: 1 }, { type: 'put', key: k + '/2', value: 2 }];
  await Promise.all(Array.from({ length: 10 }, (_, i) => gc.enqueue(put(`k${i}`))));
  assert.is(batches.length, 2); // the first write alone, then everything that queued behind it
  assert.ok(batches.every((b) => b.sync));
  assert.equal(batches.flatMap((b) => b.ops.map((o) => o.key)), Array.from({ length: 10 }, (_, i) => [`k${i}`, `k${i}/2`]).flat());
});

if (BACKEND === 'level') test('group commit is fail-stop: a failed write rejects its group, the queue and all later work', async () => {
  let calls = 0;
  const db = {
    async batch() {
      calls++;
      await new Promise((r) => setTimeout(r, 5));
      if (calls === 2) throw new Error('disk on fire');
    },
  };
  let fatal: Error | null = null;
  const gc = new GroupCommitter(db, (e) => (fatal = e));
  const outcomes = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => gc.enqueue([{ type: 'put', key: `k${i}`, value: i }])));
  assert.is(outcomes[0].status, 'fulfilled');
  assert.ok(outcomes.slice(1).every((o) => o.status === 'rejected'));
  assert.ok(fatal);
  await rejects(() => gc.enqueue([{ type: 'put', key: 'later', value: 0 }]), /refusing further changes/);
});

test.run();
