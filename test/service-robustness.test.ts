// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// Bad input never yields a 5xx and never changes a balance. A table of malformed requests per
// endpoint, each answered 4xx problem+json; then fast-check throws random bodies and headers at
// every endpoint. Balances and the ledger are compared before and after.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const PRODUCT = 'svc-language-eu';
let fx: Fixture;
let srv: TestServer;
let refs: string[];
let token: string;
let quote: any;

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  srv = await startTestServer(fx);
  token = await topUp(srv.base, '5.00');
  quote = await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 3) })).json();
});
test.after(async () => {
  await srv?.close();
});

interface Case {
  name: string;
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
  status: number;
  type: string;
  field?: string;
  /** What the detail must say, in words. */
  words?: RegExp;
}

const J = (v: unknown) => JSON.stringify(v);
const ct = { 'content-type': 'application/json' };

function cases(): Case[] {
  const u = refs.slice(0, 3);
  const ok = { product_id: PRODUCT, units: u };
  const auth = { ...ct, ...bearer(token) };
  return [
    // POST /lds/draw
    { name: 'not JSON', method: 'POST', path: '/lds/draw', body: '{"product_id":', headers: ct, status: 400, type: 'malformed-request', field: '(body)' },
    { name: 'JSON array', method: 'POST', path: '/lds/draw', body: '[]', headers: ct, status: 400, type: 'malformed-request' },
    { name: 'JSON array [1,2]', method: 'POST', path: '/lds/draw', body: '[1,2]', headers: ct, status: 400, type: 'malformed-request', field: '(body)', words: /must be a JSON object.*not a list/ },
    { name: 'JSON null', method: 'POST', path: '/lds/draw', body: 'null', headers: ct, status: 400, type: 'malformed-request', field: '(body)', words: /must be a JSON object.*not null/ },
    { name: 'JSON string', method: 'POST', path: '/lds/draw', body: '"units"', headers: ct, status: 400, type: 'malformed-request', field: '(body)', words: /must be a JSON object.*not a string/ },
    { name: 'bad product id', method: 'POST', path: '/lds/draw', body: J({ product_id: 'Not An Id', units: u }), headers: ct, status: 400, type: 'malformed-request', field: 'product_id', words: /lower-case letters, digits and hyphens/ },
    { name: 'limit as a string', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, query: 'regulation', limit: '3' }), headers: ct, status: 400, type: 'malformed-request', field: 'limit', words: /whole number from 1 to 100/ },
    { name: 'empty body', method: 'POST', path: '/lds/draw', body: '', headers: ct, status: 400, type: 'malformed-request' },
    { name: 'text/plain', method: 'POST', path: '/lds/draw', body: J(ok), headers: { 'content-type': 'text/plain' }, status: 415, type: 'unsupported-media-type' },
    { name: 'no product_id', method: 'POST', path: '/lds/draw', body: J({ units: u }), headers: ct, status: 400, type: 'malformed-request', field: 'product_id' },
    { name: 'product_id number', method: 'POST', path: '/lds/draw', body: J({ product_id: 7, units: u }), headers: ct, status: 400, type: 'malformed-request', field: 'product_id' },
    { name: 'unknown product', method: 'POST', path: '/lds/draw', body: J({ product_id: 'svc-nothing-eu', units: u }), headers: ct, status: 404, type: 'unknown-product' },
    { name: 'neither units nor query', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT }), headers: ct, status: 400, type: 'malformed-request', field: 'units' },
    { name: 'units and query', method: 'POST', path: '/lds/draw', body: J({ ...ok, query: 'x' }), headers: ct, status: 400, type: 'malformed-request' },
    { name: 'empty units', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, units: [] }), headers: ct, status: 400, type: 'malformed-request', field: 'units' },
    { name: '101 units', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, units: refs.slice(0, 101) }), headers: ct, status: 400, type: 'malformed-request', field: 'units' },
    { name: 'unit not a string', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, units: [u[0], 5] }), headers: ct, status: 400, type: 'malformed-request', field: 'units.1' },
    { name: 'malformed unit ref', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, units: ['no ref'] }), headers: ct, status: 400, type: 'malformed-request', field: 'units.0' },
    { name: 'unknown unit', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, units: ['eu.eurlex:nope/1'] }), headers: ct, status: 404, type: 'unknown-units' },
    { name: 'query too long', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, query: 'a'.repeat(501) }), headers: ct, status: 400, type: 'malformed-request', field: 'query' },
    { name: 'limit 0', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, query: 'regulation', limit: 0 }), headers: ct, status: 400, type: 'malformed-request', field: 'limit' },
    { name: 'limit 101', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, query: 'regulation', limit: 101 }), headers: ct, status: 400, type: 'malformed-request', field: 'limit' },
    { name: 'limit 2.5', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, query: 'regulation', limit: 2.5 }), headers: ct, status: 400, type: 'malformed-request', field: 'limit' },
    { name: 'extra field', method: 'POST', path: '/lds/draw', body: J({ ...ok, price: '0.00' }), headers: ct, status: 400, type: 'malformed-request', field: 'price' },
    { name: 'currency USD', method: 'POST', path: '/lds/draw', body: J({ ...ok, currency: 'USD' }), headers: ct, status: 400, type: 'unsupported-currency', field: 'currency' },
    { name: 'currency not a code', method: 'POST', path: '/lds/draw', body: J({ ...ok, currency: 'euro' }), headers: ct, status: 400, type: 'malformed-request', field: 'currency' },
    { name: 'body over 16 KiB', method: 'POST', path: '/lds/draw', body: J({ ...ok, query: 'x'.repeat(17 * 1024) }), headers: ct, status: 413, type: 'body-too-large' },
    { name: 'pay without token', method: 'POST', path: '/lds/draw', body: J({ ...ok, quote_id: quote.quote_id }), headers: ct, status: 401, type: 'balance-token-required' },
    { name: 'pay with unknown token', method: 'POST', path: '/lds/draw', body: J({ ...ok, quote_id: quote.quote_id }), headers: { ...ct, ...bearer('lds_bal_' + 'A'.repeat(43)) }, status: 401, type: 'invalid-balance-token' },
    { name: 'pay with malformed token', method: 'POST', path: '/lds/draw', body: J({ ...ok, quote_id: quote.quote_id }), headers: { ...ct, authorization: 'Bearer x y' }, status: 401, type: 'invalid-balance-token' },
    { name: 'pay with a garbage quote_id', method: 'POST', path: '/lds/draw', body: J({ ...ok, quote_id: 'q1.abc.def' }), headers: auth, status: 400, type: 'quote-tampered', field: 'quote_id' },
    { name: 'pay other units', method: 'POST', path: '/lds/draw', body: J({ product_id: PRODUCT, units: refs.slice(1, 4), quote_id: quote.quote_id }), headers: auth, status: 400, type: 'quote-tampered', field: 'units' },
    { name: 'empty quote_id', method: 'POST', path: '/lds/draw', body: J({ ...ok, quote_id: '' }), headers: auth, status: 400, type: 'malformed-request', field: 'quote_id' },
    // POST /lds/balance/topup
    { name: 'topup not JSON', method: 'POST', path: '/lds/balance/topup', body: 'amount=5', headers: ct, status: 400, type: 'malformed-request' },
    { name: 'topup amount number', method: 'POST', path: '/lds/balance/topup', body: J({ amount: 5 }), headers: ct, status: 400, type: 'malformed-request', field: 'amount' },
    { name: 'topup below minimum', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '4.99', currency: 'EUR' }), headers: ct, status: 400, type: 'topup-below-minimum', field: 'amount' },
    { name: 'topup three decimals', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.001' }), headers: ct, status: 400, type: 'malformed-request', field: 'amount', words: /decimal string .* up to two decimals/ },
    { name: 'topup negative amount', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '-5.00' }), headers: ct, status: 400, type: 'malformed-request', field: 'amount', words: /amount must be a decimal string in EUR with up to two decimals and no sign.*"5\.00".*at least 5\.00/ },
    { name: 'topup body null', method: 'POST', path: '/lds/balance/topup', body: 'null', headers: ct, status: 400, type: 'malformed-request', field: '(body)', words: /must be a JSON object such as \{"amount"/ },
    { name: 'topup body [1,2]', method: 'POST', path: '/lds/balance/topup', body: '[1,2]', headers: ct, status: 400, type: 'malformed-request', field: '(body)', words: /must be a JSON object/ },
    { name: 'topup currency lower-case eur is EUR', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.00', currency: 'eur' }), headers: ct, status: 402, type: 'payment-required' },
    { name: 'topup Payment-Authorization without Bearer', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.00' }), headers: { ...ct, 'payment-authorization': 'Payment abc' }, status: 401, type: 'balance-token-required', field: 'Authorization', words: /no Bearer token was sent/ },
    { name: 'topup currency USD', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.00', currency: 'USD' }), headers: ct, status: 400, type: 'unsupported-currency', field: 'currency' },
    { name: 'topup unknown bearer', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.00' }), headers: { ...ct, ...bearer('lds_bal_' + 'B'.repeat(43)) }, status: 401, type: 'invalid-balance-token' },
    { name: 'topup garbage credential', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.00' }), headers: { ...ct, authorization: 'Payment abc' }, status: 402, type: 'payment-credential-invalid' },
    { name: 'topup too large', method: 'POST', path: '/lds/balance/topup', body: J({ amount: '5.00', pad: 'x'.repeat(20_000) }), headers: ct, status: 413, type: 'body-too-large' },
    // GET /lds/balance
    { name: 'balance without token', method: 'GET', path: '/lds/balance', status: 401, type: 'balance-token-required' },
    { name: 'balance unknown token', method: 'GET', path: '/lds/balance', headers: bearer('lds_bal_' + 'C'.repeat(43)), status: 401, type: 'invalid-balance-token' },
    { name: 'balance Basic auth', method: 'GET', path: '/lds/balance', headers: { authorization: 'Basic dXNlcjpwYXNz' }, status: 401, type: 'balance-token-required' },
    // Catalogue documents and unknown paths
    { name: 'unknown DCAT product', method: 'GET', path: '/dcat/catalog/svc-nothing-eu', status: 404, type: 'unknown-product' },
    { name: 'bad DCAT product id', method: 'GET', path: '/dcat/catalog/NOT%20AN%20ID', status: 400, type: 'malformed-request', field: 'product_id' },
    { name: 'POST to the catalogue', method: 'POST', path: '/lds/_catalog', body: '{}', headers: ct, status: 405, type: 'method-not-allowed' },
    { name: 'GET the draw endpoint', method: 'GET', path: '/lds/draw', status: 405, type: 'method-not-allowed' },
    { name: 'unknown path', method: 'GET', path: '/nothing/here', status: 404, type: 'not-found' },
  ];
}

async function snapshot(): Promise<string> {
  return JSON.stringify([await balanceOf(srv.base, token), await srv.ledger.statement(hashOf(token), 1000)]);
}
import { hashToken as hashOf } from '../payments/tokens.ts';

test('malformed requests: 4xx problem+json with a stable type, no state change', async () => {
  const before = await snapshot();
  for (const c of cases()) {
    const res = await fetch(srv.base + c.path, { method: c.method, headers: c.headers, body: c.body });
    const text = await res.text();
    assert.is(res.status, c.status, `${c.name}: ${text}`);
    assert.is(res.headers.get('content-type'), 'application/problem+json', c.name);
    const p = JSON.parse(text);
    assert.is(p.type, `${PROBLEM_BASE}${c.type}`, `${c.name}: ${text}`);
    assert.is(p.status, c.status, c.name);
    assert.ok(p.title, c.name);
    if (c.field) assert.is(p.field, c.field, `${c.name}: ${text}`);
    if (c.words) assert.match(p.detail ?? '', c.words, `${c.name}: ${text}`);
    // Words, never a regular expression or a validator's phrasing.
    assert.not.match(p.detail ?? '', /must match|pattern|\^\(|\$"|must be object|must NOT|must have required/, `${c.name}: ${text}`);
    assert.not.match(text, /lds_bal_/, `${c.name}: the problem never echoes a token`);
  }
  assert.is(await snapshot(), before);
  assert.equal(await srv.ledger.verify(), []);
});

const PATHS = ['/lds/draw', '/lds/balance/topup', '/lds/balance', '/lds/_catalog', '/specification', `/dcat/catalog/${PRODUCT}`, '/dcat/catalog/x', '/nothing'];

test('property: random bodies and headers at every endpoint never give a 5xx or change a balance', async () => {
  const before = await snapshot();
  const json = fc.jsonValue({ maxDepth: 3 });
  const drawish = fc.record(
    {
      product_id: fc.oneof(fc.constant(PRODUCT), fc.string(), json),
      units: fc.oneof(fc.array(fc.oneof(fc.constantFrom(...refs.slice(0, 20)), fc.string()), { maxLength: 5 }), json),
      query: fc.oneof(fc.string(), json),
      limit: fc.oneof(fc.integer({ min: -5, max: 200 }), json),
      currency: fc.oneof(fc.constantFrom('EUR', 'eur', 'USD', ''), json),
      quote_id: fc.oneof(fc.constant(quote.quote_id), fc.string(), json),
      amount: fc.oneof(fc.constantFrom('5.00', '0.01', '1e3', '-5.00', '99999999999.00'), json),
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(drawish.map((v) => JSON.stringify(v)), json.map((v) => JSON.stringify(v)), fc.string({ maxLength: 200 }));
  const headerValue = fc.oneof(
    fc.constant(`Bearer ${token}`),
    fc.constant('Bearer lds_bal_' + 'D'.repeat(43)),
    fc.string({ maxLength: 60 }).map((s) => `Bearer ${s.replace(/[\r\n\0]/g, '')}`),
    fc.string({ maxLength: 60 }).map((s) => `Payment ${s.replace(/[\r\n\0]/g, '')}`),
    fc.stringMatching(/^[\x20-\x7e]{0,40}$/),
  );
  const request = fc.record({
    method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
    path: fc.constantFrom(...PATHS),
    body,
    contentType: fc.constantFrom('application/json', 'application/problem+json', 'text/plain', '', 'application/json; charset=latin1'),
    authorization: fc.option(headerValue),
    paymentAuthorization: fc.option(headerValue),
    ifNoneMatch: fc.option(fc.constantFrom('*', '"x"', fx.catalogue.version, `"${fx.catalogue.version}"`)),
  });
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const headers: Record<string, string> = {};
      if (r.contentType) headers['content-type'] = r.contentType;
      if (r.authorization) headers.authorization = r.authorization;
      if (r.paymentAuthorization) headers['payment-authorization'] = r.paymentAuthorization;
      if (r.ifNoneMatch) headers['if-none-match'] = r.ifNoneMatch;
      const withBody = !['GET', 'HEAD'].includes(r.method);
      const res = await fetch(srv.base + r.path, { method: r.method, headers, body: withBody ? r.body : undefined });
      const text = await res.text();
      if (res.status >= 500) throw new Error(`${r.method} ${r.path} -> ${res.status} ${text}`);
      if (res.status >= 400 && r.method !== 'HEAD') {
        assert.ok(/^application\/(problem\+)?json/.test(res.headers.get('content-type') ?? ''), `${r.method} ${r.path} ${res.status}: ${res.headers.get('content-type')}`);
      }
    }),
    { numRuns: 400 },
  );
  // A valid paying request may have been generated with the real token and quote: allow exactly that debit.
  const after = await snapshot();
  if (after !== before) {
    const [bal] = JSON.parse(after);
    assert.is(bal, '4.97', 'the only possible change is paying the one valid quote once');
  }
  assert.equal(await srv.ledger.verify(), []);
});

test('rate limit: 429 problem with Retry-After, per client', async () => {
  // One process may open the unit store once: restart the server with a tight limit.
  await srv.close();
  const limited = await startTestServer(fx, { varDir: srv.varDir, env: { ...srv.ledgerEnv, LDS_RATE_LIMIT_RPS: '1', LDS_RATE_LIMIT_BURST: '3' } });
  srv = limited;
  try {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 5; i++) {
      last = await postJson(`${limited.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 1) });
      statuses.push(last.status);
      if (i < 4) await last.arrayBuffer();
    }
    assert.equal(statuses, [402, 402, 402, 429, 429]);
    assert.ok(Number(last!.headers.get('retry-after')) >= 1);
    assert.is(((await last!.json()) as any).type, `${PROBLEM_BASE}rate-limited`);
    // Published documents are not rate limited (a CDN would serve them).
    assert.is((await fetch(`${limited.base}/lds/_catalog`)).status, 200);
  } finally {
    srv = limited; // closed by test.after
  }
});

test('rate limit behind a proxy: a client cannot dodge it by inventing X-Forwarded-For entries', async () => {
  await srv.close();
  const proxied = await startTestServer(fx, { varDir: srv.varDir, env: { ...srv.ledgerEnv, LDS_RATE_LIMIT_RPS: '1', LDS_RATE_LIMIT_BURST: '3', LDS_TRUST_PROXY: 'true' } });
  srv = proxied;
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    // what nginx forwards with $proxy_add_x_forwarded_for: the client's own header, then the real peer
    const res = await postJson(`${proxied.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 1) }, { 'x-forwarded-for': `198.51.100.${i}, 203.0.113.9` });
    statuses.push(res.status);
    await res.arrayBuffer();
  }
  assert.equal(statuses, [402, 402, 402, 429, 429]);
  // another real peer has its own bucket
  const other = await postJson(`${proxied.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 1) }, { 'x-forwarded-for': '203.0.113.10' });
  assert.is(other.status, 402);
});

test.run();
