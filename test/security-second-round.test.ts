// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// Issue 34, "Security" items 1, 4 and 5, on the real service (real build, real ledger, the MCP and
// A2A endpoints mounted as `lds serve` mounts them) over real HTTP:
//   1. an MCP JSON-RPC batch counts every call against the address and token limits (MCP
//      2025-03-26, the one revision with batches, also assumed without MCP-Protocol-Version), and
//      is refused whole under 2025-06-18 and later, which have no batches;
//   4. replaying a paid quote over A2A answers the first payment's task (no new paid task), and a
//      full paid-task set drops the oldest task of the balance holding the most, never another's;
//   5. a quote made on catalogue A and paid after a live switch to catalogue B (only a price
//      changed, the same unit store) is charged A's price and its signed receipt names A;
//   6. the LevelDB ledger folder and the secrets are owner-only on disk (the store root: store-build).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmod, cp, mkdir, mkdtemp, readdir, rename, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task } from '@a2a-js/sdk';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { mountAgents } from '../payments/agents/mount.ts';
import { BalanceHolder, DrawTaskStore } from '../payments/agents/a2a.ts';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { newBalanceToken } from '../payments/tokens.ts';
import { rawPost } from './helpers/agents.ts';
import { balanceOf, bearer, buildFixture, cachedBuild, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';
import { PRODUCT, centsOf, copyBuild, secondVersionSrc } from './helpers/releases.ts';

let fx: Fixture;
let refs: string[];
/** Rate limited: 1 request per second per address (bursts of 60) and per balance token (bursts of 6). */
let limited: TestServer;
/** Not rate limited, on its own copy of the build (test 5 publishes a second build into it). */
let srv: TestServer;
let own: { dist: string; store: string };
let a2aUrl: string;

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  own = await copyBuild(fx.dist, fx.store, await mkdtemp(join(fx.root, 'own-')));
  limited = await startTestServer(fx, {
    mount: mountAgents,
    env: { LDS_RATE_LIMIT_RPS: '1', LDS_RATE_LIMIT_BURST: '60', LDS_RATE_LIMIT_TOKEN_RPS: '1', LDS_RATE_LIMIT_TOKEN_BURST: '6' },
  });
  srv = await startTestServer({ ...fx, ...own }, { mount: mountAgents, env: { LDS_RELEASE_CHECK_MS: '0', LDS_QUOTE_TTL_SECONDS: '600' } });
  a2aUrl = `${srv.url}${new URL(fx.catalogue.base_url).pathname}/a2a`;
});
test.after(async () => {
  await limited?.close().catch(() => {}); // closed by test 6 already
  await srv?.close();
});

// ---------------------------------------------------------------- 1. MCP batches

const calls = (n: number, name: string, args: Record<string, unknown>) =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name, arguments: args } })));

test('1. MCP: a batch is refused whole under 2025-06-18 and later, which have no batches', async () => {
  // The revisions the SDK's own client speaks: -32600, nothing run.
  for (const revision of ['2025-06-18', '2025-11-25']) {
    const r = await rawPost(`${limited.url}/mcp`, calls(2, 'list_products', {}), { 'mcp-protocol-version': revision });
    assert.is(r.status, 400, r.text);
    assert.is(r.json.error.code, -32600);
    assert.match(r.json.error.message, new RegExp(`batch .*not part of MCP ${revision}.*one request per POST`));
  }
});

test('1. MCP: under 2025-03-26 every call of a batch takes from the address and token limits', async () => {
  const mcp = `${limited.url}/mcp`;
  const token = await topUp(limited.base, '5.00', 'spt_test_mcp_batch');
  // 2025-03-26 (here without the header, as the specification then assumes): a batch is answered.
  const small = await rawPost(mcp, calls(2, 'list_products', {}));
  assert.is(small.status, 200, small.text);
  assert.is(small.json.length, 2);
  assert.ok(small.json.every((m: any) => m.result?.structuredContent?.products?.length > 0));

  // 20 calls with a token whose bucket holds 6: refused by the token limit, which says it has nothing left.
  const byToken = await rawPost(mcp, calls(20, 'get_balance', {}), bearer(token));
  assert.is(byToken.status, 429, byToken.text.slice(0, 300));
  assert.is(byToken.json.policy, 'token');
  assert.match(byToken.headers.get('ratelimit') ?? '', /"token";r=0/);

  // 60 anonymous quotes in one POST, with an address bucket of 60 already drawn on: refused by the address limit.
  const anonymous = await rawPost(mcp, calls(60, 'quote_draw', { product_id: PRODUCT, units: refs.slice(0, 1) }));
  assert.is(anonymous.status, 429, anonymous.text.slice(0, 300));
  assert.is(anonymous.json.policy, 'addr');
  assert.match(anonymous.headers.get('ratelimit') ?? '', /"addr";r=0/);
});

