// Issue 33, why synchronous replication, and how an operator finds what asynchronous replication
// lost. A primary with an asynchronous standby whose WAL receiver falls behind (its replication link
// stalled); a buyer (the client library, journaling every receipt as `lds buy` does) tops up and pays
// a draw, both acknowledged with signed receipts; the primary dies and the standby is promoted without
// them. The service follows by itself; the buyer pays the same quote again and is charged again.
// `lds ledger verify` finds the new primary's ledger clean - it is consistent, just older - and
// `lds ledger reconcile` on the buyer's journal names the lost top-up and the lost draw (and the draw
// that paid its quote a second time); exit status 1. The instance's own receipt log
// (LDS_RECEIPT_LOG) names the same two, without asking the buyer.
import { join } from 'node:path';
import { mkdtemp, writeFile } from 'node:fs/promises';
import * as assert from 'uvu/assert';
import { LdsClient } from '../client/client.ts';
import { runReconcile } from '../cli/reconcile.ts';
import { cliAsync } from './helpers/build.ts';
import { startPgCluster, type PgCluster } from './helpers/pg-cluster.ts';
import { POSTGRES_SERVER, suiteNeeding } from './helpers/programs.ts';
import { buildFixture, refsByProduct, startTestServer, type Fixture, type TestServer } from './helpers/service-harness.ts';

const test = suiteNeeding('ha-async-reconcile', [POSTGRES_SERVER]);
const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let cluster: PgCluster;
let srv: TestServer;
let url: string;
let refs: string[];
let receiptLog: string;

test.before(async () => {
  [fx, cluster] = await Promise.all([buildFixture(), startPgCluster({ standbys: 1, synchronous: false })]);
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!; // before the service holds the store
  url = cluster.url(await cluster.createDatabase());
  receiptLog = join(await mkdtemp(join(fx.root, 'instance-')), 'receipts.ndjson');
  srv = await startTestServer(fx, { env: { LDS_LEDGER_URL: url, LDS_PG_QUERY_TIMEOUT_MS: '2000', LDS_PG_POOL_SIZE: '2', LDS_RECEIPT_LOG: receiptLog } });
});

test.after(async () => {
  await srv?.close();
  await cluster?.stop();
});

test('asynchronous failover loses acknowledged money; ledger verify is clean; ledger reconcile on the journal names what was lost', async () => {
  const journal = join(await mkdtemp(join(fx.root, 'buyer-')), 'receipts.ndjson');
  const buyer = await LdsClient.create({ baseUrl: srv.base, spt: 'spt_test_async', journal });
  const io = { stdout: () => {}, stderr: () => {} };
  try {
    await buyer.topup('20.00');
    const kept = await buyer.pay(await buyer.quote({ product_id: PRODUCT, units: [refs[0]!] }));
    await cluster.caughtUp();
    // Everything acknowledged so far is on the standby: reconcile agrees.
    assert.is(await runReconcile([journal], {}, { ledgerDir: '', ledgerUrl: url }, io), 0);

    // The standby falls behind; the primary acknowledges a top-up and a draw it alone holds.
    cluster.standbys[0]!.replication!.pause();
    const lostTopup = await buyer.topup('7.00');
    const quote = await buyer.quote({ product_id: PRODUCT, units: [refs[1]!, refs[2]!] });
    const lost = await buyer.pay(quote);
    await cluster.failover();

    // The same service, no restart: the buyer pays the same quote again and is charged again.
    const again = await buyer.pay(quote);
    assert.is.not(again.receipt.draw_id, lost.receipt.draw_id, 'the quote was paid twice: the first payment is gone');

    const verify = await cliAsync(['ledger', 'verify', '--url', url]); // not spawnSync: this process serves
    assert.is(verify.code, 0, `ledger verify sees a consistent (older) ledger: ${verify.stderr}`);

    const r = await cliAsync(['ledger', 'reconcile', journal, '--url', url]);
    assert.is(r.code, 1, r.stderr + r.stdout);
    console.log(r.stdout.trim().replace(/^/gm, '# '));
    const missing = r.stdout.split('\n').filter((l) => l.startsWith('missing: '));
    assert.is(missing.length, 2, r.stdout);
    assert.ok(missing.some((l) => l.includes(`top-up ${lostTopup.receipt.topup_id} (7.00 EUR`) && l.includes('not in the ledger')), r.stdout);
    assert.ok(missing.some((l) => l.includes(`draw ${lost.receipt.draw_id} `) && l.includes(`paid again since, as draw ${again.receipt.draw_id}`)), r.stdout);
    assert.not.match(r.stdout, kept.receipt.draw_id, 'what the ledger holds is not listed without --all');
    assert.match(r.stdout, /5 receipts against the ledger PostgreSQL postgres:\/\/postgres:\*\*\*@.*: 3 in the ledger, 2 missing, 0 different, 0 not verified/);
    assert.match(r.stderr, /docs\/operations\.md/);

    // The operator needs no buyer: the instance logged every receipt it signed.
    const jwks = join(fx.root, `jwks-${Date.now()}.json`);
    await writeFile(jwks, await (await fetch(`${srv.url}/.well-known/jwks.json`)).text());
    const out: string[] = [];
    assert.is(await runReconcile([receiptLog], { jwks }, { ledgerDir: '', ledgerUrl: url }, { stdout: (l) => out.push(l), stderr: () => {} }), 1);
    const withoutSource = (l: string) => l.replace(/ \[[^\]]*\]$/, '');
    assert.equal(out.filter((l) => l.startsWith('missing: ')).map(withoutSource).sort(), missing.map(withoutSource).sort(), 'the same two, found in the log');
    assert.match(out.at(-1)!, /: 3 in the ledger, 2 missing, 0 different, 0 not verified$/);
  } finally {
    await buyer.close();
  }
});

test.run();
