// @tier: quick  (npm run test:quick: in-process)
// The draw service writes each quote's JSON text itself, from parts it remembers per request
// (store-service.ts Resolution, quoteText). These checks pin that the text is exactly
// JSON.stringify of the quote object (the object MCP and A2A answer with) for every shape of
// request, that a remembered resolution is only ever reused for the very same request, and that
// the memo stays bounded by the units it holds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildFixture, refsByProduct, storeDrawService, type Fixture } from './helpers/service-harness.ts';
import { openTestLedger, type TestLedger } from './helpers/ledgers.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { StoreDrawService } from '../payments/draw/store-service.ts';
import { quoteJson } from '../payments/draw/serialise.ts';
import type { Quote as QuoteBody } from '../contract/wire.ts';
import { Lru } from '../payments/store/unit-cache.ts';
import { hashToken, newBalanceToken } from '../payments/tokens.ts';
import type { UnitStoreReader } from '../contract/store-format.ts';

let fx: Fixture;
let store: UnitStoreReader & { close(): Promise<void> };
let tl: TestLedger;
let svc: StoreDrawService;
let product: string;
let refs: string[];
let rich: string; // a token whose balance covers any quote here

test.before(async () => {
  fx = await buildFixture();
  const byProduct = await refsByProduct(fx.store);
  [product, refs] = [...byProduct].sort((a, b) => b[1].length - a[1].length)[0];
  store = (await openUnitStore(fx.store)) as typeof store;
  tl = await openTestLedger();
  svc = storeDrawService(fx, store, tl.ledger, { unitCacheSize: 40 });
  const t = newBalanceToken();
  const r = await tl.ledger.creditTopup({ tokenHash: hashToken(t.token), createBalance: true, amountCents: 100_000, currency: 'EUR', processor: 'sandbox', challengeId: 'ch_text', paymentRef: 'pi_text' });
  assert.is(r.kind, 'ok');
  rich = t.token;
});

test.after(async () => {
  await store.close();
  await tl.ledger.close();
});

const quote = async (req: Record<string, unknown>, token?: string) => (await svc.quote(req as never, token)) as QuoteBody;

test('a quote text is JSON.stringify of the quote, for unit lists, queries, payable or not', async () => {
  const cases: [Record<string, unknown>, string | undefined][] = [
    [{ product_id: product, units: refs.slice(0, 3) }, undefined],
    [{ product_id: product, units: refs.slice(0, 3) }, rich],
    [{ product_id: product, units: [refs[2], refs[0], refs[2]] }, undefined], // repeats and another order
    [{ product_id: product, query: 'regulation', limit: 5 }, rich],
    [{ product_id: product, query: 'données « protection » "quoted" \\ \u2028 tab\t' }, undefined], // escaping
  ];
  let compared = 0;
  for (const [req, token] of cases) {
    let q: QuoteBody;
    try {
      q = await quote(req, token);
    } catch (err) {
      // a query that matches nothing is a refusal, not a quote: only the escaping case may do that
      assert.match(String((err as Error).message ?? err), /matched no unit/);
      continue;
    }
    for (let i = 0; i < 2; i++) {
      // the second time from the remembered resolution
      const again = i === 0 ? q : await quote(req, token);
      assert.is(quoteJson(again), JSON.stringify(again), JSON.stringify(req));
      compared++;
    }
    assert.is(q.payable_from_balance, token === rich);
  }
  assert.ok(compared >= 8, `compared ${compared} quotes`);
});

test('a remembered resolution serves only the same request: order, product and limit keep their own', async () => {
  const ab = await quote({ product_id: product, units: [refs[0], refs[1]] });
  const ba = await quote({ product_id: product, units: [refs[1], refs[0]] });
  assert.equal(ab.units, [refs[0], refs[1]]);
  assert.equal(ba.units, [refs[1], refs[0]]);
  assert.equal(ba.resolved_units, [refs[1], refs[0]]);
  assert.equal((ba.pay_with as { units: string[] }).units, [refs[1], refs[0]]);
  const q5 = await quote({ product_id: product, query: 'regulation', limit: 5 });
  const q2 = await quote({ product_id: product, query: 'regulation', limit: 2 });
  assert.is(q5.limit, 5);
  assert.is(q2.limit, 2);
  assert.ok(q2.unit_count <= 2 && q5.unit_count >= q2.unit_count);
  assert.equal(q5.resolved_units.slice(0, q2.unit_count), q2.resolved_units);
  // Quotes stay distinct: each has its own id and signature.
  const again = await quote({ product_id: product, units: [refs[0], refs[1]] });
  assert.is.not(again.quote_id, ab.quote_id);
});

test('a quote paid after its resolution was forgotten and remade pays the same units', async () => {
  const req = { product_id: product, units: refs.slice(3, 6) };
  const q = await quote(req, rich);
  // Push it out of the memo (capacity 40 units here) with other requests.
  for (let i = 6; i + 3 <= Math.min(refs.length, 66); i += 3) await quote({ product_id: product, units: refs.slice(i, i + 3) });
  const paid = await svc.pay({ ...req, quote_id: q.quote_id } as never, rich);
  assert.equal(paid.units.map((u) => u.ref), refs.slice(3, 6));
  assert.is(paid.receipt.unit_count, 3);
});

test('the LRU is bounded by the weight of its entries and keeps the newest', () => {
  const lru = new Lru<number[]>(10, (v) => v.length);
  lru.set('a', [1, 2, 3, 4]);
  lru.set('b', [1, 2, 3, 4]);
  lru.set('c', [1, 2, 3]);
  assert.is(lru.size, 2, 'a (4) + b (4) + c (3) > 10: the oldest goes');
  assert.is(lru.get('a'), undefined);
  assert.equal(lru.get('c'), [1, 2, 3]);
  lru.set('big', new Array(25).fill(0));
  assert.is(lru.size, 1, 'one entry heavier than the bound is kept alone');
  assert.ok(lru.get('big'));
  lru.set('big', [1]);
  lru.set('x', [1, 2]);
  assert.is(lru.size, 2, 'a replaced entry weighs what it weighs now');
});

test.run();