// ---------------------------------------------------------------- 4. A2A replays and paid-task slots

const rpc = (method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const send = (d: Record<string, unknown>, headers: Record<string, string> = {}) =>
  rawPost(a2aUrl, rpc('message/send', { message: { kind: 'message', role: 'user', messageId: crypto.randomUUID(), parts: [{ kind: 'data', data: d }] } }), headers);

test('4. A2A: replaying a paid quote answers the task of its payment, charged once', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_a2a_replay');
  const q = (await send({ product_id: PRODUCT, units: [refs[0]] })).json.result.artifacts[0].parts[0].data;
  const first = (await send({ product_id: PRODUCT, units: [refs[0]], quote_id: q.quote_id }, bearer(token))).json.result;
  assert.is(first.status.state, 'completed');
  const drawId = first.artifacts[0].parts[0].data.receipt.draw_id;
  for (let i = 0; i < 5; i++) {
    const again = await send({ product_id: PRODUCT, units: [refs[0]], quote_id: q.quote_id }, bearer(token));
    const task = again.json.result;
    assert.is(task.id, first.id, 'a replay answers the first task, not a new one');
    assert.is(task.artifacts[0].name, 'draw');
    assert.is(task.artifacts[0].parts[0].data.receipt.draw_id, drawId);
  }
  const read = (await rawPost(a2aUrl, rpc('tasks/get', { id: first.id }), bearer(token))).json.result;
  assert.is(read.artifacts[0].parts[0].data.receipt.draw_id, drawId);
  assert.is(centsOf(await balanceOf(srv.base, token)), 500 - centsOf(q.amount), 'charged once');
});

/** A completed task holding a paid draw, as the A2A executor makes it. */
const paidTask = (id: string, drawId: string): Task => ({
  kind: 'task',
  id,
  contextId: `ctx-${id}`,
  status: { state: 'completed' },
  artifacts: [{ artifactId: `a-${id}`, name: 'draw', parts: [{ kind: 'data', data: { units: [], receipt: { draw_id: drawId } } }] }],
  history: [],
});

test('4. the paid-task set: when full, the balance holding the most loses its oldest; others keep theirs', async () => {
  const store = new DrawTaskStore({ maxPaid: 10 });
  const as = (token: string) => new ServerCallContext(undefined, new BalanceHolder(token));
  const victim = as(newBalanceToken().token);
  const other = as(newBalanceToken().token);
  const heavy = as(newBalanceToken().token);
  await store.save(paidTask('victim-1', 'd-victim-1'), victim);
  await store.save(paidTask('other-1', 'd-other-1'), other);
  await store.save(paidTask('other-2', 'd-other-2'), other);
  for (let i = 0; i < 1200; i++) await store.save(paidTask(`heavy-${i}`, `d-heavy-${i}`), heavy);
  assert.is(store.size.paid, 10);
  for (const [id, ctx] of [['victim-1', victim], ['other-1', other], ['other-2', other]] as const) {
    const t = await store.load(id, ctx);
    assert.ok(t, `${id} was pushed out by another balance's paid draws`);
    assert.is(t!.artifacts![0].name, 'draw');
  }
  assert.ok(await store.load('heavy-1199', heavy), 'the newest of the heavy balance is kept');
  assert.not.ok(await store.load('heavy-0', heavy), 'the oldest of the heavy balance went');
  assert.is(store.paidTaskOf('d-heavy-0'), undefined);
  assert.is(store.paidTaskOf('d-victim-1')?.id, 'victim-1');
  // A paid task is final: a save of it again (a replay) changes nothing.
  await store.save({ ...paidTask('victim-1', 'd-victim-1'), history: [{ kind: 'message', role: 'user', messageId: 'm', parts: [] }] }, victim);
  assert.equal((await store.load('victim-1', victim))!.history, []);
});

