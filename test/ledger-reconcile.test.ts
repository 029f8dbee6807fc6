// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// `lds ledger reconcile` (issue 33): signed receipts held outside the ledger against its records, on
// either backend, while the service runs (LevelDB: through its ledger socket). Every form a receipt
// is kept in is read (a whole answer, an array, a bare receipt, one per line); each receipt is
// verified against the service's keys first; a receipt whose record is missing, or whose record
// says something else, is named with the field that differs; a tampered one is "not verified" and
// the ledger is not asked about it. Exit 0 when all agree, 1 when one does not, 2 when it cannot run.
// (The lost acknowledgment this is for - an asynchronous failover - is test/ha-async-reconcile.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { runReconcile, ReconcileCliError } from '../cli/reconcile.ts';
import { generateReceiptKey, ReceiptSigner } from '../payments/receipts.ts';
import { payTopup } from '../payments/topup/client.ts';
import { cliAsync } from './helpers/build.ts';
import { bearer, buildFixture, postJson, refsByProduct, startTestServer, type Fixture, type TestServer } from './helpers/service-harness.ts';

const PRODUCT = 'svc-health-eu';
const keys = [generateReceiptKey()];
const signer = ReceiptSigner.fromJwks(keys);
let fx: Fixture;
let srv: TestServer;
let dir: string;
let jwksFile: string;
let drawReceipt: Record<string, unknown>;
const quiet = { stdout: () => {}, stderr: () => {} };

test.before(async () => {
  fx = await buildFixture();
  const refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  srv = await startTestServer(fx, { env: { LDS_RECEIPT_KEYS: JSON.stringify(keys) } });
  dir = await mkdtemp(join(fx.root, 'reconcile-'));
  jwksFile = join(dir, 'jwks.json');
  await writeFile(jwksFile, await (await fetch(`${srv.url}/.well-known/jwks.json`)).text());
  // A buyer's saved answers: a top-up and a paid draw, each with its receipt.
  const topup = await (await payTopup(`${srv.base}/lds/balance/topup`, '10.00', { spt: 'spt_test_reconcile' })).json();
  const token = (topup as { balance_token: string }).balance_token;
  const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: [refs[0]] })).json()) as { quote_id: string };
  const draw = await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: [refs[0]], quote_id: q.quote_id }, bearer(token))).json();
  await writeFile(join(dir, 'answers.json'), JSON.stringify([topup, draw]));
  await writeFile(join(dir, 'receipt.json'), JSON.stringify((draw as { receipt: unknown }).receipt));
  drawReceipt = (draw as { receipt: Record<string, unknown> }).receipt;
  const { signature: _s, ...unsigned } = drawReceipt;
  // One per line: a receipt altered after signing, a genuine one for a draw the ledger never had, and
  // a genuine one whose ledger record says another balance.
  await writeFile(
    join(dir, 'lines.ndjson'),
    [
      { ...drawReceipt, amount: '99.99' },
      signer.sign({ ...unsigned, draw_id: 'drw_never_recorded_0000000', quote_id: 'q1.not-paid-here' }),
      signer.sign({ ...unsigned, balance_after: '999.00' }),
    ]
      .map((r) => JSON.stringify(r))
      .join('\n') + '\n',
  );
});

test.after(async () => {
  await srv?.close();
});

test('receipts in every saved form that the ledger holds: exit 0, each named once', async () => {
  const out: string[] = [];
  const code = await runReconcile([join(dir, 'answers.json'), join(dir, 'receipt.json')], { jwks: jwksFile, all: true }, srv.ledgerSettings, { stdout: (l) => out.push(l), stderr: () => {} });
  assert.is(code, 0, out.join('\n'));
  assert.is(out.filter((l) => l.startsWith('ok: ')).length, 2, 'the draw receipt, saved twice, is one finding');
  assert.match(out.at(-1)!, /^2 receipts against the ledger .*: 2 in the ledger, 0 missing, 0 different, 0 not verified$/);
});

test('missing, different and altered receipts are named; exit 1', async () => {
  const out: string[] = [];
  const code = await runReconcile([join(dir, 'lines.ndjson')], { jwks: jwksFile, json: true }, srv.ledgerSettings, { stdout: (l) => out.push(l), stderr: () => {} });
  assert.is(code, 1);
  const report = JSON.parse(out.join('\n')) as { counts: Record<string, number>; findings: { kind: string; id: string; source: string; message: string; fields?: { field: string; receipt: unknown; ledger: unknown }[] }[] };
  assert.equal(report.counts, { match: 0, missing: 1, different: 1, 'not-genuine': 1 });
  const by = Object.fromEntries(report.findings.map((f) => [f.kind, f]));
  assert.match(by['not-genuine']!.message, /does not verify against the service's keys/);
  assert.is(by['not-genuine']!.source, `${join(dir, 'lines.ndjson')}:1`);
  assert.is(by.missing!.id, 'drw_never_recorded_0000000');
  assert.match(by.missing!.message, /not in the ledger, nor any draw of its quote/);
  assert.equal(by.different!.fields, [{ field: 'balance_after', receipt: '999.00', ledger: drawReceipt.balance_after }]);
});

test('cannot run: no receipt, no keys, an unreadable file (exit 2 from the command, one line)', async () => {
  const empty = join(dir, 'empty.ndjson');
  await writeFile(empty, '{"kind":"pay","quote_id":"q1.x"}\n');
  await runReconcile([empty], { jwks: jwksFile }, srv.ledgerSettings, quiet).then(
    () => assert.unreachable(),
    (e: Error) => assert.instance(e, ReconcileCliError),
  );
  await runReconcile([join(dir, 'receipt.json')], {}, srv.ledgerSettings, quiet).then(
    () => assert.unreachable(),
    (e: Error) => assert.match(e.message, /no keys to verify the receipts with: give --jwks/),
  );
  const r = await cliAsync(['ledger', 'reconcile', join(dir, 'nope.json'), '--jwks', jwksFile, ...(srv.ledgerSettings.ledgerUrl ? ['--url', srv.ledgerSettings.ledgerUrl] : ['--dir', srv.ledgerSettings.ledgerDir])]);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stderr.trim(), `error: cannot read ${join(dir, 'nope.json')} (ENOENT)`);
});

test.run();
