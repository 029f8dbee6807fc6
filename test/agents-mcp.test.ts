// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Issue 5 (MCP): the official MCP SDK client (Client + StreamableHTTPClientTransport) against the
// real service over real HTTP. Tools are listed with schemas; list/get/quote/draw/balance answer
// the same products, amounts, units and problems as the HTTP API; bad arguments and bad JSON-RPC
// get clear errors, never a 5xx, and never change a balance.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, mcpClient, postJson, rawPost, refsOf, startAgentService, topUp, unitKey, type AgentService } from './helpers/agents.ts';

const PRODUCT = 'svc-agriculture-eu';
const QUERY = 'regulation';
let svc: AgentService;
let refs: string[];
let token: string;
let client: Client; // sends the balance token as Authorization: Bearer
let anon: Client; // sends no credentials

test.before(async () => {
  svc = await startAgentService();
  refs = await refsOf(svc.base, PRODUCT, QUERY);
  if (refs.length < 45) throw new Error(`need 45 units of ${PRODUCT}, the query found ${refs.length}`);
  token = await topUp(svc.base, '5.00', 'spt_test_123');
  client = await mcpClient(svc.mcpUrl, token);
  anon = await mcpClient(svc.mcpUrl);
});
test.after(async () => {
  await client?.close();
  await anon?.close();
  await svc?.close();
});

const call = async (c: Client, name: string, args: Record<string, unknown>) => (await c.callTool({ name, arguments: args })) as any;

test('the catalogue names the MCP endpoint; tools are listed with input and output schemas and descriptions', async () => {
  for (const p of svc.catalogue.products) assert.is(p.mcp_endpoint, svc.mcpUrl);
  const { tools } = await anon.listTools();
  assert.equal(tools.map((t) => t.name).sort(), ['draw', 'get_balance', 'get_product', 'list_products', 'quote_draw']);
  for (const t of tools) {
    assert.ok(t.description && t.description.length > 40, `${t.name} has a description`);
    assert.is(t.inputSchema.type, 'object');
    assert.is((t.inputSchema as any).additionalProperties, false, `${t.name} refuses unknown arguments`);
    assert.ok(t.outputSchema, `${t.name} has an output schema`);
  }
  const quote = tools.find((t) => t.name === 'quote_draw')!;
  const props = quote.inputSchema.properties as any;
  assert.equal(quote.inputSchema.required, ['product_id']);
  assert.is(props.units.type, 'array');
  assert.is(props.limit.type, 'integer');
  const draw = tools.find((t) => t.name === 'draw')!;
  assert.equal([...(draw.inputSchema.required as string[])].sort(), ['product_id', 'quote_id']);
  // Bounds are the OpenAPI document's (the HTTP API's contract).
  const spec = (await (await fetch(`${svc.base}/specification`)).json()) as any;
  const req = spec.components.schemas.DrawRequest.properties;
  assert.is(props.units.maxItems, req.units.maxItems);
  assert.is(props.limit.maximum, req.limit.maximum);
  assert.is(props.query.maxLength, req.query.maxLength);
});

