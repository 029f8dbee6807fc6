// npm run bench:service — figures, not a test. Builds catalog-src into a temp dir, compiles the
// service to JavaScript (build/, as `npm start` runs it), starts the real service (`node
// build/cli.js serve`, child processes, sandbox processor, rate limit off, logs at warn) and a
// minimal Koa server (another child), and measures with wrk (bench/wrk.ts says why wrk), in pairs
// run interleaved (A B B A, repeated in slices of a second) so a ratio compares like with like on a
// shared machine:
//   - hello-world Koa GET                  vs GET /v1/lds/_catalog (identity, then br; bytes on the wire),
//     and Koa answering the catalogue's br bytes vs the same GET (what those bytes cost any server)
//   - Koa POST answering the quote's bytes vs POST /v1/lds/draw without quote_id (402 quote of 10 units)
//   - LevelDB: paid draw (10 units; every request a distinct quote) vs a raw loop of synced 2-op
//     `level` batches on the same disk (what one durable write costs without group commit)
//   - PostgreSQL: paid draw on one instance, and on two instances sharing the ledger, vs a raw loop
//     of the ledger's own debit statement (payments/ledger/postgres/ledger.ts DEBIT_SQL) issued
//     straight from the Node client with the same pool size and concurrency
//   - start-up: `npm start` on a built tree until it serves; node build/cli.js; node --import tsx
// Fairness: every target gets the same wrk settings and a warm-up first (JIT, sockets); the load
// generator shares the cores with the servers, so each run also reports the server children's CPU
// per request (from /proc/<pid>/stat) and the load generator's CPU (wrk's, or this process's for
// the raw loops).
// Options (env): BENCH_SECONDS (default 10, per target, run in BENCH_SLICE-second slices, default 1,
// interleaved A B B A with its pair's),
// BENCH_CONNECTIONS (default 50), BENCH_WARMUP (s, default 1), BENCH_ONLY (comma list of
// catalog,quote,level,postgres,startup), BENCH_CPU_PROF (a folder: the service runs with
// --cpu-prof there), LDS_BENCH_PG_URL or LDS_TEST_PG_URL (an admin URL of a PostgreSQL to use;
// otherwise an embedded one is started and removed). Needs `wrk` on the PATH (apt-get install wrk).
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
import { DEBIT_SQL, debitParams } from '../payments/ledger/postgres/ledger.ts';
import { lastResult, oneStatementText } from '../payments/ledger/postgres/inline.ts';
import { DEFAULT_QUERY_TIMEOUT_MS, defaultStatementTimeoutMs } from '../payments/ledger/postgres/defaults.ts';
import { PgStartError, startEmbeddedPostgres, type PgServer } from '../test/helpers/pg.ts';
import { haveWrk, wrk, type WrkResult, type WrkTarget } from './wrk.ts';


const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
// Each target's time is cut into slices run A B B A, A B B A, …: the machine's speed drifts by the
// second (hypervisor steal), and short alternations share the drift out evenly.
const SLICE = Math.max(1, Math.round(Number(process.env.BENCH_SLICE ?? 1)));
const BLOCKS = Math.max(1, Math.round(SECONDS / (2 * SLICE)));
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
 * A process's (or thread's) parent pid, CPU time (user + system) in ms, and the CPU time of its
 * children that have ended (wrk runs), from its /proc stat file (Linux), or undefined once it has
 * ended.
 */
