// npm run bench:instructions — figures, not a test: instructions per request, counted by
// valgrind's callgrind, for the 402 quote and the minimal Koa server answering the same bytes.
// Why: on a shared machine the CPU time per request moves with the neighbours' load (caches,
// hypervisor steal; ±30 % and more at a load average of 10+), so an A/B of a code change measured in
// µs needs many alternations. An instruction count does not depend on the load: the same code and
// the same requests execute the same instructions (give or take the JIT's timing and GC), so two
// builds can be compared with one run each. What it leaves out: the kernel (the loopback send, which
// callgrind does not see) and memory stalls; it counts user-space instructions of the server process,
// all threads.
//
// It builds catalog-src into a temp dir, compiles build/ (as `npm start` runs it), starts the
// service (`node build/cli.js serve`, rate limit off, logs at warn) and a minimal Koa server under
// `valgrind --tool=callgrind --instr-atstart=no`, warms each up with BENCH_WARM requests (the JIT
// compiles the hot paths), switches instrumentation on (callgrind_control -i on), sends BENCH_N
// requests (BENCH_CONCURRENCY at a time, keep-alive), reads the instruction count
// (callgrind_control -e Ir) and divides. Then the same for LevelDB paid draws (10 units, a fresh
// quote each, minted beforehand by the same service outside the counted window; a topped-up
// balance of 10,000.00 EUR), and the 402 quote asked with that balance's token (its `Link` decision
// reads the ledger). BENCH_LEDGER=postgres: the same on the PostgreSQL ledger (an embedded server,
// or LDS_TEST_PG_URL), to compare the PostgreSQL paid draw of two builds without the load's noise.
// Slow: valgrind runs Node ~50× slower.
// Options (env): BENCH_N (default 1000), BENCH_WARM (default 3000), BENCH_CONCURRENCY (default 4),
// BENCH_LEDGER (level or postgres, default level).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { payTopup } from '../payments/topup/client.ts';
import { freshDatabase, testPgServer, type PgServer } from '../test/helpers/pg.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_N ?? 1000);
const WARM = Number(process.env.BENCH_WARM ?? 3000);
const CONC = Number(process.env.BENCH_CONCURRENCY ?? 4);
const LEDGER = process.env.BENCH_LEDGER === 'postgres' ? 'PostgreSQL' : 'LevelDB';
const PRODUCT = 'svc-agriculture-eu';
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

// The floor: reads and parses the JSON body, answers stored bytes and headers (as bench/service.ts's).
const FLOOR = `
import Koa from 'koa';
const app = new Koa();
let answer;
app.use(async (ctx) => {
  const chunks = []; for await (const c of ctx.req) chunks.push(c);
  const body = Buffer.concat(chunks);
  if (ctx.method === 'PUT') { answer = { status: Number(ctx.get('x-status')), headers: JSON.parse(ctx.get('x-headers')), body }; ctx.status = 204; return; }
  JSON.parse(body.toString());
  ctx.status = answer.status; ctx.set(answer.headers); ctx.body = answer.body;
});
const s = app.listen(0, '127.0.0.1', () => console.log('serving http://127.0.0.1:' + s.address().port));
process.on('SIGTERM', () => process.exit(0));
`;

const agent = new Agent({ keepAlive: true, maxSockets: CONC });
/**
 * One request over the keep-alive agent. A socket the server closed while idle (its keep-alive
 * timeout passes while callgrind_control works) is retried once on a new one: the request was not
 * read (a paid draw retried with its quote would be answered as a replay anyway).
 */
async function send(url: string, method: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  try {
    return await sendOnce(url, method, body, headers);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET' && (err as NodeJS.ErrnoException).code !== 'EPIPE') throw err;
    return sendOnce(url, method, body, headers);
  }
}
function sendOnce(url: string, method: string, body: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  return new Promise((res, rej) => {
    const r = request(url, { method, agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (m) => {
      const chunks: Buffer[] = [];
      m.on('data', (c: Buffer) => chunks.push(c));
      m.on('end', () => res({ status: m.statusCode ?? 0, headers: m.headers as Record<string, string>, body: Buffer.concat(chunks) }));
    });
    r.on('error', rej);
    r.end(body);
  });
}
async function many(n: number, url: string, body: string | ((i: number) => string), expect: number, headers: Record<string, string> = {}): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONC }, async () => {
    for (let i = next++; i < n; i = next++) {
      const r = await send(url, 'POST', typeof body === 'string' ? body : body(i), headers);
      if (r.status !== expect) throw new Error(`${url} answered ${r.status}, expected ${expect}: ${r.body.toString().slice(0, 200)}`);
    }
  }));
}

