// @tier: quick  (npm run test:quick: in-process)
// The LevelDB ledger refuses, before writing anything, a change that breaks an invariant
// (payments/ledger/invariants.ts). Such a change can only come from a bug, so the tests build them by hand.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { K } from '../payments/ledger/records.ts';
import { LedgerInvariantError, assertChange } from '../payments/ledger/invariants.ts';

const at = '2026-01-01T00:00:00.000Z';
const entry = (seq: number, txn: string, account: string, cents: number) => ({ key: K.entry(seq), value: { seq, txn, account, cents, currency: 'EUR', at } });
const draw = { draw_id: 'drw_1', quote_id: 'q1.x.y', token_hash: 'h', amount_cents: 10, currency: 'EUR', product_id: 'p', at };
const goodDraw = () => [
  { key: K.draw('drw_1'), value: draw },
  { key: K.quote('q1.x.y'), value: { draw_id: 'drw_1', token_hash: 'h' } },
  entry(1, 'draw:drw_1', 'balance:h', -10),
  entry(2, 'draw:drw_1', 'revenue', 10),
  { key: K.balance('h'), value: { token_hash: 'h', currency: 'EUR', cents: 490, created_at: at } },
];

const refused = (puts: { key: string; value: unknown }[], words: RegExp) => {
  try {
    assertChange(puts);
  } catch (e) {
    assert.instance(e, LedgerInvariantError);
    assert.match((e as Error).message, words);
    return;
  }
  assert.unreachable('the change was accepted');
};

test('a well-formed draw passes', () => {
  assertChange(goodDraw());
});

test('a balance below zero or not whole cents is refused', () => {
  refused(goodDraw().map((p) => (p.key === K.balance('h') ? { ...p, value: { ...(p.value as object), cents: -1 } } : p)), /balance b:h would hold -1 cents/);
  refused(goodDraw().map((p) => (p.key === K.balance('h') ? { ...p, value: { ...(p.value as object), cents: 0.5 } } : p)), /0\.5 cents/);
});

test("a transaction whose entries do not sum to zero is refused", () => {
  refused(goodDraw().map((p) => (p.key === K.entry(2) ? entry(2, 'draw:drw_1', 'revenue', 9) : p)), /entries of draw:drw_1 EUR sum to -1 cents/);
});

test('a draw without its quote claim (or with a claim naming another draw) is refused', () => {
  refused(goodDraw().filter((p) => p.key !== K.quote('q1.x.y')), /without the claim of its quote/);
  refused(goodDraw().map((p) => (p.key === K.quote('q1.x.y') ? { ...p, value: { draw_id: 'drw_2', token_hash: 'h' } } : p)), /without the claim of its quote/);
});

test.run();
