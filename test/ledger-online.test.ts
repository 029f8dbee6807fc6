// @ledger-backends: level postgres
// Online operations: `ledger verify` and `ledger export` run against the live ledger of a service
// that keeps paying draws (PostgreSQL: one REPEATABLE READ snapshot; LevelDB: a snapshot taken by
// the running service, asked for over its admin socket). The export is a consistent point in time:
// it imports into an empty ledger and verifies clean, and it holds no more than the final ledger.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliAsync } from './helpers/build.ts';
import { sharedSecrets, startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { BACKEND, ledgerEnv, newLedgerSettings } from './helpers/ledgers.ts';
import { bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type Fixture } from './helpers/service-harness.ts';
import { openLedger, type LedgerSettings } from '../payments/ledger/open.ts';
import { Progress } from './helpers/progress.ts';

const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let refs: string[];
let ledger: LedgerSettings;
let inst: Instance;

const at = (s: LedgerSettings) => (s.ledgerUrl ? ['--url', s.ledgerUrl] : ['--dir', s.ledgerDir]);

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  ledger = await newLedgerSettings(BACKEND);
  inst = await startInstance(fx, { ...ledgerEnv(ledger), ...sharedSecrets() });
});

test.after(async () => {
  await stopInstance(inst);
});

const footer = async (file: string) => JSON.parse((await readFile(file, 'utf8')).trimEnd().split('\n').pop()!) as { draws: number; entries: number };

test(`${BACKEND}: verify and export while the service pays draws`, async () => {
  const token = await topUp(inst.base, '100.00');
  let stop = false;
  let paid = 0;
  const progress = new Progress();
  const stream = (async () => {
    for (let i = 0; !stop; i++) {
      const units = [refs[i % refs.length]];
      const q = (await (await postJson(`${inst.base}/lds/draw`, { product_id: PRODUCT, units: [...units, refs[(i + 1) % refs.length]] })).json()) as any;
      const res = await postJson(`${inst.base}/lds/draw`, { product_id: PRODUCT, units: [...units, refs[(i + 1) % refs.length]], quote_id: q.quote_id }, bearer(token));
      assert.is(res.status, 200);
      await res.body?.cancel();
      paid++;
      progress.signal();
    }
  })();
  await progress.until(() => paid >= 5, 'paid draws running before the first snapshot');

  const snapshots: string[] = [];
  for (let k = 0; k < 3; k++) {
    const before = paid;
    const v = await cliAsync(['ledger', 'verify', ...at(ledger)]);
    assert.is(v.code, 0, v.stderr + v.stdout);
    assert.match(v.stdout, /clean/);
    const file = join(fx.root, `online-${BACKEND}-${k}.ndjson`);
    const e = await cliAsync(['ledger', 'export', ...at(ledger), '--out', file]);
    assert.is(e.code, 0, e.stderr);
    snapshots.push(file);
    assert.ok(paid > before, 'the service kept paying draws while verify and export ran');
  }
  stop = true;
  await stream;

  const final = join(fx.root, `online-${BACKEND}-final.ndjson`);
  assert.is((await cliAsync(['ledger', 'export', ...at(ledger), '--out', final])).code, 0);
  assert.is((await footer(final)).draws, paid);
  for (const file of snapshots) {
    const f = await footer(file);
    assert.ok(f.draws > 0 && f.draws <= paid);
    assert.is(f.entries, 2 * (f.draws + 1), 'a snapshot never splits a transaction: two entries per draw and per top-up');
    // A point-in-time copy restores into an empty ledger of the other backend and verifies clean.
    const target = await newLedgerSettings(BACKEND === 'level' ? 'postgres' : 'level');
    const r = await cliAsync(['ledger', 'import', file, ...at(target)]);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /verified clean/);
  }
});


// A Unix socket path has at most 107 bytes (Linux): Node listened on the path cut short, and the
// start then failed on the chmod with ENOENT, leaving the ledger open and the process hanging.
if (BACKEND === 'level')
  test('LevelDB: a ledger folder whose admin socket path is too long stops the start, naming the setting to shorten, with nothing left open', async () => {
    const deep = join(fx.root, 'v'.repeat(Math.max(1, 110 - fx.root.length)));
    const err = await startTestServer(fx, { env: { LDS_LEDGER_DIR: join(deep, 'ledger') } }).then(
      (s) => s.close().then(() => null),
      (e: Error) => e,
    );
    assert.ok(err, 'the start was refused');
    assert.match(err.message, /admin socket .*ledger\.sock is \d+ bytes long, more than the 107 a Unix socket path may have: set LDS_VAR_DIR \(or LDS_LEDGER_DIR\) to a shorter folder/);
    // nothing was left open: the same ledger folder opens again at once (LevelDB's lock released)
    const reopened = await openLedger({ ledgerDir: join(deep, 'ledger') });
    await reopened.close();
  });

test.run();
