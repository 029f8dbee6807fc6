// npm run bench:ledger-cpu — figures, not a test. The Node CPU one paid draw's debit costs at the
// ledger interface (payments/ledger/ledger.ts debitDraw: no HTTP, no receipt), LevelDB against
// PostgreSQL, with the same input and concurrency: the part of the service's CPU per paid draw that
// differs between the backends (issue 52). CPU from process.cpuUsage (user + kernel), so a loaded
// machine inflates it less than a rate; the load average is printed beside it.
// Options (env): BENCH_DRAWS (default 2000, after as many again to warm up), BENCH_CONCURRENCY
// (default 10), BENCH_ONLY (level or postgres), LDS_TEST_PG_URL (a PostgreSQL admin URL to use;
// otherwise an embedded server is started). BENCH_ROOT: another checkout's root, to measure its
// code with this script (e.g. a `git archive` of an earlier commit, with node_modules copied).
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(process.env.BENCH_ROOT ?? join(fileURLToPath(import.meta.url), '../..'));
const N = Number(process.env.BENCH_DRAWS ?? 2000);
const CONC = Number(process.env.BENCH_CONCURRENCY ?? 10);
const ONLY = process.env.BENCH_ONLY;
const draw = { refs: Array.from({ length: 10 }, (_, i) => `ref-${i}-${'x'.repeat(30)}`), units_sha256: 'ab'.repeat(32), catalogue_version: 'v1', store_version: 's1' };

interface DebitLedger {
  debitDraw(hash: string, input: object): Promise<{ kind: string }>;
  close(): Promise<void>;
}

async function run(name: string, ledger: DebitLedger, fund: (l: DebitLedger, cents: number) => Promise<string>): Promise<void> {
  const hash = await fund(ledger, 100_000_000);
  let i = 0;
  const worker = async () => {
    while (i < N) {
      const k = i++;
      const r = await ledger.debitDraw(hash, { quoteId: `q_${name}_${k}_${Math.random()}`, amountCents: 10, currency: 'EUR', productId: 'svc-health-eu', draw });
      if (r.kind !== 'ok') throw new Error(`debit: ${r.kind}`);
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker)); // warm-up: JIT, pool, caches
  i = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONC }, worker));
  const c = process.cpuUsage(c0);
  const ms = performance.now() - t0;
  console.log(`${name}: ${((c.user + c.system) / N).toFixed(0)} µs Node CPU per debit (user ${(c.user / N).toFixed(0)}, kernel ${(c.system / N).toFixed(0)}); ${((N / ms) * 1000).toFixed(0)} debits/s; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  await ledger.close();
}

const { openLedger } = await import(join(ROOT, 'payments/ledger/open.ts'));
const { fund } = await import(join(ROOT, 'test/helpers/ledgers.ts'));
console.log(`ledger CPU per debit: ${ROOT}, ${N} debits, ${CONC} at a time`);
if (ONLY !== 'postgres') await run('level', await openLedger({ ledgerDir: join(await mkdtemp(join(tmpdir(), 'lds-bench-ledger-')), 'ledger') }), fund);
if (ONLY !== 'level') {
  const { freshDatabase, testPgServer } = await import(join(ROOT, 'test/helpers/pg.ts'));
  const server = await testPgServer();
  await run('postgres', await openLedger({ ledgerDir: '', ledgerUrl: await freshDatabase(server) }), fund);
  await server.stop();
}
process.exit(0);
