// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// A statement read in the largest page the service allows (STATEMENT_PAGE.maxLines) still says
// when older lines follow: the service asks the ledger for one line more than the page, and the
// ledger's own bound left room for it. (Before, the ledger capped the read at the page size, so a
// balance with more lines than one full page never got next_after.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { STATEMENT_PAGE } from '../contract/limits.ts';
import { buildFixture, storeDrawService, type Fixture } from './helpers/service-harness.ts';
import { debit, fund, openTestLedger, type TestLedger } from './helpers/ledgers.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { StoreDrawService } from '../payments/draw/store-service.ts';
import { newBalanceToken } from '../payments/tokens.ts';
import type { UnitStoreReader } from '../contract/store-format.ts';

let fx: Fixture;
let store: UnitStoreReader & { close(): Promise<void> };
let tl: TestLedger;
let svc: StoreDrawService;

test.before(async () => {
  fx = await buildFixture();
  store = (await openUnitStore(fx.store)) as typeof store;
  tl = await openTestLedger();
  svc = storeDrawService(fx, store, tl.ledger);
});

test.after(async () => {
  await store.close();
  await tl.ledger.close();
});

test('a full page of the largest size says that another page follows, and the next page ends the statement', async () => {
  const max = STATEMENT_PAGE.maxLines;
  const t = newBalanceToken();
  await fund(tl.ledger, 10_000); // another balance: its lines are never on this statement
  const opened = await tl.ledger.creditTopup({ tokenHash: t.hash, createBalance: true, amountCents: max + 10, currency: 'EUR', processor: 'sandbox', challengeId: 'ch_page', paymentRef: 'pi_page' });
  assert.is(opened.kind, 'ok');
  const hash = t.hash;
  // One top-up line and max draw lines: max + 1 lines, one more than the largest page.
  for (let i = 0; i < max; i += 100) {
    const results = await Promise.all(Array.from({ length: Math.min(100, max - i) }, (_, j) => debit(tl.ledger, hash, `q_page_${i + j}`, 1)));
    assert.ok(results.every((r) => r.kind === 'ok'), 'every debit is paid');
  }
  const first = await svc.balance(t.token, { limit: max });
  assert.is(first.statement.length, max);
  assert.ok(first.next_after, 'a full page of the largest size names the next one');
  assert.is(first.balance, '0.10');
  const second = await svc.balance(t.token, { limit: max, after: first.next_after });
  assert.equal(second.statement.map((l) => l.kind), ['topup'], 'the oldest line, the top-up, is on the second page');
  assert.is(second.next_after, undefined, 'and nothing follows it');
});

test.run();
