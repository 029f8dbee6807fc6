// @ledger-backends: level postgres
// Issue 35: `lds mcp`, the buyer's stdio MCP server, driven by the official MCP SDK client
// (Client + StdioClientTransport) against a real service (real build, real ledger of either backend).
// Two `lds mcp` processes share one receipts journal: one whose host cannot ask the person (no
// elicitation), one whose host can (elicitation, answered by this test as the person would). What
// the ledger holds is read with plain fetch. Proven: the tools are listed with strict inputs and no
// token argument; a buy within the policy pays the quoted amount with a verified, journaled receipt;
// above --max or the day budget a tool error names the limit and nothing is paid; above the approval
// threshold nothing is paid unless the person approves; the token is in no tool result and no log.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { LDS_ARGS, REPO } from './helpers/build.ts';
import { bearer, buildFixture, cents, postJson, refsByProduct, startTestServer, topUp, type TestServer } from './helpers/service-harness.ts';
import { verifyReceipt } from '../contract/receipts.ts';
import { formatCents } from '../contract/money.ts';

let srv: TestServer;
let product: string;
let refs: string[];
let token: string;
let dir: string;
let journal: string;
/** unit lists and their prices: cheap <= approve-above < dear <= max < over */
const draws: Record<'cheap' | 'cheap2' | 'cheap3' | 'dear' | 'dear2' | 'over', { units: string[]; amount: string }> = {} as never;
let policy: { max: string; maxPerDay: string; approveAbove: string };
const everything: string[] = []; // every tool result and every line the servers logged

async function priceOf(units: string[]): Promise<string> {
  const res = await postJson(`${srv.base}/lds/draw`, { product_id: product, units });
  assert.is(res.status, 402);
  return ((await res.json()) as { amount: string }).amount;
}

async function ledger(): Promise<{ balance: string; draws: { id: string; amount: string; quote_id?: string }[] }> {
  const res = await fetch(`${srv.base}/lds/balance?limit=1000`, { headers: bearer(token) });
  const body = (await res.json()) as { balance: string; statement: { kind: string; id: string; amount: string; quote_id?: string }[] };
  return { balance: body.balance, draws: body.statement.filter((l) => l.kind === 'draw') };
}

/** `lds mcp` over stdio with the official client; `elicit` answers the server's approval questions (absent: the host cannot ask). */
async function connect(elicit?: (message: string) => { action: 'accept' | 'decline'; content?: { approve: boolean } }): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...LDS_ARGS, 'mcp', '--base-url', srv.base, '--token-file', join(dir, 'token'), '--max', policy.max, '--max-per-day', policy.maxPerDay, '--approve-above', policy.approveAbove, '--journal', journal],
    cwd: REPO,
    env: { ...(process.env as Record<string, string>), LDS_BALANCE_TOKEN: '' },
    stderr: 'pipe',
  });
  transport.stderr!.on('data', (d) => everything.push(String(d)));
  const client = new Client({ name: 'test-host', version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => elicit((req.params as { message: string }).message));
  await client.connect(transport);
  return client;
}

const call = async (c: Client, name: string, args: Record<string, unknown>) => {
  const r = (await c.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[]; structuredContent?: any };
  everything.push(JSON.stringify(r));
  return r;
};

let host: Client; // no elicitation
let asking: Client; // elicitation
let answer: 'accept' | 'decline' = 'decline';
const asked: string[] = [];

