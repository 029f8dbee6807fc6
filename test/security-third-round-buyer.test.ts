// Issue 50, the buyer's side against a hostile service (items 1, 2, 3, 4, 5, 7, 17, 18, 19, 20), on a
// real service (real build, real ledger, real HTTP) with, where the item needs one, a hostile front:
// a real HTTP server in front of it that forwards and then lies (echoes the Authorization header,
// rewrites a quote, re-signs a receipt with its own key, redirects elsewhere). `lds mcp` is driven
// by the official MCP SDK client over stdio, `lds buy` and `lds receipts` run as the CLI runs.
//   1. the approval command `lds mcp` suggests is run in a real shell: nothing the query holds escapes;
//   2. a service echoing the token (raw, Bearer, a longer hash, a fragment) reaches no tool result,
//      error, log line or journal line;
//   3. a quote whose pay_with names another quote is refused before anything is sent; the body sent
//      is the checked quote's;
//   4. a quote in JPY is refused by an EUR policy; a receipt in another currency is refused;
//   5. `receipts verify` says what it trusts: a journal naming a second origin is warned about, a
//      receipt whose key the journal records only after it fails, reconcile names the other service;
//   7. a cross-origin redirect of an API call is not followed (nothing reaches the other host);
//  17. the MCP tools' bounds are the service's (its OpenAPI document), not wider;
//  18. a quote paid twice is one draw in verify_journal, `receipts verify` and the day budget;
//  19. a quote made by one `lds mcp` process is bought by another (a restarted server);
//  20. "1 unit", and `lds buy` prints the quote id shortened.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { access, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LDS_ARGS, REPO, cliAsync } from './helpers/build.ts';
import { bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type TestServer } from './helpers/service-harness.ts';
import { LdsClient, LdsError, PolicyRefusal, ReceiptError, ServiceProblem, verifyJournal } from '../client/index.ts';
import { generateReceiptKey, ReceiptSigner } from '../payments/receipts.ts';
import { DAY_MS } from '../client/policy.ts';

const run = promisify(execFile);

let srv: TestServer;
let product: string;
let refs: string[];
let token: string;
let dir: string;
let exampleQuery: string;
let next = 0;
/** Fresh unit references for each draw, so no two tests buy the same units. */
const take = (n: number) => refs.slice(next, (next += n));

test.before(async () => {
  const fx = await buildFixture();
  const byProduct = await refsByProduct(fx.store);
  [product, refs] = [...byProduct.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
  srv = await startTestServer(fx);
  token = await topUp(srv.base, '50.00');
  dir = await mkdtemp(join(fx.root, 'third-round-'));
  await writeFile(join(dir, 'token'), `${token}\n`, { mode: 0o600 });
  const catalogue = (await (await fetch(`${srv.base}/lds/_catalog`)).json()) as { products: { product_id: string; example_query: { query: string } }[] };
  exampleQuery = catalogue.products.find((p) => p.product_id === product)!.example_query.query;
});
test.after(async () => {
  await srv?.close();
});

// ---------------------------------------------------------------- a hostile front

interface Seen {
  method: string;
  path: string;
  body: string;
  headers: IncomingHttpHeaders;
}
interface Upstream {
  status: number;
  headers: Record<string, string>;
  text: string;
}
type Answer = { status: number; headers?: Record<string, string>; text: string };
interface Front {
  url: string;
  base: string;
  seen: Seen[];
  /** decides each answer: the service's (upstream) or another; undefined forwards the service's */
  rule: (r: Seen, upstream: () => Promise<Upstream>) => Promise<Answer | undefined> | Answer | undefined;
  close(): Promise<void>;
}

/** A real HTTP server that forwards to `target` (an origin) and answers as `rule` says. */
async function startFront(target: string, basePath: string): Promise<Front> {
  const front: Front = { url: '', base: '', seen: [], rule: () => undefined, close: async () => undefined };
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const seen = { method: req.method!, path: req.url!, body, headers: req.headers };
    front.seen.push(seen);
    const upstream = async (): Promise<Upstream> => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
      const r = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(body ? { body } : {}), redirect: 'manual' });
      const out: Record<string, string> = {};
      r.headers.forEach((v, k) => {
        if (!['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding'].includes(k)) out[k] = v;
      });
      return { status: r.status, headers: out, text: await r.text() };
    };
    const answer = (await front.rule(seen, upstream)) ?? (await upstream());
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  front.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  front.base = `${front.url}${basePath}`;
  front.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return front;
}

