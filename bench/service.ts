// npm run bench:service — figures, not a test. Builds catalog-src into a temp dir, compiles the
// service to JavaScript (build/, as `npm start` runs it), starts the real service (`node
// build/cli.js serve`, child processes, sandbox processor, rate limit off, logs at warn) and a
// minimal Koa server (another child), and measures with autocannon from this process, in pairs run
// interleaved (A, B, B, A, each half the run length) so a ratio compares like with like on a shared
// machine:
//   - hello-world Koa GET                  vs GET /v1/lds/_catalog (identity, then br; bytes on the wire)
//   - Koa POST answering the quote's bytes vs POST /v1/lds/draw without quote_id (402 quote of 10 units)
//   - LevelDB: paid draw (10 units; every request a distinct quote) vs a raw loop of synced 2-op
//     `level` batches on the same disk (what one durable write costs without group commit)
//   - PostgreSQL: paid draw on one instance, and on two instances sharing the ledger, vs a raw loop
//     of the ledger's own debit statement (payments/ledger/postgres/ledger.ts DEBIT_SQL) issued
//     straight from the Node client with the same pool size and concurrency
//   - start-up: `npm start` on a built tree until it serves; node build/cli.js; node --import tsx
// Fairness: every target gets the same autocannon settings and a warm-up first (JIT, sockets); the
// load generator (this process) shares the cores with the servers, so each run also reports the
// server children's CPU per request (from /proc/<pid>/stat) and the load generator's CPU.
// Options (env): BENCH_SECONDS (default 10, per target, split over the two interleaved halves),
// BENCH_CONNECTIONS (default 50), BENCH_WARMUP (s, default 1), BENCH_ONLY (comma list of
// catalog,quote,level,postgres,startup), BENCH_CPU_PROF (a folder: the service runs with
// --cpu-prof there), LDS_BENCH_PG_URL or LDS_TEST_PG_URL (an admin URL of a PostgreSQL to use;
// otherwise an embedded one is started and removed).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Level } from 'level';
import pg from 'pg';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { payTopup } from '../payments/topup/client.ts';
import { DEBIT_SQL, DEBIT_STATEMENT, debitParams } from '../payments/ledger/postgres/ledger.ts';
import { startEmbeddedPostgres, type PgServer } from '../test/helpers/pg.ts';

// autocannon ships no types (and @types/autocannon is not a dependency): the slice used here.
interface CannonResult {
  requests: { average: number; total: number };
  throughput: { total: number };
  latency: { p50: number; p99: number };
  statusCodeStats?: Record<string, { count: number }>;
  errors: number;
  duration: number;
}
type CannonOptions = Record<string, unknown>;
const autocannonModule = 'autocannon';
const autocannon = ((await import(autocannonModule)) as { default: (o: CannonOptions) => Promise<CannonResult> }).default;

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const HALF = Math.max(1, SECONDS / 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const ONLY = new Set((process.env.BENCH_ONLY ?? 'catalog,quote,level,postgres,startup').split(','));
const CPU_PROF = process.env.BENCH_CPU_PROF;
const PG_URL = process.env.LDS_BENCH_PG_URL || process.env.LDS_TEST_PG_URL;
const PG_POOL = 10; // the service's default LDS_PG_POOL_SIZE
const PRODUCT = 'svc-agriculture-eu';
const SERVE = ['build/cli.js', 'serve', '--port', '0', '--host', '127.0.0.1'];

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  total: number;
  note?: string;
  /** Server children's CPU (user + system) per request, µs. */
  serverUs?: number;
  /** PostgreSQL's CPU (postmaster and every backend) per request, µs: on the PostgreSQL rows. */
  dbUs?: number;
  /** Load generator (this process) CPU during the run, % of one core. */
  loadgenPct?: number;
  /** Bytes received per response (status line, headers and body). */
  wireBytes?: number;
  load: string;
}

