// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Issue 5 (A2A): the @a2a-js/sdk 0.3 client resolves the published agent card and talks JSON-RPC
// to the endpoint the card names, on the real service over real HTTP. Quotes and paid draws go
// through message/send with a data part and match the HTTP API; JSON is the only mode; streaming
// and push notifications are refused with their A2A errors; bad JSON-RPC gets clear errors, never
// a 5xx, never a balance change.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { A2AClient } from '@a2a-js/sdk/client';
import type { Part } from '@a2a-js/sdk';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, postJson, rawPost, refsOf, startAgentService, topUp, type AgentService } from './helpers/agents.ts';

const PRODUCT = 'svc-agriculture-eu';
const QUERY = 'regulation';
let svc: AgentService;
let refs: string[];
let token: string;
let a2aUrl: string;

test.before(async () => {
  svc = await startAgentService();
  refs = await refsOf(svc.base, PRODUCT, QUERY);
  token = await topUp(svc.base, '5.00', 'spt_test_123');
  a2aUrl = svc.card.url;
});
test.after(async () => {
  await svc?.close();
});

/** The SDK client, resolving the card from /.well-known/agent-card.json; optionally with a bearer token. */
function client(withToken?: string): Promise<A2AClient> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (withToken) headers.set('authorization', `Bearer ${withToken}`);
    return fetch(input, { ...init, headers });
  };
  return A2AClient.fromCardUrl(`${svc.origin}/.well-known/agent-card.json`, { fetchImpl });
}

const msg = (parts: Part[]) => ({ message: { kind: 'message' as const, role: 'user' as const, messageId: randomUUID(), parts } });
const data = (d: Record<string, unknown>): Part => ({ kind: 'data', data: d });
const rpc = (method: string, params: unknown, id: number | string = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params });

test('the agent card names this endpoint: url, JSONRPC, 0.3.0, JSON only, no streaming or push, one skill per product', async () => {
  const res = await fetch(`${svc.origin}/.well-known/agent-card.json`);
  assert.is(res.status, 200);
  const card = (await res.json()) as any;
  assert.is(card.url, `${svc.base}/a2a`);
  assert.is(card.preferredTransport, 'JSONRPC');
  assert.is(card.protocolVersion, '0.3.0');
  assert.equal(card.capabilities.streaming, false);
  assert.equal(card.capabilities.pushNotifications, false);
  assert.equal(card.defaultInputModes, ['application/json']);
  assert.equal(card.defaultOutputModes, ['application/json']);
  assert.equal(card.skills.map((s: any) => s.id).sort(), svc.catalogue.products.map((p: any) => p.product_id).sort());
  for (const s of card.skills) {
    assert.equal(s.inputModes, ['application/json']);
    assert.equal(s.outputModes, ['application/json']);
  }
  for (const i of card.additionalInterfaces ?? []) {
    assert.is(i.transport, 'JSONRPC', 'only the JSON-RPC transport is served');
    assert.is(i.url, card.url);
  }
});

test("the card's skill examples for asking are accepted as they are", async () => {
  const c = await client();
  for (const skill of svc.card.skills) {
    const asks = (skill.examples ?? []).map((e: string) => JSON.parse(e)).filter((e: any) => e.product_id && e.quote_id === undefined);
    assert.ok(asks.length >= 1, `${skill.id} has an example request`);
    for (const ask of asks) {
      assert.is(ask.product_id, skill.id);
      const r: any = await c.sendMessage(msg([data(ask)]));
      assert.not.ok(r.error, `${skill.id}: ${JSON.stringify(r.error)}`);
      assert.is(r.result.kind, 'task');
      if (r.result.status.state === 'failed') assert.is(r.result.metadata.problem.status, 404, `${skill.id}: only "no units match" may fail`);
      else assert.is(r.result.artifacts[0].name, 'quote');
    }
  }
});

