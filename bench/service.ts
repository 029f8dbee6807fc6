// npm run bench:service — figures, not a test. Builds catalog-src into a temp dir, starts the real
// service (`lds serve`, a child process, sandbox processor, rate limit off, logs at warn) and a
// minimal Koa hello-world (another child), and measures with autocannon from this process:
//   - GET /v1/lds/_catalog                 (static document from memory)
//   - POST /v1/lds/draw without quote_id   (402 quote of 10 units: validate, store read, HMAC)
//   - POST /v1/lds/draw paying a quote     (10 units; every request a distinct quote; debit +
//                                           draw record + entries in one synced LevelDB batch)
// beside a raw loop of synced `level` batches (the same 6 puts a draw writes) on the same disk.
// Goals: quote >= 60% of hello-world; paid draws/s >= raw synced batches/s (group commit).
// Fairness: every target gets the same autocannon settings and a 1 s warm-up first (JIT, sockets);
// both servers are child processes; the load generator (this process) shares the cores with them,
// so each run also reports the CPU the server child and the load generator used (from
// /proc/<pid>/stat and process.cpuUsage). A second Koa row reads and parses the quote request and
// answers the 402 quote's exact bytes as a constant: the ceiling for any Koa service that must.
// Options (env): BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50), BENCH_WARMUP (s, default 1).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, tmpdir, totalmem } from 'node:os';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Level } from 'level';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { payTopup } from '../payments/topup/client.ts';

// autocannon ships no types (and @types/autocannon is not a dependency): the slice used here.
interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  statusCodeStats?: Record<string, { count: number }>;
  errors: number;
}
type CannonOptions = Record<string, unknown>;
const autocannonModule = 'autocannon';
const autocannon = ((await import(autocannonModule)) as { default: (o: CannonOptions) => Promise<CannonResult> }).default;

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const PRODUCT = 'svc-agriculture-eu';

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx?: string;
  /** Server child CPU (user + system) per request, µs; undefined when not measured. */
  serverUs?: number;
  /** Load generator (this process) CPU during the run, % of one core. */
  loadgenPct?: number;
}

