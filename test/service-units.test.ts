// @tier: quick  (npm run test:quick: in-process)
// Unit-level checks of the service's small modules: stateless quotes, configuration and secrets,
// the _headers parser and ETag matching, the rate limiter, and log redaction.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { generateReceiptKey } from '../payments/receipts.ts';
import { operatorToken } from '../cli/admin.ts';
import { ConfigError, loadConfig } from '../payments/config.ts';
import { availableParallelism } from 'node:os';
import { QuoteSigner, canonicalUnits, requestDigest } from '../payments/draw/quote.ts';
import { createRateLimiter } from '../payments/http/ratelimit.ts';
import { chooseEncoding, etagMatches, parseHeadersFile } from '../payments/http/static.ts';
import { createLogger } from '../payments/serve.ts';
import { createMetrics } from '../payments/metrics.ts';
import { newId } from '../payments/ledger/ledger.ts';
import { signedBytes } from '../payments/receipts.ts';
import canonicalizeModule from 'canonicalize';

const KEY = Buffer.from('k'.repeat(32));
/** uvu has no rejects(): the promise must reject with a message matching `re` (or an instance of the class). */
async function rejects(fn: () => Promise<unknown>, re: RegExp | (new (...a: any[]) => Error)): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (re instanceof RegExp) assert.match((err as Error).message, re);
    else assert.instance(err, re);
    return;
  }
  assert.unreachable('expected a rejection');
}

const payload = { productId: 'svc-x', mode: 'u' as const, requestDigest: 'r', unitsDigest: 'h', unitCount: 2, amountCents: 2, currency: 'EUR', storeVersion: 'store-1', expiresAt: 1_900_000_000_000 };

test('quotes: signed, verified, unique per request, refused when altered or signed with another key', () => {
  const s = new QuoteSigner(KEY);
  const a = s.sign(payload);
  const b = s.sign(payload);
  assert.is.not(a, b, 'a nonce makes every quote distinct');
  assert.is(s.verify(a)?.amountCents, 2);
  const [, body, mac] = a.split('.');
  const altered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), a: 1 })).toString('base64url');
  assert.is(s.verify(`q1.${altered}.${mac}`), null);
  assert.is(new QuoteSigner(Buffer.from('x'.repeat(32))).verify(a), null);
  for (const junk of ['', 'q1', 'q1..', 'q2.a.b', 'q1.a.b.c', 'x'.repeat(2000)]) assert.is(s.verify(junk), null, junk);
  assert.ok(a.length < 400, `quote_id stays short (${a.length})`);
  assert.throws(() => new QuoteSigner(Buffer.from('short')));
});

test('only the exact quote_id issued verifies: no second spelling of one quote', () => {
  const s = new QuoteSigner(KEY);
  const a = s.sign(payload);
  const [, body, mac] = a.split('.');
  const last = mac[mac.length - 1];
  // characters that decode to the same last byte (base64url has 2 unused low bits at the end)
  const sameBytes = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('').filter((c) => c !== last && Buffer.from(mac.slice(0, -1) + c, 'base64url').equals(Buffer.from(mac, 'base64url')));
  assert.ok(sameBytes.length > 0, 'the decoder really is lenient, so the check matters');
  const variants = [`${a}=`, `${a}==`, `${a}!!!`, `${a}*`, `q1.${body}.${mac.slice(0, -1)}${sameBytes[0]}`, `q1.${body}=.${mac}`, `q1.${body}.${mac}${'!'.repeat(600)}`];
  for (const v of variants) assert.is(s.verify(v), null, v.slice(-12));
  assert.ok(s.verify(a));
});

test('quotes bind units as a set, and query + limit', () => {
  assert.equal(canonicalUnits(['b', 'a', 'b']), ['a', 'b']);
  const d = (u: string[]) => requestDigest({ product_id: 'p', units: u }, 10).digest;
  assert.is(d(['a', 'b']), d(['b', 'a', 'a']));
  assert.is.not(d(['a', 'b']), d(['a', 'b', 'c']));
  assert.is.not(d(['ab']), d(['a', 'b']));
  const q = (query: string, limit?: number) => requestDigest({ product_id: 'p', query, limit }, 10).digest;
  assert.is(q('x'), q('x', 10), 'the default limit is bound explicitly');
  assert.is.not(q('x', 10), q('x', 11));
});

