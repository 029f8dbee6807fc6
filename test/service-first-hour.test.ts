// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// What a buyer's first hour ran into (issue 14), each over real HTTP against a real server:
// the one rule for a used top-up credential (both forms), Payment-Authorization without a Bearer
// token, currency codes in any case, duplicate unit references, a product without live units,
// and HTTP edge cases (no Host, truncated body, unparseable request) answered as problems.
// Every shipped product sells (issue 49), so the fixture is the usual build except that
// svc-media-eu's routing names a descriptor no act carries (a product a publisher has just added):
// the product without live units the draw must answer with the catalogue's reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { Credential, Receipt } from 'mppx';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { hashToken } from '../payments/tokens.ts';
import { join } from 'node:path';
import { editJson } from './helpers/build.ts';
import { cachedFixtureFrom } from './helpers/source-fixture.ts';
import { bearer, mppxClient, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const PRODUCT = 'svc-language-eu';
const UNROUTED = 'svc-media-eu';
const TOPUP_TIMEOUT_MS = 1200;
let fx: Fixture;
let srv: TestServer;
let refs: string[];
let topupUrl: string;
let clockOffset = 0;
const now = () => Date.now() + clockOffset;

test.before(async () => {
  fx = await cachedFixtureFrom('service-unrouted', (src) => editJson(join(src, `products/${UNROUTED}.json`), (d) => {
    d.routing = { domains: [], microthesauri: [], descriptors: ['c_ffffffff'] };
  }), ['test/service-first-hour.test.ts']);
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  // Short request timeouts so the 408 test does not wait 15 s; everything else is fast anyway.
  srv = await startTestServer(fx, { now, env: { LDS_REQUEST_TIMEOUT_MS: String(TOPUP_TIMEOUT_MS), LDS_HEADERS_TIMEOUT_MS: String(TOPUP_TIMEOUT_MS) } });
  topupUrl = `${srv.base}/lds/balance/topup`;
});
test.after(async () => {
  await srv?.close();
});

async function topupCount(token: string): Promise<number> {
  return (await srv.ledger.statement(hashToken(token), 1000)).filter((s) => s.kind === 'topup').length;
}

async function cents(token: string): Promise<number> {
  return (await srv.ledger.getBalance(hashToken(token)))!.cents;
}

// ------------------------------------------------------------------ 2. a used credential, both forms

test('a used credential without Bearer: answered again while its challenge is valid, 409 after; credited once', async () => {
  const body = { amount: '5.00', currency: 'EUR' };
  const challenge = await postJson(topupUrl, body);
  assert.is(challenge.status, 402);
  const credential = await mppxClient('spt_test_replay_new').createCredential(challenge);
  const first = await postJson(topupUrl, body, { Authorization: credential });
  assert.is(first.status, 200);
  const { balance_token } = await first.json();
  assert.ok(balance_token);

  // resent (the buyer lost the answer): the same answer, nothing credited
  const again = await postJson(topupUrl, body, { Authorization: credential });
  assert.is(again.status, 200);
  const againBody = await again.json();
  assert.is(againBody.balance_token, balance_token);
  assert.is(againBody.balance, '5.00');
  assert.is(Receipt.fromResponse(again).reference, Receipt.fromResponse(first).reference);

  // after the challenge expired: 409, the credit is said to have happened, no token
  const expires = Date.parse(Credential.deserialize(Credential.extractPaymentScheme(credential)!).challenge.expires!);
  clockOffset = expires - Date.now() + 1000;
  try {
    const late = await postJson(topupUrl, body, { Authorization: credential });
    const text = await late.text();
    assert.is(late.status, 409, text);
    const p = JSON.parse(text);
    assert.is(p.type, PROBLEM_BASE + 'topup-already-credited');
    assert.match(p.detail, /already credited/);
    assert.match(p.detail, /shown once/);
    assert.not.ok(text.includes(balance_token));
  } finally {
    clockOffset = 0;
  }
  assert.is(await cents(balance_token), 500);
  assert.is(await topupCount(balance_token), 1);
});

test('a used credential with Bearer: the same rule (answered again, then 409); credited once', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_replay_base');
  const body = { amount: '6.00', currency: 'EUR' };
  const challenge = await postJson(topupUrl, body, bearer(token));
  assert.is(challenge.status, 402);
  const credential = await mppxClient('spt_test_replay_existing').createCredential(challenge);
  const headers = { ...bearer(token), 'Payment-Authorization': credential };
  const first = await postJson(topupUrl, body, headers);
  assert.is(first.status, 200);
  const firstBody = await first.json();
  assert.is(firstBody.balance, '11.00');
  assert.is(firstBody.balance_token, undefined);

  const again = await postJson(topupUrl, body, headers);
  assert.is(again.status, 200);
  const againBody = await again.json();
  assert.is(againBody.balance, '11.00');
  assert.is(againBody.balance_token, undefined);

  // the same credential without the Bearer (another form) is not an answer again
  const otherForm = await postJson(topupUrl, body, { Authorization: credential });
  assert.is(otherForm.status, 409);
  assert.is((await otherForm.json()).type, PROBLEM_BASE + 'topup-already-credited');

  const expires = Date.parse(Credential.deserialize(Credential.extractPaymentScheme(credential)!).challenge.expires!);
  clockOffset = expires - Date.now() + 1000;
  try {
    const late = await postJson(topupUrl, body, headers);
    assert.is(late.status, 409);
    assert.is((await late.json()).type, PROBLEM_BASE + 'topup-already-credited');
  } finally {
    clockOffset = 0;
  }
  assert.is(await cents(token), 1100);
  assert.is(await topupCount(token), 2);
});