// ---------------------------------------------------------------- 5. the receipt's catalogue version

test('5. a quote of catalogue A paid after a live switch to B (a new price, the same store): A\'s price, and the receipt names A', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_receipt_version');
  const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(1, 3) });
  assert.is(res.status, 402);
  const q = (await res.json()) as { catalogue_version: string; store_version: string; amount: string; pay_with: Record<string, unknown> };
  const a = q.catalogue_version;

  // Catalogue B: only the draw price of PRODUCT changes (v1 10_000 micro-euros per unit), so the
  // unit store is the same. Built once per run, then published into the served folders as a
  // publisher's copy would: the store is there already, dist/ is swapped in by rename.
  const b = await mkdtemp(join(fx.root, 'catalogue-b-'));
  await cachedBuild('price-only', b, async (dir) => {
    await build({
      srcDir: await secondVersionSrc(40_000, 0),
      outDir: join(dir, 'dist'),
      storeRoot: join(dir, 'store'),
      addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example'),
      sourceDateEpoch: 1767225600,
    });
  }, ['test/security-second-round.test.ts', 'test/helpers/releases.ts', 'test/helpers/service-harness.ts']);
  await cp(join(b, 'dist'), `${own.dist}.new`, { recursive: true, dereference: true });
  await rename(own.dist, `${own.dist}.old`);
  await rename(`${own.dist}.new`, own.dist);
  assert.is(await srv.releases.check(), 'switched');
  const serving = srv.releases.versions();
  assert.is.not(serving.catalogue_version, a);
  assert.is(serving.store_version, q.store_version, 'the same unit store: only the catalogue changed');
  const fresh = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(1, 3) })).json()) as { amount: string; catalogue_version: string };
  assert.is(fresh.catalogue_version, serving.catalogue_version);
  assert.is.not(fresh.amount, q.amount, 'catalogue B prices these units differently');

  const paid = await postJson(`${srv.base}/lds/draw`, q.pay_with, bearer(token));
  const body = (await paid.json()) as { receipt: { amount: string; catalogue_version: string } };
  assert.is(paid.status, 200, JSON.stringify(body));
  assert.is(body.receipt.amount, q.amount, "charged the quote's price");
  assert.is(body.receipt.catalogue_version, a, 'the receipt names the catalogue the quote was made on');
  assert.is(centsOf(await balanceOf(srv.base, token)), 500 - centsOf(q.amount));
  // A replay signs the same receipt.
  const again = (await (await postJson(`${srv.base}/lds/draw`, q.pay_with, bearer(token))).json()) as { receipt: { catalogue_version: string } };
  assert.is(again.receipt.catalogue_version, a);
});

// ---------------------------------------------------------------- 6. modes on disk

test('6. a ledger folder outside var/ (LevelDB) and the secrets are owner-only; a ledger folder others could read is tightened', async () => {
  const place = await mkdtemp(join(tmpdir(), 'lds-modes-'));
  const ledgerDir = join(place, 'ledger');
  await mkdir(ledgerDir, { mode: 0o755 });
  await chmod(ledgerDir, 0o755);
  const secretsDir = join(place, 'secrets');
  const modeOf = async (p: string) => (await stat(p)).mode & 0o777;
  await limited.close(); // its test is done; a unit store opens in one server at a time
  const s = await startTestServer(fx, { env: { LDS_LEDGER_DIR: ledgerDir, LDS_SECRETS_DIR: secretsDir } });
  try {
    await topUp(s.base, '5.00', 'spt_test_modes'); // a balance in the ledger
    assert.ok((await readdir(ledgerDir)).length > 0, 'the LevelDB ledger is there');
    assert.is(await modeOf(ledgerDir), 0o700, 'nobody else can enter the ledger folder (LevelDB makes its files 0644)');
    assert.is(await modeOf(secretsDir), 0o700);
    const secrets = await readdir(secretsDir);
    assert.ok(secrets.length >= 4, secrets.join(', '));
    for (const f of secrets) assert.is(await modeOf(join(secretsDir, f)), 0o600, f);
  } finally {
    await s.close();
  }
});

test.run();