const isPaid = (r: Seen) => r.method === 'POST' && r.path.endsWith('/lds/draw') && r.body.includes('"quote_id"');
const basePath = () => new URL(srv.base).pathname;

// ---------------------------------------------------------------- `lds mcp`

const mcpLogs: string[] = [];
async function mcp(base: string, journal: string, extra: string[] = []): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...LDS_ARGS, 'mcp', '--base-url', base, '--token-file', join(dir, 'token'), '--max', '5.00', '--max-per-day', '40.00', '--journal', journal, ...extra],
    cwd: dir,
    env: { ...(process.env as Record<string, string>), LDS_BALANCE_TOKEN: '' },
    stderr: 'pipe',
  });
  transport.stderr!.on('data', (d) => mcpLogs.push(String(d)));
  const client = new Client({ name: 'test-host', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}
type ToolResult = { isError?: boolean; content: { text: string }[]; structuredContent?: any };
const call = async (c: Client, name: string, args: Record<string, unknown>) => (await c.callTool({ name, arguments: args })) as ToolResult;

// ---------------------------------------------------------------- 1. the approval command

test('1. the approval command `lds mcp` suggests, run in a shell, passes the query as one argument and runs nothing', async () => {
  const marker = join(dir, 'PWNED');
  const query = `${exampleQuery}'; touch ${marker}; echo '`;
  const host = await mcp(srv.base, join(dir, 'approval.ndjson'), ['--approve-above', '0.00']);
  try {
    const q = await call(host, 'quote_draw', { product_id: product, query, limit: 2 });
    assert.not.ok(q.isError, q.content[0]!.text);
    const r = await call(host, 'buy_draw', { quote_id: q.structuredContent.quote_id });
    const s = r.structuredContent;
    assert.is(s.status, 'approval_required', r.content[0]!.text);
    assert.type(s.approve_command, 'string');
    assert.ok(s.how_to_approve.includes(s.approve_command), 'the text shows the same line');
    // The line as a person (or a host with a shell tool) runs it, with `lds` printing its arguments.
    const { stdout } = await run('sh', ['-c', `lds() { for a in "$@"; do printf '%s\\n' "$a"; done; }\n${s.approve_command}`], { cwd: dir });
    const argv = stdout.replace(/\n$/, '').split('\n');
    assert.equal(argv, s.approve_argv.slice(1), 'the shell sees exactly the argv the result gives');
    assert.ok(argv.includes(`--query=${query}`), `the query is one argument: ${JSON.stringify(argv)}`);
    assert.ok(argv.includes('--limit=2') && argv.includes(`--product=${product}`), JSON.stringify(argv));
    await access(marker).then(
      () => assert.unreachable('the shell ran the command the query held'),
      () => undefined,
    );
  } finally {
    await host.close();
  }
});

// ---------------------------------------------------------------- 2. a service that echoes the token

test('2. a service echoing the Authorization header (raw, Bearer, a longer hash, a fragment) reaches no tool result, error, log or journal line', async () => {
  const front = await startFront(srv.url, basePath());
  const hex = createHash('sha256').update(token).digest('hex');
  const fragment = token.slice(12, 30);
  const echo = (r: Seen) => `you sent ${String(r.headers.authorization)} (token ${token.slice(8)}, hash ${hex}, ${hex.slice(0, 16)}, fragment ${fragment})`;
  front.rule = (r) => {
    if (isPaid(r)) return { status: 400, headers: { 'content-type': 'application/problem+json' }, text: JSON.stringify({ type: 'https://example.org/problems/echo', title: 'Echo', status: 400, detail: echo(r), [token]: echo(r) }) };
    if (r.method === 'GET' && r.path.includes('/lds/balance')) return { status: 500, headers: { 'content-type': 'text/html' }, text: `<html><body><h1>500</h1><pre>${echo(r)}</pre></body></html>` };
    return undefined;
  };
  const journal = join(dir, 'echo.ndjson');
  const seen: string[] = [];
  try {
    const host = await mcp(front.base, journal);
    try {
      const paid = await call(host, 'buy_draw', { product_id: product, units: take(1) });
      assert.is(paid.isError, true, 'the echoed problem is an error');
      assert.match(paid.content[0]!.text, /you sent Bearer \[redacted\]/, 'the detail is kept, the token is not');
      seen.push(JSON.stringify(paid));
      seen.push(JSON.stringify(await call(host, 'get_balance', {})));
    } finally {
      await host.close();
    }
    // The client library itself: the error it throws.
    const client = await LdsClient.create({ baseUrl: front.base, token, journal: join(dir, 'echo-lib.ndjson') });
    try {
      const err = await client.pay(await client.quote({ product_id: product, units: take(1) })).then(
        () => assert.unreachable('paid'),
        (e: unknown) => e,
      );
      assert.instance(err, ServiceProblem);
      seen.push((err as Error).message, JSON.stringify((err as ServiceProblem).problem));
    } finally {
      await client.close();
    }
    seen.push(await readFile(journal, 'utf8'), await readFile(join(dir, 'echo-lib.ndjson'), 'utf8'), mcpLogs.join(''));
    const all = seen.join('\n');
    assert.match(all, /"kind":"failure"/, 'the journal recorded the failure');
    for (const [what, needle] of [['token', token.slice(8)], ['hash beyond the hint', hex.slice(0, 9)], ['fragment', fragment]] as const) assert.not.ok(all.includes(needle), `the ${what} leaked`);
    assert.ok(all.includes(`bal#${hex.slice(0, 8)}`), 'the documented hint is kept');
  } finally {
    await front.close();
  }
});

// ---------------------------------------------------------------- 3 and 4. what is paid

test('3. a quote whose pay_with names another quote is refused before anything is sent; the body sent is the checked quote', async () => {
  const front = await startFront(srv.url, basePath());
  const other = (await (await postJson(`${srv.base}/lds/draw`, { product_id: product, units: take(3) })).json()) as { quote_id: string };
  const client = await LdsClient.create({ baseUrl: front.base, token, policy: { maxPerDraw: '5.00' } });
  try {
    front.rule = async (r, upstream) => {
      if (r.method !== 'POST' || isPaid(r)) return undefined;
      const u = await upstream();
      const q = JSON.parse(u.text);
      q.pay_with = { ...q.pay_with, quote_id: other.quote_id };
      return { ...u, text: JSON.stringify(q) };
    };
    const q = await client.quote({ product_id: product, units: take(1) });
    const err = await client.pay(q).then(() => assert.unreachable('paid'), (e: unknown) => e);
    assert.instance(err, LdsError);
    assert.match((err as Error).message, /pay_with names another quote_id .*nothing was paid/);
    assert.not.ok(front.seen.some(isPaid), 'no paid draw was sent');
    // pay_with differing elsewhere (its units) is not what is sent: the quote's own request is.
    front.rule = async (r, upstream) => {
      if (r.method !== 'POST' || isPaid(r)) return undefined;
      const u = await upstream();
      const q = JSON.parse(u.text);
      q.pay_with = { ...q.pay_with, units: refs.slice(-3) };
      return { ...u, text: JSON.stringify(q) };
    };
    const units = take(1);
    const paid = await client.pay(await client.quote({ product_id: product, units }));
    const sent = JSON.parse(front.seen.find(isPaid)!.body);
    assert.equal(sent.units, units, 'the units of the quote, not of pay_with');
    assert.is(paid.receipt.unit_count, 1);
  } finally {
    await client.close();
    await front.close();
  }
});

test('4. a quote in JPY is refused by the EUR policy before anything is sent; a receipt in another currency is refused', async () => {
  const front = await startFront(srv.url, basePath());
  const forger = ReceiptSigner.fromJwks([generateReceiptKey()]);
  const client = await LdsClient.create({ baseUrl: front.base, token, policy: { maxPerDraw: '5.00' } });
  try {
    front.rule = async (r, upstream) => {
      if (r.method !== 'POST' || isPaid(r)) return undefined;
      const u = await upstream();
      return { ...u, text: JSON.stringify({ ...JSON.parse(u.text), currency: 'JPY' }) };
    };
    const err = await client.pay(await client.quote({ product_id: product, units: take(1) })).then(() => assert.unreachable('paid'), (e: unknown) => e);
    assert.instance(err, PolicyRefusal);
    assert.is((err as PolicyRefusal).limit, 'currency');
    assert.match((err as Error).message, /"JPY".*nothing was paid/);
    assert.not.ok(front.seen.some(isPaid), 'no paid draw was sent');
    // A service whose receipt (signed with its own key, which it publishes) says JPY for an EUR quote.
    front.rule = async (r, upstream) => {
      if (r.path.endsWith('/.well-known/jwks.json')) return { status: 200, text: JSON.stringify(forger.jwks) };
      if (!isPaid(r)) return undefined;
      const u = await upstream();
      const p = JSON.parse(u.text);
      const { signature: _s, ...receipt } = p.receipt;
      p.receipt = forger.sign({ ...receipt, currency: 'JPY' });
      return { ...u, text: JSON.stringify(p) };
    };
    const err2 = await client.pay(await client.quote({ product_id: product, units: take(1) })).then(() => assert.unreachable('accepted'), (e: unknown) => e);
    assert.instance(err2, ReceiptError);
    assert.match((err2 as Error).message, /"JPY", not the quote's EUR/);
  } finally {
    await client.close();
    await front.close();
  }
});

// ---------------------------------------------------------------- 5. what `receipts verify` trusts

test("5. receipts verify: a line naming another origin is warned about, a key recorded after its receipt fails, reconcile names the other service; the guide says what is trusted", async () => {
  const journal = join(dir, 'forged.ndjson');
  const client = await LdsClient.create({ baseUrl: srv.base, token, journal });
  await client.draw({ product_id: product, units: take(1) });
  await client.close();
  const honest = await readFile(journal, 'utf8');
  const lines = honest.trim().split('\n').map((l) => JSON.parse(l));
  const draw = lines.find((l) => l.kind === 'draw');
  // A forger's host serving the forger's key, and a line claiming a draw there.
  const forger = ReceiptSigner.fromJwks([generateReceiptKey()]);
  const host = await startFront(srv.url, basePath());
  host.rule = (r) => (r.path.endsWith('/.well-known/jwks.json') ? { status: 200, text: JSON.stringify(forger.jwks) } : undefined);
  try {
    const { signature: _s, ...unsigned } = draw.receipt;
    const forged = { ...draw, base_url: host.base, draw_id: 'drw_forged', receipt: forger.sign({ ...unsigned, draw_id: 'drw_forged' }) };
    const pay = { ...lines.find((l) => l.kind === 'pay'), base_url: host.base };
    const keys = { kind: 'jwks', v: 1, at: draw.at, base_url: host.base, jwks: forger.jwks };
    // With the forger's key set recorded first, the line verifies against its host: the warning says so.
    await writeFile(join(dir, 'mixed.ndjson'), honest + [pay, keys, forged].map((l) => JSON.stringify(l)).join('\n') + '\n', { mode: 0o600 });
    const mixed = await cliAsync(['receipts', 'verify', join(dir, 'mixed.ndjson')]);
    assert.is(mixed.code, 0, mixed.stderr);
    assert.match(mixed.stderr, /warning: .*names 2 services .*--pin/);
    assert.match(mixed.stderr, /note: the live check trusts whatever keys the host each line's base_url names serves now.*for evidence, pin the service's keys \(--pin KID\)/);
    // Pinned to the real service's key, the forged line fails.
    const pinned = await cliAsync(['receipts', 'verify', join(dir, 'mixed.ndjson'), '--pin', draw.kid]);
    assert.is(pinned.code, 1, pinned.stdout);
    // Its key recorded only after it: not written by the client.
    await writeFile(join(dir, 'late.ndjson'), honest + [pay, forged, keys].map((l) => JSON.stringify(l)).join('\n') + '\n', { mode: 0o600 });
    const late = await cliAsync(['receipts', 'verify', join(dir, 'late.ndjson')]);
    assert.is(late.code, 1, late.stdout + late.stderr);
    assert.match(late.stderr, new RegExp(`draw drw_forged NOT verified: its key ${forger.kid} first appears in the journal at line \\d+, after the receipt it signs`));
    // reconcile names the other service instead of a bare count.
    const rec = await cliAsync(['receipts', 'reconcile', join(dir, 'mixed.ndjson'), '--base-url', srv.base], { env: { LDS_BALANCE_TOKEN: token } });
    assert.match(rec.stderr, new RegExp(`note: 1 other service named in the journal \\(${host.base.replace(/[.]/g, '\\.')}\\)`));
  } finally {
    await host.close();
  }
  const guide = await readFile(join(REPO, 'docs', 'buying.md'), 'utf8');
  const section = guide.slice(guide.indexOf('**`lds receipts verify JOURNAL`**'), guide.indexOf('**`lds receipts reconcile JOURNAL`**')).replace(/\s+/g, ' ');
  assert.match(section, /trusts whatever keys the host a line's base URL names serves/);
  assert.match(section, /names more than one service/);
  assert.match(section, /first appears in the journal after the receipt it signs/);
  assert.match(section, /For evidence, pin/);
  assert.not.match(guide.replace(/\s+/g, ' '), /a forged key fails `verify` against the live JWKS/, 'the overstatement is gone');
});

// ---------------------------------------------------------------- 7. redirects

test('7. an API call redirected to another origin is not followed: nothing is sent there, the error says why', async () => {
  const elsewhere = await startFront(srv.url, basePath());
  const front = await startFront(srv.url, basePath());
  front.rule = (r) => (isPaid(r) ? { status: 307, headers: { location: `${elsewhere.base}/lds/draw` }, text: '' } : undefined);
  const client = await LdsClient.create({ baseUrl: front.base, token, policy: { maxPerDraw: '5.00' } });
  try {
    const err = await client.pay(await client.quote({ product_id: product, units: take(1) })).then(() => assert.unreachable('paid'), (e: unknown) => e);
    assert.instance(err, LdsError);
    assert.match((err as Error).message, new RegExp(`HTTP 307, a redirect to ${elsewhere.url.replace(/[.]/g, '\\.')}; API calls do not follow redirects to another origin`));
    assert.is(elsewhere.seen.length, 0, 'nothing reached the other origin');
  } finally {
    await client.close();
    await front.close();
    await elsewhere.close();
  }
});

// ---------------------------------------------------------------- 17, 18, 19, 20 over `lds mcp`

test("17. the MCP tools' bounds are the service's own (its OpenAPI document)", async () => {
  const spec = (await (await fetch(`${srv.base}/specification`)).json()) as { components: { schemas: Record<string, any> } };
  const req = spec.components.schemas.DrawRequest.properties;
  const host = await mcp(srv.base, join(dir, 'bounds.ndjson'));
  try {
    const { tools } = await host.listTools();
    for (const name of ['quote_draw', 'buy_draw']) {
      const p = (tools.find((t) => t.name === name)!.inputSchema as { properties: Record<string, any> }).properties;
      assert.is(p.limit.maximum, req.limit.maximum, `${name} limit`);
      assert.is(p.query.maxLength, req.query.maxLength, `${name} query`);
      assert.is(p.units.maxItems, req.units.maxItems, `${name} units`);
      assert.is(p.product_id.maxLength, spec.components.schemas.ProductId.maxLength, `${name} product_id`);
    }
    const buy = (tools.find((t) => t.name === 'buy_draw')!.inputSchema as { properties: Record<string, any> }).properties;
    assert.is(buy.quote_id.maxLength, req.quote_id.maxLength);
    const over = await call(host, 'quote_draw', { product_id: product, query: exampleQuery, limit: req.limit.maximum + 1 });
    assert.is(over.isError, true, 'a limit the service would refuse is refused by the tool');
  } finally {
    await host.close();
  }
});

test('18, 19, 20. a quote made by one `lds mcp` is bought by another; paid twice it is one draw everywhere; "1 unit"', async () => {
  const journal = join(dir, 'shared.ndjson');
  const first = await mcp(srv.base, journal);
  let quote: { quote_id: string; amount: string };
  try {
    const q = await call(first, 'quote_draw', { product_id: product, units: take(1) });
    assert.not.ok(q.isError, q.content[0]!.text);
    assert.match(q.content[0]!.text, /: 1 unit of /, '"1 unit", not "1 units"');
    quote = q.structuredContent;
  } finally {
    await first.close();
  }
  const second = await mcp(srv.base, journal); // the host restarted the server
  try {
    for (let i = 0; i < 2; i++) {
      const paid = await call(second, 'buy_draw', { quote_id: quote.quote_id });
      assert.not.ok(paid.isError, paid.content[0]!.text);
      assert.match(paid.content[0]!.text, /for 1 unit of /);
    }
    const v = await call(second, 'verify_journal', {});
    assert.is(v.structuredContent.draws_paid, 1, v.content[0]!.text);
    assert.is(v.structuredContent.spent, quote.amount);
  } finally {
    await second.close();
  }
  const statement = (await (await fetch(`${srv.base}/lds/balance?limit=1000`, { headers: bearer(token) })).json()) as { statement: { kind: string; quote_id?: string }[] };
  assert.is(statement.statement.filter((l) => l.kind === 'draw' && l.quote_id === quote.quote_id).length, 1, 'one draw in the ledger');
  const text = await readFile(journal, 'utf8');
  assert.is(text.split('\n').filter((l) => l.includes('"kind":"draw"')).length, 2, 'two draw lines in the journal');
  assert.is(verifyJournal(text).drawsPaid, 1);
  const cli = await cliAsync(['receipts', 'verify', journal]);
  assert.match(cli.stdout, /\(1 paid draw, /, cli.stdout);
  const day = await LdsClient.create({ baseUrl: srv.base, journal });
  try {
    assert.is(day.journal.spentSince(Date.now() - DAY_MS), Math.round(Number(quote.amount) * 100), 'the day budget counts it once');
  } finally {
    await day.close();
  }
});

test('20. `lds buy` prints the quote id shortened and "1 unit"', async () => {
  const r = await cliAsync(['buy', '--base-url', srv.base, '--product', product, '--unit', take(1)[0]!, '--max', '5.00', '--journal', join(dir, 'buy.ndjson')], { env: { LDS_BALANCE_TOKEN: token } });
  assert.is(r.code, 0, r.stderr);
  const quoteLine = r.stderr.split('\n').find((l) => l.startsWith('quote '))!;
  assert.match(quoteLine, /^quote q1\.\S{1,20}…\S{1,10}: 1 unit, /, quoteLine);
  assert.ok(quoteLine.length < 80, quoteLine);
  assert.match(r.stdout, /for 1 unit of /);
});

test.run();