// ------------------------------------------------------------------ 3. Payment-Authorization, no Bearer

test('Payment-Authorization without the Bearer token: 401 balance-token-required, nothing charged; with it, credited', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_pa_base');
  const body = { amount: '5.00' };
  const challenge = await postJson(topupUrl, body, bearer(token));
  const credential = await mppxClient('spt_test_pa').createCredential(challenge);
  const missing = await postJson(topupUrl, body, { 'Payment-Authorization': credential });
  const text = await missing.text();
  assert.is(missing.status, 401, text);
  assert.is(missing.headers.get('content-type'), 'application/problem+json');
  assert.is(missing.headers.get('www-authenticate'), 'Bearer realm="lds"');
  const p = JSON.parse(text);
  assert.is(p.type, PROBLEM_BASE + 'balance-token-required');
  assert.is(p.field, 'Authorization');
  assert.match(p.detail, /Authorization: Bearer <BALANCE_TOKEN>/);
  assert.is(await cents(token), 500);
  // the credential was not used up: sent properly it credits the balance
  const ok = await postJson(topupUrl, body, { ...bearer(token), 'Payment-Authorization': credential });
  assert.is(ok.status, 200);
  assert.is(await cents(token), 1000);
});

// ------------------------------------------------------------------ 4. currency in any case

test('currency "eur" is EUR for a top-up and a draw', async () => {
  const res = await mppxClient('spt_test_lower').fetch(topupUrl, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ amount: '5.00', currency: 'eur' }) });
  assert.is(res.status, 200);
  const { balance_token } = await res.json();
  const quote = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 2), currency: 'eur' });
  assert.is(quote.status, 402);
  const q = await quote.json();
  assert.is(q.currency, 'EUR');
  const paid = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 2), currency: 'eur', quote_id: q.quote_id }, bearer(balance_token));
  assert.is(paid.status, 200);
});

// ------------------------------------------------------------------ 5. duplicates count once

test('duplicate unit references count once: 101 copies of one reference are one unit; 101 distinct are refused', async () => {
  const copies = Array.from({ length: 101 }, () => refs[0]);
  const quote = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: copies });
  const qtext = await quote.text();
  assert.is(quote.status, 402, qtext);
  const q = JSON.parse(qtext);
  assert.is(q.unit_count, 1);
  assert.equal(q.resolved_units, [refs[0]]);
  const token = await topUp(srv.base, '5.00', 'spt_test_dups');
  const paid = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: copies, quote_id: q.quote_id }, bearer(token));
  assert.is(paid.status, 200);
  assert.is((await paid.json()).units.length, 1);

  // a duplicate inside 100 distinct ones is still fine (100 distinct), one more distinct is not
  const hundred = [...refs.slice(0, 100), refs[0]];
  assert.is((await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: hundred })).status, 402);
  const distinct = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 101) });
  const p = await distinct.json();
  assert.is(distinct.status, 400);
  assert.is(p.field, 'units');
  assert.match(p.detail, /1 to 100 distinct unit references.*101 distinct/);
});