async function procStat(path: string): Promise<{ ppid: number; cpuMs: number; childrenMs: number } | undefined> {
  try {
    const stat = await readFile(path, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (ticks: string) => (Number(ticks) * 1000) / 100; // clock ticks (USER_HZ = 100)
    return { ppid: Number(f[1]), cpuMs: ms(f[11]) + ms(f[12]), childrenMs: ms(f[13]) + ms(f[14]) }; // utime stime cutime cstime
  } catch {
    return undefined;
  }
}
/** CPU ms of this process's children that have ended: the wrk runs so far. */
const wrkCpuMs = async () => (await procStat('/proc/self/stat'))?.childrenMs ?? 0;

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

// GET / answers 'hello world'. A PUT to any other path stores an answer there (status, headers
// and bytes: one real quote, or the catalogue's br bytes); a GET or POST to it gives that answer
// back, a POST reading and parsing its JSON body first: a service that does no work beyond Koa,
// the body and the bytes of the answer.
const HELLO = `
import Koa from 'koa';
const app = new Koa();
const same = new Map();
app.use(async (ctx) => {
  if (ctx.path === '/') { ctx.body = 'hello world'; return; }
  let body = '';
  if (ctx.method !== 'GET') { const chunks = []; for await (const c of ctx.req) chunks.push(c); body = Buffer.concat(chunks); }
  if (ctx.method === 'PUT') { same.set(ctx.path, { status: Number(ctx.get('x-status')), headers: JSON.parse(ctx.get('x-headers')), body }); ctx.status = 204; return; }
  const a = same.get(ctx.path);
  if (ctx.method === 'POST') JSON.parse(body.toString());
  ctx.status = a.status; ctx.set(a.headers); ctx.body = a.body;
});
const s = app.listen(0, '127.0.0.1', () => console.log('hello http://127.0.0.1:' + s.address().port));
process.on('SIGTERM', () => process.exit(0)); // a normal exit, so --cpu-prof writes its profile
`;

/** Stores `res` (already read into `body`) on the Koa server at `path`, to be answered as it is. */
async function putSame(helloUrl: string, path: string, res: Response, body: Buffer): Promise<void> {
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
  });
  const put = await fetch(`${helloUrl}${path}`, { method: 'PUT', body: new Uint8Array(body), headers: { 'x-status': String(res.status), 'x-headers': JSON.stringify(headers) } });
  if (put.status !== 204) throw new Error(`storing ${path} on the Koa server: ${put.status}`);
}