function startUnderCallgrind(args: string[], env: Record<string, string>, out: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, process.execPath, ...args], { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((res, rej) => {
    let text = '';
    const on = (d: Buffer) => {
      text += d;
      const m = /serving (http:\/\/\S+)/.exec(text);
      if (m) res({ proc, url: m[1] });
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.on('exit', (c) => rej(new Error(`exited ${c}: ${text.slice(-2000)}`)));
  });
}

const ctl = (...args: string[]) => execFileSync('callgrind_control', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
/** Instructions executed by the process since the last zeroing (callgrind_control -e Ir). */
function instructions(pid: number): number {
  const text = ctl('-e', 'Ir', String(pid));
  // "Totals: Ir", then one line per thread: "Th 1  136,782,881"
  const threads = [...text.matchAll(/^\s*Th\s+\d+\s+([\d,]+)\s*$/gm)].map((m) => Number(m[1].replaceAll(',', '')));
  if (!threads.length) throw new Error(`cannot read callgrind_control -e Ir:\n${text}`);
  return threads.reduce((a, b) => a + b, 0);
}

const ticks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Instructions per request, after the warm-up and once the process is idle: the service loads its
 * agent endpoints and compiles its schemas right after it listens (payments/http/lazy.ts), which
 * under valgrind takes minutes and must not land in the count. What an idle process still runs
 * (timers: the connection check every second, the group commit) is counted over a few idle seconds
 * just before and subtracted in proportion to the measured window's length.
 */
async function measure(name: string, proc: ChildProcess, url: string, body: string | ((i: number) => string), expect: number, headers: Record<string, string> = {}): Promise<{ perRequest: number; idlePerSecond: number }> {
  const pid = proc.pid!;
  console.error(`${new Date().toISOString().slice(11, 19)} ${name}: warming up (${WARM} requests under valgrind)…`);
  await many(WARM, url, body, expect, headers);
  for (let waited = 0; waited < 600_000; waited += 2000) {
    const t0 = ticks(pid);
    await sleep(2000);
    if (ticks(pid) - t0 <= 4) break; // under 2 % of a core: idle
  }
  ctl('-i', 'on', String(pid));
  ctl('-z', String(pid));
  const i0 = performance.now();
  await sleep(5000);
  const idlePerSecond = instructions(pid) / ((performance.now() - i0) / 1000);
  ctl('-z', String(pid));
  const t0 = performance.now();
  await many(N, url, typeof body === 'string' ? body : (i) => body(WARM + i), expect, headers);
  const ir = instructions(pid) - idlePerSecond * ((performance.now() - t0) / 1000);
  ctl('-i', 'off', String(pid));
  return { perRequest: ir / N, idlePerSecond };
}

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null) return;
  const gone = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await gone;
}