test('config: defaults, secrets generated once with mode 0600, production rules', async () => {
  const v = await mkdtemp(join(tmpdir(), 'lds-cfg-'));
  const c = await loadConfig({}, { LDS_VAR_DIR: v });
  assert.is(c.port, 8080);
  assert.is(c.host, '127.0.0.1');
  assert.is(c.processor, 'sandbox');
  assert.is(c.quoteTtlSeconds, 900);
  assert.is(c.ledgerDir, join(v, 'ledger'));
  assert.is(c.storeRoot, join(v, 'store'));
  assert.ok(c.quoteSecret.length >= 32 && c.mppSecret.length >= 32);
  const mode = (await stat(join(v, 'secrets', 'quote-hmac.key'))).mode & 0o777;
  assert.is(mode, 0o600);
  const again = await loadConfig({}, { LDS_VAR_DIR: v });
  assert.equal(again.quoteSecret, c.quoteSecret, 'a restart keeps the secret');
  assert.is((await readFile(join(v, 'secrets', 'mpp-secret.key'), 'utf8')).trim(), c.mppSecret);
  // The operator token (the admin API) and the scrape token (GET /metrics) are generated the same
  // way on a local start: two different files, two different tokens (issue 52 item 3).
  assert.is((await readFile(join(v, 'secrets', 'operator.token'), 'utf8')).trim(), c.operatorToken.toString());
  assert.is((await stat(join(v, 'secrets', 'operator.token'))).mode & 0o777, 0o600);
  assert.equal(again.operatorToken, c.operatorToken);
  assert.is((await readFile(join(v, 'secrets', 'metrics.token'), 'utf8')).trim(), c.metricsToken);
  assert.is((await stat(join(v, 'secrets', 'metrics.token'))).mode & 0o777, 0o600);
  assert.is(again.metricsToken, c.metricsToken);
  assert.ok(c.metricsToken.length >= 32 && c.metricsToken !== c.operatorToken, 'two different generated tokens');
  // ... and `lds admin` finds it there without LDS_OPERATOR_TOKEN (it looked for operator-token, a file no start writes).
  assert.is(await operatorToken({ LDS_VAR_DIR: v }), c.operatorToken.toString());
  // Rate limits: per address and per balance token, 20/s with bursts of 40 each; RPS=0 turns both off.
  assert.equal([c.rateLimitPerSecond, c.rateLimitBurst, c.rateLimitTokenPerSecond, c.rateLimitTokenBurst], [20, 40, 20, 40]);
  const off = await loadConfig({}, { LDS_VAR_DIR: v, LDS_RATE_LIMIT_RPS: '0' });
  assert.equal([off.rateLimitPerSecond, off.rateLimitTokenPerSecond], [0, 0]);
  const tokenOnly = await loadConfig({}, { LDS_VAR_DIR: v, LDS_RATE_LIMIT_RPS: '0', LDS_RATE_LIMIT_TOKEN_RPS: '5' });
  assert.equal([tokenOnly.rateLimitPerSecond, tokenOnly.rateLimitTokenPerSecond], [0, 5]);
  // Search threads: 2 where there are 2 cores, 1 on one; LDS_SEARCH_THREADS sets it, 0 is refused.
  assert.is(c.searchThreads, Math.min(2, availableParallelism()));
  assert.is((await loadConfig({}, { LDS_VAR_DIR: v, LDS_SEARCH_THREADS: '1' })).searchThreads, 1);
  await rejects(() => loadConfig({}, { LDS_VAR_DIR: v, LDS_SEARCH_THREADS: '0' }), /LDS_SEARCH_THREADS must be an integer >= 1/);

  const prod = { NODE_ENV: 'production', LDS_VAR_DIR: v };
  await rejects(() => loadConfig({}, { ...prod, PAYMENT_PROCESSOR: 'sandbox' }), /sandbox/);
  await rejects(() => loadConfig({}, { ...prod, PAYMENT_PROCESSOR: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x' }), /LDS_QUOTE_SECRET/);
  await rejects(() => loadConfig({}, { ...prod, STRIPE_SECRET_KEY: 'sk_test_x', LDS_QUOTE_SECRET: 'q'.repeat(32) }), /MPP_SECRET_KEY/);
  await rejects(() => loadConfig({}, { ...prod, STRIPE_SECRET_KEY: 'sk_test_x', LDS_QUOTE_SECRET: 'short', MPP_SECRET_KEY: 'm'.repeat(32) }), ConfigError);
  const secrets = { STRIPE_SECRET_KEY: 'sk_test_x', LDS_QUOTE_SECRET: 'q'.repeat(32), MPP_SECRET_KEY: 'm'.repeat(32) };
  await rejects(() => loadConfig({}, { ...prod, ...secrets }), /LDS_OPERATOR_TOKEN/);
  await rejects(() => loadConfig({}, { ...prod, ...secrets, LDS_OPERATOR_TOKEN: 'o'.repeat(32) }), /NODE_ENV=production requires LDS_METRICS_TOKEN/);
  // Production: the scrape token must differ from the operator token (which moves money).
  await rejects(() => loadConfig({}, { ...prod, ...secrets, LDS_OPERATOR_TOKEN: 'o'.repeat(32), LDS_METRICS_TOKEN: 'o'.repeat(32) }), /LDS_METRICS_TOKEN must differ from LDS_OPERATOR_TOKEN/);
  const tokens = { LDS_OPERATOR_TOKEN: 'o'.repeat(32), LDS_METRICS_TOKEN: 's'.repeat(32) };
  await rejects(() => loadConfig({}, { ...prod, ...secrets, ...tokens }), /LDS_RECEIPT_KEYS/);
  await rejects(() => loadConfig({}, { ...prod, ...secrets, ...tokens, LDS_RECEIPT_KEYS: '[{"kty":"OKP","crv":"Ed25519","x":"abc"}]' }), /LDS_RECEIPT_KEYS/);
  const keys = JSON.stringify([generateReceiptKey()]);
  const ok = await loadConfig({}, { ...prod, ...secrets, ...tokens, LDS_RECEIPT_KEYS: keys });
  assert.is(ok.metricsToken, 's'.repeat(32));
  assert.is(ok.processor, 'stripe');
  assert.equal(ok.receiptKeys, JSON.parse(keys));
  // Locally the operator token and the receipt key are generated once (mode 0600) and kept.
  assert.is((await stat(join(v, 'secrets', 'operator.token'))).mode & 0o777, 0o600);
  assert.is((await stat(join(v, 'secrets', 'receipt-keys.json'))).mode & 0o777, 0o600);
  assert.is(again.operatorToken, c.operatorToken);
  assert.equal(again.receiptKeys, c.receiptKeys);
  await rejects(() => loadConfig({}, { LDS_VAR_DIR: v, PORT: 'eighty' }), /PORT/);
  await rejects(() => loadConfig({}, { LDS_VAR_DIR: v, PAYMENT_PROCESSOR: 'paypal' }), /PAYMENT_PROCESSOR/);
});

test('_headers parsing and ETag matching', () => {
  const h = parseHeadersFile('/a\n  Content-Type: text/plain\n  ETag: "v1"\n\n/b/\n  X: y: z\n');
  assert.equal([...h.keys()], ['/a', '/b/']);
  assert.equal(h.get('/a'), [['Content-Type', 'text/plain'], ['ETag', '"v1"']]);
  assert.equal(h.get('/b/'), [['X', 'y: z']]);
  assert.ok(etagMatches('"v1"', '"v1"'));
  assert.ok(etagMatches('W/"v1"', '"v1"'));
  assert.ok(etagMatches('"v0", "v1"', '"v1"'));
  assert.ok(etagMatches('*', '"v1"'));
  assert.not.ok(etagMatches('"v2"', '"v1"'));
});

test('content coding: q values, *, and the codings a document has (the same header asked again, as the memo answers it)', () => {
  const both = { br: true, gzip: true };
  for (let round = 0; round < 2; round++) {
    assert.is(chooseEncoding('gzip, deflate, br', both), 'br');
    assert.is(chooseEncoding('br;q=0.5, gzip', both), 'gzip');
    // the same header for a document without gzip: the memo keeps q values, not the answer
    assert.is(chooseEncoding('br;q=0.5, gzip', { br: true, gzip: false }), 'br');
    assert.is(chooseEncoding('br;q=0, gzip;q=0', both), 'identity');
    assert.is(chooseEncoding('*;q=0.3, gzip;q=0.2', both), 'br');
    assert.is(chooseEncoding('x-gzip', both), 'gzip');
    assert.is(chooseEncoding(undefined, both), 'identity');
    assert.is(chooseEncoding('gzip', { br: false, gzip: false }), 'identity');
  }
  // many distinct headers (each client chooses its own): answers stay right past the memo's bound
  for (let i = 0; i < 600; i++) assert.is(chooseEncoding(`gzip;q=0.${(i % 9) + 1}, x-${i}`, both), 'gzip');
});

test('request metrics: counts, cumulative latency buckets, sum and count per method, route and status', async () => {
  const m = createMetrics({ backend: 'level', products: ['p'], processMetrics: false });
  for (const seconds of [0.0005, 0.003, 0.003, 0.02, 30]) m.request('POST', '/v1/lds/draw', 402, seconds);
  m.request('GET', 'static', 304, 0.001); // on a bound: counted in that bucket (le = less or equal)
  const text = await m.text();
  const value = (name: string, labels: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}`));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const draw = 'method="POST",route="/v1/lds/draw",status="402"';
  assert.match(text, /# TYPE lds_http_requests_total counter/);
  assert.match(text, /# TYPE lds_http_request_duration_seconds histogram/);
  assert.is(value('lds_http_requests_total', draw), 5);
  assert.is(value('lds_http_requests_total', 'method="GET",route="static",status="304"'), 1);
  assert.is(value('lds_http_request_duration_seconds_bucket', `${draw},le="0.001"`), 1);
  assert.is(value('lds_http_request_duration_seconds_bucket', `${draw},le="0.005"`), 3);
  assert.is(value('lds_http_request_duration_seconds_bucket', `${draw},le="0.025"`), 4);
  assert.is(value('lds_http_request_duration_seconds_bucket', `${draw},le="10"`), 4);
  assert.is(value('lds_http_request_duration_seconds_bucket', `${draw},le="+Inf"`), 5);
  assert.is(value('lds_http_request_duration_seconds_count', draw), 5);
  assert.ok(Math.abs(value('lds_http_request_duration_seconds_sum', draw)! - 30.0265) < 1e-9);
  assert.is(value('lds_http_request_duration_seconds_bucket', 'method="GET",route="static",status="304",le="0.001"'), 1);
  assert.match(text, /lds_http_requests_total\{[^}]*service="lds",ledger_backend="level"\} 5/, 'the registry adds its default labels');
});

test('rate limiter: burst, refill, per client', () => {
  const rl = createRateLimiter(2, 3);
  const t = 1_000_000;
  assert.equal([rl.take('a', t), rl.take('a', t), rl.take('a', t)], [0, 0, 0]);
  assert.is(rl.take('a', t), 500);
  assert.is(rl.take('b', t), 0, 'another client has its own bucket');
  assert.is(rl.take('a', t + 500), 0, 'refilled');
});

test('logs never carry tokens or Authorization headers', () => {
  let out = '';
  const sink = new Writable({ write(chunk, _e, cb) { out += chunk; cb(); } });
  const log = createLogger('info', sink);
  log.info({ headers: { authorization: 'Bearer lds_bal_secret' }, balance_token: 'lds_bal_secret', req: { token: 'lds_bal_secret' } }, 'x');
  assert.not.match(out, /lds_bal_secret/);
  assert.match(out, /redacted/);
});

test('ledger ids: 128 random bits each, all distinct across refills of the random block', () => {
  const ids = Array.from({ length: 3000 }, () => newId('drw')); // 3000 × 16 bytes spans 12 blocks of 4 KB
  for (const id of ids) assert.match(id, /^drw_[A-Za-z0-9_-]{22}$/);
  assert.is(new Set(ids).size, ids.length);
  // no two ids share their bytes in any position pattern a reused block would show
  assert.is(new Set(ids.map((id) => id.slice(4, 12))).size, ids.length);
});

test('the signed bytes of a receipt are RFC 8785 exactly as the reference library writes them', () => {
  const jcs = canonicalizeModule as unknown as (v: unknown) => string;
  const samples: Record<string, unknown>[] = [
    { type: 'draw', draw_id: 'drw_x', unit_count: 10, amount: '0.10', currency: 'EUR', paid_at: '2026-11-23T00:00:00.000Z', signature: { value: 'left out' } },
    { b: 'é€\u2028"\\\n\u0007', a: 1.5e-7, A: -0, 'ä': true, '\ud83d\ude00': 1e21, z: 'ok', B: false }, // key order by UTF-16 units, escapes, numbers
    { n: { nested: [1, 'two'] }, a: 'x' }, // nested: through the library
  ];
  for (const r of samples) {
    const { signature: _s, ...body } = r;
    assert.is(signedBytes(r).toString('utf8'), jcs(body));
  }
  assert.throws(() => signedBytes({ a: 'lone \ud800' }), /surrogate/i); // not Unicode: refused as the library does
});

test.run();