interface Target {
  name: string;
  /** The wrk targets of one run, run at the same time (two instances: one each). Built per run. */
  opts: () => WrkTarget[];
  /** Runs before each run, outside the measured window (paid draws mint the quotes it may send). */
  prepare?: (seconds: number) => Promise<void>;
  /** Told what each target's run sent (paid draws give back the quotes not sent). */
  after?: (results: WrkResult[]) => void;
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

let workDir = tmpdir(); // set to the benchmark's temporary folder in main()

async function runOnce(t: Target, seconds: number): Promise<Part> {
  await t.prepare?.(seconds);
  const opts = t.opts();
  const per = Math.max(1, Math.round(CONNECTIONS / opts.length));
  const th0 = THREADS ? await threadCpu(t.servers) : undefined;
  const cpu0 = await cpuOf(t.servers);
  const gen0 = await wrkCpuMs();
  const rs = await Promise.all(opts.map((o) => wrk(o, { seconds, connections: per, expect: t.expect, dir: workDir })));
  const gen1 = await wrkCpuMs();
  const cpu1 = await cpuOf(t.servers);
  t.after?.(rs);
  const total = rs.reduce((a, r) => a + r.requests, 0);
  if (th0) {
    const th1 = await threadCpu(t.servers);
    console.error(`threads, µs per request over ${total} requests: ${[...th1].map(([k, v]) => [k, v - (th0.get(k) ?? 0)] as const).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${((v * 1000) / total).toFixed(0)}`).join(', ')}`);
  }
  const secs = Math.max(...rs.map((r) => r.seconds));
  return {
    rps: total / secs,
    total,
    secs,
    p50: Math.max(...rs.map((r) => r.p50ms)),
    p99: Math.max(...rs.map((r) => r.p99ms)),
    bytes: rs.reduce((a, r) => a + r.bytes, 0),
    cpuMs: cpu1 - cpu0,
    selfMs: gen1 - gen0,
    bad: rs.flatMap((r) => r.bad),
  };
}

function merge(name: string, parts: Part[], servers: boolean): Figures {
  const total = parts.reduce((a, p) => a + p.total, 0);
  const secs = parts.reduce((a, p) => a + p.secs, 0);
  const cpu = parts.reduce((a, p) => a + p.cpuMs, 0);
  // the same complaint from several slices is one, with its counts added
  const tally = new Map<string, number>();
  for (const b of parts.flatMap((p) => p.bad)) {
    const m = /^(.*) x(\d+)$/.exec(b);
    tally.set(m ? m[1] : b, (tally.get(m ? m[1] : b) ?? 0) + (m ? Number(m[2]) : 1));
  }
  const bad = [...tally].map(([what, n]) => `${what} x${n}`);
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
const wrkRunner = (t: Target): Runner => (s) => runOnce(t, s);
/** One request, the same every time, against `servers`. */
const fixed = (o: WrkTarget, expect: number, servers: ChildProcess[]): Runner => wrkRunner({ name: '', opts: () => [o], expect, servers });

/** A and B interleaved: warm-up of each, then A B B A blocks of SLICE-second runs. */
async function pair(a: { name: string; run: Runner; servers: boolean }, b: { name: string; run: Runner; servers: boolean }): Promise<[Figures, Figures]> {
  console.error(`${new Date().toISOString().slice(11, 19)} ${a.name}  vs  ${b.name}`);
  if (WARMUP > 0) {
    await a.run(WARMUP);
    await b.run(WARMUP);
  }
  const pa: Part[] = [];
  const pb: Part[] = [];
  // PostgreSQL's CPU over each slice, when a local one is being measured.
  const run = async (r: Runner): Promise<Part> => {
    const db0 = await dbCpuMs();
    const part = await r(SLICE);
    const db1 = await dbCpuMs();
    return db0 === undefined || db1 === undefined ? part : { ...part, dbMs: db1 - db0 };
  };
  for (let i = 0; i < BLOCKS; i++) {
    pa.push(await run(a.run));
    pb.push(await run(b.run));
    pb.push(await run(b.run));
    pa.push(await run(a.run));
  }
  return [merge(a.name, pa, a.servers), merge(b.name, pb, b.servers)];
}

/** A raw loop's figures: its latencies (ms), run from `started`, and this process's CPU since `self0` (no server). */
function loopPart(started: number, self0: NodeJS.CpuUsage, lat: number[], bad: string[]): Part {
  const self = process.cpuUsage(self0);
  lat.sort((x, y) => x - y);
  const secs = (performance.now() - started) / 1000;
  return { rps: lat.length / secs, total: lat.length, secs, p50: lat[lat.length >> 1], p99: lat[Math.floor(lat.length * 0.99)], bytes: 0, cpuMs: 0, selfMs: (self.user + self.system) / 1000, bad };
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
    return loopPart(started, self0, lat, []);
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
          const r = lastResult(await pool.query(oneStatementText(DEBIT_SQL, debitParams(hashes[i % hashes.length], drawId, { quoteId: `q_raw_${randomBytes(16).toString('base64url')}`, amountCents: 10, currency: 'EUR', productId: PRODUCT, draw }, new Date().toISOString()), defaultStatementTimeoutMs(DEFAULT_QUERY_TIMEOUT_MS))));
          lat.push(performance.now() - t);
          if (r.rows.length !== 1) failed++;
        }
      }),
    );
    return loopPart(started, self0, lat, failed ? [`not debited x${failed}`] : []);
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

/**
 * Fresh quotes for the paid rows. Before each run it holds enough for that run at twice the fastest
 * paid rate seen so far (at least `floorRate`), plus two in flight per connection, minted outside
 * the measured window; quotes a run did not send go back for the next. So no BENCH_SECONDS, slice
 * or machine speed runs out of quotes (a row that still did would be invalid: see `invalid`).
 */
class QuotePool {
  private quotes: string[] = [];
  private fastest = 0;
  constructor(
    private readonly mint: (n: number) => Promise<string[]>,
    private readonly floorRate: number,
  ) {}
  async ensure(seconds: number): Promise<void> {
    const want = Math.ceil(2 * Math.max(this.fastest, this.floorRate) * seconds) + 2 * CONNECTIONS;
    if (this.quotes.length < want) this.quotes.push(...(await this.mint(want - this.quotes.length)));
  }
  take(n: number): string[] {
    return this.quotes.splice(0, n);
  }
  giveBack(unsent: string[], rate: number): void {
    this.quotes.unshift(...unsent);
    this.fastest = Math.max(this.fastest, rate);
  }
}

/**
 * A paid-draw target over one or more instances; every request pays a fresh quote from `pool`,
 * dealt to the instances in turn.
 */
function paidTarget(bases: string[], servers: ChildProcess[], tokens: string[], units: string[], pool: QuotePool): Target {
  let dealt: string[][] = [];
  let seconds = 1;
  const prefix = JSON.stringify({ product_id: PRODUCT, units, quote_id: '' }).slice(0, -2);
  return {
    name: '',
    expect: 200,
    servers,
    prepare: async (s) => {
      seconds = s;
      await pool.ensure(s);
      const batch = pool.take(Number.MAX_SAFE_INTEGER);
      dealt = bases.map((_, k) => batch.filter((_, i) => i % bases.length === k));
    },
    opts: () => bases.map((base, k) => ({ url: `${base}/lds/draw`, method: 'POST', headers: json, sequence: { ids: dealt[k], tokens, prefix, suffix: '"}' } })),
    after: (rs) => pool.giveBack(rs.flatMap((r, k) => dealt[k].slice(r.sent)), rs.reduce((a, r) => a + r.requests, 0) / seconds),
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
  if (!(await haveWrk())) throw new Error('the service benchmark drives its load with wrk: install it first (Debian: apt-get install wrk)');
  const root = await mkdtemp(join(tmpdir(), 'lds-bench-'));
  workDir = root;
  const children: ChildProcess[] = [];
  let pgServer: PgServer | null = null;
  const results: Figures[] = [];
  const ratios: string[] = [];
  // A row with any unexpected answer (a status it should not get, a socket error, a run that ran
  // out of quotes) measured something else: it yields no figure, and the run fails at the end.
  const invalid: string[] = [];
  const valid = (...rows: Figures[]) => {
    const bad = rows.filter((r) => r.note);
    for (const r of bad) if (!invalid.includes(r.name)) invalid.push(r.name);
    return bad.length === 0;
  };
  /** The goals of issue 24: a throughput ratio or a CPU ratio against a bound, said met or not. */
  type Goal = { atLeast: number } | { atMost: number } | string;
  const judged = (value: number, goal: Goal) =>
    typeof goal === 'string' ? goal : 'atLeast' in goal ? `goal >= ${goal.atLeast.toFixed(2)}: ${value >= goal.atLeast ? 'met' : 'NOT met'}` : `goal <= ${goal.atMost.toFixed(2)}: ${value <= goal.atMost ? 'met' : 'NOT met'}`;
  const noFigure = (what: string, rows: Figures[]) => ratios.push(`${what}: no figure (invalid row: ${rows.filter((r) => r.note).map((r) => r.note).join('; ')})`);
  /** a's requests/s over b's. */
  const ratio = (what: string, a: Figures, b: Figures, goal: Goal) =>
    valid(a, b) ? ratios.push(`${what}: ${(a.rps / b.rps).toFixed(2)}  (${judged(a.rps / b.rps, goal)}; load ${a.load})`) : noFigure(what, [a, b]);
  /** a's server CPU µs per request over b's (both measured with /proc, the whole server process). */
  const cpuRatio = (what: string, a: Figures, b: Figures, goal: Goal) =>
    valid(a, b) && a.serverUs && b.serverUs
      ? ratios.push(`${what}: ${Math.round(a.serverUs)} / ${Math.round(b.serverUs)} µs = ${(a.serverUs / b.serverUs).toFixed(2)} ×  (${judged(a.serverUs / b.serverUs, goal)}; load ${a.load})`)
      : noFigure(what, [a, b]);
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
    const hello = await startChild([...profArgs('koa-floor'), '--input-type=module', '-e', HELLO], {}, /hello (http:\/\/\S+)/);
    children.push(hello.proc);
    const base = svc.base;

    // Ten units of one product, from a query.
    const probe = await fetch(`${base}/lds/draw`, { method: 'POST', headers: json, body: JSON.stringify({ product_id: PRODUCT, query: 'regulation', limit: 10 }) });
    const units = ((await probe.json()) as { resolved_units: string[] }).resolved_units;
    if (units.length !== 10) throw new Error(`expected 10 units, got ${units.length}`);
    const drawBody = JSON.stringify({ product_id: PRODUCT, units });

    const helloRow = { name: 'hello-world Koa (GET, 11-byte body)', run: fixed({ url: hello.url }, 200, [hello.proc]), servers: true };
    if (ONLY.has('catalog')) {
      const catUrl = `${base}/lds/_catalog`;
      const sizes = await Promise.all(['identity', 'gzip', 'br, gzip'].map((e) => bodyBytes(catUrl, e)));
      const sizeNote = sizes.map((s) => `${s.encoding} ${s.bytes.toLocaleString('en')} B`).join(', ');
      const br = { 'accept-encoding': 'br, gzip' };
      const catBrRow = { name: `GET /v1/lds/_catalog, Accept-Encoding: br, gzip (${sizes[2].bytes.toLocaleString('en')} B body, ${sizes[2].encoding})`, run: fixed({ url: catUrl, headers: br }, 200, [svc.proc]), servers: true };
      const [hw, cat] = await pair(helloRow, { name: `GET /v1/lds/_catalog, no Accept-Encoding (${sizes[0].bytes.toLocaleString('en')} B body)`, run: fixed({ url: catUrl }, 200, [svc.proc]), servers: true });
      const [hw2, catBr] = await pair(helloRow, catBrRow);
      // The same br answer (status, headers, bytes) from the minimal Koa server: what sending
      // those bytes costs any server on this machine, beside the 11 bytes of hello-world.
      const brRes = await fetch(catUrl, { headers: { 'accept-encoding': 'br' } }); // fetch decodes: take the stored bytes
      await putSame(hello.url, '/catalogue-br', brRes, await readFile(join(root, 'dist', 'v1', 'lds', '_catalog.br')));
      const [koaBr, catBr2] = await pair({ name: `Koa GET answering the catalogue's br bytes and headers (no service)`, run: fixed({ url: `${hello.url}/catalogue-br`, headers: br }, 200, [hello.proc]), servers: true }, catBrRow);
      const etag = brRes.headers.get('etag') ?? '';
      const [hw3, cat304] = await pair(helloRow, { name: 'GET /v1/lds/_catalog, If-None-Match: its br ETag (304, no body)', run: fixed({ url: catUrl, headers: { ...br, 'if-none-match': etag } }, 304, [svc.proc]), servers: true });
      results.push(hw, cat, hw2, catBr, koaBr, catBr2, hw3, cat304);
      ratio('catalogue revalidation (304) / hello-world', cat304, hw3, { atLeast: 1.0 });
      ratio('catalogue GET (br) / Koa answering the same br bytes and headers', catBr2, koaBr, { atLeast: 0.9 });
      ratio('catalogue GET (identity) / hello-world', cat, hw, 'bounded by the 154 KB body, not a goal since issue 24');
      ratio('catalogue GET (br) / hello-world', catBr, hw2, 'bounded by the bytes, not a goal since issue 24');
      ratio('Koa answering the catalogue br bytes / hello-world', koaBr, hw2, 'what the bytes alone cost');
      ratios.push(`catalogue body bytes: ${sizeNote}`);
    }

