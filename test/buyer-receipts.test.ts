// @ledger-backends: level postgres
// Issue 35: the receipts journal checked against the service, not against itself, and shared by
// concurrent buyers. Against a real service (real ledger of either backend), with the real CLI:
//   - a journal rewritten with a key of its own (re-signed top-up and draw), one with a deleted line,
//     and one with an amount edited outside a signed receipt: `lds receipts verify` (the service's
//     live JWKS) or `lds receipts reconcile` (the service's statement) exits 1 naming the line; the
//     untouched journal passes both; checking only against the journal's own keys says so plainly;
//   - two concurrent `lds buy` runs on one journal whose day budget fits one draw: exactly one pays.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliAsync } from './helpers/build.ts';
import { bearer, buildFixture, cents, postJson, refsByProduct, startTestServer, topUp, type TestServer } from './helpers/service-harness.ts';
import { LdsClient } from '../client/index.ts';
import { generateReceiptKey, ReceiptSigner } from '../payments/receipts.ts';
import { formatCents } from '../contract/money.ts';
import { BuyCliError, type BuyerIo } from '../cli/buy.ts';
import { runReceiptsReconcile, runReceiptsVerify } from '../cli/receipts.ts';

let srv: TestServer;
let product: string;
let refs: string[];
let root: string;
/** a journal of one balance: the top-up that opened it and two draws, made with the client */
let journal: string;
let tokenFile: string;
let token: string;

