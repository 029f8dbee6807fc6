// @ledger-backends: postgres
// The shipped deployment (deploy/nginx/lds.conf) with the real nginx in front of two service
// instances on one PostgreSQL ledger: nginx itself serves the published files with the build's
// headers, the API reaches both instances, a whole purchase works through the proxy, the client's
// own address reaches the instances (LDS_TRUST_PROXY) and cannot be spoofed, the admin API is
// answered only to the allow-list of ADJUST 4 (issue 52 item 3: a 403 problem from anywhere else,
// the instances never see it), and with no instance left the API answers a 503 problem while the
// catalogue is still served.
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { REPO } from './helpers/build.ts';
import { freePort } from './helpers/http.ts';
import { sharedSecrets, startInstances, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerEnv, newLedgerSettings } from './helpers/ledgers.ts';
import { startNginxWith, type Nginx } from './helpers/nginx.ts';
import { NGINX, suiteNeeding } from './helpers/programs.ts';
import { balanceOf, bearer, buildFixture, postJson, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';

const test = suiteNeeding('deploy-nginx.test.ts', [NGINX]);
const PRODUCT = 'svc-health-eu';
const OPERATOR = 'op-'.padEnd(64, 'k');
const OPERATOR_ADDRESS = '127.0.0.5'; // the allow-list of ADJUST 4, in place of the shipped 127.0.0.1
let fx: Fixture;
let refs: string[];
let inst: Instance[] = [];
let nginx: Nginx;
let api: string; // http://127.0.0.1:<nginx>/v1

/** The shipped file with this machine's instances, port and dist/ in place of the documented ones. */
function rendered(shipped: string, port: number, upstreams: string[], distDir: string): string {
  const servers = upstreams.map((u) => `    server ${u} max_fails=3 fail_timeout=10s;`).join('\n');
  const out = shipped
    .replace(/^ {4}server 127\.0\.0\.1:808\d .*\n(?: {4}server 127\.0\.0\.1:808\d .*\n)*/m, `${servers}\n`)
    .replace('listen 80;', `listen 127.0.0.1:${port};`)
    .replaceAll('/srv/lds/dist', distDir)
    .replace(/allow 127\.0\.0\.1; +# ADJUST 4/, `allow ${OPERATOR_ADDRESS};  # ADJUST 4`);
  assert.ok(out.includes(`allow ${OPERATOR_ADDRESS};  # ADJUST 4`), 'the allow-list line was found and replaced');
  for (const u of upstreams) assert.ok(out.includes(`server ${u} `), 'the upstream block was found and replaced');
  assert.ok(out.includes(`listen 127.0.0.1:${port};`) && out.includes(`root ${distDir};`));
  return out;
}

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  const env = {
    ...ledgerEnv(await newLedgerSettings('postgres')),
    ...sharedSecrets(),
    LDS_TRUST_PROXY: '1',
    LOG_LEVEL: 'info', // the access log shows which instance answered
    LDS_RATE_LIMIT_RPS: '1',
    LDS_RATE_LIMIT_BURST: '30',
    LDS_OPERATOR_TOKEN: OPERATOR,
  };
  inst = await startInstances(fx, env, 2);
  const port = await freePort();
  const shipped = await readFile(join(REPO, 'deploy/nginx/lds.conf'), 'utf8');
  const upstreams = inst.map((i) => new URL(i.base).host);
  nginx = await startNginxWith(rendered(shipped, port, upstreams, fx.dist), port);
  api = `${nginx.origin}/v1`;
});

test.after(async () => {
  await Promise.all(inst.map(stopInstance));
  await nginx?.stop();
});

/** A request from a given loopback address (Linux routes all of 127/8 to lo). */
function from(address: string) {
  const ask = answerFrom(address);
  return async (path: string, body: unknown, headers: Record<string, string> = {}) => (await ask(path, body, headers)).status;
}

/** The same, with the answer's body and content type. */
function answerFrom(address: string) {
  const dispatcher = new Agent({ localAddress: address });
  return async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const r = await request(`${api}${path}`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: r.statusCode, type: String(r.headers['content-type'] ?? ''), text: await r.body.text() };
  };
}

const accessLines = (i: Instance) => i.log().split('\n').filter((l) => l.includes('"msg":"request"'));

test('nginx serves the published files itself, with the headers the build wrote', async () => {
  const before = inst.map((i) => accessLines(i).length);
  const res = await fetch(`${api}/lds/_catalog`);
  assert.is(res.status, 200);
  const catalogue = (await res.json()) as { version: string };
  // The ETag names the catalogue version and the representation sent (fetch accepts gzip and br).
  const etag = res.headers.get('etag') ?? '';
  assert.match(etag, new RegExp(`^"${catalogue.version}(gzip|br)?"$`));
  assert.match(res.headers.get('server') ?? '', /nginx/);
  const again = await fetch(`${api}/lds/_catalog`, { headers: { 'if-none-match': etag } });
  assert.is(again.status, 304);
  assert.equal(inst.map((i) => accessLines(i).length), before, 'no instance saw a static request');
});