    // Balances: 8 buyers with 10,000.00 EUR each (a draw of 10 units costs 0.10).
    const tokens = await balances(base, 8);
    // One real 402 answer, for the same-bytes row.
    const sampleRes = await fetch(`${base}/lds/draw`, { method: 'POST', headers: json, body: drawBody });
    const sample = Buffer.from(await sampleRes.arrayBuffer());
    await putSame(hello.url, '/same-bytes', sampleRes, sample);

    if (ONLY.has('quote')) {
      const [same, quote] = await pair(
        { name: `Koa POST, parse body, answer the quote's ${sample.length} bytes and headers (no service)`, run: fixed({ url: `${hello.url}/same-bytes`, method: 'POST', headers: json, body: drawBody }, 402, [hello.proc]), servers: true },
        { name: 'POST /v1/lds/draw, 402 quote (10 units)', run: fixed({ url: `${base}/lds/draw`, method: 'POST', headers: json, body: drawBody }, 402, [svc.proc]), servers: true },
      );
      results.push(same, quote);
      cpuRatio('server CPU per 402 quote / per request of Koa answering the same bytes (the floor)', quote, same, { atMost: 1.5 });
      ratio('402 quotes/s / Koa answering the same bytes', quote, same, 'throughput, for reference');
    }
    await stopChild(hello.proc);