test.before(async () => {
  const fx = await buildFixture();
  const byProduct = await refsByProduct(fx.store);
  [product, refs] = [...byProduct.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
  srv = await startTestServer(fx);
  // Three price levels from the service's own quotes.
  const sizes = [1, 2, 5, 10, 20, 50, 100].filter((n) => n <= refs.length / 3); // 100: the draw's unit bound
  const levels: { n: number; amount: string }[] = [];
  for (const n of sizes) {
    const amount = await priceOf(refs.slice(0, n));
    if (!levels.length || cents(amount) > cents(levels[levels.length - 1]!.amount)) levels.push({ n, amount });
  }
  if (levels.length < 3) throw new Error(`need three price levels in ${product}, found ${JSON.stringify(levels)}`);
  const [low, mid, high] = levels;
  let next = 0;
  const take = (n: number) => refs.slice(next, (next += n));
  for (const [k, level] of [['cheap', low], ['cheap2', low], ['cheap3', low], ['dear', mid], ['dear2', mid], ['over', high]] as const) {
    const units = take(level!.n);
    draws[k] = { units, amount: await priceOf(units) };
  }
  assert.is(draws.cheap.amount, draws.cheap2.amount);
  // cheap and dear fit the per-draw cap, over does not; dear needs approval; the day allows
  // cheap + dear + cheap2, not a fourth draw.
  policy = {
    max: draws.dear.amount,
    approveAbove: draws.cheap.amount,
    maxPerDay: formatCents(cents(draws.cheap.amount) * 2 + cents(draws.dear.amount)),
  };
  token = await topUp(srv.base, '5.00');
  dir = await mkdtemp(join(fx.root, 'mcp-'));
  journal = join(dir, 'receipts.ndjson');
  await writeFile(join(dir, 'token'), `${token}\n`, { mode: 0o600 });
  [host, asking] = await Promise.all([connect(), connect((message) => (asked.push(message), answer === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' }))]);
});
test.after(async () => {
  await host?.close();
  await asking?.close();
  await srv?.close();
});

test('the tools: find, quote, buy, balance, statement, verify; strict inputs; no argument takes a token', async () => {
  const { tools } = await host.listTools();
  assert.equal(tools.map((t) => t.name).sort(), ['buy_draw', 'find_products', 'get_balance', 'get_statement', 'quote_draw', 'verify_journal']);
  for (const t of tools) {
    assert.is((t.inputSchema as { additionalProperties?: boolean }).additionalProperties, false, `${t.name} refuses unknown arguments`);
    assert.not.ok(Object.keys(t.inputSchema.properties ?? {}).some((p) => /token|auth|key/i.test(p)), `${t.name} takes no secret`);
    assert.ok((t.description ?? '').length > 30, `${t.name} is described`);
  }
  const found = await call(host, 'find_products', { text: product.replace(/^svc-|-eu$/g, '') });
  assert.not.ok(found.isError);
  assert.ok(found.structuredContent.products.some((p: { product_id: string }) => p.product_id === product), found.content[0]!.text);
  // A token offered as an argument is refused, not used: nothing is paid.
  const offered = await call(host, 'buy_draw', { product_id: product, units: draws.cheap.units, balance_token: token });
  assert.is(offered.isError, true);
  assert.is((await ledger()).draws.length, 0);
});

test('a buy within the policy: the quoted amount is paid once, the receipt verifies against the live JWKS, the journal holds the payment and the receipt', async () => {
  const before = await ledger();
  const q = await call(host, 'quote_draw', { product_id: product, units: draws.cheap.units });
  assert.not.ok(q.isError, q.content[0]!.text);
  assert.is(q.structuredContent.amount, draws.cheap.amount, 'the HTTP price');
  const paid = await call(host, 'buy_draw', { quote_id: q.structuredContent.quote_id });
  assert.not.ok(paid.isError, paid.content[0]!.text);
  const s = paid.structuredContent;
  assert.equal([s.status, s.amount, s.unit_count, s.receipt_verified], ['paid', draws.cheap.amount, draws.cheap.units.length, true]);
  assert.is(s.units.length, draws.cheap.units.length);
  const jwks = await (await fetch(`${srv.url}/.well-known/jwks.json`)).json();
  assert.ok(verifyReceipt(s.receipt, jwks).ok, 'the receipt verifies independently');
  const after = await ledger();
  assert.is(cents(before.balance) - cents(after.balance), cents(draws.cheap.amount), 'the balance moved by the quoted amount');
  assert.equal(after.draws.map((d) => d.id), [s.draw_id]);
  const lines = (await readFile(journal, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  const drawLine = lines.find((l) => l.kind === 'draw' && l.draw_id === s.draw_id);
  assert.ok(drawLine, 'journaled');
  assert.equal(drawLine.receipt, s.receipt, 'with the receipt as served');
  assert.ok(lines.some((l) => l.kind === 'pay' && l.quote_id === q.structuredContent.quote_id && l.amount === draws.cheap.amount));
});

test('above --max: a tool error naming max_per_draw; nothing paid', async () => {
  const before = await ledger();
  const r = await call(host, 'buy_draw', { product_id: product, units: draws.over.units });
  assert.is(r.isError, true);
  assert.match(r.content[0]!.text, new RegExp(`max_per_draw ${policy.max.replace('.', '\\.')} EUR.*costs ${draws.over.amount.replace('.', '\\.')} EUR.*nothing was paid`));
  assert.equal(await ledger(), before);
});

test('above the approval threshold: nothing paid and an approval result when the host cannot ask or the person declines; paid when the person approves', async () => {
  const before = await ledger();
  const q = await call(host, 'quote_draw', { product_id: product, units: draws.dear.units });
  assert.match(q.structuredContent.policy, /approve/);
  const pending = await call(host, 'buy_draw', { quote_id: q.structuredContent.quote_id });
  assert.not.ok(pending.isError, 'an approval result, not an error');
  assert.equal([pending.structuredContent.status, pending.structuredContent.paid, pending.structuredContent.amount], ['approval_required', false, draws.dear.amount]);
  assert.match(pending.structuredContent.how_to_approve, /lds buy --base-url=\S+ --product=/);

  answer = 'decline';
  const declined = await call(asking, 'buy_draw', { product_id: product, units: draws.dear.units });
  assert.is(declined.structuredContent.status, 'approval_required');
  assert.is(asked.length, 1, 'the person was asked');
  assert.match(asked[0]!, new RegExp(`Pay ${draws.dear.amount.replace('.', '\\.')} EUR .*above your approval threshold of ${policy.approveAbove.replace('.', '\\.')} EUR`));
  assert.equal(await ledger(), before, 'nothing paid');

  answer = 'accept';
  const approved = await call(asking, 'buy_draw', { product_id: product, units: draws.dear.units });
  assert.not.ok(approved.isError, approved.content[0]!.text);
  assert.is(approved.structuredContent.status, 'paid');
  assert.is(asked.length, 2);
  const after = await ledger();
  assert.is(cents(before.balance) - cents(after.balance), cents(draws.dear.amount));
});

test('the day budget counts both servers\' purchases (one journal): a draw that would pass it is a tool error naming max_per_day; nothing paid', async () => {
  const fits = await call(asking, 'buy_draw', { product_id: product, units: draws.cheap2.units });
  assert.is(fits.structuredContent.status, 'paid', fits.content[0]!.text);
  const before = await ledger();
  const r = await call(host, 'buy_draw', { product_id: product, units: draws.cheap3.units });
  assert.is(r.isError, true);
  assert.match(r.content[0]!.text, new RegExp(`max_per_day ${policy.maxPerDay.replace('.', '\\.')} EUR`));
  assert.is(r.structuredContent.limit, 'max_per_day');
  assert.equal(await ledger(), before);
});

test('balance, statement and verify_journal answer from the service; the token is in no tool result and no log line', async () => {
  const s = await ledger();
  const b = await call(host, 'get_balance', {});
  assert.is(b.structuredContent.balance, s.balance);
  const st = await call(host, 'get_statement', { limit: 10 });
  assert.equal(st.structuredContent.statement.filter((l: { kind: string }) => l.kind === 'draw').map((l: { id: string }) => l.id).sort(), s.draws.map((d) => d.id).sort());
  const v = await call(asking, 'verify_journal', {});
  assert.not.ok(v.isError, v.content[0]!.text);
  assert.equal([v.structuredContent.verified, v.structuredContent.draws_paid, v.structuredContent.invalid], [3, 3, []]);
  assert.match(v.structuredContent.against, /live JWKS/);
  assert.is(v.structuredContent.spent, formatCents(s.draws.reduce((sum, d) => sum + cents(d.amount.replace('-', '')), 0)));
  const seen = everything.join('\n');
  assert.match(seen, /\[lds mcp\] paid/, 'the servers logged (to stderr)');
  assert.not.ok(seen.includes(token), 'no token in any tool result or log line');
  assert.not.ok((await readFile(journal, 'utf8')).includes(token), 'nor in the journal');
});

test.run();