/** CPU time (user + system) of a child process in ms, from /proc (Linux); undefined elsewhere. */
async function childCpuMs(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

function startChild(args: string[], env: Record<string, string>, ready: RegExp): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, args, { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((res, rej) => {
    let out = '';
    const on = (d: Buffer) => {
      out += d;
      const m = ready.exec(out);
      if (m) res({ proc, url: m[1] });
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.on('exit', (c) => rej(new Error(`child exited ${c}: ${out}`)));
  });
}

// GET / answers 'hello world'. POST /same-bytes reads and parses the JSON body, then answers 402 with
// whatever was last PUT there (one real quote): a service that does no work beyond Koa, the body
// and the bytes of the answer.
const HELLO = `
import Koa from 'koa';
const app = new Koa();
let same = '{}';
app.use(async (ctx) => {
  if (ctx.path === '/same-bytes') {
    let b = ''; for await (const c of ctx.req) b += c;
    if (ctx.method === 'PUT') { same = b; ctx.status = 204; return; }
    JSON.parse(b); ctx.status = 402; ctx.type = 'json'; ctx.body = same; return;
  }
  ctx.body = 'hello world';
});
const s = app.listen(0, '127.0.0.1', () => console.log('hello http://127.0.0.1:' + s.address().port));
`;

async function cannon(name: string, opts: CannonOptions, expect: number, server?: ChildProcess): Promise<Figures> {
  if (WARMUP > 0) await autocannon({ connections: CONNECTIONS, duration: WARMUP, ...opts });
  const cpu0 = await childCpuMs(server?.pid);
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  const wall = performance.now() - t0;
  const self = process.cpuUsage(self0);
  const cpu1 = await childCpuMs(server?.pid);
  const total = r.requests.total;
  const statuses = Object.entries(r.statusCodeStats ?? {}).filter(([code]) => Number(code) !== expect);
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ...(cpu0 !== undefined && cpu1 !== undefined && total > 0 ? { serverUs: ((cpu1 - cpu0) * 1000) / total } : {}),
    loadgenPct: ((self.user + self.system) / 1000 / wall) * 100,
    ...(statuses.length || r.errors ? { non2xx: `unexpected: ${statuses.map(([c, s]) => `${c}x${s.count}`).join(' ')} errors=${r.errors}` } : {}),
  };
}

/** A raw loop of synced batches: one at a time, as a ledger without group commit would write. */
async function rawSyncedBatches(dir: string): Promise<Figures> {
  const db = new Level<string, unknown>(dir, { valueEncoding: 'json' });
  await db.open();
  const started = Date.now();
  const lat: number[] = [];
  let n = 0;
  while (Date.now() - started < SECONDS * 1000) {
    const id = randomBytes(16).toString('base64url');
    const t = performance.now();
    await db.batch(
      [
        { type: 'put', key: `d:${id}`, value: { draw_id: id, amount_cents: 10, units: 'x'.repeat(600) } },
        { type: 'put', key: `q:${id}`, value: { draw_id: id } },
        { type: 'put', key: `e:${String(2 * n).padStart(16, '0')}`, value: { cents: -10 } },
        { type: 'put', key: `e:${String(2 * n + 1).padStart(16, '0')}`, value: { cents: 10 } },
        { type: 'put', key: 'b:bench', value: { cents: n } },
        { type: 'put', key: `s:bench:${String(n).padStart(16, '0')}`, value: { cents: 10 } },
      ],
      { sync: true },
    );
    lat.push(performance.now() - t);
    n++;
  }
  const secs = (Date.now() - started) / 1000;
  await db.close();
  lat.sort((a, b) => a - b);
  return { name: 'raw synced level batch (loop)', rps: n / secs, p50: lat[Math.floor(lat.length / 2)], p99: lat[Math.floor(lat.length * 0.99)] };
}

async function main() {
  const root = await mkdtemp(join(tmpdir(), 'lds-bench-'));
  const children: ChildProcess[] = [];
  try {
    console.error('building catalogue and unit store…');
    await build({ srcDir: join(REPO, 'catalog-src'), outDir: join(root, 'dist'), storeRoot: join(root, 'store'), addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example') });
    const svc = await startChild(['--import', 'tsx', 'cli.ts', 'serve', '--port', '0'], { LDS_DIST_DIR: join(root, 'dist'), LDS_STORE_DIR: join(root, 'store'), LDS_VAR_DIR: join(root, 'var'), LDS_RATE_LIMIT_RPS: '0', LOG_LEVEL: 'warn' }, /serving (http:\/\/\S+)/);
    children.push(svc.proc);
    const hello = await startChild(['--input-type=module', '-e', HELLO], {}, /hello (http:\/\/\S+)/);
    children.push(hello.proc);
    const base = `${svc.url}/v1`;

    // Ten units of one product, from a query.
    const probe = await fetch(`${base}/lds/draw`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ product_id: PRODUCT, query: 'regulation', limit: 10 }) });
    const units = ((await probe.json()) as { resolved_units: string[] }).resolved_units;
    if (units.length !== 10) throw new Error(`expected 10 units, got ${units.length}`);
    const drawBody = JSON.stringify({ product_id: PRODUCT, units });

    // Balances: 8 buyers with 10,000.00 EUR each (a draw of 10 units costs 0.10).
    const tokens: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await payTopup(`${base}/lds/balance/topup`, '10000.00', { spt: `spt_bench_${i}` });
      tokens.push(((await res.json()) as { balance_token: string }).balance_token);
    }

    const results: Figures[] = [];
    // One real 402 answer, for the same-bytes hello-world row.
    const sample = await (await fetch(`${base}/lds/draw`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: drawBody })).text();
    await fetch(`${hello.url}/same-bytes`, { method: 'PUT', body: sample });

    results.push(await cannon('hello-world Koa (GET)', { url: hello.url }, 200, hello.proc));
    results.push(await cannon('GET /v1/lds/_catalog', { url: `${base}/lds/_catalog` }, 200, svc.proc));
    results.push(await cannon('POST /v1/lds/draw, 402 quote (10 units)', { url: `${base}/lds/draw`, method: 'POST', headers: { 'content-type': 'application/json' }, body: drawBody }, 402, svc.proc));
    const same = await cannon(`Koa POST, parse body, answer the quote's ${sample.length} bytes (no service)`, { url: `${hello.url}/same-bytes`, method: 'POST', headers: { 'content-type': 'application/json' }, body: drawBody }, 402, hello.proc);

    // Distinct quotes for every paid request, made beforehand over HTTP.
    const wanted = Math.ceil(Math.max(2000, results[2].rps * (SECONDS + WARMUP) * 1.5)); // the warm-up pays quotes too
    console.error(`preparing ${wanted} quotes…`);
    const quotes: string[] = [];
    const batch = 200;
    for (let i = 0; i < wanted; i += batch) {
      const got = await Promise.all(
        Array.from({ length: Math.min(batch, wanted - i) }, async () => {
          const r = await fetch(`${base}/lds/draw`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: drawBody });
          return ((await r.json()) as { quote_id: string }).quote_id;
        }),
      );
      quotes.push(...got);
    }
    let next = 0;
    const paid = await cannon(
      'POST /v1/lds/draw, paid (10 units)',
      {
        url: `${base}/lds/draw`,
        requests: [
          {
            method: 'POST',
            setupRequest: (req: any) => {
              const i = next++;
              if (i >= quotes.length) throw new Error('ran out of quotes');
              return { ...req, headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[i % tokens.length]}` }, body: JSON.stringify({ product_id: PRODUCT, units, quote_id: quotes[i] }) };
            },
          },
        ],
      },
      200,
      svc.proc,
    );
    results.push(paid);
    for (const p of children) p.kill('SIGTERM');
    results.push(await rawSyncedBatches(join(root, 'raw-level')));

    const [hw, cat, quote, pay, raw] = results;
    console.log(`\nService benchmark — ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${SECONDS}s per run, ${CONNECTIONS} connections\n`);
    console.log('| run | requests/s | p50 ms | p99 ms | server CPU µs/req | load generator CPU |');
    console.log('|---|---:|---:|---:|---:|---:|');
    const rows = [hw, same, cat, quote, pay, raw];
    for (const r of rows) {
      const cpu = r.serverUs === undefined ? '' : r.serverUs.toFixed(0);
      const gen = r.loadgenPct === undefined ? '' : `${r.loadgenPct.toFixed(0)}%`;
      console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${cpu} | ${gen} |${r.non2xx ? ` ${r.non2xx}` : ''}`);
    }
    console.log('');
    console.log(`catalogue GET / hello-world: ${((cat.rps / hw.rps) * 100).toFixed(0)}%`);
    console.log(`402 quote / hello-world:     ${((quote.rps / hw.rps) * 100).toFixed(0)}%  (goal >= 60%)`);
    console.log(`Koa POST answering the quote's bytes / hello-world: ${((same.rps / hw.rps) * 100).toFixed(0)}%  (the ceiling for the quote)`);
    console.log(`402 quote / that ceiling: ${((quote.rps / same.rps) * 100).toFixed(0)}%`);
    if (hw.serverUs !== undefined && quote.serverUs !== undefined) console.log(`server CPU per request, quote / hello-world: ${(quote.serverUs / hw.serverUs).toFixed(1)}x`);
    console.log(`paid draws / raw synced batches: ${(pay.rps / raw.rps).toFixed(2)}x  (goal >= 1.00x)`);
  } finally {
    for (const p of children) if (p.exitCode === null) p.kill('SIGTERM');
    await rm(root, { recursive: true, force: true });
  }
}

await main();
