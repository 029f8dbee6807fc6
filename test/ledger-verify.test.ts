// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// The ledger auditor: clean on an honest ledger, and for each kind of tampering written directly
// into the store (LevelDB keys, or PostgreSQL rows with the schema's guards dropped, as an operator
// bypassing the service might) it names the violation and returns the offending record.
// Runs on the backend LDS_TEST_BACKEND names.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rejects } from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { K } from '../payments/ledger/records.ts';
import { verifyLedgerAt } from '../payments/ledger/ops.ts';
import { formatViolations, type Violation } from '../payments/ledger/verify.ts';
import { newBalanceToken } from '../payments/tokens.ts';
import { BACKEND, openTestLedger, type TestLedger } from './helpers/ledgers.ts';
import { sql } from './helpers/pg.ts';

/** An honest ledger: two balances, three top-ups, three draws; closed. */
async function honestLedger(): Promise<{ t: TestLedger; a: string; b: string }> {
  const t = await openTestLedger();
  const ledger = t.ledger;
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
  return { t, a, b };
}

type Rec = Record<string, unknown>;

/** Writes records behind the ledger's back: LevelDB puts, or PostgreSQL rows (UPDATE when the key exists). */
async function forge(t: TestLedger, records: [string, Rec][], dropGuards: string[] = []): Promise<void> {
  if (BACKEND === 'level') {
    const db = new Level<string, unknown>(t.settings.ledgerDir, { valueEncoding: 'json' });
    await db.open();
    try {
      await db.batch(records.map(([key, value]) => ({ type: 'put' as const, key, value })));
    } finally {
      await db.close();
    }
    return;
  }
  const url = t.settings.ledgerUrl!;
  for (const g of dropGuards) await sql(url, g);
  for (const [key, v] of records) {
    switch (key.slice(0, 2)) {
      case 'b:':
        await sql(url, 'UPDATE lds_balances SET cents = $2 WHERE token_hash = $1', [v.token_hash, v.cents]);
        break;
      case 'e:':
        await sql(url, 'INSERT INTO lds_entries (seq, txn, account, cents, currency, at) VALUES ($1, $2, $3, $4, $5, $6)', [v.seq, v.txn, v.account, v.cents, v.currency, v.at]);
        break;
      case 'd:':
        await sql(url, 'INSERT INTO lds_draws (draw_id, quote_id, token_hash, amount_cents, currency, balance_after_cents, at, draw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [v.draw_id, v.quote_id, v.token_hash, v.amount_cents, v.currency, v.balance_after_cents, v.at, JSON.stringify(v.draw)]);
        break;
      case 't:':
        await sql(url, 'INSERT INTO lds_topups (topup_id, token_hash, amount_cents, currency, processor, challenge_id, payment_ref, created_balance, balance_after_cents, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', [v.topup_id, v.token_hash, v.amount_cents, v.currency, v.processor, v.challenge_id, v.payment_ref, v.created_balance, v.balance_after_cents, v.at]);
        break;
      case 's:': {
        const [hash, seq] = [key.slice(2, key.lastIndexOf(':')), Number(key.slice(key.lastIndexOf(':') + 1))];
        await sql(url, 'DELETE FROM lds_statement WHERE token_hash = $1 AND seq = $2', [hash, seq]);
        await sql(url, 'INSERT INTO lds_statement (token_hash, seq, kind, id, amount_cents, currency, balance_after_cents, at, quote_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [hash, seq, v.kind, v.id, v.amount_cents, v.currency, v.balance_after_cents, v.at, v.quote_id ?? null]);
        break;
      }
      case 'q:':
      case 'c:':
      case 'p:':
        break; // a claim is the row's UNIQUE constraint in PostgreSQL
      default:
        throw new Error(`cannot forge ${key} in PostgreSQL`);
    }
  }
}

function codes(v: Violation[]): string[] {
  return [...new Set(v.map((x) => x.code))].sort();
}

function withRecord(v: Violation[], key: string): Violation[] {
  return v.filter((x) => x.records.some((r) => r.key === key));
}

test('an honest ledger verifies clean', async () => {
  const { t } = await honestLedger();
  assert.equal(await t.verifyClosed(), []);
  assert.is(formatViolations([]), 'ledger verified: no violations');
});

test('a forged credit entry is found, with the offending record', async () => {
  const { t, a } = await honestLedger();
  const key = K.entry(9_000_000);
  const forged = { seq: 9_000_000, txn: 'topup:forged', account: `balance:${a}`, cents: 100_000, currency: 'EUR', at: '2026-01-01T00:00:00.000Z' };
  await forge(t, [[key, forged]]);
  const v = await t.verifyClosed();
  assert.equal(codes(v), ['balance_mismatch', 'orphan_entry', 'unbalanced_total', 'unbalanced_txn']);
  const orphan = v.find((x) => x.code === 'orphan_entry')!;
  assert.equal(orphan.records, [{ key, value: forged }]);
  assert.ok(withRecord(v, key).length >= 3);
  const text = formatViolations(v);
  assert.ok(text.includes(key), text);
  assert.ok(text.includes('[orphan_entry]'));
});

test('an edited balance record is found', async () => {
  const { t, b } = await honestLedger();
  await forge(t, [[K.balance(b), { token_hash: b, currency: 'EUR', cents: 5_100, created_at: 'x' }]]);
  const v = await t.verifyClosed();
  assert.equal(codes(v), ['balance_mismatch']);
  assert.is(v[0].records[0].key, K.balance(b));
  assert.is((v[0].records[0].value as { cents: number }).cents, 5_100);
});

test('a statement line that differs from its record is found', async () => {
  const { t, a } = await honestLedger();
  const stmt = await (async () => {
    const l = await t.reopen();
    const s = await l.statement(a, 1);
    await l.close();
    return s[0];
  })();
  assert.is(stmt.kind, 'draw');
  // find the line's key: the balance entry of that draw
  const lines: [string, Rec][] = [];
  const l = await t.reopen();
  await l.readSnapshot(async (records) => {
    for await (const [key, value] of records) if (key.startsWith(`s:${a}:`) && (value as Rec).id === stmt.id) lines.push([key, { ...(value as Rec), amount_cents: 1 }]);
  });
  await l.close();
  assert.is(lines.length, 1);
  await forge(t, lines);
  const v = await t.verifyClosed();
  assert.equal(codes(v), ['statement_mismatch']);
  assert.ok(withRecord(v, lines[0][0]).length === 1);
});

test('a quote debited twice and a challenge credited twice are found', async () => {
  const { t, a } = await honestLedger();
  const draw = { draw_id: 'drw_dup', quote_id: 'q1', token_hash: a, amount_cents: 120, currency: 'EUR', balance_after_cents: 680, at: 'x', draw: null };
  const topup = { topup_id: 'top_dup', token_hash: a, amount_cents: 500, currency: 'EUR', processor: 'sandbox', challenge_id: 'ch_1', payment_ref: 'pi_1', created_balance: false, balance_after_cents: 0, at: 'x' };
  await forge(
    t,
    [
      [K.draw('drw_dup'), draw],
      [K.entry(9_000_001), { seq: 9_000_001, txn: 'draw:drw_dup', account: `balance:${a}`, cents: -120, currency: 'EUR', at: 'x' }],
      [K.entry(9_000_002), { seq: 9_000_002, txn: 'draw:drw_dup', account: 'revenue', cents: 120, currency: 'EUR', at: 'x' }],
      [K.topup('top_dup'), topup],
      [K.entry(9_000_003), { seq: 9_000_003, txn: 'topup:top_dup', account: 'clearing:sandbox', cents: -500, currency: 'EUR', at: 'x' }],
      [K.entry(9_000_004), { seq: 9_000_004, txn: 'topup:top_dup', account: `balance:${a}`, cents: 500, currency: 'EUR', at: 'x' }],
    ],
    ['ALTER TABLE lds_draws DROP CONSTRAINT lds_draw_quote_once', 'ALTER TABLE lds_topups DROP CONSTRAINT lds_topup_challenge_once', 'ALTER TABLE lds_topups DROP CONSTRAINT lds_topup_payment_once'],
  );
  const v = await t.verifyClosed();
  const quote = v.find((x) => x.code === 'quote_debited_twice')!;
  assert.ok(quote, formatViolations(v));
  assert.ok(quote.records.some((r) => r.key === K.draw('drw_dup')));
  const challenge = v.find((x) => x.code === 'challenge_credited_twice')!;
  assert.ok(challenge.records.some((r) => r.key === K.topup('top_dup')));
  assert.ok(v.some((x) => x.code === 'payment_credited_twice'));
  assert.ok(v.some((x) => x.code === 'balance_mismatch')); // the stored balance did not move
});

test('a consistent-looking overdraft is found as a negative balance', async () => {
  const { t, b } = await honestLedger(); // b holds 100 cents
  const draw = { draw_id: 'drw_over', quote_id: 'q_over', token_hash: b, amount_cents: 300, currency: 'EUR', balance_after_cents: -200, at: 'x', draw: null };
  await forge(
    t,
    [
      [K.draw('drw_over'), draw],
      [K.quote('q_over'), { draw_id: 'drw_over', token_hash: b }],
      [K.entry(9_000_010), { seq: 9_000_010, txn: 'draw:drw_over', account: `balance:${b}`, cents: -300, currency: 'EUR', at: 'x' }],
      [K.entry(9_000_011), { seq: 9_000_011, txn: 'draw:drw_over', account: 'revenue', cents: 300, currency: 'EUR', at: 'x' }],
      [K.statement(b, 9_000_010), { kind: 'draw', id: 'drw_over', amount_cents: 300, currency: 'EUR', balance_after_cents: -200, at: 'x', quote_id: 'q_over' }],
      [K.balance(b), { token_hash: b, currency: 'EUR', cents: -200, created_at: 'x' }],
    ],
    ['ALTER TABLE lds_balances DROP CONSTRAINT lds_balance_never_negative', 'ALTER TABLE lds_draws DROP CONSTRAINT lds_draws_balance_after_cents_check'],
  );
  const v = await t.verifyClosed();
  assert.equal(codes(v), ['negative_balance'], formatViolations(v));
  assert.ok(v.some((x) => x.records.some((r) => r.key === K.entry(9_000_010))));
});

if (BACKEND === 'level')
  test('garbage and dangling claims are reported, not crashed on (LevelDB: free-form keys)', async () => {
    const { t } = await honestLedger();
    const db = new Level<string, unknown>(t.settings.ledgerDir, { valueEncoding: 'json' });
    await db.open();
    await db.put('zz:unknown', { hello: 1 });
    await db.put(K.entry(9_000_020), 'not an object');
    await db.put(K.challenge('ch_ghost'), { topup_id: 'top_ghost' });
    await db.put(K.quote('q_ghost'), { draw_id: 'drw_ghost', token_hash: 'x' });
    await db.close();
    const v = await t.verifyClosed();
    assert.equal(codes(v), ['claim_mismatch', 'malformed_record']);
    assert.ok(withRecord(v, 'zz:unknown').length === 1);
    assert.ok(withRecord(v, K.challenge('ch_ghost')).length === 1);
  });

test('a missing ledger is an error, not a clean ledger', async () => {
  const missingDir = join(tmpdir(), 'lds-verify-does-not-exist-' + process.pid);
  if (BACKEND === 'level') await rejects(() => verifyLedgerAt({ ledgerDir: missingDir }), /no ledger at/);
  else {
    const { ledger, settings } = await openTestLedger();
    await ledger.close();
    const u = new URL(settings.ledgerUrl!);
    u.pathname = '/lds_no_such_database';
    await rejects(() => verifyLedgerAt({ ledgerDir: missingDir, ledgerUrl: u.toString() }), /cannot open the PostgreSQL ledger/);
  }
});

test.run();
