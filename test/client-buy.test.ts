// @ledger-backends: level postgres
// Issue 22: the buyer's client library (client/) and `lds buy` / `lds receipts verify`, against a
// real running service (real build, real ledger of either backend, the sandbox processor behind the
// mppx flow). What the ledger holds is read through the statement with plain fetch, not through the
// client under test. Faults come from a small proxy in front of the service (helpers/fault-proxy.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliAsync } from './helpers/build.ts';
import { bearer, buildFixture, cents, postJson, refsByProduct, startTestServer, topUp, type TestServer } from './helpers/service-harness.ts';
import { startFaultProxy } from './helpers/fault-proxy.ts';
import { LdsClient, PolicyRefusal, ReceiptError, ServiceProblem, tokenHintOf, verifyJournal, type PaidDraw } from '../client/index.ts';
import { generateReceiptKey, ReceiptSigner } from '../payments/receipts.ts';
import { formatCents } from '../contract/money.ts';
import { hashToken } from '../payments/tokens.ts';

let srv: TestServer;
let root: string;
let product: string;
let refs: string[];
const TOKEN_RE = /lds_bal_[A-Za-z0-9_-]{43}/;
const OPERATOR = 'operator-token-of-the-client-test-0123456789';

test.before(async () => {
  const fx = await buildFixture();
  root = fx.root;
  const byProduct = await refsByProduct(fx.store); // before the server opens the store
  [product, refs] = [...byProduct.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
  srv = await startTestServer(fx, { env: { LDS_OPERATOR_TOKEN: OPERATOR } });
});
test.after(async () => {
  await srv?.close();
});

/** What an unpaid quote of these units costs, as the service prices it. */
async function priceOf(units: string[]): Promise<string> {
  const res = await postJson(`${srv.base}/lds/draw`, { product_id: product, units });
  assert.is(res.status, 402);
  return ((await res.json()) as { amount: string }).amount;
}

/** The whole statement of a balance, read with plain fetch. */
async function statement(token: string): Promise<{ balance: string; lines: { kind: string; id: string; amount: string; quote_id?: string }[] }> {
  const res = await fetch(`${srv.base}/lds/balance?limit=1000`, { headers: bearer(token) });
  assert.is(res.status, 200);
  const body = (await res.json()) as { balance: string; statement: { kind: string; id: string; amount: string }[] };
  return { balance: body.balance, lines: body.statement };
}

const draws = <L extends { kind: string }>(s: { lines: L[] }) => s.lines.filter((l) => l.kind === 'draw');
const dir = () => mkdtemp(join(root, 'buyer-'));
const journalOf = async (path: string) => (await readFile(path, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
const buy = (args: string[], env: Record<string, string> = {}) => cliAsync(['buy', '--base-url', srv.base, '--product', product, ...args], { env: { LDS_BALANCE_TOKEN: '', ...env } });

test('lds buy --max --auto-topup on a fresh balance: tops up, pays, verifies, journals; the journal re-verifies offline; one debit', async () => {
  const d = await dir();
  // The token file's folder does not exist yet (~/.config/lds on a first run, docs/buying.md): made 0700.
  const [tokenFile, journal, out] = [join(d, 'config', 'lds', 'token'), join(d, 'receipts.ndjson'), join(d, 'units.json')];
  const units = refs.slice(0, 3);
  const price = await priceOf(units);
  const r = await buy(['--unit', ...units, '--max', price, '--auto-topup', '5.00', '--token-file', tokenFile, '--journal', journal, '--out', out, '--json']);
  assert.is(r.code, 0, r.stderr);
  const res = JSON.parse(r.stdout);
  assert.equal([res.amount, res.unit_count, res.product_id], [price, 3, product]);
  assert.is(res.balance_after, formatCents(500 - cents(price)));
  assert.match(r.stderr, /topping up 5\.00 EUR/);

  // The new balance's token is in the token file, 0600, and nowhere in the output.
  assert.is((await stat(tokenFile)).mode & 0o777, 0o600);
  assert.is((await stat(join(d, 'config', 'lds'))).mode & 0o777, 0o700, 'the folder buy made for the token file is owner-only');
  const token = (await readFile(tokenFile, 'utf8')).trim();
  assert.match(token, TOKEN_RE);
  assert.not.ok((r.stdout + r.stderr).includes(token), 'the token is not printed');

  const paid = JSON.parse(await readFile(out, 'utf8')) as PaidDraw;
  assert.equal(paid.units.map((u) => u.ref).sort(), [...units].sort());
  assert.is(paid.receipt.draw_id, res.draw_id);

  // The journal: 0600, the JWKS, the top-up, the payment and the draw with the receipt as served.
  assert.is((await stat(journal)).mode & 0o777, 0o600);
  const lines = await journalOf(journal);
  assert.equal(lines.map((l) => l.kind), ['jwks', 'topup', 'pay', 'draw'], 'top-up (its receipt verified), then the payment and the draw');
  const drawLine = lines.find((l) => l.kind === 'draw');
  assert.equal(drawLine.receipt, paid.receipt, 'the receipt as served');
  assert.not.ok(JSON.stringify(lines).includes(token), 'no token in the journal');

  const verified = await cliAsync(['receipts', 'verify', journal]);
  assert.is(verified.code, 0, verified.stderr);
  assert.match(verified.stdout, new RegExp(`^2 receipts verified \\(1 paid draw, ${price.replace('.', '\\.')} EUR\\) against the service's live JWKS \\(\\S+\\); 0 not verified`));

  // The ledger: exactly one top-up and one debit, the debit being this draw.
  const s = await statement(token);
  assert.is(s.balance, res.balance_after);
  assert.is(draws(s).length, 1);
  assert.is(draws(s)[0]!.id, res.draw_id);
  assert.is(s.lines.filter((l) => l.kind === 'topup').length, 1);

  // An edited receipt in the journal no longer verifies.
  const edited = (await readFile(journal, 'utf8')).replace(`"balance_after":"${res.balance_after}"`, '"balance_after":"9.99"');
  assert.ok(edited.includes('"9.99"'));
  await writeFile(join(d, 'edited.ndjson'), edited);
  const bad = await cliAsync(['receipts', 'verify', join(d, 'edited.ndjson')]);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /draw \S+ NOT verified: the signature does not match/);
});

test('a draw above --max, and one the day budget cannot cover: refused locally naming the limit; no debit, no top-up', async () => {
  const token = await topUp(srv.base, '5.00');
  const d = await dir();
  const journal = join(d, 'receipts.ndjson');
  const units = refs.slice(3, 6);
  const price = await priceOf(units);
  const max = formatCents(cents(price) - 1);
  const over = await buy(['--unit', ...units, '--max', max, '--auto-topup', '5.00', '--journal', journal], { LDS_BALANCE_TOKEN: token });
  assert.is(over.code, 1);
  assert.match(over.stderr, new RegExp(`error: refused by the spending policy \\(max_per_draw ${max.replace('.', '\\.')} EUR\\): the draw costs ${price.replace('.', '\\.')} EUR.*nothing was paid`));
  const refused = (await journalOf(journal)).filter((l) => l.kind === 'refused');
  assert.equal(refused.map((l) => [l.limit, l.limit_amount, l.asked]), [['max_per_draw', max, price]]);

  // Day budget: the first draw fits, a second one would take the last 24 hours above it.
  const [a, b] = [[refs[6]!], [refs[7]!]];
  const [pa, pb] = [await priceOf(a), await priceOf(b)];
  const day = formatCents(cents(pa) + cents(pb) - 1);
  const first = await buy(['--unit', ...a, '--max', '1.00', '--max-per-day', day, '--journal', journal], { LDS_BALANCE_TOKEN: token });
  assert.is(first.code, 0, first.stderr);
  const second = await buy(['--unit', ...b, '--max', '1.00', '--max-per-day', day, '--journal', journal, '--auto-topup', '5.00'], { LDS_BALANCE_TOKEN: token });
  assert.is(second.code, 1);
  assert.match(second.stderr, new RegExp(`refused by the spending policy \\(max_per_day ${day.replace('.', '\\.')} EUR\\): the draw costs ${pb.replace('.', '\\.')} EUR and ${pa.replace('.', '\\.')} EUR was spent in the last 24 hours`));

  const s = await statement(token);
  assert.is(draws(s).length, 1, 'only the first draw was debited');
  assert.is(s.lines.filter((l) => l.kind === 'topup').length, 1, 'no top-up');
  assert.is(s.balance, formatCents(500 - cents(pa)));
});

test('an empty balance: the draw answers insufficient-balance; a top-up above maxPerTopup is refused, within it the client tops up and pays the same quote', async () => {
  const token = await topUp(srv.base, '5.00');
  // The operator takes the balance to zero (admin API), so the paid draw finds it short.
  const drained = await postJson(`${srv.base}/lds/admin/adjustments`, { balance_id: hashToken(token), direction: 'debit', amount: '5.00', reason: 'client test: empty the balance' }, { ...bearer(OPERATOR), 'idempotency-key': `drain-${Date.now()}` });
  assert.is(drained.status, 201, await drained.text());

  const tight = await LdsClient.create({ baseUrl: srv.base, token, spt: 'spt_test_client', autoTopup: { amount: '5.00' }, policy: { maxPerTopup: '4.99' } });
  const refused = await tight.draw({ product_id: product, units: [refs[17]!] }).catch((e) => e);
  assert.instance(refused, PolicyRefusal);
  assert.equal([refused.limit, refused.limitAmount, refused.asked], ['max_per_topup', '4.99', '5.00']);
  assert.equal((await statement(token)).lines.map((l) => l.kind).sort(), ['debit', 'topup'], 'no top-up, no draw');

  const asked: string[] = [];
  const client = await LdsClient.create({ baseUrl: srv.base, token, spt: 'spt_test_client', autoTopup: { amount: '5.00' }, policy: { maxPerTopup: '5.00', maxPerDay: '1.00', approve: (q) => (asked.push(q.quote_id), true) } });
  const paid = await client.draw({ product_id: product, units: [refs[17]!] });
  assert.equal(asked, [paid.receipt.quote_id], 'approve() asked once for the quote paid');
  assert.equal(client.journal.entries.map((e) => e.kind), ['pay', 'failure', 'jwks', 'topup', 'pay', 'draw']);
  assert.equal(client.journal.entries.filter((e) => e.kind === 'pay').map((e) => e.quote_id), [paid.receipt.quote_id, paid.receipt.quote_id], 'the same quote, before and after the top-up');
  assert.is(client.journal.entries.find((e) => e.kind === 'failure')!.type, 'insufficient-balance');
  assert.is(client.journal.spentSince(Date.now() - 86_400_000), cents(paid.receipt.amount), 'the day budget counts the draw once');
  const s = await statement(token);
  assert.is(s.lines.filter((l) => l.kind === 'topup').length, 2);
  assert.equal(draws(s).map((l) => l.id), [paid.receipt.draw_id]);
  assert.is(s.balance, formatCents(500 - cents(paid.receipt.amount)));
});

test('the answer to a paid draw is lost after the service committed it: the client resends the same quote and returns the same draw; one debit', async () => {
  const token = await topUp(srv.base, '5.00');
  const proxy = await startFaultProxy(srv.url);
  try {
    let dropped = 0;
    proxy.rule = (r) => (r.method === 'POST' && r.path === '/v1/lds/draw' && r.body.includes('"quote_id"') && dropped++ === 0 ? { drop: true } : undefined);
    const client = await LdsClient.create({ baseUrl: `${proxy.url}/v1`, token, policy: { maxPerDraw: '1.00' } });
    const paid = await client.draw({ product_id: product, units: [refs[8]!] });
    const paidPosts = proxy.seen.filter((r) => r.method === 'POST' && r.body.includes('"quote_id"')).map((r) => JSON.parse(r.body).quote_id);
    assert.is(paidPosts.length, 2, 'sent twice');
    assert.is(paidPosts[0], paidPosts[1], 'the same quote');
    assert.is(paid.receipt.quote_id, paidPosts[0]);
    const s = await statement(token);
    assert.equal(draws(s).map((l) => l.id), [paid.receipt.draw_id], 'one debit: the draw returned');
    assert.equal(client.journal.entries.map((e) => e.kind), ['pay', 'jwks', 'draw'], 'one payment, no failure');
  } finally {
    await proxy.close();
  }
});

test('a receipt altered in transit, or signed by a key the service does not publish: the client raises and the journal records it', async () => {
  const token = await topUp(srv.base, '5.00');
  const proxy = await startFaultProxy(srv.url);
  const d = await dir();
  const journal = join(d, 'receipts.ndjson');
  try {
    const client = await LdsClient.create({ baseUrl: `${proxy.url}/v1`, token, journal });
    await client.draw({ product_id: product, units: [refs[9]!] }); // a good one: the JWKS is cached
    const jwksGets = () => proxy.seen.filter((r) => r.path === '/.well-known/jwks.json').length;
    assert.is(jwksGets(), 1);
    const isPaid = (r: { method: string; body: string }) => r.method === 'POST' && r.body.includes('"quote_id"');

    proxy.rule = (r) => (isPaid(r) ? { alter: (body) => body.replace(/"paid_at":"[^"]+"/, '"paid_at":"2020-01-01T00:00:00.000Z"') } : undefined);
    const altered = await client.draw({ product_id: product, units: [refs[10]!] }).catch((e) => e);
    assert.instance(altered, ReceiptError);
    assert.match(altered.message, /the signature does not match/);
    assert.not.ok(altered.message.includes(token));
    assert.is(jwksGets(), 1, 'a known kid: no refetch');

    const forger = ReceiptSigner.fromJwks([generateReceiptKey()]);
    proxy.rule = (r) => (isPaid(r) ? { alter: (body) => { const p = JSON.parse(body); p.receipt = forger.sign(p.receipt); return JSON.stringify(p); } } : undefined);
    const forged = await client.draw({ product_id: product, units: [refs[11]!] }).catch((e) => e);
    assert.instance(forged, ReceiptError);
    assert.match(forged.message, new RegExp(`no key with kid ${forger.kid}`));
    assert.is(jwksGets(), 2, 'an unknown kid: the JWKS fetched again, once');
    await client.close();

    const lines = await journalOf(journal);
    const failures = lines.filter((l) => l.kind === 'failure' && l.receipt);
    assert.is(failures.length, 2);
    assert.is(failures[0].receipt.paid_at, '2020-01-01T00:00:00.000Z', 'the receipt as served');
    assert.is(failures[1].receipt.signature.kid, forger.kid);
    const report = verifyJournal(await readFile(journal, 'utf8'));
    assert.is(report.verified, 1);
    assert.is(report.recordedFailures, 2);
    assert.is(report.invalid.length, 0);
  } finally {
    await proxy.close();
  }
});

test('429 (Retry-After, RateLimit) and 503 are retried as documented and the call succeeds; a 503 that lasts ends after the bounded attempts', async () => {
  const token = await topUp(srv.base, '5.00');
  const proxy = await startFaultProxy(srv.url);
  try {
    let quotes = 0;
    let pays = 0;
    proxy.rule = (r) => {
      if (r.method !== 'POST' || r.path !== '/v1/lds/draw') return undefined;
      if (!r.body.includes('"quote_id"')) return quotes++ === 0 ? { reply: { status: 429, headers: { 'retry-after': '1', ratelimit: '"addr";r=0;t=1' } } } : undefined;
      return pays++ < 2 ? { reply: { status: 503 } } : undefined;
    };
    const progress: string[] = [];
    const client = await LdsClient.create({ baseUrl: `${proxy.url}/v1`, token, onProgress: (l) => progress.push(l) });
    const started = Date.now();
    const paid = await client.draw({ product_id: product, units: [refs[12]!] });
    assert.ok(Date.now() - started >= 1000, 'waited as Retry-After said');
    assert.equal([quotes, pays], [2, 3]);
    assert.ok(progress.some((l) => /HTTP 429/.test(l)) && progress.filter((l) => /HTTP 503/.test(l)).length === 2, progress.join('\n'));
    assert.not.ok(progress.join('\n').includes(token));
    assert.equal(draws(await statement(token)).map((l) => l.id), [paid.receipt.draw_id]);

    // A service that stays unavailable: three sends, then the 503 is the caller's; nothing debited.
    let sent = 0;
    proxy.rule = (r) => (r.method === 'POST' && r.body.includes('"quote_id"') ? (sent++, { reply: { status: 503 } }) : undefined);
    const limited = await LdsClient.create({ baseUrl: `${proxy.url}/v1`, token, retry: { maxAttempts: 3, baseDelayMs: 50 } });
    const err = await limited.draw({ product_id: product, units: [refs[13]!] }).catch((e) => e);
    assert.instance(err, ServiceProblem);
    assert.is(err.status, 503);
    assert.is(sent, 3);
    assert.is(draws(await statement(token)).length, 1);
  } finally {
    await proxy.close();
  }
});

test('approve(quote) above a threshold: declined is a refusal naming the limit, and nothing is sent; discovery reads the machine index', async () => {
  const token = await topUp(srv.base, '5.00');
  const proxy = await startFaultProxy(srv.url);
  try {
    const asked: string[] = [];
    const client = await LdsClient.create({ baseUrl: `${proxy.url}/v1`, token, policy: { approveAbove: '0.00', approve: (q) => (asked.push(q.amount), false) } });
    const err = await client.draw({ product_id: product, units: [refs[14]!] }).catch((e) => e);
    assert.instance(err, PolicyRefusal);
    assert.is(err.limit, 'approval');
    assert.is(asked.length, 1);
    assert.is(err.asked, asked[0]);
    assert.is(proxy.seen.filter((r) => r.body.includes('"quote_id"')).length, 0, 'no paid draw sent');
    assert.is(draws(await statement(token)).length, 0);

    // Discovery: the addresses the machine index publishes, as published.
    const found = await client.discover();
    const index = (await (await fetch(`${srv.url}/.well-known/svc-catalog.json`)).json()) as { linkset: Record<string, { href: string; type?: string }[]>[] };
    const api = index.linkset[1]!;
    assert.is(found.openapi, api['service-desc']![0]!.href);
    assert.is(found.docs, api['service-doc']![0]!.href);
    assert.is(found.jwks, api['service-meta']!.find((t) => t.type === 'application/jwk-set+json')!.href);
    assert.match(found.catalogue!, /\/v1\/lds\/_catalog$/);
    assert.equal([found.mcp, found.a2a].map((u) => new URL(u!).pathname), ['/mcp', '/v1/a2a']);
  } finally {
    await proxy.close();
  }
});

test('lds balance, statement (all pages, CSV) and rotate: the token from a 0600 file or LDS_BALANCE_TOKEN, never printed; rotation rewrites the file', async () => {
  const token = await topUp(srv.base, '5.00');
  const client = await LdsClient.create({ baseUrl: srv.base, token });
  for (const r of [refs[15]!, refs[16]!]) await client.draw({ product_id: product, units: [r] });
  const d = await dir();
  const file = join(d, 'token');
  await writeFile(file, `${token}\n`, { mode: 0o644 });
  const open = await cliAsync(['balance', '--base-url', srv.base, '--token-file', file], { env: { LDS_BALANCE_TOKEN: '' } });
  assert.is(open.code, 1);
  assert.match(open.stderr, /can be read by others \(mode 644\): run chmod 600/);
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  await (await import('node:fs/promises')).chmod(file, 0o600);
  const expected = await statement(token);

  const bal = await cliAsync(['balance', '--base-url', srv.base, '--token-file', file, '--json'], { env: { LDS_BALANCE_TOKEN: '' } });
  assert.is(bal.code, 0, bal.stderr);
  assert.equal(JSON.parse(bal.stdout), { balance: expected.balance, currency: 'EUR' });
  // One line a page: three pages, all read; the CSV has one header.
  const st = await cliAsync(['statement', '--base-url', srv.base, '--limit', '1', '--json'], { env: { LDS_BALANCE_TOKEN: token } });
  assert.is(st.code, 0, st.stderr);
  assert.equal(JSON.parse(st.stdout).map((l: { id: string }) => l.id), expected.lines.map((l) => l.id));
  const csv = await cliAsync(['statement', '--base-url', srv.base, '--limit', '1', '--csv', '--token-file', file], { env: { LDS_BALANCE_TOKEN: '' } });
  assert.is(csv.code, 0, csv.stderr);
  const rows = csv.stdout.trim().split('\n');
  assert.match(rows[0]!, /^at,kind,id,amount,currency,balance_after/);
  assert.equal(rows.slice(1).map((r) => r.split(',')[2]), expected.lines.map((l) => l.id));

  const journal = join(d, 'receipts.ndjson');
  const rot = await cliAsync(['rotate', '--base-url', srv.base, '--token-file', file, '--journal', journal], { env: { LDS_BALANCE_TOKEN: '' } });
  assert.is(rot.code, 0, rot.stderr);
  const fresh = (await readFile(file, 'utf8')).trim();
  // The journal records the change by the tokens' hints (reconcile follows them), never a token.
  const [rotated] = await journalOf(journal);
  assert.equal([rotated.kind, rotated.token_hint, rotated.new_token_hint], ['rotate', tokenHintOf(token), tokenHintOf(fresh)]);
  assert.not.ok((await readFile(journal, 'utf8')).includes(token) || (await readFile(journal, 'utf8')).includes(fresh));
  assert.match(fresh, TOKEN_RE);
  assert.is.not(fresh, token);
  assert.is((await stat(file)).mode & 0o777, 0o600);
  for (const r of [open, bal, st, csv, rot]) assert.not.ok((r.stdout + r.stderr).includes(token) || (r.stdout + r.stderr).includes(fresh), 'no token printed');
  assert.is((await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) })).status, 401, 'the old token is refused');
  assert.is((await statement(fresh)).balance, expected.balance, 'the new one reads the same balance');
});

test.run();
