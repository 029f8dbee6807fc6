// The ledger auditor: clean on an honest ledger, and for each kind of tampering written directly
// into LevelDB it names the violation and returns the offending raw record.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rejects } from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { Ledger } from '../payments/ledger/level/ledger.ts';
import { K } from '../payments/ledger/level/schema.ts';
import { formatViolations, verifyLedger, type Violation } from '../payments/ledger/verify.ts';
import { newBalanceToken } from '../payments/tokens.ts';

const dirs: string[] = [];
test.after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** An honest ledger: two balances, three top-ups, three draws. */
async function honestLedger(): Promise<{ dir: string; a: string; b: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'lds-verify-'));
  dirs.push(dir);
  const ledger = await Ledger.open(dir);
  const a = newBalanceToken().hash;
  const b = newBalanceToken().hash;
  const credit = (hash: string, create: boolean, cents: number, n: number) =>
    ledger.creditTopup({ tokenHash: hash, createBalance: create, amountCents: cents, currency: 'EUR', processor: 'sandbox', challengeId: `ch_${n}`, paymentRef: `pi_${n}` });
  await credit(a, true, 500, 1);
  await credit(b, true, 800, 2);
  await credit(a, false, 500, 3);
  for (const [hash, q, c] of [[a, 'q1', 120], [a, 'q2', 80], [b, 'q3', 700]] as const) {
    const r = await ledger.debitDraw(hash, { quoteId: q, amountCents: c, currency: 'EUR', draw: { units_sha256: '00' } });
    assert.is(r.kind, 'ok');
  }
  await ledger.close();
  return { dir, a, b };
}

async function tamper(dir: string, fn: (db: Level<string, any>) => Promise<void>): Promise<void> {
  const db = new Level<string, any>(dir, { valueEncoding: 'json' });
  await db.open();
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}

function codes(v: Violation[]): string[] {
  return [...new Set(v.map((x) => x.code))].sort();
}

function withRecord(v: Violation[], key: string): Violation[] {
  return v.filter((x) => x.records.some((r) => r.key === key));
}

test('an honest ledger verifies clean', async () => {
  const { dir } = await honestLedger();
  assert.equal(await verifyLedger(dir), []);
  assert.is(formatViolations([]), 'ledger verified: no violations');
});

test('a forged credit entry is found, with the offending record', async () => {
  const { dir, a } = await honestLedger();
  const key = K.entry(9_000_000);
  const forged = { seq: 9_000_000, txn: 'topup:forged', account: `balance:${a}`, cents: 100_000, currency: 'EUR', at: '2026-01-01T00:00:00.000Z' };
  await tamper(dir, (db) => db.put(key, forged));
  const v = await verifyLedger(dir);
  assert.equal(codes(v), ['balance_mismatch', 'orphan_entry', 'unbalanced_total', 'unbalanced_txn']);
  const orphan = v.find((x) => x.code === 'orphan_entry')!;
  assert.equal(orphan.records, [{ key, value: forged }]);
  assert.ok(withRecord(v, key).length >= 3);
  const text = formatViolations(v);
  assert.ok(text.includes(key), text);
  assert.ok(text.includes('[orphan_entry]'));
});

test('an edited balance record is found', async () => {
  const { dir, b } = await honestLedger();
  await tamper(dir, async (db) => {
    const rec = await db.get(K.balance(b));
    await db.put(K.balance(b), { ...rec, cents: rec.cents + 5_000 });
  });
  const v = await verifyLedger(dir);
  assert.equal(codes(v), ['balance_mismatch']);
  assert.is(v[0].records[0].key, K.balance(b));
  assert.is((v[0].records[0].value as { cents: number }).cents, 5_100);
});

