// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// The whole buyer journey over real HTTP, real LevelDB and a real store built from catalog-src:
// catalogue -> draw (402 quote) -> top-up with the official mppx client (sandbox) -> draw with the
// token (402 + Link rel=payment) -> pay (200: units, attribution, receipt) -> balance (exactly less).
// Then the exactly-once and refusal rules of the paid draw, and quote expiry.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, buildFixture, cents, mppxClient, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const canonicalize = canonicalizeModule as unknown as (v: unknown) => string;
const PRODUCT = 'svc-language-eu';

let fx: Fixture;
let srv: TestServer;
let refs: string[];
let allRefs: Map<string, string[]>;
let clock = Date.now();

test.before(async () => {
  fx = await buildFixture();
  allRefs = await refsByProduct(fx.store);
  refs = allRefs.get(PRODUCT)!;
  srv = await startTestServer(fx, { now: () => clock });
});
test.after(async () => {
  await srv?.close();
});

test('buyer journey: catalogue, 402 quote, MPP top-up, Link rel=payment, paid draw, balance', async () => {
  // 1. The catalogue names the product and its live draw price.
  const catRes = await fetch(`${srv.base}/lds/_catalog`);
  assert.is(catRes.status, 200);
  const cat = (await catRes.json()) as any;
  const product = cat.products.find((p: any) => p.product_id === PRODUCT);
  assert.ok(product, 'product in the catalogue');
  assert.ok(product.live_unit_count >= 10, 'the product sells units');
  assert.ok(refs.length === product.live_unit_count, `store and catalogue agree on ${PRODUCT}'s units`);

  // 2. An unpaid draw: 402 with a quote, not cacheable, no Link (no balance).
  const units = refs.slice(0, 10);
  const draw = { product_id: PRODUCT, currency: 'EUR', units };
  const q1Res = await postJson(`${srv.base}/lds/draw`, draw);
  assert.is(q1Res.status, 402);
  assert.is(q1Res.headers.get('cache-control'), 'no-store');
  assert.is(q1Res.headers.get('link'), null);
  const q1 = (await q1Res.json()) as any;
  assert.is(q1.unit_count, 10);
  assert.is(q1.currency, 'EUR');
  assert.is(q1.amount, '0.10', '10 units x 0.01 EUR');
  assert.ok(q1.quote_id && q1.expires_at && Array.isArray(q1.breakdown));
  assert.match(q1.how_to_pay, /balance\/topup/);

  // 3. Top up 5.00 EUR with the official mppx client: 402 challenge, then credential -> 200.
  const topRes = await mppxClient().fetch(`${srv.base}/lds/balance/topup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount: '5.00', currency: 'EUR' }),
  });
  assert.is(topRes.status, 200);
  assert.ok(topRes.headers.get('payment-receipt'), 'Payment-Receipt header');
  const top = (await topRes.json()) as any;
  assert.is(top.balance, '5.00');
  assert.is(top.currency, 'EUR');
  const token = top.balance_token as string;
  assert.ok(token);

  // 4. The same draw with the token: 402 and Link rel="payment" (absolute, from base_url).
  const q2Res = await postJson(`${srv.base}/lds/draw`, draw, bearer(token));
  assert.is(q2Res.status, 402);
  assert.is(q2Res.headers.get('link'), `<${cat.base_url}/lds/draw>; rel="payment"`);
  const q2 = (await q2Res.json()) as any;
  assert.is(q2.payable_from_balance, true);

  // 5. Pay: 200 with units (citation + licence), attribution and receipt.
  const paidRes = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q2.quote_id }, bearer(token));
  assert.is(paidRes.status, 200);
  const paid = (await paidRes.json()) as any;
  assert.is(paid.units.length, 10);
  assert.equal(paid.units.map((u: any) => u.ref), units);
  for (const u of paid.units) {
    assert.ok(u.citation?.label, 'citation');
    assert.ok(u.licence?.licence && u.licence.verdict !== 'held', 'licence');
    assert.ok(u.rows.length >= 1);
  }
  assert.ok(paid.attribution.length >= 1 && paid.attribution.every((a: any) => a.attribution && a.licence));
  const r = paid.receipt;
  assert.is(r.amount, '0.10');
  assert.is(r.balance_after, '4.90');
  assert.is(r.quote_id, q2.quote_id);
  assert.is(r.catalogue_version, cat.version);
  assert.is(r.units_sha256, createHash('sha256').update(canonicalize(paid.units)).digest('hex'));
  assert.match(r.draw_id, /^drw_/);

  // 6. The balance is exactly the amount less, and the statement shows both movements.
  const balRes = await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) });
  assert.is(balRes.status, 200);
  assert.is(balRes.headers.get('cache-control'), 'no-store');
  const bal = (await balRes.json()) as any;
  assert.is(bal.balance, '4.90');
  assert.is(cents(bal.balance), cents(top.balance) - cents(q2.amount));
  assert.equal(bal.statement.map((s: any) => s.kind), ['draw', 'topup']);
  assert.is(bal.statement[0].quote_id, q2.quote_id);
});

test('exactly once: the same quote paid again returns the same draw and debits nothing', async () => {
  const token = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, units: refs.slice(20, 23) };
  const q = (await (await postJson(`${srv.base}/lds/draw`, draw, bearer(token))).json()) as any;
  const first = (await (await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token))).json()) as any;
  const againRes = await postJson(`${srv.base}/lds/draw`, { ...draw, units: [...draw.units].reverse(), quote_id: q.quote_id }, bearer(token));
  assert.is(againRes.status, 200, 'units are a set: order does not matter');
  const again = (await againRes.json()) as any;
  assert.equal(again.receipt, first.receipt);
  assert.is(await balanceOf(srv.base, token), '4.97');
});

test('a quote paid from one balance is refused to another (409), nothing debited', async () => {
  const a = await topUp(srv.base, '5.00');
  const b = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, units: refs.slice(30, 32) };
  const q = (await (await postJson(`${srv.base}/lds/draw`, draw)).json()) as any;
  assert.is((await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(a))).status, 200);
  const res = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(b));
  assert.is(res.status, 409);
  assert.is(res.headers.get('content-type'), 'application/problem+json');
  assert.is(((await res.json()) as any).type, `${PROBLEM_BASE}quote-paid-by-another-balance`);
  assert.is(await balanceOf(srv.base, b), '5.00');
  assert.is(await balanceOf(srv.base, a), '4.98');
  // a well-formed token that names no balance is told so (401), not that another balance paid
  const stranger = `lds_bal_${Buffer.alloc(32, 7).toString('base64url')}`;
  const res401 = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(stranger));
  assert.is(res401.status, 401);
  assert.is(((await res401.json()) as any).type, `${PROBLEM_BASE}invalid-balance-token`);
  assert.is(await balanceOf(srv.base, a), '4.98');
});

test('a second spelling of a paid quote_id is refused, never debited again, never a 5xx', async () => {
  const token = await topUp(srv.base, '5.00');
  const other = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, units: refs.slice(50, 53) };
  const q = (await (await postJson(`${srv.base}/lds/draw`, draw)).json()) as any;
  assert.is((await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token))).status, 200);
  for (const [who, id] of [[token, `${q.quote_id}=`], [other, `${q.quote_id}==`], [token, `${q.quote_id}${'!'.repeat(400)}`], [token, `${q.quote_id}${'!'.repeat(1000)}`]] as const) {
    const res = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: id }, bearer(who));
    assert.is(res.status, 400, `${id.length} chars`);
    assert.is(res.headers.get('content-type'), 'application/problem+json');
    const type = ((await res.json()) as any).type;
    assert.ok([`${PROBLEM_BASE}quote-tampered`, `${PROBLEM_BASE}malformed-request`].includes(type), type);
  }
  assert.is(await balanceOf(srv.base, token), '4.97');
  assert.is(await balanceOf(srv.base, other), '5.00');
});

test('changing any bound field is refused as tampered (400), nothing debited', async () => {
  const token = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, units: refs.slice(40, 44) };
  const q = (await (await postJson(`${srv.base}/lds/draw`, draw)).json()) as any;
  const [body, mac] = [q.quote_id.split('.')[1], q.quote_id.split('.')[2]];
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), a: 1 })).toString('base64url');
  const cases: [string, unknown][] = [
    ['units', { ...draw, units: refs.slice(40, 43), quote_id: q.quote_id }],
    ['units', { ...draw, units: [...refs.slice(40, 44), refs[45]], quote_id: q.quote_id }],
    ['product_id', { ...draw, product_id: 'svc-skills-eu', quote_id: q.quote_id }],
    ['units', { product_id: PRODUCT, query: 'regulation', limit: 4, quote_id: q.quote_id }],
    ['quote_id', { ...draw, quote_id: `q1.${forged}.${mac}` }],
    ['quote_id', { ...draw, quote_id: q.quote_id.slice(0, -2) + (q.quote_id.endsWith('AA') ? 'BB' : 'AA') }],
  ];
  for (const [field, req] of cases) {
    const res = await postJson(`${srv.base}/lds/draw`, req, bearer(token));
    const p = (await res.json()) as any;
    assert.is(res.status, 400, JSON.stringify(p));
    assert.is(p.type, `${PROBLEM_BASE}quote-tampered`);
    assert.is(p.field, field);
  }
  assert.is(await balanceOf(srv.base, token), '5.00');
});

test('a query quote paid with another limit or query names that field; the detail says the quoted limit', async () => {
  const token = await topUp(srv.base, '5.00');
  const quoted = { product_id: PRODUCT, query: 'regulation', limit: 3 };
  const q = (await (await postJson(`${srv.base}/lds/draw`, quoted)).json()) as any;
  assert.ok(q.quote_id, JSON.stringify(q));
  const { limit: _dropped, ...noLimit } = quoted;
  const cases: [field: string, req: Record<string, unknown>, words: RegExp][] = [
    ['limit', { ...quoted, limit: 4 }, /limit is 4, but the quote was made with limit 3/],
    ['limit', noLimit, /limit is 10, but the quote was made with limit 3/], // the default limit
    ['query', { ...quoted, query: 'regulations' }, /query differs/],
    ['query', { ...quoted, query: 'directive', limit: 5 }, /query differs/],
    ['query', { product_id: PRODUCT, units: refs.slice(0, 3) }, /made for a query/],
  ];
  for (const [field, req, words] of cases) {
    const res = await postJson(`${srv.base}/lds/draw`, { ...req, quote_id: q.quote_id }, bearer(token));
    const p = (await res.json()) as any;
    assert.is(res.status, 400, JSON.stringify(p));
    assert.is(p.type, `${PROBLEM_BASE}quote-tampered`);
    assert.is(p.field, field, `${JSON.stringify(req)}: ${JSON.stringify(p)}`);
    assert.match(p.detail, words);
  }
  assert.is(await balanceOf(srv.base, token), '5.00');
  // The quoted request itself still pays.
  assert.is((await postJson(`${srv.base}/lds/draw`, { ...quoted, quote_id: q.quote_id }, bearer(token))).status, 200);
});

test('a limit out of range says which value was received (draw and statement)', async () => {
  for (const limit of [0, 101, 1000000]) {
    const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, query: 'regulation', limit });
    const p = (await res.json()) as any;
    assert.is(res.status, 400, JSON.stringify(p));
    assert.is(p.field, 'limit');
    assert.match(p.detail, 'from 1 to 100');
    assert.match(p.detail, `(got ${limit})`);
  }
  const token = await topUp(srv.base, '5.00');
  for (const [given, shown] of [['0', '0'], ['5000', '5000'], ['abc', '"abc"']]) {
    const res = await fetch(`${srv.base}/lds/balance?limit=${given}`, { headers: bearer(token) });
    const p = (await res.json()) as any;
    assert.is(res.status, 400, JSON.stringify(p));
    assert.is(p.field, 'limit');
    assert.match(p.detail, `from 1 to 1000 (got ${shown})`);
  }
});

test('statement: a draw line names its draw in draw_id, a top-up line its top-up in topup_id (JSON and CSV)', async () => {
  const token = await topUp(srv.base, '5.00');
  const units = refs.slice(60, 62);
  const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units })).json()) as any;
  const paid = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token))).json()) as any;
  const drawId = paid.receipt.draw_id;
  assert.type(drawId, 'string');
  const view = (await (await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) })).json()) as any;
  const drawLine = view.statement.find((l: any) => l.kind === 'draw');
  const topupLine = view.statement.find((l: any) => l.kind === 'topup');
  assert.is(drawLine.id, drawId);
  assert.is(drawLine.draw_id, drawId);
  assert.is(topupLine.topup_id, topupLine.id);
  assert.is(topupLine.draw_id, undefined);
  const csv = await (await fetch(`${srv.base}/lds/balance?format=csv`, { headers: bearer(token) })).text();
  const [head, ...rows] = csv.split('\r\n').filter(Boolean).map((l) => l.split(','));
  const col = (name: string) => head!.indexOf(name);
  const drawRow = rows.find((r) => r[col('kind')] === 'draw')!;
  assert.is(drawRow[col('id')], drawId);
  assert.is(drawRow[col('draw_id')], drawId);
  const topupRow = rows.find((r) => r[col('kind')] === 'topup')!;
  assert.is(topupRow[col('topup_id')], topupRow[col('id')]);
  assert.is(topupRow[col('draw_id')], '');
});

test('query draws bind the resolved unit list; insufficient balance is a 402 problem', async () => {
  const token = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, query: 'member states', limit: 5 };
  const qRes = await postJson(`${srv.base}/lds/draw`, draw, bearer(token));
  assert.is(qRes.status, 402);
  const q = (await qRes.json()) as any;
  assert.ok(q.unit_count >= 1 && q.unit_count <= 5);
  assert.is(q.resolved_units.length, q.unit_count);
  const paid = (await (await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token))).json()) as any;
  assert.equal(paid.units.map((u: any) => u.ref), q.resolved_units);
  assert.is(paid.receipt.amount, q.amount);

  // 100 units at 0.01 cost 1.00: drain a 5.00 balance with five such draws, then the sixth cannot pay.
  const poor = await topUp(srv.base, '5.00');
  const big = { product_id: PRODUCT, units: refs.slice(0, 100) };
  for (let i = 0; i < 5; i++) {
    const qq = (await (await postJson(`${srv.base}/lds/draw`, big)).json()) as any;
    assert.is((await postJson(`${srv.base}/lds/draw`, { ...big, quote_id: qq.quote_id }, bearer(poor))).status, 200);
  }
  assert.is(await balanceOf(srv.base, poor), '0.00');
  const qq = (await (await postJson(`${srv.base}/lds/draw`, big, bearer(poor))).json()) as any;
  assert.is(qq.payable_from_balance, false);
  const res = await postJson(`${srv.base}/lds/draw`, { ...big, quote_id: qq.quote_id }, bearer(poor));
  assert.is(res.status, 402);
  const p = (await res.json()) as any;
  assert.is(p.type, `${PROBLEM_BASE}insufficient-balance`);
  assert.is(p.balance, '0.00');
  assert.is(p.quote.amount, '1.00');
  assert.is(await balanceOf(srv.base, poor), '0.00');
});

test('an expired quote answers 402 quote-expired with a fresh quote; a paid one still replays', async () => {
  const token = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, units: refs.slice(50, 52) };
  const paidQ = (await (await postJson(`${srv.base}/lds/draw`, draw)).json()) as any;
  const paid = (await (await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: paidQ.quote_id }, bearer(token))).json()) as any;
  const unpaidQ = (await (await postJson(`${srv.base}/lds/draw`, draw)).json()) as any;
  clock += 16 * 60 * 1000; // past the 15-minute lifetime
  try {
    const res = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: unpaidQ.quote_id }, bearer(token));
    assert.is(res.status, 402);
    assert.is(res.headers.get('cache-control'), 'no-store');
    assert.ok(res.headers.get('link'), 'the fresh quote is payable from this balance');
    const p = (await res.json()) as any;
    assert.is(p.type, `${PROBLEM_BASE}quote-expired`);
    assert.ok(p.quote.quote_id && p.quote.quote_id !== unpaidQ.quote_id);
    assert.ok(Date.parse(p.quote.expires_at) > clock);
    const replay = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: paidQ.quote_id }, bearer(token));
    assert.is(replay.status, 200);
    assert.equal(((await replay.json()) as any).receipt, paid.receipt);
    assert.is(await balanceOf(srv.base, token), '4.98');
  } finally {
    clock = Date.now();
  }
});

test('unknown units are named (404); held sources are never quoted', async () => {
  const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: [refs[0], 'eu.eurlex:00000X0000/1', 'fi.fingrid:nope'] });
  assert.is(res.status, 404);
  const p = (await res.json()) as any;
  assert.is(p.type, `${PROBLEM_BASE}unknown-units`);
  assert.equal(p.unknown.sort(), ['eu.eurlex:00000X0000/1', 'fi.fingrid:nope']);
  const held = new Set<string>();
  for (const prod of fx.catalogue.products) for (const l of prod.licence_basis) if (l.verdict === 'held') held.add(l.source);
  for (const prod of fx.catalogue.products) {
    for (const ref of allRefs.get(prod.product_id) ?? []) assert.not.ok(held.has(ref.split(':')[0]), `${ref} of a held source is in the store`);
  }
});

// Last: it closes the ledger under the running server.
test('a ledger that refuses work is a 503 problem on every money route, never a 500', async () => {
  const token = await topUp(srv.base, '5.00');
  const draw = { product_id: PRODUCT, units: refs.slice(60, 62) };
  const q = (await (await postJson(`${srv.base}/lds/draw`, draw)).json()) as any;
  await srv.ledger.close();
  const answers = [
    await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token)),
    await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) }),
  ];
  for (const res of answers) {
    assert.is(res.status, 503);
    assert.is(res.headers.get('content-type'), 'application/problem+json');
    assert.is(((await res.json()) as any).type, `${PROBLEM_BASE}ledger-unavailable`);
  }
});

test.run();