test('list_products and get_product answer what the catalogue says', async () => {
  const r = await call(anon, 'list_products', {});
  assert.not.ok(r.isError);
  const s = r.structuredContent;
  assert.is(s.total, 14);
  assert.is(s.catalogue_version, svc.catalogue.version);
  assert.equal(s.products.map((p: any) => p.product_id), svc.catalogue.products.map((p: any) => p.product_id));
  for (const p of s.products) {
    const c = svc.catalogue.products.find((x: any) => x.product_id === p.product_id);
    assert.is(p.title, c.title);
    assert.is(p.live_unit_count, c.live_unit_count);
    assert.is(p.live_row_count, c.live_row_count);
    assert.is(p.price.draw_unit_price, c.pricing.draw_unit_price);
    assert.is(p.price.bulk_annual_price, c.pricing.bulk_annual_price);
    assert.is(p.health.rollup, c._health.rollup);
    assert.is(p.dcat_url, c.dcat_url);
  }
  assert.match(r.content[0].text, /svc-language-eu/);
  assert.match(r.content[0].text, /svc-agriculture-eu/);
  assert.equal(JSON.parse(r.content[1].text), s, 'the JSON text equals structuredContent');

  const g = await call(anon, 'get_product', { product_id: PRODUCT });
  assert.not.ok(g.isError);
  const entry = svc.catalogue.products.find((x: any) => x.product_id === PRODUCT);
  assert.equal(g.structuredContent.product, entry);
  assert.equal(g.structuredContent.licences, entry.licence_summary);
  assert.is(g.structuredContent.dcat_url, `${svc.base}/dcat/catalog/${PRODUCT}`);
  const dcat = await fetch(g.structuredContent.dcat_url);
  assert.is(dcat.status, 200, 'the DCAT link resolves');

  // Unknown product: the same problem as the HTTP API.
  const u = await call(anon, 'get_product', { product_id: 'svc-nope-eu' });
  assert.is(u.isError, true);
  const http = (await (await postJson(`${svc.base}/lds/draw`, { product_id: 'svc-nope-eu', query: 'x' })).json()) as any;
  assert.is(u.structuredContent.type, `${PROBLEM_BASE}unknown-product`);
  assert.is(u.structuredContent.type, http.type);
  assert.is(u.structuredContent.status, 404);
});

test('quote_draw: the quote is a normal result with the HTTP 402 price; nothing is charged', async () => {
  const request = { product_id: PRODUCT, currency: 'EUR', units: refs.slice(0, 7) };
  const before = await balanceOf(svc.base, token);
  const r = await call(anon, 'quote_draw', request);
  assert.not.ok(r.isError, 'a quote is not an error');
  const q = r.structuredContent;
  const httpRes = await postJson(`${svc.base}/lds/draw`, request);
  assert.is(httpRes.status, 402);
  const h = (await httpRes.json()) as any;
  for (const k of ['product_id', 'amount', 'currency', 'unit_count', 'resolved_units', 'breakdown', 'store_version', 'catalogue_version']) assert.equal(q[k], h[k], k);
  assert.is(q.unit_count, 7);
  assert.ok(q.quote_id && q.expires_at);
  assert.is(q.payable_from_balance, false, 'no token sent');
  assert.match(r.content[0].text, new RegExp(`${q.amount} EUR`));
  // With the bearer token the quote says the balance can pay it.
  const withToken = await call(client, 'quote_draw', request);
  assert.is(withToken.structuredContent.payable_from_balance, true);
  // query + limit quotes the same units as over HTTP.
  const qq = await call(anon, 'quote_draw', { product_id: PRODUCT, query: QUERY, limit: 3 });
  const hq = (await (await postJson(`${svc.base}/lds/draw`, { product_id: PRODUCT, query: QUERY, limit: 3 })).json()) as any;
  assert.equal(qq.structuredContent.resolved_units, hq.resolved_units);
  assert.is(qq.structuredContent.amount, hq.amount);
  assert.is(await balanceOf(svc.base, token), before, 'quoting charges nothing');
});

