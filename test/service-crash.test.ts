// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// Crash safety: the real server (`lds serve` in a child process) is killed with SIGKILL in the
// middle of a stream of paid draws and top-ups, restarted on the same data, and then: the ledger
// verifies, and every 200 the clients received (draw or top-up) is in the ledger.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { K } from '../payments/ledger/records.ts';
import { verifyLedgerAt } from '../payments/ledger/ops.ts';
import type { LedgerSettings } from '../payments/ledger/open.ts';
import { ledgerEnv, ledgerRecords, newLedgerSettings } from './helpers/ledgers.ts';
import { hashToken } from '../payments/tokens.ts';
import { payTopup } from '../payments/topup/client.ts';
import { exited, startInstance } from './helpers/instances.ts';
import { Progress } from './helpers/progress.ts';
import { bearer, buildFixture, postJson, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';

const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let refs: string[];
let varDir: string;
let ledger: LedgerSettings;

const startChild = () => startInstance(fx, ledgerEnv(ledger), varDir);

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  varDir = await mkdtemp(join(fx.root, 'var-crash-'));
  ledger = await newLedgerSettings();
});

test('SIGKILL during paid draws and top-ups: restart, ledger verifies, every 200 is in the ledger', async () => {
  let child = await startChild();
  const tokens = await Promise.all([1, 2, 3, 4].map(() => topUp(child.base, '20.00')));
  const paidDraws: { draw_id: string; token: string }[] = [];
  const okTopups: { token: string; created: boolean }[] = [];
  let stop = false;
  let i = 0;
  const progress = new Progress();

  async function drawWorker(w: number) {
    while (!stop) {
      const token = tokens[w % tokens.length];
      const n = 1 + (i++ % 10);
      const start = (i * 17) % (refs.length - n);
      const draw = { product_id: PRODUCT, units: refs.slice(start, start + n) };
      try {
        const q = (await (await postJson(`${child.base}/lds/draw`, draw)).json()) as any;
        const res = await postJson(`${child.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token));
        if (res.status === 200) {
          paidDraws.push({ draw_id: ((await res.json()) as any).receipt.draw_id, token });
          progress.signal();
        }
      } catch {
        // the server died under us: only answers we actually received count
      }
    }
  }
  async function topupWorker(w: number) {
    while (!stop) {
      try {
        if (w % 2 === 0) {
          const res = await payTopup(`${child.base}/lds/balance/topup`, '5.00', { spt: `spt_crash_${w}_${i++}` });
          if (res.status === 200) {
            okTopups.push({ token: ((await res.json()) as any).balance_token, created: true });
            progress.signal();
          }
        } else {
          const token = tokens[w % tokens.length];
          const res = await payTopup(`${child.base}/lds/balance/topup`, '5.00', { spt: `spt_crash_${w}_${i++}`, balanceToken: token });
          if (res.status === 200) {
            okTopups.push({ token, created: false });
            progress.signal();
          }
        }
      } catch {
        // as above
      }
    }
  }
  const workers = [...Array.from({ length: 8 }, (_, w) => drawWorker(w)), ...Array.from({ length: 4 }, (_, w) => topupWorker(w))];
  // Let the stream run (paid draws and top-ups of both kinds), then kill the server mid-flight.
  await progress.until(() => paidDraws.length > 10 && okTopups.some((t) => t.created) && okTopups.some((t) => !t.created), 'paid draws and both kinds of top-up');
  const before = paidDraws.length;
  child.proc.kill('SIGKILL');
  await exited(child.proc);
  stop = true;
  await Promise.all(workers);
  assert.ok(before > 10, `the stream was running (${before} paid draws before the kill)`);
  assert.ok(okTopups.length > 0, 'top-ups were running too');

  // Restart on the same data: it serves, and the balances it reports are readable.
  child = await startChild();
  const res = await fetch(`${child.base}/lds/balance`, { headers: bearer(tokens[0]) });
  assert.is(res.status, 200);
  child.proc.kill('SIGTERM');
  assert.is(await exited(child.proc), 0, 'SIGTERM drains and exits cleanly');

  assert.equal(await verifyLedgerAt(ledger), []);
  const records = await ledgerRecords(ledger);
  for (const d of paidDraws) {
    const rec = records.get(K.draw(d.draw_id));
    assert.ok(rec, `draw ${d.draw_id} answered 200 but is not in the ledger`);
    assert.is(rec.token_hash, hashToken(d.token));
  }
  for (const t of okTopups) assert.ok(records.get(K.balance(hashToken(t.token))), 'a 200 top-up names a balance in the ledger');
});

test.run();