test('a whole purchase through the proxy, with the API spread over both instances', async () => {
  const token = await topUp(api, '5.00');
  for (let i = 0; i < 8; i++) {
    const units = refs.slice(i, i + 2);
    const q = (await (await postJson(`${api}/lds/draw`, { product_id: PRODUCT, units })).json()) as { quote_id: string };
    const paid = await postJson(`${api}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
    assert.is(paid.status, 200, await paid.clone().text());
    const replay = await postJson(`${api}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
    assert.is(replay.status, 200);
    assert.is(((await replay.json()) as any).receipt.draw_id, ((await paid.json()) as any).receipt.draw_id);
  }
  assert.match(await balanceOf(api, token), /^\d+\.\d\d$/);
  for (const i of inst) assert.ok(accessLines(i).some((l) => l.includes('/v1/lds/draw')), `each instance answered draws: ${i.log().slice(-600)}`);
});

test("the client's own address reaches the instances, and a forged X-Forwarded-For does not help", async () => {
  // Each instance allows a burst of 30 per client address: 100 quick requests from one address
  // through nginx are refused in part, while another address is still served at once. Were the
  // instances keying on nginx's address (no LDS_TRUST_PROXY), the second address would be refused too.
  const noisy = from('127.0.0.3');
  const statuses: number[] = [];
  const t0 = Date.now();
  for (let i = 0; i < 100; i++) statuses.push(await noisy('/lds/draw', { product_id: PRODUCT, units: [refs[0]] }, { 'x-forwarded-for': `198.51.100.${i}` }));
  const seconds = Math.ceil((Date.now() - t0) / 1000);
  assert.ok(statuses.includes(429), `the noisy address was limited despite forged addresses: ${statuses.join(' ')}`);
  // Two bursts of 30 and each instance's refill of 1/s while they ran (a loaded machine sends them slower).
  const passed = statuses.filter((s) => s === 402).length;
  assert.ok(passed <= 60 + 2 * seconds + 2, `at most the two instances' bursts plus refill passed: ${passed} in ${seconds} s`);
  assert.is(await from('127.0.0.4')('/lds/draw', { product_id: PRODUCT, units: [refs[0]] }), 402);
});

test('the admin API is answered only to the allow-list (ADJUST 4): a 403 problem elsewhere, even with the operator token', async () => {
  const seen = () => inst.reduce((n, i) => n + accessLines(i).filter((l) => l.includes('/lds/admin/')).length, 0);
  const adjust = (key: string) => ({ body: { balance_id: 'b'.repeat(64), direction: 'credit', amount: '1.00', reason: 'edge test' }, headers: { ...bearer(OPERATOR), 'idempotency-key': key } });
  const before = seen();
  // 127.0.0.7, not the noisy address above: nginx's limit_req runs before allow/deny, so an address the
  // edge is still limiting gets 429 before the allow-list is asked.
  for (const address of ['127.0.0.1', '127.0.0.7']) {
    const a = adjust(`edge-${address}`);
    const r = await answerFrom(address)('/lds/admin/adjustments', a.body, a.headers);
    assert.is(r.status, 403, r.text);
    assert.match(r.type, /^application\/problem\+json/);
    const p = JSON.parse(r.text) as { status: number; type: string; detail: string };
    assert.is(p.status, 403);
    assert.match(p.type, /\/problems\/admin-address-refused$/);
    assert.match(p.detail, /ADJUST 4/);
  }
  assert.is(seen(), before, 'no instance saw a refused admin request');
  // From the allowed address it reaches an instance: the operator token is checked there (401
  // without it), and with it the request is the instance's to judge (this balance does not exist).
  const ok = answerFrom(OPERATOR_ADDRESS);
  const noToken = await ok('/lds/admin/adjustments', adjust('edge-none').body, { 'idempotency-key': 'edge-none' });
  assert.is(noToken.status, 401, noToken.text);
  assert.match(noToken.text, /operator-token-required/);
  const a = adjust('edge-allowed');
  const withToken = await ok('/lds/admin/adjustments', a.body, a.headers);
  assert.ok(withToken.status !== 403 && withToken.status !== 401 && withToken.status < 500, `${withToken.status} ${withToken.text}`);
  // An instance logs a request as it answers it, and this process reads the instances' output as it
  // comes: the answer can arrive first, so the count waits for their lines (CI once counted 1 of 2).
  // Exactly 2 also says the refused requests above never reached an instance, however late.
  for (const deadline = Date.now() + 5000; seen() < before + 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
  assert.is(seen(), before + 2, 'both allowed requests reached an instance');
  // The rest of the API is still open to everyone.
  assert.is(await from('127.0.0.6')('/lds/draw', { product_id: PRODUCT, units: [refs[0]] }), 402);
});

test('with no instance left, the API answers a 503 problem and the catalogue is still served', async () => {
  await Promise.all(inst.map(stopInstance));
  const res = await postJson(`${api}/lds/draw`, { product_id: PRODUCT, units: [refs[0]] });
  assert.is(res.status, 503);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  const problem = (await res.json()) as { status: number; type: string; detail: string };
  assert.is(problem.status, 503);
  assert.match(problem.detail, /Nothing was charged/);
  assert.is((await fetch(`${api}/lds/_catalog`)).status, 200);
});

test.run();