test('top-up over HTTP (mppx), draw and balance over MCP: the same amounts and units as the HTTP path', async () => {
  const mcpToken = await topUp(svc.base, '5.00', 'spt_test_123');
  const httpToken = await topUp(svc.base, '5.00', 'spt_test_123');
  const request = { product_id: PRODUCT, units: refs.slice(10, 15) };
  const c = await mcpClient(svc.mcpUrl, mcpToken);
  try {
    // MCP: quote, then draw with the Bearer header of the MCP HTTP request.
    const q = (await call(c, 'quote_draw', request)).structuredContent;
    const d = await call(c, 'draw', { ...request, quote_id: q.quote_id });
    assert.not.ok(d.isError, JSON.stringify(d.structuredContent));
    const paid = d.structuredContent;

    // HTTP: the same request quoted (402) and paid (200).
    const hq = (await (await postJson(`${svc.base}/lds/draw`, request, bearer(httpToken))).json()) as any;
    const hpRes = await postJson(`${svc.base}/lds/draw`, { ...request, quote_id: hq.quote_id }, bearer(httpToken));
    assert.is(hpRes.status, 200);
    const hp = (await hpRes.json()) as any;

    assert.is(q.amount, hq.amount);
    assert.is(paid.receipt.amount, hp.receipt.amount);
    assert.is(paid.receipt.balance_after, hp.receipt.balance_after);
    assert.is(paid.receipt.units_sha256, hp.receipt.units_sha256, 'identical units, byte for byte');
    assert.equal(paid.units.map((u: any) => u.ref), request.units);
    assert.is(unitKey(paid.units), unitKey(hp.units));
    assert.equal(paid.attribution, hp.attribution);
    // Every unit carries its citation and licence; the text result lists citations and attribution.
    for (const u of paid.units) {
      assert.ok(u.citation?.label, 'citation');
      assert.ok(u.licence?.licence, 'licence');
      assert.ok(d.content[0].text.includes(u.citation.label), 'citation in the text result');
    }
    for (const a of paid.attribution) assert.ok(d.content[0].text.includes(a.attribution), 'attribution in the text result');

    // Balance through MCP equals the HTTP balance, debited exactly the quoted amount.
    const b = (await call(c, 'get_balance', {})).structuredContent;
    const hb = (await (await fetch(`${svc.base}/lds/balance`, { headers: bearer(mcpToken) })).json()) as any;
    assert.equal(b, hb);
    assert.is(b.balance, paid.receipt.balance_after);
    assert.is(b.balance, await balanceOf(svc.base, httpToken));

    // Exactly once: paying the same quote again returns the same draw, no second debit.
    const again = (await call(c, 'draw', { ...request, quote_id: q.quote_id })).structuredContent;
    assert.is(again.receipt.draw_id, paid.receipt.draw_id);
    assert.is(await balanceOf(svc.base, mcpToken), b.balance);
    // The HTTP path sees the MCP draw as paid too (same ledger).
    const replay = (await (await postJson(`${svc.base}/lds/draw`, { ...request, quote_id: q.quote_id }, bearer(mcpToken))).json()) as any;
    assert.is(replay.receipt.draw_id, paid.receipt.draw_id);
  } finally {
    await c.close();
  }
});

test('draw with the balance token as an argument (no Authorization header)', async () => {
  const t = await topUp(svc.base, '5.00', 'spt_test_123');
  const request = { product_id: PRODUCT, query: QUERY, limit: 2 };
  const q = (await call(anon, 'quote_draw', { ...request, balance_token: t })).structuredContent;
  assert.is(q.payable_from_balance, true);
  const d = await call(anon, 'draw', { ...request, quote_id: q.quote_id, balance_token: t });
  assert.not.ok(d.isError, JSON.stringify(d.structuredContent));
  assert.is(d.structuredContent.units.length, q.unit_count);
  assert.is((await call(anon, 'get_balance', { balance_token: t })).structuredContent.balance, d.structuredContent.receipt.balance_after);
});

