// Issue 52 item 3, on a real `lds serve` process: the scraper's credential cannot move money.
// A local start generates two tokens under var/secrets (operator.token, metrics.token); GET
// /metrics takes the metrics token and refuses the operator token; the admin API takes the operator
// token and refuses the metrics token. In production both are required and must differ: a start
// with one value for both stops at once with a message naming both settings, before it listens.
// (The nginx allow-list of the admin API is test/deploy-nginx.test.ts's.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { LDS_ARGS, REPO } from './helpers/build.ts';
import { startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { bearer, buildFixture, postJson, type Fixture } from './helpers/service-harness.ts';

let fx: Fixture;
let inst: Instance;

test.before(async () => {
  fx = await buildFixture();
  inst = await startInstance(fx, {});
});

test.after(async () => {
  if (inst) await stopInstance(inst);
});

const secret = (name: string) => readFileSync(join(inst.varDir, 'secrets', name), 'utf8').trim();

test('a local start generates two different tokens, owner-only', () => {
  const operator = secret('operator.token');
  const metrics = secret('metrics.token');
  assert.ok(operator.length >= 32 && metrics.length >= 32);
  assert.is.not(metrics, operator);
  for (const f of ['operator.token', 'metrics.token']) assert.is(statSync(join(inst.varDir, 'secrets', f)).mode & 0o777, 0o600, f);
});

test('GET /metrics takes the metrics token, not the operator token; the admin API the operator token, not the metrics token', async () => {
  const origin = new URL(inst.base).origin;
  const operator = secret('operator.token');
  const metrics = secret('metrics.token');
  const scrape = (token: string) => fetch(`${origin}/metrics`, { headers: bearer(token) });
  const ok = await scrape(metrics);
  assert.is(ok.status, 200);
  assert.match(await ok.text(), /# TYPE lds_http_requests_total counter/);
  const refused = await scrape(operator);
  assert.is(refused.status, 401);
  assert.is(((await refused.json()) as { type: string }).type, PROBLEM_BASE + 'metrics-token-required');

  // An adjustment for a balance that does not exist: the operator token gets past the guard (the
  // ledger's answer), the metrics token does not (401, nothing reaches the ledger).
  const adjust = (token: string, key: string) => postJson(`${inst.base}/lds/admin/adjustments`, { balance_id: 'c'.repeat(64), direction: 'credit', amount: '1.00', reason: 'least privilege test' }, { ...bearer(token), 'idempotency-key': key });
  const byScraper = await adjust(metrics, 'lp-metrics');
  assert.is(byScraper.status, 401);
  assert.is(((await byScraper.json()) as { type: string }).type, PROBLEM_BASE + 'operator-token-required');
  const byOperator = await adjust(operator, 'lp-operator');
  const text = await byOperator.text();
  assert.ok(byOperator.status !== 401 && byOperator.status < 500, `${byOperator.status} ${text}`);
});

test('production: one value for both tokens stops the start with a message naming both', async () => {
  const dir = await mkdtemp(join(fx.root, 'prod-'));
  const same = 't'.repeat(64);
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    LDS_VAR_DIR: dir,
    LDS_DIST_DIR: fx.dist,
    LDS_STORE_DIR: fx.store,
    PAYMENT_PROCESSOR: 'stripe',
    STRIPE_SECRET_KEY: 'sk_test_not_used',
    STRIPE_NETWORK_ID: 'profile_not_used',
    LDS_QUOTE_SECRET: 'q'.repeat(64),
    MPP_SECRET_KEY: 'm'.repeat(64),
    LDS_OPERATOR_TOKEN: same,
    LDS_METRICS_TOKEN: same,
  };
  const r = spawnSync(process.execPath, [...LDS_ARGS, 'serve', '--port', '0'], { cwd: REPO, env, encoding: 'utf8', timeout: 60_000 });
  assert.is.not(r.status, 0);
  assert.match(r.stderr, /LDS_METRICS_TOKEN must differ from LDS_OPERATOR_TOKEN/);
  assert.not.match(r.stderr, /serving http/);
  assert.not.match(r.stderr + r.stdout, same, 'the token itself is never printed');
  // Without a metrics token at all: required.
  const { LDS_METRICS_TOKEN: _, ...without } = env;
  const r2 = spawnSync(process.execPath, [...LDS_ARGS, 'serve', '--port', '0'], { cwd: REPO, env: without, encoding: 'utf8', timeout: 60_000 });
  assert.is.not(r2.status, 0);
  assert.match(r2.stderr, /NODE_ENV=production requires LDS_METRICS_TOKEN/);
});

test.run();
