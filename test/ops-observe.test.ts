// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Issue 11, "Observe" and "Limits", over real HTTP on the real server: /healthz and /readyz answer
// without a token and are never rate limited; /metrics needs the scrape token LDS_METRICS_TOKEN (401
// problem without it or with a wrong one, a balance token and the operator token included: issue 52
// item 3, the scraper's credential must not move money) and its numbers MOVE as a buyer
// tops up, is quoted and draws (asserted as before/after differences, per product and outcome);
// nothing in it names a buyer. Rate limits answer 429 with Retry-After and the IETF RateLimit /
// RateLimit-Policy headers, per balance token and per client address, and the refusals are counted.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './helpers/build.ts';
import { hashToken, tokenHint } from '../payments/tokens.ts';
import { BACKEND } from './helpers/ledgers.ts';
import { bearer, buildFixture, cents, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const PRODUCT = 'svc-energy-eu';
const OPERATOR = randomBytes(32).toString('hex');
const METRICS = randomBytes(32).toString('hex');
let fx: Fixture;
let srv: TestServer;
let refs: string[];

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  srv = await startTestServer(fx, { env: { LDS_OPERATOR_TOKEN: OPERATOR, LDS_METRICS_TOKEN: METRICS } });
});
test.after(async () => {
  await srv?.close();
});

/** Prometheus text -> the sum of every sample of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) {
      sum += Number(m[3]);
      found = true;
    }
  }
  return found ? sum : 0;
}

/** A second server in this process needs its own copy of the unit store (LevelDB: one opener per process). */
async function startLimited(env: Record<string, string>): Promise<TestServer> {
  const store = await mkdtemp(join(fx.root, 'store-'));
  await cp(fx.store, store, { recursive: true });
  return startTestServer(fx, { env: { LDS_OPERATOR_TOKEN: OPERATOR, LDS_METRICS_TOKEN: METRICS, LDS_STORE_DIR: store, ...env } });
}

async function scrape(server: TestServer = srv): Promise<string> {
  const res = await fetch(`${server.url}/metrics`, { headers: bearer(METRICS) });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
}

test('/healthz and /readyz answer without a token, with the checks', async () => {
  const h = await fetch(`${srv.url}/healthz`);
  assert.is(h.status, 200);
  assert.equal(await h.json(), { status: 'ok' });
  assert.is(h.headers.get('cache-control'), 'no-store');
  const r = await fetch(`${srv.url}/readyz`);
  assert.is(r.status, 200);
  const body = (await r.json()) as any;
  assert.is(body.status, 'ready');
  assert.equal(body.checks, { ledger: 'ok', unit_store: 'ok', catalogue: 'ok', server: 'ok' });
  assert.is(body.catalogue_version, fx.catalogue.version);
  assert.is((await fetch(`${srv.url}/readyz`, { method: 'POST' })).status, 405);
});