async function main() {
  const root = await mkdtemp(join(tmpdir(), 'lds-bench-instr-'));
  const procs: ChildProcess[] = [];
  let pg: PgServer | undefined;
  try {
    if (spawnSync(process.execPath, ['scripts/ensure-build.mjs'], { cwd: REPO, stdio: 'inherit' }).status !== 0) throw new Error('compiling to build/ failed');
    await build({ srcDir: join(REPO, 'catalog-src'), outDir: join(root, 'dist'), storeRoot: join(root, 'store'), addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example') });
    console.error('starting the service and the Koa floor under valgrind (minutes)…');
    if (LEDGER === 'PostgreSQL') pg = await testPgServer();
    const env = {
      LDS_DIST_DIR: join(root, 'dist'),
      LDS_STORE_DIR: join(root, 'store'),
      LDS_VAR_DIR: join(root, 'var'),
      LDS_RATE_LIMIT_RPS: '0',
      LOG_LEVEL: 'warn',
      LDS_QUOTE_SECRET: randomBytes(32).toString('hex'),
      MPP_SECRET_KEY: randomBytes(32).toString('hex'),
      ...(pg ? { LDS_LEDGER_URL: await freshDatabase(pg) } : {}),
    };
    const [svc, floor] = await Promise.all([
      startUnderCallgrind(['build/cli.js', 'serve', '--port', '0', '--host', '127.0.0.1'], env, join(root, 'callgrind.svc')),
      startUnderCallgrind(['--input-type=module', '-e', FLOOR], {}, join(root, 'callgrind.floor')),
    ]);
    procs.push(svc.proc, floor.proc);
    const drawUrl = `${svc.url}/v1/lds/draw`;
    const probe = await send(drawUrl, 'POST', JSON.stringify({ product_id: PRODUCT, query: 'regulation', limit: 10 }));
    const units = (JSON.parse(probe.body.toString()) as { resolved_units: string[] }).resolved_units;
    const drawBody = JSON.stringify({ product_id: PRODUCT, units });
    const sample = await send(drawUrl, 'POST', drawBody);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(sample.headers)) if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = String(v);
    const put = await send(`${floor.url}/same`, 'PUT', sample.body.toString(), { 'x-status': String(sample.status), 'x-headers': JSON.stringify(headers) });
    if (put.status !== 204) throw new Error(`storing the answer on the floor server: ${put.status}`);
    const floorIr = await measure('Koa floor', floor.proc, `${floor.url}/same`, drawBody, 402);
    const quoteIr = await measure('402 quote', svc.proc, drawUrl, drawBody, 402);
    // Paid draws: one balance, WARM + N fresh quotes minted first (outside the counted window).
    const top = await payTopup(`${svc.url}/v1/lds/balance/topup`, '10000.00', { spt: 'spt_bench_instructions' });
    const token = ((await top.json()) as { balance_token: string }).balance_token;
    console.error(`${new Date().toISOString().slice(11, 19)} minting ${WARM + N} quotes…`);
    const quotes: string[] = new Array(WARM + N);
    let q = 0;
    await Promise.all(Array.from({ length: CONC }, async () => {
      for (let i = q++; i < WARM + N; i = q++) quotes[i] = (JSON.parse((await send(drawUrl, 'POST', drawBody)).body.toString()) as { quote_id: string }).quote_id;
    }));
    const prefix = JSON.stringify({ product_id: PRODUCT, units, quote_id: '' }).slice(0, -2);
    const paidIr = await measure(`${LEDGER} paid draw`, svc.proc, drawUrl, (i) => `${prefix}${quotes[i]}"}`, 200, { authorization: `Bearer ${token}` });
    const tokenQuoteIr = await measure('402 quote with the balance token', svc.proc, drawUrl, drawBody, 402, { authorization: `Bearer ${token}` });
    console.log(`\ninstructions per request (callgrind, user space, all threads; ${N} requests after ${WARM} warm-up, ${CONC} concurrent, keep-alive; ${new Date().toISOString()}, load ${load()})\n`);
    console.log('| request | instructions/request | (idle process, instructions/s, subtracted) |');
    console.log('|---|---:|---:|');
    const row = (what: string, m: { perRequest: number; idlePerSecond: number }) => console.log(`| ${what} | ${Math.round(m.perRequest).toLocaleString('en')} | ${Math.round(m.idlePerSecond).toLocaleString('en')} |`);
    row(`Koa POST, parse body, answer the quote's ${sample.body.length} bytes and headers (no service)`, floorIr);
    row('POST /v1/lds/draw, 402 quote (10 units)', quoteIr);
    row(`${LEDGER}: POST /v1/lds/draw, paid (10 units, 38 KB answer)`, paidIr);
    row(`${LEDGER}: POST /v1/lds/draw, 402 quote with the balance token (reads the ledger for its Link)`, tokenQuoteIr);
    console.log(`\n402 quote / Koa floor, instructions: ${(quoteIr.perRequest / floorIr.perRequest).toFixed(2)}`);
    console.log(`${LEDGER} paid draw / Koa floor, instructions: ${(paidIr.perRequest / floorIr.perRequest).toFixed(2)}`);
  } finally {
    for (const p of procs) await stop(p);
    agent.destroy();
    await pg?.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