    // Distinct quotes for the paid runs, made by another instance with the same secrets (a quote is
    // signed, not stored), so the measured service (and its CPU profile) only sees the paid requests.
    let quoter: { proc: ChildProcess; base: string } | undefined;
    const quotePool = (floorRate: number) =>
      new QuotePool(async (n) => {
        quoter ??= await startService('quoter', { LOG_LEVEL: 'warn' });
        return makeQuotes(quoter.base, drawBody, n);
      }, floorRate);
    if (ONLY.has('level')) {
      const quotes = quotePool(4000);
      const rawDb = new Level<string, unknown>(join(root, 'raw-level'), { valueEncoding: 'json' });
      await rawDb.open();
      const [paid, raw] = await pair(
        { name: 'LevelDB: POST /v1/lds/draw, paid (10 units, 38 KB answer)', run: wrkRunner(paidTarget([base], [svc.proc], tokens, units, quotes)), servers: true },
        { name: 'LevelDB: raw synced 2-op batch, sequential loop', run: rawLevelRunner(rawDb), servers: false },
      );
      await rawDb.close();
      results.push(paid, raw);
      ratio('LevelDB paid draws / raw synced batches', paid, raw, { atLeast: 1.0 });
      // Stated against the Koa floor, not the quote, so that a cheaper quote does not make it harder.
      const floor = results.find((r) => r.name.startsWith('Koa POST, parse body'));
      if (floor) cpuRatio('LevelDB server CPU per paid draw / the Koa floor', paid, floor, { atMost: 5 });
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
        const quotes = quotePool(2000);
        await quotes.ensure(1);
        const pool = new pg.Pool({ connectionString: ledgerUrl, max: PG_POOL });
        // A real draw record and the balances' hashes, for the raw loop.
        await fetch(`${a.base}/lds/draw`, { method: 'POST', headers: { ...json, authorization: `Bearer ${pgTokens[0]}` }, body: JSON.stringify({ product_id: PRODUCT, units, quote_id: quotes.take(1)[0] }) });
        const draw = JSON.parse((await pool.query('SELECT draw FROM lds_draws LIMIT 1')).rows[0].draw as string);
        const hashes = (await pool.query('SELECT token_hash FROM lds_balances ORDER BY token_hash')).rows.map((r) => r.token_hash as string);
        const rawRow = { name: `PostgreSQL: raw loop of the ledger's debit statement (node-postgres, pool ${PG_POOL}, ${CONNECTIONS} concurrent)`, run: rawPgRunner(pool, hashes, draw), servers: false };
        const [paid1, raw1] = await pair({ name: 'PostgreSQL, 1 instance: POST /v1/lds/draw, paid (10 units)', run: wrkRunner(paidTarget([a.base], [a.proc], pgTokens, units, quotes)), servers: true }, rawRow);
        results.push(paid1, raw1);
        ratio('PostgreSQL paid draws (1 instance) / raw debit loop', paid1, raw1, { atLeast: 0.7 });
        if (valid(paid1, raw1)) ratios.push(`PostgreSQL CPU per operation, 1 instance: service ${Math.round(paid1.serverUs ?? 0)} µs and PostgreSQL ${Math.round(paid1.dbUs ?? 0)} µs per paid draw; PostgreSQL ${Math.round(raw1.dbUs ?? 0)} µs per raw debit`);
        const b = await startService('pg-b', { LDS_LEDGER_URL: ledgerUrl });
        const [paid2, raw2] = await pair({ name: 'PostgreSQL, 2 instances (25 connections each): paid (10 units)', run: wrkRunner(paidTarget([a.base, b.base], [a.proc, b.proc], pgTokens, units, quotes)), servers: true }, rawRow);
        results.push(paid2, raw2);
        ratio('PostgreSQL paid draws (2 instances) / raw debit loop', paid2, raw2, { atLeast: 0.7 });
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
    if (ONLY.has('startup')) {
      // a built tree: the store is in place (a missing one is built first, which is not start-up)
      await cp(join(root, 'store'), join(root, 'store-startup'), { recursive: true });
      results.push(...(await startupTimes(envFor('startup'))));
    }

    console.log(`\nService benchmark — ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${2 * SLICE * BLOCKS}s per target (A B B A blocks of ${SLICE}s slices), ${CONNECTIONS} connections, ${new Date().toISOString()}\n`);
    console.log('| run | requests/s | p50 ms | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | load generator CPU | bytes/response on the wire | load average (1 5 15 min) at end |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const r of results) {
      const f = (x: number | undefined, d = 0) => (x === undefined || Number.isNaN(x) ? '' : x.toFixed(d));
      console.log(`| ${r.name} | ${f(r.rps)} | ${f(r.p50, 2)} | ${f(r.p99, 2)} | ${f(r.serverUs)} | ${f(r.dbUs)} | ${r.loadgenPct === undefined ? '' : `${r.loadgenPct.toFixed(0)}%`} | ${r.wireBytes ? f(r.wireBytes) : ''} | ${r.load} |${r.note ? ` ${r.note}` : ''}`);
    }
    console.log('\n(start-up rows: p50 = median ms, p99 = slowest of 3 ms)\n');
    for (const r of ratios) console.log(r);
    if (invalid.length) {
      console.log(`\nINVALID: ${invalid.length} row(s) had unexpected answers, so their figures are not results:\n${invalid.map((n) => `  - ${n}`).join('\n')}`);
      process.exitCode = 1;
    }
  } finally {
    for (const p of children) await stopChild(p);
    if (pgServer) await pgServer.stop();
    await rm(root, { recursive: true, force: true });
    clearInterval(alive);
  }
}

await main().catch((err: unknown) => {
  // A PostgreSQL that cannot start is one line saying why and what to do, not a stack trace.
  if (!(err instanceof PgStartError)) throw err;
  console.error(`error: ${err.message}`);
  process.exit(1);
});