test('a quote debited twice and a challenge credited twice are found', async () => {
  const { dir, a } = await honestLedger();
  await tamper(dir, async (db) => {
    const draw = { draw_id: 'drw_dup', quote_id: 'q1', token_hash: a, amount_cents: 120, currency: 'EUR', balance_after_cents: 680, at: 'x', draw: null };
    const topup = { topup_id: 'top_dup', token_hash: a, amount_cents: 500, currency: 'EUR', processor: 'sandbox', challenge_id: 'ch_1', payment_ref: 'pi_1', created_balance: false, balance_after_cents: 0, at: 'x' };
    await db.batch([
      { type: 'put', key: K.draw('drw_dup'), value: draw },
      { type: 'put', key: K.entry(9_000_001), value: { seq: 9_000_001, txn: 'draw:drw_dup', account: `balance:${a}`, cents: -120, currency: 'EUR', at: 'x' } },
      { type: 'put', key: K.entry(9_000_002), value: { seq: 9_000_002, txn: 'draw:drw_dup', account: 'revenue', cents: 120, currency: 'EUR', at: 'x' } },
      { type: 'put', key: K.topup('top_dup'), value: topup },
      { type: 'put', key: K.entry(9_000_003), value: { seq: 9_000_003, txn: 'topup:top_dup', account: 'clearing:sandbox', cents: -500, currency: 'EUR', at: 'x' } },
      { type: 'put', key: K.entry(9_000_004), value: { seq: 9_000_004, txn: 'topup:top_dup', account: `balance:${a}`, cents: 500, currency: 'EUR', at: 'x' } },
    ]);
  });
  const v = await verifyLedger(dir);
  const quote = v.find((x) => x.code === 'quote_debited_twice')!;
  assert.ok(quote, formatViolations(v));
  assert.ok(quote.records.some((r) => r.key === K.draw('drw_dup')));
  const challenge = v.find((x) => x.code === 'challenge_credited_twice')!;
  assert.ok(challenge.records.some((r) => r.key === K.topup('top_dup')));
  assert.ok(v.some((x) => x.code === 'payment_credited_twice'));
  assert.ok(v.some((x) => x.code === 'balance_mismatch')); // the stored balance did not move
});

test('a consistent-looking overdraft is found as a negative balance', async () => {
  const { dir, b } = await honestLedger(); // b holds 100 cents
  await tamper(dir, async (db) => {
    await db.batch([
      { type: 'put', key: K.draw('drw_over'), value: { draw_id: 'drw_over', quote_id: 'q_over', token_hash: b, amount_cents: 300, currency: 'EUR', balance_after_cents: -200, at: 'x', draw: null } },
      { type: 'put', key: K.quote('q_over'), value: { draw_id: 'drw_over', token_hash: b } },
      { type: 'put', key: K.entry(9_000_010), value: { seq: 9_000_010, txn: 'draw:drw_over', account: `balance:${b}`, cents: -300, currency: 'EUR', at: 'x' } },
      { type: 'put', key: K.entry(9_000_011), value: { seq: 9_000_011, txn: 'draw:drw_over', account: 'revenue', cents: 300, currency: 'EUR', at: 'x' } },
      { type: 'put', key: K.balance(b), value: { token_hash: b, currency: 'EUR', cents: -200, created_at: 'x', last_seq: 9_000_011 } },
    ]);
  });
  const v = await verifyLedger(dir);
  assert.equal(codes(v), ['negative_balance']);
  assert.ok(v.some((x) => x.records.some((r) => r.key === K.entry(9_000_010))));
});

test('garbage and dangling claims are reported, not crashed on', async () => {
  const { dir } = await honestLedger();
  await tamper(dir, async (db) => {
    await db.put('zz:unknown', { hello: 1 });
    await db.put(K.entry(9_000_020), 'not an object');
    await db.put(K.challenge('ch_ghost'), { topup_id: 'top_ghost' });
    await db.put(K.quote('q_ghost'), { draw_id: 'drw_ghost', token_hash: 'x' });
  });
  const v = await verifyLedger(dir);
  assert.equal(codes(v), ['claim_mismatch', 'malformed_record']);
  assert.ok(withRecord(v, 'zz:unknown').length === 1);
  assert.ok(withRecord(v, K.challenge('ch_ghost')).length === 1);
});

test('a missing directory is an error, not a clean ledger', async () => {
  await rejects(() => verifyLedger(join(tmpdir(), 'lds-verify-does-not-exist-' + process.pid)));
});

test.run();
