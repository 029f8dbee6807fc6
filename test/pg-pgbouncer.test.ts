// @ledger-backends: postgres  (PgBouncer in front of the PostgreSQL ledger)
// Issue 52 item 1: the service, `lds ledger verify|export|reconcile` and the simulator through
// Debian's packaged PgBouncer (1.18 on Debian 12) with Debian's default configuration and only the
// database entry added (test/helpers/pgbouncer.ts), in session and in transaction pooling, under
// paid load: every paid draw answered 200, money conserved, 0 lost, 0 double.
// What failed before: with the default configuration the service did not start in either mode
// ("unsupported startup parameter: statement_timeout", SQLSTATE 08P01); with start parameters
// ignored, transaction pooling answered 500 to most paid draws (named prepared statements "already
// exists" / "does not exist" on the server connection it was handed) and the server-side timeout was
// never set. Now each transaction sets its own statement_timeout (SET LOCAL): the bounded wait
// through the pooler is measured below.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { runSim } from '../sim/run.ts';
import { CATALOG_SRC, cliAsync } from './helpers/build.ts';
import { sharedSecrets, startInstances, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerRecords } from './helpers/ledgers.ts';
import { startPaying } from './helpers/paying.ts';
import { freshDatabase, testPgServer, type PgServer } from './helpers/pg.ts';
import { bouncerIni, DEBIAN_INI, PGBOUNCER, startPgBouncer, type PgBouncer, type PoolMode } from './helpers/pgbouncer.ts';
import { readDoc } from './helpers/docs.ts';
import { suiteNeeding } from './helpers/programs.ts';
import { balanceOf, bearer, buildFixture, cents, postJson, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';

const test = suiteNeeding('pg-pgbouncer', [PGBOUNCER]);
const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let server: PgServer;
let refs: string[];
const bouncers: PgBouncer[] = [];
const running: Instance[] = [];

/** docs/operations.md "Through PgBouncer": its steps, as this file runs them. */
const GUIDE = readDoc('docs/operations.md').split('### Through PgBouncer')[1]!.split('\n### ')[0]!;
/** The database entry the guide says to add (step 2). */
const ENTRY = /```ini\n\s*(.+)\n\s*```/.exec(GUIDE)?.[1]?.trim() ?? '';

test.before(async () => {
  [fx, server] = await Promise.all([buildFixture(), testPgServer()]);
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
});

test.after(async () => {
  await Promise.all(running.map(stopInstance));
  await Promise.all(bouncers.map((b) => b.stop()));
});

async function bouncer(mode: PoolMode): Promise<PgBouncer> {
  const b = await startPgBouncer(server.url, mode, ENTRY);
  bouncers.push(b);
  return b;
}

async function instances(env: Record<string, string>, n: number): Promise<Instance[]> {
  const inst = await startInstances(fx, { ...sharedSecrets(), ...env }, n);
  running.push(...inst);
  return inst;
}

test('the guide: its database entry is the only line added to Debian\'s pgbouncer.ini, its URL names PgBouncer, and the bounded wait it states is the one this file measures', () => {
  assert.match(ENTRY, /^lds = host=\S+ port=\d+ pool_mode=transaction$/);
  // Debian's file as the helper writes it: the entry added, and only paths a process of ours can use moved.
  const debian = readFileSync(DEBIAN_INI, 'utf8').split('\n');
  const ours = bouncerIni(debian.join('\n'), { databaseEntry: ENTRY, port: 20001, dir: '/tmp/x' }).split('\n');
  const changed = ours.filter((l) => !debian.includes(l));
  assert.equal(changed.filter((l) => !/^(listen_port|logfile|pidfile|unix_socket_dir|auth_file) = /.test(l)), [ENTRY]);
  assert.is(ours.length, debian.length + 1);
  assert.match(GUIDE, /LDS_LEDGER_URL='postgres:\/\/lds:PASSWORD@pgbouncer\.internal:6432\/lds'/);
  assert.match(GUIDE, /`LDS_PG_STATEMENT_TIMEOUT_MS=800`, answered 503 `outcome: none`/);
});

for (const mode of ['session', 'transaction'] as const) {
  test(`${mode} pooling, Debian's default PgBouncer: the service starts (two instances in transaction pooling), 100 paid draws under load (8 buyers) all answer 200, money conserved, 0 lost, 0 double; ledger verify, export and reconcile run through it`, async () => {
    const b = await bouncer(mode);
    const direct = await freshDatabase(server);
    const url = b.via(direct);
    const inst = await instances({ LDS_LEDGER_URL: url }, mode === 'transaction' ? 2 : 1);
    const last = inst[inst.length - 1]!;
    const token = await topUp(inst[0]!.base, '500.00');
    const loop = startPaying({ bases: inst.map((i) => i.base), token, product: PRODUCT, refs, workers: 8 });
    try {
      await loop.until(() => loop.paid.length >= 100, '100 answers', 180_000);
    } finally {
      await loop.stop();
    }
    const bad = loop.paid.filter((p) => p.status !== 200);
    assert.is(bad.length, 0, `${bad.length} of ${loop.paid.length} not 200: ${JSON.stringify(bad.slice(0, 3).map((p) => [p.status, p.problem?.detail]))}; pgbouncer: ${b.log().split('\n').filter((l) => /ERROR|WARNING/.test(l)).slice(-3).join(' / ')}`);

    // One more paid draw whose whole answer a buyer saves, for `ledger reconcile`.
    const q = (await (await postJson(`${last.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 2) })).json()) as { quote_id: string };
    const saved = await postJson(`${last.base}/lds/draw`, { product_id: PRODUCT, units: refs.slice(0, 2), quote_id: q.quote_id }, bearer(token));
    assert.is(saved.status, 200);
    const receiptFile = join(fx.root, `receipt-${mode}.json`);
    writeFileSync(receiptFile, await saved.text());

    // The ledger (read on the server itself): one draw per 200, none other; money adds up.
    const records = await ledgerRecords({ ledgerUrl: direct, ledgerDir: '' });
    const draws = [...records].filter(([k]) => k.startsWith('d:')).map(([, v]) => v as { draw_id: string; quote_id: string; amount_cents: number });
    const answered = new Set(loop.paid.map((p) => p.drawId));
    assert.is(draws.length, loop.paid.length + 1, 'every draw in the ledger was answered 200: none committed behind another answer');
    for (const p of loop.paid) assert.ok(draws.some((d) => d.draw_id === p.drawId && d.quote_id === p.quote_id), `draw ${p.drawId} answered 200 is in the ledger (0 lost)`);
    assert.is(new Set(draws.map((d) => d.quote_id)).size, draws.length, '0 double: one draw per quote');
    assert.is(answered.size, loop.paid.length);
    const spent = draws.reduce((s, d) => s + d.amount_cents, 0);
    assert.is(cents(await balanceOf(inst[0]!.base, token)) + spent, 50_000, 'money conserved to the cent');

    // The operator's commands through the pooler.
    const verify = await cliAsync(['ledger', 'verify', '--url', url]);
    assert.is(verify.code, 0, verify.stderr + verify.stdout);
    assert.match(verify.stdout, /clean/);
    const exported = await cliAsync(['ledger', 'export', '--url', url]);
    assert.is(exported.code, 0, exported.stderr);
    for (const d of draws) assert.ok(exported.stdout.includes(d.draw_id), `export holds ${d.draw_id}`);
    const origin = new URL(last.base).origin; // the instance that signed it (each has its own key)
    const reconcile = await cliAsync(['ledger', 'reconcile', receiptFile, '--url', url, '--jwks', `${origin}/.well-known/jwks.json`]);
    assert.is(reconcile.code, 0, reconcile.stderr + reconcile.stdout);
  });
}

test('transaction pooling: the server-side statement_timeout holds per transaction through the pooler (a draw waiting on a locked balance ends at it with a known outcome, measured), and its retry pays once', async () => {
  const b = await bouncer('transaction');
  const direct = await freshDatabase(server);
  const STATEMENT_MS = 800;
  const QUERY_MS = 4000;
  const [inst] = await instances({ LDS_LEDGER_URL: b.via(direct), LDS_PG_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS), LDS_PG_QUERY_TIMEOUT_MS: String(QUERY_MS) }, 1);
  const token = await topUp(inst!.base, '5.00');
  const units = refs.slice(0, 3);
  const q = (await (await postJson(`${inst!.base}/lds/draw`, { product_id: PRODUCT, units })).json()) as { quote_id: string; amount: string };
  // Another session holds the balance's row lock (on the server itself, not through the pooler).
  const holder = new pg.Client({ connectionString: direct });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT * FROM lds_balances FOR UPDATE');
    const t0 = Date.now();
    const res = await postJson(`${inst!.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
    const ms = Date.now() - t0;
    const body = (await res.json()) as { outcome?: string; detail?: string };
    console.log(`  # a draw on a locked balance through PgBouncer (transaction pooling): 503 after ${ms} ms (statement_timeout ${STATEMENT_MS} ms, the service's bound ${QUERY_MS} ms)`);
    assert.is(res.status, 503, JSON.stringify(body));
    // 'none': the server ended the statement (57014) - set inside the transaction, so it held
    // through the pooler. Without it the client's timer would have ended the wait: 'unknown'.
    assert.is(body.outcome, 'none', JSON.stringify(body));
    assert.ok(ms >= STATEMENT_MS - 50 && ms < QUERY_MS, `answered after ${ms} ms`);
  } finally {
    await holder.query('ROLLBACK').catch(() => {});
    await holder.end();
  }
  const again = await postJson(`${inst!.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
  assert.is(again.status, 200);
  assert.is(await balanceOf(inst!.base, token), ((500 - cents(q.amount)) / 100).toFixed(2));
});

test('the simulator runs a seeded history through PgBouncer in transaction pooling (its instances and ledger verify through the pooler): no violation', async () => {
  const b = await bouncer('transaction');
  const lines: string[] = [];
  const summary = await runSim({
    backend: 'postgres',
    seeds: [1],
    steps: 40,
    instances: 2,
    pgUrl: server.url,
    pooler: `127.0.0.1:${b.port}`,
    srcDir: CATALOG_SRC,
    faults: true,
    maxRestarts: 1,
    maxPgRestarts: 0,
    maxFailovers: 0,
    verifyEvery: 20,
    breakLedger: false,
    shrink: false,
    shrinkRuns: 0,
    shrinkSeconds: 0,
    print: (line) => lines.push(line),
  });
  assert.is(summary.failures.length, 0, lines.slice(-20).join('\n'));
  assert.is(summary.steps, 40);
  assert.match(b.log(), /login attempt: db=lds_t_/, 'the instances connected through the pooler');
});

test.run();