// ------------------------------------------------------------------ 6. a product without live units

test('a product without live units: 404 product-unavailable with the catalogue\'s reason, not no-matching-units', async () => {
  const empty = fx.catalogue.products.find((p: any) => p.product_id === UNROUTED);
  assert.is(empty.live_unit_count, 0);
  assert.match(empty._health.rollup_reason, /carries a EuroVoc descriptor in this product's rule \(descriptors c_ffffffff\)/);
  for (const req of [{ product_id: empty.product_id, query: 'regulation' }, { product_id: empty.product_id, units: ['eu.eurlex:32016R0679#p1'] }]) {
    const res = await postJson(`${srv.base}/lds/draw`, req);
    const text = await res.text();
    assert.is(res.status, 404, text);
    const p = JSON.parse(text);
    assert.is(p.type, PROBLEM_BASE + 'product-unavailable');
    assert.is(p.field, 'product_id');
    assert.is(p.reason, empty._health.rollup_reason);
    assert.ok(p.detail.includes('no live units'), p.detail);
    assert.ok(p.detail.includes(empty._health.rollup_reason), p.detail);
  }
  // the OpenAPI document lists the type
  const spec = await (await fetch(`${srv.base}/specification`)).json();
  assert.ok(spec.components.schemas.Problem.properties.type.enum.includes(PROBLEM_BASE + 'product-unavailable'));
});

// ------------------------------------------------------------------ 8. HTTP edge cases, raw sockets

/** Sends raw bytes, returns everything the server wrote until it closed, and how long that took. */
function raw(payload: string): Promise<{ text: string; ms: number }> {
  const { port } = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let text = '';
    const s = connect(Number(port), '127.0.0.1', () => s.write(payload));
    s.setEncoding('utf8');
    s.on('data', (d) => (text += d));
    s.on('close', () => resolve({ text, ms: performance.now() - started }));
    s.on('error', reject);
    setTimeout(() => s.destroy(new Error(`no close after 10 s; got ${JSON.stringify(text)}`)), 10_000).unref();
  });
}

function parse(text: string): { status: number; headers: string; body: any } {
  const [head, ...rest] = text.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body: JSON.parse(rest.join('\r\n\r\n')) };
}

test('a request without Host: 400 problem+json naming Host', async () => {
  const r = parse((await raw('GET /v1/lds/_catalog HTTP/1.1\r\nConnection: close\r\n\r\n')).text);
  assert.is(r.status, 400);
  assert.match(r.headers, /content-type: application\/problem\+json/);
  assert.is(r.body.type, PROBLEM_BASE + 'malformed-request');
  assert.is(r.body.field, 'Host');
  // HTTP/1.0 has no Host requirement
  const old = await raw('GET /v1/lds/_catalog HTTP/1.0\r\n\r\n');
  assert.match(old.text, /^HTTP\/1\.1 200/);
});

test('a truncated body: 408 problem+json within the request timeout, connection closed', async () => {
  const r = await raw(`POST /v1/lds/draw HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{"product_id":`);
  const p = parse(r.text);
  assert.is(p.status, 408);
  assert.match(p.headers, /content-type: application\/problem\+json/);
  assert.match(p.headers, /connection: close/);
  assert.is(p.body.type, PROBLEM_BASE + 'request-timeout');
  // the limit plus at most the one-second check interval (and some scheduling slack)
  assert.ok(r.ms >= TOPUP_TIMEOUT_MS - 50 && r.ms < TOPUP_TIMEOUT_MS + 1800, `${r.ms} ms`);
});

test('headers that never end, an unparseable request line, huge headers: problems, never a hang', async () => {
  const slow = await raw('GET /v1/lds/_catalog HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  assert.is(parse(slow.text).status, 408);
  assert.ok(slow.ms < TOPUP_TIMEOUT_MS + 1800, `${slow.ms} ms`);
  const garbage = parse((await raw('NOT HTTP AT ALL\r\n\r\n')).text);
  assert.is(garbage.status, 400);
  assert.is(garbage.body.type, PROBLEM_BASE + 'malformed-request');
  const huge = parse((await raw(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`)).text);
  assert.is(huge.status, 431);
  assert.is(huge.body.type, PROBLEM_BASE + 'request-header-fields-too-large');
  // the service still answers
  assert.is((await fetch(`${srv.base}/lds/_catalog`)).status, 200);
});

test.run();