const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/**
 * A process's (or thread's) parent pid and CPU time (user + system) in ms, from its /proc stat
 * file (Linux), or undefined once it has ended.
 */
async function procStat(path: string): Promise<{ ppid: number; cpuMs: number } | undefined> {
  try {
    const stat = await readFile(path, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), cpuMs: ((Number(f[11]) + Number(f[12])) * 1000) / 100 }; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of a process in ms. */
async function cpuMs(pid: number | undefined): Promise<number> {
  return pid === undefined ? 0 : ((await procStat(`/proc/${pid}/stat`))?.cpuMs ?? 0);
}
/**
 * The CPU of a local PostgreSQL, in ms: its postmaster and every process it started (the backends
 * serving the pools). Set once the PostgreSQL rows start; a database on another machine is not
 * measured (no such processes here).
 */
let dbPostmaster: number | undefined;
async function dbCpuMs(): Promise<number | undefined> {
  if (dbPostmaster === undefined) return undefined;
  let sum = await cpuMs(dbPostmaster);
  for (const entry of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const s = await procStat(`/proc/${entry}/stat`);
    if (s?.ppid === dbPostmaster) sum += s.cpuMs;
  }
  return sum;
}
/** The postmaster of the server behind `url`, when it runs on this machine (the parent of our backend). */
async function postmasterOf(url: string): Promise<number | undefined> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const backend = Number((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    return (await procStat(`/proc/${backend}/stat`))?.ppid;
  } finally {
    await c.end();
  }
}
const cpuOf = async (procs: ChildProcess[]) => (await Promise.all(procs.map((p) => cpuMs(p.pid)))).reduce((a, b) => a + b, 0);

/** BENCH_THREADS=1: CPU ms per thread name of the servers (main thread, libuv pool, V8 workers). */
async function threadCpu(procs: ChildProcess[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const p of procs) {
    const tasks = await readdir(`/proc/${p.pid}/task`).catch(() => [] as string[]);
    for (const t of tasks) {
      const comm = t === String(p.pid) ? 'main' : (await readFile(`/proc/${p.pid}/task/${t}/comm`, 'utf8').catch(() => '')).trim();
      const s = await procStat(`/proc/${p.pid}/task/${t}/stat`);
      if (comm && s) out.set(comm, (out.get(comm) ?? 0) + s.cpuMs); // else the thread ended
    }
  }
  return out;
}
const THREADS = process.env.BENCH_THREADS === '1';

function startChild(args: string[], env: Record<string, string>, ready: RegExp, cmd = process.execPath): Promise<{ proc: ChildProcess; url: string; ms: number }> {
  const t0 = performance.now();
  const proc = spawn(cmd, args, { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: cmd !== process.execPath });
  return new Promise((res, rej) => {
    let out = '';
    const on = (d: Buffer) => {
      out += d;
      const m = ready.exec(out);
      if (m) res({ proc, url: m[1], ms: performance.now() - t0 });
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.on('exit', (c) => rej(new Error(`child exited ${c}: ${out}`)));
  });
}

function stopChild(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((r) => {
    p.once('exit', () => r());
    p.kill('SIGTERM');
  });
}

// GET / answers 'hello world'. POST /same-bytes reads and parses the JSON body, then answers 402 with
// whatever was last PUT there (one real quote) and the quote's headers: a service that does no work
// beyond Koa, the body and the bytes of the answer.
const HELLO = `
import Koa from 'koa';
const app = new Koa();
let same = '{}';
let link = '';
app.use(async (ctx) => {
  if (ctx.path === '/same-bytes') {
    let b = ''; for await (const c of ctx.req) b += c;
    if (ctx.method === 'PUT') { same = b; link = ctx.get('x-link'); ctx.status = 204; return; }
    JSON.parse(b); ctx.status = 402; ctx.set('Cache-Control', 'no-store'); if (link) ctx.set('Link', link); ctx.set('Content-Type', 'application/json; charset=utf-8'); ctx.body = same; return;
  }
  ctx.body = 'hello world';
});
const s = app.listen(0, '127.0.0.1', () => console.log('hello http://127.0.0.1:' + s.address().port));
`;

interface Target {
  name: string;
  /** One or more autocannon option sets run at the same time (two instances: one each). */
  opts: CannonOptions[];
  expect: number;
  servers: ChildProcess[];
}

interface Part {
  rps: number;
  total: number;
  secs: number;
  p50: number;
  p99: number;
  bytes: number;
  cpuMs: number;
  selfMs: number;
  /** PostgreSQL's CPU during the run (dbCpuMs), when measured. */
  dbMs?: number;
  bad: string[];
}

async function runOnce(t: Target, seconds: number): Promise<Part> {
  const per = Math.max(1, Math.round(CONNECTIONS / t.opts.length));
  const th0 = THREADS ? await threadCpu(t.servers) : undefined;
  const cpu0 = await cpuOf(t.servers);
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  const rs = await Promise.all(t.opts.map((o) => autocannon({ connections: per, duration: seconds, ...o })));
  const secs = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const cpu1 = await cpuOf(t.servers);
  if (th0) {
    const th1 = await threadCpu(t.servers);
    const n = rs.reduce((a, r) => a + r.requests.total, 0);
    console.error(`threads, µs per request over ${n} requests: ${[...th1].map(([k, v]) => [k, v - (th0.get(k) ?? 0)] as const).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${((v * 1000) / n).toFixed(0)}`).join(', ')}`);
  }
  const bad: string[] = [];
  for (const r of rs) {
    for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) if (Number(code) !== t.expect) bad.push(`${code}x${s.count}`);
    if (r.errors) bad.push(`errors=${r.errors}`);
  }
  const total = rs.reduce((a, r) => a + r.requests.total, 0);
  return {
    rps: rs.reduce((a, r) => a + r.requests.average, 0),
    total,
    secs,
    p50: Math.max(...rs.map((r) => r.latency.p50)),
    p99: Math.max(...rs.map((r) => r.latency.p99)),
    bytes: rs.reduce((a, r) => a + r.throughput.total, 0),
    cpuMs: cpu1 - cpu0,
    selfMs: (self.user + self.system) / 1000,
    bad,
  };
}

function merge(name: string, parts: Part[], servers: boolean): Figures {
  const total = parts.reduce((a, p) => a + p.total, 0);
  const secs = parts.reduce((a, p) => a + p.secs, 0);
  const cpu = parts.reduce((a, p) => a + p.cpuMs, 0);
  const bad = parts.flatMap((p) => p.bad);
  return {
    name,
    rps: total / secs,
    total,
    p50: Math.max(...parts.map((p) => p.p50)),
    p99: Math.max(...parts.map((p) => p.p99)),
    ...(servers && total > 0 ? { serverUs: (cpu * 1000) / total } : {}),
    ...(parts.every((p) => p.dbMs !== undefined) && total > 0 ? { dbUs: (parts.reduce((a, p) => a + p.dbMs!, 0) * 1000) / total } : {}),
    loadgenPct: (parts.reduce((a, p) => a + p.selfMs, 0) / 1000 / secs) * 100,
    wireBytes: parts.reduce((a, p) => a + p.bytes, 0) / total,
    ...(bad.length ? { note: `unexpected: ${bad.join(' ')}` } : {}),
    load: load(),
  };
}

type Runner = (seconds: number) => Promise<Part>;
const cannonRunner = (t: Target): Runner => (s) => runOnce(t, s);

/** A and B interleaved: warm-up of each, then A, B, B, A for half the run length each. */
async function pair(a: { name: string; run: Runner; servers: boolean }, b: { name: string; run: Runner; servers: boolean }): Promise<[Figures, Figures]> {
  console.error(`${new Date().toISOString().slice(11, 19)} ${a.name}  vs  ${b.name}`);
  if (WARMUP > 0) {
    await a.run(WARMUP);
    await b.run(WARMUP);
  }
  const pa: Part[] = [];
  const pb: Part[] = [];
  // PostgreSQL's CPU over each half, when a local one is being measured.
  const run = async (r: Runner): Promise<Part> => {
    const db0 = await dbCpuMs();
    const part = await r(HALF);
    const db1 = await dbCpuMs();
    return db0 === undefined || db1 === undefined ? part : { ...part, dbMs: db1 - db0 };
  };
  pa.push(await run(a.run));
  pb.push(await run(b.run));
  pb.push(await run(b.run));
  pa.push(await run(a.run));
  return [merge(a.name, pa, a.servers), merge(b.name, pb, b.servers)];
}

/** A raw loop of synced 2-op batches, one at a time, as a ledger without group commit writes. */
function rawLevelRunner(db: Level<string, unknown>): Runner {
  let n = 0;
  return async (seconds) => {
    const started = performance.now();
    const self0 = process.cpuUsage();
    const lat: number[] = [];
    while (performance.now() - started < seconds * 1000) {
      const id = randomBytes(16).toString('base64url');
      const t = performance.now();
      await db.batch(
        [
          { type: 'put', key: `d:${id}`, value: { draw_id: id, amount_cents: 10, units: 'x'.repeat(600) } },
          { type: 'put', key: `b:bench`, value: { cents: n } },
        ],
        { sync: true },
      );
      lat.push(performance.now() - t);
      n++;
    }
    const self = process.cpuUsage(self0);
    lat.sort((x, y) => x - y);
    const secs = (performance.now() - started) / 1000;
    return { rps: lat.length / secs, total: lat.length, secs, p50: lat[lat.length >> 1], p99: lat[Math.floor(lat.length * 0.99)], bytes: 0, cpuMs: 0, selfMs: (self.user + self.system) / 1000, bad: [] };
  };
}

/**
 * The ledger's debit statement issued straight from the Node client: CONNECTIONS concurrent loops
 * over a pool of the service's size, round-robin over the same balances, each with a fresh quote
 * id and the draw record of a real paid draw. No HTTP, no checks, no JSON answer: the ceiling.
 * The hashes are those of the balances' own tokens, as the paid draws present them: the statement's
 * token resolution (an index probe of lds_tokens finding no row) is part of both sides.
 */
function rawPgRunner(pool: pg.Pool, hashes: string[], draw: unknown): Runner {
  let n = 0;
  return async (seconds) => {
    const started = performance.now();
    const self0 = process.cpuUsage();
    const lat: number[] = [];
    let failed = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() - started < seconds * 1000) {
          const i = n++;
          const drawId = `drw_${randomBytes(16).toString('base64url')}`;
          const t = performance.now();
          const r = await pool.query({ name: DEBIT_STATEMENT, text: DEBIT_SQL, values: debitParams(hashes[i % hashes.length], drawId, { quoteId: `q_raw_${randomBytes(16).toString('base64url')}`, amountCents: 10, currency: 'EUR', productId: PRODUCT, draw }, new Date().toISOString()) });
          lat.push(performance.now() - t);
          if (r.rows.length !== 1) failed++;
        }
      }),
    );
    const self = process.cpuUsage(self0);
    lat.sort((x, y) => x - y);
    const secs = (performance.now() - started) / 1000;
    return { rps: lat.length / secs, total: lat.length, secs, p50: lat[lat.length >> 1], p99: lat[Math.floor(lat.length * 0.99)], bytes: 0, cpuMs: 0, selfMs: (self.user + self.system) / 1000, bad: failed ? [`not debited x${failed}`] : [] };
  };
}

const json = { 'content-type': 'application/json' };

async function balances(base: string, n: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await payTopup(`${base}/lds/balance/topup`, '10000.00', { spt: `spt_bench_${i}` });
    tokens.push(((await res.json()) as { balance_token: string }).balance_token);
  }
  return tokens;
}

async function makeQuotes(base: string, drawBody: string, wanted: number): Promise<string[]> {
  console.error(`preparing ${wanted} quotes…`);
  const quotes: string[] = [];
  for (let i = 0; i < wanted; i += 200) {
    const got = await Promise.all(
      Array.from({ length: Math.min(200, wanted - i) }, async () => {
        const r = await fetch(`${base}/lds/draw`, { method: 'POST', headers: json, body: drawBody });
        return ((await r.json()) as { quote_id: string }).quote_id;
      }),
    );
    quotes.push(...got);
  }
  return quotes;
}

/** A paid-draw target over one or more instances; every request pays a fresh quote. */
function paidTarget(name: string, bases: string[], servers: ChildProcess[], tokens: string[], units: string[], quotes: string[]): Target {
  let next = 0;
  return {
    name,
    expect: 200,
    servers,
    opts: bases.map((base) => ({
      url: `${base}/lds/draw`,
      requests: [
        {
          method: 'POST',
          setupRequest: (req: Record<string, unknown>) => {
            const i = next++;
            if (i >= quotes.length) throw new Error('ran out of quotes');
            return { ...req, headers: { ...json, authorization: `Bearer ${tokens[i % tokens.length]}` }, body: JSON.stringify({ product_id: PRODUCT, units, quote_id: quotes[i] }) };
          },
        },
      ],
    })),
  };
}

/** Body bytes of one GET with the given Accept-Encoding (no decoding). */
function bodyBytes(url: string, acceptEncoding: string): Promise<{ bytes: number; encoding: string }> {
  return new Promise((res, rej) => {
    httpRequest(url, { headers: { 'accept-encoding': acceptEncoding } }, (r) => {
      let n = 0;
      r.on('data', (d: Buffer) => (n += d.length));
      r.on('end', () => res({ bytes: n, encoding: String(r.headers['content-encoding'] ?? 'identity') }));
    })
      .on('error', rej)
      .end();
  });
}

async function startupTimes(env: Record<string, string>): Promise<Figures[]> {
  const out: Figures[] = [];
  const kinds: [string, string, string[]][] = [
    ['`npm start` (built tree: mtime check, then node build/cli.js)', 'npm', ['start', '--silent', '--', '--port', '0']],
    ['node build/cli.js serve', process.execPath, SERVE],
    ['node --import tsx cli.ts serve (development)', process.execPath, ['--import', 'tsx', 'cli.ts', 'serve', '--port', '0']],
  ];
  for (const [name, cmd, args] of kinds) {
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await startChild(args, env, /serving (http:\/\/\S+)/, cmd);
      ms.push(s.ms);
      if (cmd === 'npm') {
        // npm execs the server in its shell's place; stop the whole group this run started.
        await new Promise<void>((r) => {
          s.proc.once('exit', () => r());
          process.kill(-s.proc.pid!, 'SIGTERM');
        });
      } else await stopChild(s.proc);
    }
    ms.sort((a, b) => a - b);
    out.push({ name: `start-up: ${name}, until "serving" (median of 3)`, rps: NaN, total: 3, p50: ms[1], p99: ms[2], load: load() });
  }
  return out;
}

async function main() {
  // Keeps the process alive while it waits on the children: a wait that can never end then shows
  // as a hang (and the timeout in progress lines) instead of a silent exit with code 13.
  const alive = setInterval(() => {}, 60_000);
  const root = await mkdtemp(join(tmpdir(), 'lds-bench-'));
  const children: ChildProcess[] = [];
  let pgServer: PgServer | null = null;
  const results: Figures[] = [];
  const ratios: string[] = [];
  const ratio = (what: string, a: Figures, b: Figures, goal: string) => ratios.push(`${what}: ${(a.rps / b.rps).toFixed(2)}  (${goal}; load ${a.load})`);
  try {
    console.error('compiling build/ and building the catalogue and unit store…');
    const tsc = spawnSync(process.execPath, ['scripts/ensure-build.mjs'], { cwd: REPO, stdio: 'inherit' });
    if (tsc.status !== 0) throw new Error('compiling to build/ failed');
    await build({ srcDir: join(REPO, 'catalog-src'), outDir: join(root, 'dist'), storeRoot: join(root, 'store'), addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example') });
    const secrets = { LDS_QUOTE_SECRET: randomBytes(32).toString('hex'), MPP_SECRET_KEY: randomBytes(32).toString('hex') };
    const envFor = (name: string, extra: Record<string, string> = {}) => ({ LDS_DIST_DIR: join(root, 'dist'), LDS_STORE_DIR: join(root, `store-${name}`), LDS_VAR_DIR: join(root, `var-${name}`), LDS_RATE_LIMIT_RPS: '0', LOG_LEVEL: 'warn', ...secrets, ...extra });
    const profArgs = (name: string) => (CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF, '--cpu-prof-name', `${name}.cpuprofile`] : []);
    const startService = async (name: string, extra: Record<string, string> = {}) => {
      await cp(join(root, 'store'), join(root, `store-${name}`), { recursive: true }); // one LevelDB per process
      const s = await startChild([...profArgs(name), ...SERVE], envFor(name, extra), /serving (http:\/\/\S+)/);
      children.push(s.proc);
      return { proc: s.proc, base: `${s.url}/v1` };
    };

    const svc = await startService('level');
    const hello = await startChild(['--input-type=module', '-e', HELLO], {}, /hello (http:\/\/\S+)/);
    children.push(hello.proc);
    const base = svc.base;

    // Ten units of one product, from a query.
    const probe = await fetch(`${base}/lds/draw`, { method: 'POST', headers: json, body: JSON.stringify({ product_id: PRODUCT, query: 'regulation', limit: 10 }) });
    const units = ((await probe.json()) as { resolved_units: string[] }).resolved_units;
    if (units.length !== 10) throw new Error(`expected 10 units, got ${units.length}`);
    const drawBody = JSON.stringify({ product_id: PRODUCT, units });

    const helloRow = { name: 'hello-world Koa (GET, 11-byte body)', run: cannonRunner({ name: '', opts: [{ url: hello.url }], expect: 200, servers: [hello.proc] }), servers: true };
    if (ONLY.has('catalog')) {
      const catUrl = `${base}/lds/_catalog`;
      const sizes = await Promise.all(['identity', 'gzip', 'br, gzip'].map((e) => bodyBytes(catUrl, e)));
      const sizeNote = sizes.map((s) => `${s.encoding} ${s.bytes.toLocaleString('en')} B`).join(', ');
      const [hw, cat] = await pair(helloRow, { name: `GET /v1/lds/_catalog, no Accept-Encoding (${sizes[0].bytes.toLocaleString('en')} B body)`, run: cannonRunner({ name: '', opts: [{ url: catUrl }], expect: 200, servers: [svc.proc] }), servers: true });
      const [hw2, catBr] = await pair(helloRow, { name: `GET /v1/lds/_catalog, Accept-Encoding: br, gzip (${sizes[2].bytes.toLocaleString('en')} B body, ${sizes[2].encoding})`, run: cannonRunner({ name: '', opts: [{ url: catUrl, headers: { 'accept-encoding': 'br, gzip' } }], expect: 200, servers: [svc.proc] }), servers: true });
      const etag = (await fetch(catUrl, { headers: { 'accept-encoding': 'br' } })).headers.get('etag') ?? '';
      const [hw3, cat304] = await pair(helloRow, { name: 'GET /v1/lds/_catalog, If-None-Match: its br ETag (304, no body)', run: cannonRunner({ name: '', opts: [{ url: catUrl, headers: { 'accept-encoding': 'br, gzip', 'if-none-match': etag } }], expect: 304, servers: [svc.proc] }), servers: true });
      results.push(hw, cat, hw2, catBr, hw3, cat304);
      ratio('catalogue revalidation (304) / hello-world', cat304, hw3, 'what a cached client costs');
      ratio('catalogue GET (identity) / hello-world', cat, hw, 'goal >= 0.90');
      ratio('catalogue GET (br) / hello-world', catBr, hw2, 'goal >= 0.90');
      ratios.push(`catalogue body bytes: ${sizeNote}`);
    }

    // Balances: 8 buyers with 10,000.00 EUR each (a draw of 10 units costs 0.10).
    const tokens = await balances(base, 8);
    // One real 402 answer, for the same-bytes row.
    const sampleRes = await fetch(`${base}/lds/draw`, { method: 'POST', headers: json, body: drawBody });
    const sample = await sampleRes.text();
    await fetch(`${hello.url}/same-bytes`, { method: 'PUT', body: sample, headers: sampleRes.headers.get('link') ? { 'x-link': sampleRes.headers.get('link')! } : {} });

    if (ONLY.has('quote')) {
      const [same, quote] = await pair(
        { name: `Koa POST, parse body, answer the quote's ${sample.length} bytes and headers (no service)`, run: cannonRunner({ name: '', opts: [{ url: `${hello.url}/same-bytes`, method: 'POST', headers: json, body: drawBody }], expect: 402, servers: [hello.proc] }), servers: true },
        { name: 'POST /v1/lds/draw, 402 quote (10 units)', run: cannonRunner({ name: '', opts: [{ url: `${base}/lds/draw`, method: 'POST', headers: json, body: drawBody }], expect: 402, servers: [svc.proc] }), servers: true },
      );
      results.push(same, quote);
      ratio('402 quote / Koa answering the same bytes', quote, same, 'goal >= 0.80');
    }
    await stopChild(hello.proc);

    // Enough distinct quotes for the paid runs (warm-up included) at the best rate seen on this box,
    // made by another instance with the same secrets (a quote is signed, not stored), so the
    // measured service (and its CPU profile) only sees the paid requests.
    let quoter: { proc: ChildProcess; base: string } | undefined;
    const paidQuotes = async (perSecond: number, seconds: number) => {
      quoter ??= await startService('quoter', { LOG_LEVEL: 'warn' });
      return makeQuotes(quoter.base, drawBody, Math.ceil(perSecond * seconds));
    };
    if (ONLY.has('level')) {
      const quotes = await paidQuotes(4000, SECONDS + WARMUP);
      const rawDb = new Level<string, unknown>(join(root, 'raw-level'), { valueEncoding: 'json' });
      await rawDb.open();
      const [paid, raw] = await pair(
        { name: 'LevelDB: POST /v1/lds/draw, paid (10 units, ~21 KB answer)', run: cannonRunner(paidTarget('', [base], [svc.proc], tokens, units, quotes)), servers: true },
        { name: 'LevelDB: raw synced 2-op batch, sequential loop', run: rawLevelRunner(rawDb), servers: false },
      );
      await rawDb.close();
      results.push(paid, raw);
      ratio('LevelDB paid draws / raw synced batches', paid, raw, 'goal >= 1.00');
      const quote = results.find((r) => r.name.startsWith('POST /v1/lds/draw, 402'));
      if (quote?.serverUs && paid.serverUs) ratios.push(`LevelDB server CPU per paid draw / per quote: ${(paid.serverUs / quote.serverUs).toFixed(2)}  (goal <= 2.0)`);
    }
    await stopChild(svc.proc);

    if (ONLY.has('postgres')) {
      let adminUrl = PG_URL;
      if (!adminUrl) {
        console.error('starting an embedded PostgreSQL…');
        pgServer = await startEmbeddedPostgres();
        adminUrl = pgServer.url;
      }
      const dbName = `lds_bench_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${dbName}`);
      await admin.end();
      const u = new URL(adminUrl);
      u.pathname = `/${dbName}`;
      const ledgerUrl = u.toString();
      dbPostmaster = await postmasterOf(adminUrl);
      try {
        const a = await startService('pg-a', { LDS_LEDGER_URL: ledgerUrl });
        const pgTokens = await balances(a.base, 8);
        const quotes = await paidQuotes(2000, 2 * (SECONDS + WARMUP));
        const pool = new pg.Pool({ connectionString: ledgerUrl, max: PG_POOL });
        // A real draw record and the balances' hashes, for the raw loop.
        await fetch(`${a.base}/lds/draw`, { method: 'POST', headers: { ...json, authorization: `Bearer ${pgTokens[0]}` }, body: JSON.stringify({ product_id: PRODUCT, units, quote_id: quotes.pop() }) });
        const draw = JSON.parse((await pool.query('SELECT draw FROM lds_draws LIMIT 1')).rows[0].draw as string);
        const hashes = (await pool.query('SELECT token_hash FROM lds_balances ORDER BY token_hash')).rows.map((r) => r.token_hash as string);
        const rawRow = { name: `PostgreSQL: raw loop of the ledger's debit statement (node-postgres, pool ${PG_POOL}, ${CONNECTIONS} concurrent)`, run: rawPgRunner(pool, hashes, draw), servers: false };
        const [paid1, raw1] = await pair({ name: 'PostgreSQL, 1 instance: POST /v1/lds/draw, paid (10 units)', run: cannonRunner(paidTarget('', [a.base], [a.proc], pgTokens, units, quotes.splice(0, quotes.length >> 1))), servers: true }, rawRow);
        results.push(paid1, raw1);
        ratio('PostgreSQL paid draws (1 instance) / raw debit loop', paid1, raw1, 'goal >= 0.70');
        const b = await startService('pg-b', { LDS_LEDGER_URL: ledgerUrl });
        const [paid2, raw2] = await pair({ name: 'PostgreSQL, 2 instances (25 connections each): paid (10 units)', run: cannonRunner(paidTarget('', [a.base, b.base], [a.proc, b.proc], pgTokens, units, quotes)), servers: true }, rawRow);
        results.push(paid2, raw2);
        ratio('PostgreSQL paid draws (2 instances) / raw debit loop', paid2, raw2, 'goal >= 0.70');
        await pool.end();
        await stopChild(a.proc);
        await stopChild(b.proc);
      } finally {
        for (const p of children) await stopChild(p);
        if (pgServer) await pgServer.stop();
        else {
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
          await c.end();
        }
      }
    }

    if (quoter) await stopChild(quoter.proc);
    if (ONLY.has('startup')) results.push(...(await startupTimes(envFor('startup'))));

    console.log(`\nService benchmark — ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${SECONDS}s per target (A B B A halves), ${CONNECTIONS} connections, ${new Date().toISOString()}\n`);
    console.log('| run | requests/s | p50 ms | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | load generator CPU | bytes/response on the wire | load average (1 5 15 min) at end |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const r of results) {
      const f = (x: number | undefined, d = 0) => (x === undefined || Number.isNaN(x) ? '' : x.toFixed(d));
      console.log(`| ${r.name} | ${f(r.rps)} | ${f(r.p50, 2)} | ${f(r.p99, 2)} | ${f(r.serverUs)} | ${f(r.dbUs)} | ${r.loadgenPct === undefined ? '' : `${r.loadgenPct.toFixed(0)}%`} | ${r.wireBytes ? f(r.wireBytes) : ''} | ${r.load} |${r.note ? ` ${r.note}` : ''}`);
    }
    console.log('\n(start-up rows: p50 = median ms, p99 = slowest of 3 ms)\n');
    for (const r of ratios) console.log(r);
  } finally {
    for (const p of children) await stopChild(p);
    if (pgServer) await pgServer.stop();
    await rm(root, { recursive: true, force: true });
    clearInterval(alive);
  }
}

await main();