test('message/send with {product_id, query, limit} or {product_id, units}: a quote artifact equal to the HTTP 402 quote', async () => {
  const c = await client();
  for (const request of [{ product_id: PRODUCT, query: QUERY, limit: 4 }, { product_id: PRODUCT, units: refs.slice(0, 6) }]) {
    const r: any = await c.sendMessage(msg([data(request)]));
    assert.not.ok(r.error, JSON.stringify(r.error));
    const task = r.result;
    assert.is(task.kind, 'task');
    assert.is(task.status.state, 'completed');
    assert.is(task.artifacts.length, 1);
    const art = task.artifacts[0];
    assert.is(art.name, 'quote');
    assert.is(art.parts[0].kind, 'data');
    const q = art.parts[0].data;
    const h = (await (await postJson(`${svc.base}/lds/draw`, request)).json()) as any;
    for (const k of ['product_id', 'amount', 'currency', 'unit_count', 'resolved_units', 'breakdown']) assert.equal(q[k], h[k], k);
    assert.ok(q.quote_id && q.expires_at);
    assert.is(q.payable_from_balance, false);
  }
  // With the bearer token, the quote says the balance can pay it.
  const withToken: any = await (await client(token)).sendMessage(msg([data({ product_id: PRODUCT, query: QUERY, limit: 4 })]));
  assert.is(withToken.result.artifacts[0].parts[0].data.payable_from_balance, true);
});

test('paid draw through message/send (bearer header): units artifact equal to the HTTP draw; balance debited once', async () => {
  const a2aToken = await topUp(svc.base, '5.00', 'spt_test_123');
  const httpToken = await topUp(svc.base, '5.00', 'spt_test_123');
  const c = await client(a2aToken);
  const request = { product_id: PRODUCT, units: refs.slice(10, 14) };
  const quoted: any = await c.sendMessage(msg([data(request)]));
  const q = quoted.result.artifacts[0].parts[0].data;
  const paidRes: any = await c.sendMessage(msg([data({ ...request, quote_id: q.quote_id })]));
  assert.not.ok(paidRes.error, JSON.stringify(paidRes.error));
  const task = paidRes.result;
  assert.is(task.status.state, 'completed');
  const art = task.artifacts[0];
  assert.is(art.name, 'draw');
  const paid = art.parts[0].data;

  const hq = (await (await postJson(`${svc.base}/lds/draw`, request, bearer(httpToken))).json()) as any;
  const hp = (await (await postJson(`${svc.base}/lds/draw`, { ...request, quote_id: hq.quote_id }, bearer(httpToken))).json()) as any;
  assert.is(paid.receipt.amount, hp.receipt.amount);
  assert.is(paid.receipt.amount, q.amount);
  assert.is(paid.receipt.units_sha256, hp.receipt.units_sha256);
  assert.equal(paid.units.map((u: any) => u.ref), request.units);
  assert.equal(paid.attribution, hp.attribution);
  for (const u of paid.units) assert.ok(u.citation.label && u.licence.licence, 'citation and licence per unit');
  assert.is(await balanceOf(svc.base, a2aToken), paid.receipt.balance_after);
  assert.is(await balanceOf(svc.base, a2aToken), await balanceOf(svc.base, httpToken));

  // Paying the same quote again: the same draw, no second debit.
  const again: any = await c.sendMessage(msg([data({ ...request, quote_id: q.quote_id })]));
  assert.is(again.result.artifacts[0].parts[0].data.receipt.draw_id, paid.receipt.draw_id);
  assert.is(await balanceOf(svc.base, a2aToken), paid.receipt.balance_after);

  // tasks/get returns the finished task.
  const got: any = await c.getTask({ id: task.id, historyLength: 10 });
  assert.is(got.result.id, task.id);
  assert.is(got.result.status.state, 'completed');
});

test('paid draw with balance_token in the data part; the token is not kept in the task history', async () => {
  const t = await topUp(svc.base, '5.00', 'spt_test_123');
  const c = await client();
  const request = { product_id: PRODUCT, query: QUERY, limit: 2 };
  const q = ((await c.sendMessage(msg([data(request)]))) as any).result.artifacts[0].parts[0].data;
  const r: any = await c.sendMessage(msg([data({ ...request, quote_id: q.quote_id, balance_token: t })]));
  assert.is(r.result.status.state, 'completed', JSON.stringify(r.result.status));
  assert.is(r.result.artifacts[0].parts[0].data.units.length, q.unit_count);
  assert.not.ok(JSON.stringify(r.result).includes(t), 'token not echoed');
  // The paid task is the paying token's: read with it (issue 23: without it, the state alone).
  const got: any = await (await client(t)).getTask({ id: r.result.id, historyLength: 10 });
  assert.ok(got.result.history.length >= 1);
  assert.not.ok(JSON.stringify(got.result).includes(t), 'token not stored');
  assert.is(got.result.history[0].parts[0].data.quote_id, q.quote_id);
  const anonymous: any = await c.getTask({ id: r.result.id, historyLength: 10 });
  assert.is(anonymous.result.status.state, 'completed');
  assert.equal([anonymous.result.artifacts, anonymous.result.history], [[], []]);
});