test('/metrics: 401 problem without the metrics token, with a wrong one, a balance token or the operator token', async () => {
  const token = await topUp(srv.base);
  for (const headers of [{}, bearer(randomBytes(32).toString('hex')), bearer(token), bearer(OPERATOR), { authorization: `Basic ${Buffer.from(`x:${METRICS}`).toString('base64')}` }, bearer(METRICS + 'x')]) {
    const res = await fetch(`${srv.url}/metrics`, { headers });
    assert.is(res.status, 401);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer /);
    const p = (await res.json()) as any;
    assert.is(p.type, PROBLEM_BASE + 'metrics-token-required');
    assert.not.match(JSON.stringify(p), /lds_bal_|# HELP/);
  }
  const ok = await scrape();
  assert.match(ok, /# TYPE lds_http_requests_total counter/);
  assert.match(ok, /lds_process_cpu_user_seconds_total/, 'process metrics');
  assert.match(ok, /lds_nodejs_eventloop_lag_seconds/, 'event loop metrics');
});

test('metrics move as a buyer tops up, is quoted, draws and replays; no buyer is named', async () => {
  const before = await scrape();
  const token = await topUp(srv.base, '5.00'); // 402 challenge, then 200
  const units = refs.slice(0, 7);
  const q = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units });
  assert.is(q.status, 402);
  const quote = (await q.json()) as any;
  const paid = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: quote.quote_id }, bearer(token));
  assert.is(paid.status, 200);
  const again = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: quote.quote_id }, bearer(token));
  assert.is(again.status, 200, 'a replay of the paid quote');
  const bad = await postJson(`${srv.base}/lds/balance/topup`, { amount: '1.00', currency: 'EUR' });
  assert.is(bad.status, 400, 'below the minimum top-up');
  await bad.arrayBuffer();
  assert.is((await fetch(`${srv.base}/lds/nothing/here/${randomBytes(4).toString('hex')}`)).status, 404);
  const after = await scrape();

  const d = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
  const amount = cents(quote.amount);
  assert.is(d('lds_quotes_total', { product: PRODUCT }), 1, 'one quote');
  assert.is(d('lds_paid_draws_total', { product: PRODUCT }), 1, 'one paid draw; the replay is not a second sale');
  assert.is(d('lds_units_sold_total', { product: PRODUCT }), 7, 'seven units sold');
  assert.is(d('lds_sold_cents_total', { product: PRODUCT, currency: 'EUR' }), amount, 'the quoted amount sold');
  assert.is(d('lds_topups_total', { outcome: 'challenged' }), 1);
  assert.is(d('lds_topups_total', { outcome: 'paid' }), 1);
  assert.is(d('lds_topups_total', { outcome: 'refused' }), 1);
  assert.is(d('lds_topups_credited_total', { currency: 'EUR' }), 1);
  assert.is(d('lds_topup_cents_total', { currency: 'EUR' }), 500);
  // Requests by route template and status: the draw route answered 402 once and 200 twice.
  assert.is(d('lds_http_requests_total', { route: '/v1/lds/draw', status: '402' }), 1);
  assert.is(d('lds_http_requests_total', { route: '/v1/lds/draw', status: '200' }), 2);
  assert.is(d('lds_http_request_duration_seconds_count', { route: '/v1/lds/draw', status: '200' }), 2);
  assert.is(d('lds_http_requests_total', { route: '/v1/lds/balance/topup', status: '402' }), 1);
  assert.is(d('lds_http_requests_total', { route: 'unmatched', status: '404' }), 1, 'a 404 is counted as unmatched, not by its path');
  assert.not.match(after, /nothing\/here/, 'raw paths never become labels');
  // Ledger commits: one credit and one debit, each timed (the replay debits nothing new but asks the ledger).
  assert.is(d('lds_ledger_commit_seconds_count', { op: 'credit', outcome: 'ok' }), 1);
  assert.ok(d('lds_ledger_commit_seconds_count', { op: 'debit', outcome: 'ok' }) >= 1);
  if (BACKEND === 'level') {
    assert.ok(d('lds_ledger_group_commit_ops_count') >= 2, 'the two changes were written by the group committer');
    assert.ok(d('lds_ledger_group_commit_ops_sum') >= 10, 'a top-up and a draw are several key writes each');
    assert.is(d('lds_ledger_group_commit_changes_sum'), 2, 'two state changes went through the committer');
    assert.is(d('lds_ledger_group_commit_changes_count'), d('lds_ledger_group_commit_ops_count'), 'every batch reports its changes');
  } else {
    assert.is(sample(after, 'lds_pg_pool_connections', { state: 'max' }), 10, 'the pool size');
    assert.ok(sample(after, 'lds_pg_pool_connections', { state: 'total' }) >= 1, 'connections in use or idle');
    assert.match(after, /^lds_pg_retries_total\{/m);
  }
  assert.is(sample(after, 'lds_ready'), 1);
  // Nothing names a buyer: not the token, not its hash, not the hint the logs use.
  for (const secret of [token, hashToken(token), tokenHint(hashToken(token)), quote.quote_id]) assert.not.ok(after.includes(secret), 'metrics never name a buyer or a quote');
});