test('refusals are tool errors carrying the HTTP API problem details; balances unchanged', async () => {
  const before = await balanceOf(svc.base, token);
  const request = { product_id: PRODUCT, units: refs.slice(20, 22) };
  const q = (await call(client, 'quote_draw', request)).structuredContent;

  const cases: [string, Client, string, Record<string, unknown>, string, string, Record<string, string>][] = [
    // label, client, tool, args, slug; and the same request over HTTP for comparison
    ['no balance token', anon, 'draw', { ...request, quote_id: q.quote_id }, 'balance-token-required', 'draw', {}],
    ['unknown balance token', anon, 'draw', { ...request, quote_id: q.quote_id, balance_token: 'lds_bal_' + 'A'.repeat(43) }, 'invalid-balance-token', 'draw', bearer('lds_bal_' + 'A'.repeat(43))],
    ['tampered quote', client, 'draw', { ...request, quote_id: q.quote_id.slice(0, -2) + 'xx' }, 'quote-tampered', 'draw', bearer(token)],
    ['quote for other units', client, 'draw', { ...request, units: refs.slice(30, 32), quote_id: q.quote_id }, 'quote-tampered', 'draw', bearer(token)],
    ['unknown product', client, 'quote_draw', { product_id: 'svc-nope-eu', units: refs.slice(0, 1) }, 'unknown-product', 'draw', {}],
    ['unknown units', client, 'quote_draw', { product_id: PRODUCT, units: ['eu.eurlex:nope'] }, 'unknown-units', 'draw', {}],
    ['unsupported currency', client, 'quote_draw', { ...request, currency: 'USD' }, 'unsupported-currency', 'draw', {}],
    ['units and query together', client, 'quote_draw', { ...request, query: 'x' }, 'malformed-request', 'draw', {}],
  ];
  for (const [label, c, tool, args, slug, , headers] of cases) {
    const r = await call(c, tool, args);
    assert.is(r.isError, true, label);
    const p = r.structuredContent;
    assert.is(p.type, PROBLEM_BASE + slug, `${label}: ${JSON.stringify(p)}`);
    assert.type(p.title, 'string');
    assert.match(r.content[0].text, new RegExp(String(p.status)));
    // The HTTP API answers the same problem for the same request.
    const httpBody = { ...args };
    delete httpBody.balance_token;
    const h = (await (await postJson(`${svc.base}/lds/draw`, httpBody, headers)).json()) as any;
    assert.is(p.type, h.type, `${label}: same type as HTTP`);
    assert.is(p.status, h.status, `${label}: same status as HTTP`);
  }

  // Insufficient balance: spend a fresh 5.00 balance over HTTP, then pay through MCP.
  const poor = await topUp(svc.base, '5.00', 'spt_test_123');
  for (let limit = 100; ; limit--) {
    const hq = (await (await postJson(`${svc.base}/lds/draw`, { product_id: PRODUCT, query: QUERY, limit }, bearer(poor))).json()) as any;
    if (!hq.payable_from_balance) break;
    const paid = await postJson(`${svc.base}/lds/draw`, { product_id: PRODUCT, query: QUERY, limit, quote_id: hq.quote_id }, bearer(poor));
    assert.is(paid.status, 200);
  }
  const left = await balanceOf(svc.base, poor);
  const big = { product_id: PRODUCT, query: QUERY, limit: 100 };
  const bq = (await call(anon, 'quote_draw', { ...big, balance_token: poor })).structuredContent;
  assert.is(bq.payable_from_balance, false);
  const r = await call(anon, 'draw', { ...big, quote_id: bq.quote_id, balance_token: poor });
  assert.is(r.isError, true);
  assert.is(r.structuredContent.type, `${PROBLEM_BASE}insufficient-balance`);
  assert.is(r.structuredContent.status, 402);
  assert.is(r.structuredContent.balance, left);
  assert.is(await balanceOf(svc.base, poor), left, 'refused: nothing debited');
  assert.is(await balanceOf(svc.base, token), before, 'no refusal changed the balance');
});