test.before(async () => {
  const fx = await buildFixture();
  root = fx.root;
  const byProduct = await refsByProduct(fx.store);
  [product, refs] = [...byProduct.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
  srv = await startTestServer(fx);
  const d = await mkdtemp(join(root, 'receipts-'));
  journal = join(d, 'receipts.ndjson');
  tokenFile = join(d, 'token');
  const client = await LdsClient.create({ baseUrl: srv.base, journal, spt: 'spt_test_receipts', autoTopup: { amount: '5.00' }, onNewToken: (t) => writeFile(tokenFile, `${t}\n`, { mode: 0o600 }) });
  await client.draw({ product_id: product, units: refs.slice(0, 3) });
  await client.draw({ product_id: product, units: refs.slice(3, 4) });
  await client.close();
  token = (await readFile(tokenFile, 'utf8')).trim();
});
test.after(async () => {
  await srv?.close();
});

const lines = async () => (await readFile(journal, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
/** Writes `edited` lines as a new journal beside the original; returns its path. */
async function variant(name: string, edited: Record<string, any>[]): Promise<string> {
  const path = join(root, `${name}.ndjson`);
  await writeFile(path, edited.map((l) => JSON.stringify(l)).join('\n') + '\n', { mode: 0o600 });
  return path;
}
// The real CLI where the exit status is the point; the variants call the same commands in this
// process (cli.ts prints the thrown error and exits 1: `code` 1 here), each CLI start costing seconds.
const verify = (path: string, ...args: string[]) => cliAsync(['receipts', 'verify', path, ...args]);
const reconcile = (path: string) => cliAsync(['receipts', 'reconcile', path, '--token-file', tokenFile], { env: { LDS_BALANCE_TOKEN: '' } });
async function inProcess(run: (io: BuyerIo) => Promise<void>): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: BuyerIo = { env: { ...process.env, LDS_BALANCE_TOKEN: '' }, stdout: (l) => out.push(l), stderr: (l) => err.push(l) };
  let code = 0;
  await run(io).catch((e) => {
    if (!(e instanceof BuyCliError)) throw e;
    err.push(`error: ${e.message}`);
    code = 1;
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}
const verifyHere = (path: string, o: { offline?: boolean; pin?: string[] } = {}) => inProcess((io) => runReceiptsVerify(path, o, io));
const reconcileHere = (path: string) => inProcess((io) => runReceiptsReconcile(path, { tokenFile }, io));
const lineOf = (all: Record<string, any>[], pred: (l: Record<string, any>) => boolean) => all.findIndex(pred) + 1;

test('the untouched journal: verify (live JWKS) and reconcile (statement) both pass', async () => {
  const all = await lines();
  assert.equal(all.map((l) => l.kind), ['jwks', 'topup', 'pay', 'draw', 'pay', 'draw']);
  assert.ok(all.filter((l) => l.kind !== 'jwks' || l.token_hint).every((l) => /^bal#[0-9a-f]{8}$/.test(l.token_hint)), 'lines carry the token hint');
  assert.not.ok(JSON.stringify(all).includes(token));
  const v = await verify(journal);
  assert.is(v.code, 0, v.stderr);
  assert.match(v.stdout, /^3 receipts verified \(2 paid draws, \S+ EUR\) against the service's live JWKS \(http:\/\/127\.0\.0\.1:\d+\/\.well-known\/jwks\.json\); 0 not verified/);
  assert.not.match(v.stderr, /warning/);
  const r = await reconcile(journal);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^3 lines of balance bal#[0-9a-f]{8} match the service's statement since \S+; 0 differences/);
});

test("a journal rewritten with its own key (top-up re-signed as 500.00, a draw as 0.01): verify against the live JWKS names both lines, reconcile names both amounts; the journal's own keys alone pass, and the output says what that is worth", async () => {
  const forger = ReceiptSigner.fromJwks([generateReceiptKey()]);
  const all = await lines();
  const topup = all.find((l) => l.kind === 'topup')!;
  const draw = all.find((l) => l.kind === 'draw')!;
  const pay = all.find((l) => l.kind === 'pay' && l.quote_id === draw.quote_id)!;
  const { signature: _t, ...topupBody } = topup.receipt;
  const { signature: _d, ...drawBody } = draw.receipt;
  Object.assign(topup, { amount: '500.00', kid: forger.kid, receipt: forger.sign({ ...topupBody, amount: '500.00' }) });
  Object.assign(draw, { amount: '0.01', kid: forger.kid, receipt: forger.sign({ ...drawBody, amount: '0.01' }) });
  pay.amount = '0.01';
  const forged = await variant('forged', [{ ...all[0], jwks: { keys: [...all[0]!.jwks.keys, forger.jwks.keys[0]] } }, ...all.slice(1)]);

  const v = await verify(forged);
  assert.is(v.code, 1, v.stdout);
  const [topupLine, drawLine] = [lineOf(all, (l) => l === topup), lineOf(all, (l) => l === draw)];
  assert.match(v.stderr, new RegExp(`forged\\.ndjson:${topupLine}: topup \\S+ NOT verified: no key with kid ${forger.kid} in the JWKS`));
  assert.match(v.stderr, new RegExp(`forged\\.ndjson:${drawLine}: draw \\S+ NOT verified: no key with kid ${forger.kid} in the JWKS`));

  const offline = await verifyHere(forged, { offline: true });
  assert.is(offline.code, 0, 'the journal agrees with itself');
  assert.match(offline.stderr, /warning: checked only against keys recorded in the journal itself\..*a journal rewritten with a key of its own passes this check/);
  const pinned = await verifyHere(forged, { pin: [all[0]!.jwks.keys[0].kid] });
  assert.is(pinned.code, 1, 'a pinned key catches it offline');
  assert.match(pinned.stderr, new RegExp(`:${drawLine}: draw \\S+ NOT verified: no key with kid ${forger.kid}`));

  const r = await reconcileHere(forged);
  assert.is(r.code, 1, r.stdout);
  assert.match(r.stderr, new RegExp(`forged\\.ndjson:${topupLine}: topup \\S+ \\(5\\.00 EUR\\): the statement says \\+?5\\.00 EUR, the journal 500\\.00 EUR`));
  assert.match(r.stderr, new RegExp(`forged\\.ndjson:${drawLine}: draw \\S+ \\(\\S+ EUR\\): the statement says -\\S+ EUR, the journal 0\\.01 EUR`));
});

test('a deleted draw line (with its pay line): reconcile names the statement line missing from the journal; deleting only the pay line: verify names the draw line', async () => {
  const all = await lines();
  const draw = all.filter((l) => l.kind === 'draw')[1]!;
  const gone = await variant('deleted', all.filter((l) => l.quote_id !== draw.quote_id));
  const v = await verifyHere(gone);
  assert.is(v.code, 0, 'what is left still verifies');
  const r = await reconcileHere(gone);
  assert.is(r.code, 1);
  assert.match(r.stderr, new RegExp(`^statement: the statement's draw ${draw.draw_id} \\(-${draw.amount.replace('.', '\\.')} EUR at \\S+\\) is not in the journal$`, 'm'));

  const payless = await variant('payless', all.filter((l) => !(l.kind === 'pay' && l.quote_id === draw.quote_id)));
  const p = await verifyHere(payless);
  assert.is(p.code, 1);
  assert.match(p.stderr, new RegExp(`payless\\.ndjson:\\d+: draw ${draw.draw_id} NOT verified: no pay line for quote`));
});

test('an amount edited outside the signed receipt (the draw line, the pay line): verify names the line', async () => {
  const all = await lines();
  const draw = all.find((l) => l.kind === 'draw')!;
  const edited = await variant('edited', all.map((l) => (l === draw ? { ...l, amount: '0.01' } : l)));
  const v = await verifyHere(edited);
  assert.is(v.code, 1);
  assert.match(v.stderr, new RegExp(`edited\\.ndjson:${lineOf(all, (l) => l === draw)}: draw ${draw.draw_id} NOT verified: the line says .* for 0\\.01 EUR, its signed receipt .* for ${draw.amount.replace('.', '\\.')} EUR`));
  const r = await reconcileHere(edited);
  assert.is(r.code, 1, 'reconcile sees it too');

  const pay = all.find((l) => l.kind === 'pay' && l.quote_id === draw.quote_id)!;
  const payEdited = await variant('pay-edited', all.map((l) => (l === pay ? { ...l, amount: '0.01' } : l)));
  const pv = await verifyHere(payEdited);
  assert.is(pv.code, 1);
  assert.match(pv.stderr, new RegExp(`draw ${draw.draw_id} NOT verified: the pay line of quote \\S+ \\(line ${lineOf(all, (l) => l === pay)}\\) says 0\\.01 EUR, the signed receipt ${draw.amount.replace('.', '\\.')} EUR`));
});

test('two concurrent `lds buy` runs on one journal, with a day budget that fits one draw: exactly one pays', async () => {
  const buyer = await topUp(srv.base, '5.00');
  const d = await mkdtemp(join(root, 'race-'));
  const shared = join(d, 'receipts.ndjson');
  const [a, b] = [refs.slice(10, 11), refs.slice(11, 12)];
  const price = async (units: string[]) => ((await (await postJson(`${srv.base}/lds/draw`, { product_id: product, units })).json()) as { amount: string }).amount;
  const [pa, pb] = [await price(a), await price(b)];
  const day = formatCents(Math.max(cents(pa), cents(pb)) + Math.min(cents(pa), cents(pb)) - 1); // either one, not both
  const run = (units: string[]) => cliAsync(['buy', '--base-url', srv.base, '--product', product, '--unit', ...units, '--max', '1.00', '--max-per-day', day, '--journal', shared, '--json'], { env: { LDS_BALANCE_TOKEN: buyer } });
  const results = await Promise.all([run(a), run(b)]);
  const paid = results.filter((r) => r.code === 0);
  const refused = results.filter((r) => r.code === 1);
  assert.is(paid.length, 1, results.map((r) => r.stderr).join('\n---\n'));
  assert.is(refused.length, 1);
  assert.match(refused[0]!.stderr, new RegExp(`refused by the spending policy \\(max_per_day ${day.replace('.', '\\.')} EUR\\)`));
  const res = await fetch(`${srv.base}/lds/balance?limit=100`, { headers: bearer(buyer) });
  const statement = ((await res.json()) as { statement: { kind: string; id: string }[] }).statement;
  assert.equal(statement.filter((l) => l.kind === 'draw').map((l) => l.id), [JSON.parse(paid[0]!.stdout).draw_id], 'one draw debited');
  const kinds = (await readFile(shared, 'utf8')).trim().split('\n').map((l) => JSON.parse(l).kind);
  assert.is(kinds.filter((k) => k === 'pay').length, 1, 'one payment recorded');
  assert.is(kinds.filter((k) => k === 'refused').length, 1, 'one refusal recorded');
});

test.run();
