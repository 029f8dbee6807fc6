// @ledger-backends: level postgres
// Issue 35: the client package's README example, copied as printed, run by a buyer's runtime against
// a real service (real build, real ledger of either backend, the sandbox processor behind the mppx
// flow): with plain `node` (no tsx, from the packed and installed tarball, test/helpers/client-package.ts)
// and with Bun (npm package `bun`). Each run quotes, opens a balance by a top-up, pays, verifies the
// receipt and journals it; the ledger (read with plain fetch) shows exactly that top-up and that draw.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runAsync } from './helpers/build.ts';
import { bunBinary, packedClient, type PackedClient } from './helpers/client-package.ts';
import { bearer, buildFixture, cents, startTestServer, type TestServer } from './helpers/service-harness.ts';
import { verifyJournal } from '../client/journal.ts';
import { formatCents } from '../contract/money.ts';

let srv: TestServer;
let pkg: PackedClient;
let example: string;

test.before(async () => {
  [pkg, srv] = await Promise.all([packedClient(), buildFixture().then((fx) => startTestServer(fx))]);
  const readme = await readFile(join(pkg.project, 'node_modules/lds-catalogue-client/README.md'), 'utf8');
  example = /```js\n([\s\S]*?)\n```/.exec(readme)![1]!;
});
test.after(async () => {
  await srv?.close();
});

/** Runs the README example with `runtime` in a fresh folder of the buyer's project; checks everything it claims. */
async function runExample(runtime: string[]): Promise<void> {
  const dir = await mkdtemp(join(pkg.project, 'run-'));
  await writeFile(join(dir, 'buy.mjs'), example);
  const r = await runAsync(runtime[0]!, [...runtime.slice(1), 'buy.mjs'], { cwd: dir, env: { LDS_BASE_URL: srv.base, LDS_BALANCE_TOKEN: '', NODE_OPTIONS: '' } });
  assert.is(r.code, 0, r.stdout + r.stderr);
  const quote = /^quote (\S+): (\d+) units for (\d+\.\d\d) EUR$/m.exec(r.stdout);
  const paid = /^(\d+) units for (\d+\.\d\d) EUR, receipt verified \(key (\S+)\)$/m.exec(r.stdout);
  const balance = /^balance: (\d+\.\d\d) EUR$/m.exec(r.stdout);
  assert.ok(quote && paid && balance, r.stdout);
  assert.is(paid![1], quote![2], 'the units quoted were delivered');
  assert.is(paid![2], quote![3], 'the amount quoted was paid');
  assert.is(balance![1], formatCents(500 - cents(quote![3]!)), 'the 5.00 top-up less the draw');

  assert.is((await stat(join(dir, 'balance-token'))).mode & 0o777, 0o600);
  const token = (await readFile(join(dir, 'balance-token'), 'utf8')).trim();
  assert.not.ok((r.stdout + r.stderr).includes(token), 'the token is not printed');
  const res = await fetch(`${srv.base}/lds/balance?limit=100`, { headers: bearer(token) });
  const ledger = (await res.json()) as { balance: string; statement: { kind: string; amount: string; quote_id?: string }[] };
  assert.is(ledger.balance, balance![1]);
  assert.equal(ledger.statement.map((l) => l.kind).sort(), ['draw', 'topup'], 'one top-up, one draw');
  assert.is(ledger.statement.find((l) => l.kind === 'draw')!.quote_id, quote![1]);

  const jwks = await (await fetch(`${srv.url}/.well-known/jwks.json`)).json();
  const journal = await readFile(join(dir, 'receipts.ndjson'), 'utf8');
  assert.not.ok(journal.includes(token), 'no token in the journal');
  const report = verifyJournal(journal, { keysFor: () => jwks as never });
  assert.equal([report.verified, report.drawsPaid, report.spent, report.invalid], [2, 1, quote![3], []], 'the top-up and the draw, verified against the live JWKS');
  assert.is(paid![3], (jwks as { keys: { kid: string }[] }).keys[0]!.kid);
}

test('the README example with plain node (no tsx) from the installed tarball: quote, top-up, pay, verify, journal', async () => {
  await runExample([process.execPath]);
});

test('the same example under Bun (npm package bun)', async () => {
  await runExample([await bunBinary()]);
});

test.run();