test('20 concurrent paid draws: 20 sales, 20 debits timed; on LevelDB 20 changes in the group-commit batches', async () => {
  const token = await topUp(srv.base, '50.00');
  const quotes = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const units = refs.slice(i, i + 2);
      const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units })).json()) as any;
      return { units, quote_id: q.quote_id as string, amount: cents(q.amount) };
    }),
  );
  const before = await scrape();
  const answers = await Promise.all(quotes.map((q) => postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: q.units, quote_id: q.quote_id }, bearer(token))));
  assert.equal(answers.map((a) => a.status), Array(20).fill(200));
  await Promise.all(answers.map((a) => a.arrayBuffer()));
  const after = await scrape();
  const d = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
  assert.is(d('lds_paid_draws_total', { product: PRODUCT }), 20);
  assert.is(d('lds_units_sold_total', { product: PRODUCT }), 40);
  assert.is(d('lds_sold_cents_total', { product: PRODUCT, currency: 'EUR' }), quotes.reduce((a, q) => a + q.amount, 0));
  assert.is(d('lds_ledger_commit_seconds_count', { op: 'debit', outcome: 'ok' }), 20);
  if (BACKEND === 'level') {
    assert.is(d('lds_ledger_group_commit_changes_sum'), 20, 'each change counted in exactly one batch');
    const batches = d('lds_ledger_group_commit_changes_count');
    assert.ok(batches >= 1 && batches <= 20, `${batches} batches`);
  }
});