test('bad tool arguments: a 400 problem naming the field, no state change', async () => {
  const before = await balanceOf(svc.base, token);
  const q = (await call(client, 'quote_draw', { product_id: PRODUCT, units: refs.slice(40, 41) })).structuredContent;
  const bad: [string, Record<string, unknown>, string][] = [
    ['quote_draw', { units: refs.slice(0, 1) }, 'product_id'],
    ['quote_draw', { product_id: 42, units: refs.slice(0, 1) }, 'product_id'],
    ['quote_draw', { product_id: PRODUCT, units: 'eu.eurlex:1' }, 'units'],
    ['quote_draw', { product_id: PRODUCT, units: [] }, 'units'],
    ['quote_draw', { product_id: PRODUCT, query: 'x', limit: 2.5 }, 'limit'],
    ['quote_draw', { product_id: PRODUCT, query: 'x', limit: 100000 }, 'limit'],
    ['quote_draw', { product_id: PRODUCT, units: refs.slice(0, 1), colour: 'red' }, ''],
    ['draw', { product_id: PRODUCT, units: refs.slice(40, 41) }, 'quote_id'],
    ['draw', { product_id: PRODUCT, units: refs.slice(40, 41), quote_id: q.quote_id, balance_token: 7 }, 'balance_token'],
    ['get_product', {}, 'product_id'],
    ['get_balance', { balance_token: '' }, 'balance_token'],
  ];
  for (const [tool, args, field] of bad) {
    const r = await call(client, tool, args);
    assert.is(r.isError, true, `${tool} ${JSON.stringify(args)}`);
    assert.is(r.structuredContent.type, `${PROBLEM_BASE}malformed-request`);
    assert.is(r.structuredContent.status, 400);
    if (field) assert.is(r.structuredContent.field, field, `${tool} ${JSON.stringify(args)}`);
    assert.match(r.structuredContent.detail, new RegExp(`Invalid arguments for ${tool}`));
  }
  // An unknown tool is a JSON-RPC error (invalid params), not a crash.
  try {
    await client.callTool({ name: 'buy_everything', arguments: {} });
    assert.unreachable('unknown tool accepted');
  } catch (e) {
    assert.match((e as Error).message, /Unknown tool/);
    assert.is((e as { code?: number }).code, -32602);
  }
  assert.is(await balanceOf(svc.base, token), before);
  // The quote is still payable afterwards: nothing was consumed.
  const d = await call(client, 'draw', { product_id: PRODUCT, units: refs.slice(40, 41), quote_id: q.quote_id });
  assert.not.ok(d.isError);
});

test('bad JSON-RPC over raw HTTP: clear errors, never a 5xx, no balance change', async () => {
  const before = await balanceOf(svc.base, token);
  const url = svc.mcpUrl;
  const auth = bearer(token);
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

  const ok = await rawPost(url, init, auth);
  assert.is(ok.status, 200, ok.text);
  assert.is(ok.json.result.serverInfo.name, 'lds-catalogue');
  assert.is(ok.headers.get('mcp-session-id'), null, 'stateless: no session id');

  const malformed = await rawPost(url, '{"jsonrpc": "2.0", "id": 1, "method": ', auth);
  assert.is(malformed.status, 400);
  assert.is(malformed.json.error.code, -32700);

  const notRpc = await rawPost(url, JSON.stringify({ hello: 'world' }), auth);
  assert.ok(notRpc.status >= 400 && notRpc.status < 500, `not JSON-RPC: ${notRpc.status}`);
  assert.ok(notRpc.json?.error, notRpc.text);

  const unknownMethod = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/buy', params: {} }), auth);
  assert.ok(unknownMethod.status < 500, unknownMethod.text);
  assert.is(unknownMethod.json.error.code, -32601);

  const badParams = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 42 } }), auth);
  assert.ok(badParams.status < 500, badParams.text);
  assert.is(badParams.json.error.code, -32602);

  const badArgs = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'draw', arguments: { product_id: [], quote_id: {} } } }), auth);
  assert.is(badArgs.status, 200);
  assert.is(badArgs.json.result.isError, true);
  assert.is(badArgs.json.result.structuredContent.status, 400);

  const tooBig = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { pad: 'x'.repeat(300_000) } }), auth);
  assert.is(tooBig.status, 413);
  assert.ok(tooBig.json.error);

  const wrongType = await rawPost(url, init, { ...auth, 'content-type': 'text/plain' });
  assert.is(wrongType.status, 415);

  const get = await fetch(url, { headers: { accept: 'text/event-stream' } });
  assert.is(get.status, 405);
  assert.is(get.headers.get('allow'), 'POST');
  await get.body?.cancel();

  assert.is(await balanceOf(svc.base, token), before);
});

test.run();