test('JSON only: a text part, a file part or non-JSON output modes get ContentTypeNotSupportedError (-32005)', async () => {
  const c = await client(token);
  const text: any = await c.sendMessage(msg([{ kind: 'text', text: `3 units of ${PRODUCT} about ${QUERY}` }]));
  assert.is(text.error.code, -32005);
  assert.match(text.error.message, /content type/i);
  const file: any = await c.sendMessage(msg([{ kind: 'file', file: { uri: 'https://example.org/q.json', mimeType: 'application/json' } }]));
  assert.is(file.error.code, -32005);
  const mixed: any = await c.sendMessage(msg([data({ product_id: PRODUCT, query: QUERY, limit: 2 }), { kind: 'text', text: 'please' }]));
  assert.is(mixed.error.code, -32005);
  const modes: any = await c.sendMessage({ ...msg([data({ product_id: PRODUCT, query: QUERY, limit: 2 })]), configuration: { acceptedOutputModes: ['text/plain'] } });
  assert.is(modes.error.code, -32005);
  const ok: any = await c.sendMessage({ ...msg([data({ product_id: PRODUCT, query: QUERY, limit: 2 })]), configuration: { acceptedOutputModes: ['application/json'] } });
  assert.is(ok.result.status.state, 'completed');
});

test('streaming and push notifications are refused: -32004 and -32003', async () => {
  const send = msg([data({ product_id: PRODUCT, query: QUERY, limit: 2 })]);
  const stream = await rawPost(a2aUrl, rpc('message/stream', send));
  assert.is(stream.status, 200);
  assert.is(stream.json.error.code, -32004);
  const resub = await rawPost(a2aUrl, rpc('tasks/resubscribe', { id: randomUUID() }));
  assert.is(resub.json.error.code, -32004);
  // The SDK client refuses to stream on its own, from the card.
  const c = await client();
  try {
    for await (const _ of c.sendMessageStream(send)) assert.unreachable('streamed');
    assert.unreachable('streamed');
  } catch (e) {
    assert.match((e as Error).message, /stream/i);
  }
  const task = ((await c.sendMessage(send)) as any).result;
  const cfg = { taskId: task.id, pushNotificationConfig: { url: 'https://example.org/hook' } };
  for (const [method, params] of [
    ['tasks/pushNotificationConfig/set', cfg],
    ['tasks/pushNotificationConfig/get', { id: task.id }],
    ['tasks/pushNotificationConfig/list', { id: task.id }],
    ['tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'x' }],
  ] as const) {
    const r = await rawPost(a2aUrl, rpc(method, params));
    assert.is(r.status, 200);
    assert.is(r.json.error.code, -32003, method);
  }
  const withPush = await rawPost(a2aUrl, rpc('message/send', { ...send, configuration: { pushNotificationConfig: { url: 'https://example.org/hook' } } }));
  assert.is(withPush.json.error.code, -32003);
});

test('problems from the service: a failed task carrying the HTTP API problem details', async () => {
  const c = await client();
  const before = await balanceOf(svc.base, token);
  const request = { product_id: PRODUCT, units: refs.slice(20, 22) };
  const q = ((await c.sendMessage(msg([data(request)]))) as any).result.artifacts[0].parts[0].data;
  const cases: [string, Record<string, unknown>, string][] = [
    ['unknown product', { product_id: 'svc-nope-eu', query: QUERY }, 'unknown-product'],
    ['no match', { product_id: PRODUCT, query: 'zzzzqqqq', limit: 2 }, 'no-matching-units'],
    ['no balance token', { ...request, quote_id: q.quote_id }, 'balance-token-required'],
    ['tampered quote', { ...request, quote_id: q.quote_id.slice(0, -2) + 'xx', balance_token: token }, 'quote-tampered'],
    ['unsupported currency', { ...request, currency: 'USD' }, 'unsupported-currency'],
  ];
  for (const [label, d, slug] of cases) {
    const r: any = await c.sendMessage(msg([data(d)]));
    assert.not.ok(r.error, `${label}: ${JSON.stringify(r.error)}`);
    const task = r.result;
    assert.is(task.status.state, 'failed', label);
    const problem = task.status.message.parts[0].data.problem;
    assert.is(task.status.message.parts[0].kind, 'data');
    assert.is(problem.type, PROBLEM_BASE + slug, `${label}: ${JSON.stringify(problem)}`);
    assert.equal(task.metadata.problem, problem);
    const body = { ...d };
    const headers = body.balance_token ? bearer(String(body.balance_token)) : {};
    delete body.balance_token;
    const h = (await (await postJson(`${svc.base}/lds/draw`, body, headers)).json()) as any;
    assert.is(problem.type, h.type, `${label}: same problem as HTTP`);
    assert.is(problem.status, h.status, label);
  }
  assert.is(await balanceOf(svc.base, token), before);
});

test('bad JSON-RPC: clear errors, never a 5xx, no balance change', async () => {
  const before = await balanceOf(svc.base, token);
  const auth = bearer(token);
  const good = msg([data({ product_id: PRODUCT, query: QUERY, limit: 2 })]);

  const malformed = await rawPost(a2aUrl, '{"jsonrpc":"2.0","id":1,"method":"message/send","params":', auth);
  assert.is(malformed.status, 400);
  assert.is(malformed.json.error.code, -32700);
  assert.is(malformed.json.id, null);

  const notRpc = await rawPost(a2aUrl, JSON.stringify({ id: 1, method: 'message/send', params: good }), auth);
  assert.is(notRpc.json.error.code, -32600);
  const batch = await rawPost(a2aUrl, JSON.stringify([JSON.parse(rpc('message/send', good))]), auth);
  assert.is(batch.json.error.code, -32600);

  const unknown = await rawPost(a2aUrl, rpc('message/buy', good, 'x1'), auth);
  assert.is(unknown.json.error.code, -32601);
  assert.is(unknown.json.id, 'x1');

  const wrong: [string, unknown, string?][] = [
    ['no params', undefined],
    ['params not an object', [1, 2]],
    ['no message', {}, 'message'],
    ['message without parts', { message: { kind: 'message', role: 'user', messageId: 'm' } }, 'message.parts'],
    ['agent role', { message: { ...good.message, role: 'agent' } }, 'message.role'],
    ['data without product_id', msg([data({ query: QUERY })]), 'message.parts.0.data.product_id'],
    ['limit not an integer', msg([data({ product_id: PRODUCT, query: QUERY, limit: 'ten' })]), 'message.parts.0.data.limit'],
    ['unknown field', msg([data({ product_id: PRODUCT, query: QUERY, colour: 'red' })])],
    ['two data parts', msg([data({ product_id: PRODUCT, query: QUERY }), data({ product_id: PRODUCT, query: QUERY })]), 'message.parts'],
    ['data not an object', msg([{ kind: 'data', data: 'x' } as unknown as Part])],
    ['acceptedOutputModes not an array', { ...msg([data({ product_id: PRODUCT, query: QUERY })]), configuration: { acceptedOutputModes: 'x' } }, 'configuration.acceptedOutputModes'],
  ];
  for (const [label, params, field] of wrong) {
    const r = await rawPost(a2aUrl, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'message/send', ...(params === undefined ? {} : { params }) }), auth);
    assert.is(r.status, 200, label);
    assert.is(r.json.error?.code, -32602, `${label}: ${r.text}`);
    if (field) {
      assert.is(r.json.error.data.type, `${PROBLEM_BASE}malformed-request`, label);
      assert.is(r.json.error.data.field, field, label);
    }
  }

  const noTask = await rawPost(a2aUrl, rpc('tasks/get', { id: randomUUID() }), auth);
  assert.is(noTask.json.error.code, -32001);
  const task = JSON.parse((await rawPost(a2aUrl, rpc('message/send', good), auth)).text).result;
  const cancel = await rawPost(a2aUrl, rpc('tasks/cancel', { id: task.id }), auth);
  assert.is(cancel.json.error.code, -32002);

  const tooBig = await rawPost(a2aUrl, rpc('message/send', msg([data({ product_id: PRODUCT, query: 'x'.repeat(300_000) })])), auth);
  assert.is(tooBig.status, 413);
  assert.ok(tooBig.json.error);

  const get = await fetch(a2aUrl);
  assert.is(get.status, 405);
  await get.body?.cancel();

  assert.is(await balanceOf(svc.base, token), before);
});

test.run();