test('deploy/grafana-dashboard.json and deploy/prometheus/alerts.yml name only metrics the service exposes', async () => {
  const dash = JSON.parse(readFileSync(join(REPO, 'deploy/grafana-dashboard.json'), 'utf8'));
  const exprs: string[] = dash.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
  assert.ok(exprs.length >= 15, 'the dashboard has its queries');
  const ruleExprs = [...readFileSync(join(REPO, 'deploy/prometheus/alerts.yml'), 'utf8').matchAll(/^ +expr: (.*)$/gm)].map((m) => m[1]!);
  assert.ok(ruleExprs.length >= 10, 'the alert rules have their expressions');
  const metricsOf = (list: string[]) => new Set(list.flatMap((e) => [...e.matchAll(/\b(lds_\w+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, ''))));
  const exposed = new Set([...(await scrape()).matchAll(/^# TYPE (\w+) /gm)].map((m) => m[1]));
  const used = metricsOf(exprs);
  for (const name of [...used, ...metricsOf(ruleExprs)]) assert.ok(exposed.has(name), `${name} is exposed by GET /metrics`);
  // The counters the rules watch with increase() are there from the start, at 0, for every outcome and reason.
  const fresh = await scrape();
  for (const reason of ['store', 'dist', 'base_url']) assert.match(fresh, new RegExp(`^lds_release_refused_total\\{reason="${reason}"[,}].* \\d+$`, 'm'));
  assert.match(fresh, /^lds_topups_total\{outcome="failed"[,}].* \d+$/m);
  for (const name of ['lds_quotes_total', 'lds_paid_draws_total', 'lds_sold_cents_total', 'lds_topups_total', 'lds_ledger_commit_seconds', 'lds_ledger_group_commit_ops', 'lds_pg_pool_connections', 'lds_rate_limited_total', 'lds_ready']) {
    assert.ok(used.has(name), `the dashboard charts ${name}`);
  }
});

test('429 per balance token: Retry-After, RateLimit-Policy and RateLimit; another token is not limited; counted', async () => {
  const limited = await startLimited({ LDS_RATE_LIMIT_RPS: '100', LDS_RATE_LIMIT_BURST: '100', LDS_RATE_LIMIT_TOKEN_RPS: '1', LDS_RATE_LIMIT_TOKEN_BURST: '3' });
  try {
    const [a, b] = [await topUp(limited.base), await topUp(limited.base)];
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${limited.base}/lds/balance`, { headers: bearer(a) });
      statuses.push(res.status);
      if (i === 0) {
        assert.is(res.headers.get('ratelimit-policy'), '"addr";q=100;w=1, "token";q=3;w=3');
        assert.match(res.headers.get('ratelimit') ?? '', /^"addr";r=\d+;t=\d+, "token";r=2;t=1$/);
      }
      if (res.status === 429) refused ??= res;
      else await res.arrayBuffer();
    }
    assert.equal(statuses.slice(0, 3), [200, 200, 200], 'a burst of 3 is allowed');
    assert.is(statuses[3], 429, `the 4th in the same second is refused: ${statuses}`);
    assert.ok(refused);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After in whole seconds');
    assert.match(refused.headers.get('ratelimit') ?? '', /"token";r=0;t=[1-3]$/);
    assert.is(refused.headers.get('ratelimit-policy'), '"addr";q=100;w=1, "token";q=3;w=3');
    const p = (await refused.json()) as any;
    assert.is(p.type, PROBLEM_BASE + 'rate-limited');
    assert.is(p.policy, 'token');
    assert.match(p.detail, /per balance token/);
    // The other buyer, from the same address, still has its own bucket.
    assert.is((await fetch(`${limited.base}/lds/balance`, { headers: bearer(b) })).status, 200);
    // Probes are never limited; the limit is counted in the metrics.
    for (let i = 0; i < 5; i++) assert.is((await fetch(`${limited.url}/readyz`, { headers: bearer(a) })).status, 200);
    const m = await scrape(limited);
    assert.ok(sample(m, 'lds_rate_limited_total', { policy: 'token' }) >= 2);
    assert.is(sample(m, 'lds_rate_limited_total', { policy: 'addr' }), 0);
    // After Retry-After the token is served again.
    await new Promise((r) => setTimeout(r, Number(refused!.headers.get('retry-after')) * 1000 + 50));
    assert.is((await fetch(`${limited.base}/lds/balance`, { headers: bearer(a) })).status, 200);
  } finally {
    await limited.close();
  }
});

test('429 per client address (behind a trusted proxy, per X-Forwarded-For address), on draws too', async () => {
  const limited = await startLimited({ LDS_RATE_LIMIT_RPS: '1', LDS_RATE_LIMIT_BURST: '2', LDS_TRUST_PROXY: 'true' });
  try {
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    const draw = () => ({ product_id: PRODUCT, units: refs.slice(0, 1) });
    const got: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await postJson(`${limited.base}/lds/draw`, draw(), from('203.0.113.7'));
      got.push(res.status);
      if (res.status === 429) {
        assert.is(res.headers.get('ratelimit-policy'), '"addr";q=2;w=2');
        assert.match(res.headers.get('ratelimit') ?? '', /^"addr";r=0;t=[12]$/);
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
        assert.is(((await res.json()) as any).policy, 'addr');
      } else await res.arrayBuffer();
    }
    assert.equal(got, [402, 402, 429, 429], 'two quotes, then refused');
    // Another client address behind the same proxy has its own bucket.
    assert.is((await postJson(`${limited.base}/lds/draw`, draw(), from('198.51.100.9'))).status, 402);
    // Health probes from the refused address still answer.
    assert.is((await fetch(`${limited.url}/healthz`, { headers: from('203.0.113.7') })).status, 200);
    const m = await scrape(limited);
    assert.is(sample(m, 'lds_rate_limited_total', { policy: 'addr' }), 2);
    assert.is(sample(m, 'lds_http_requests_total', { route: '/v1/lds/draw', status: '429' }), 2);
  } finally {
    await limited.close();
  }
});

test('draining: /readyz turns not ready the moment a stop begins', async () => {
  const other = await startLimited({});
  assert.is((await other.readiness()).ready, true);
  const closing = other.close();
  const r = await other.readiness();
  assert.is(r.ready, false);
  assert.is(r.checks.server, 'draining');
  await closing;
});

test.run();
