// npm run bench:service — figures, not a test. Builds catalog-src into a temp dir, starts the real
// service (`lds serve`, a child process, sandbox processor, rate limit off, logs at warn) and a
// minimal Koa hello-world (another child), and measures with autocannon from this process:
//   - GET /v1/lds/_catalog                 (static document from memory)
//   - POST /v1/lds/draw without quote_id   (402 quote of 10 units: validate, store read, HMAC)
//   - POST /v1/lds/draw paying a quote     (10 units; every request a distinct quote; debit +
//                                           draw record + entries in one synced LevelDB batch)
// beside a raw loop of synced `level` batches (the same 6 puts a draw writes) on the same disk.
// Goals: quote >= 60% of hello-world; paid draws/s >= raw synced batches/s (group commit).
// Options (env): BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, tmpdir, totalmem } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Level } from 'level';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { payTopup } from '../payments/topup.ts';

// autocannon ships no types (and @types/autocannon is not a dependency): the slice used here.
interface CannonResult {
  requests: { average: number };
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
const PRODUCT = 'svc-agriculture-eu';

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx?: string;
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

const HELLO = `
import Koa from 'koa';
const app = new Koa();
app.use((ctx) => { ctx.body = 'hello world'; });
const s = app.listen(0, '127.0.0.1', () => console.log('hello http://127.0.0.1:' + s.address().port));
`;

async function cannon(name: string, opts: CannonOptions, expect: number): Promise<Figures> {
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  const statuses = Object.entries(r.statusCodeStats ?? {}).filter(([code]) => Number(code) !== expect);
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
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
    results.push(await cannon('hello-world Koa (GET)', { url: hello.url }, 200));
    results.push(await cannon('GET /v1/lds/_catalog', { url: `${base}/lds/_catalog` }, 200));
    results.push(await cannon('POST /v1/lds/draw, 402 quote (10 units)', { url: `${base}/lds/draw`, method: 'POST', headers: { 'content-type': 'application/json' }, body: drawBody }, 402));

    // Distinct quotes for every paid request, made beforehand over HTTP.
    const wanted = Math.ceil(Math.max(2000, results[2].rps * SECONDS * 1.5));
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
    );
    results.push(paid);
    for (const p of children) p.kill('SIGTERM');
    results.push(await rawSyncedBatches(join(root, 'raw-level')));

    const [hw, cat, quote, pay, raw] = results;
    console.log(`\nService benchmark — ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${SECONDS}s per run, ${CONNECTIONS} connections\n`);
    console.log('| run | requests/s | p50 ms | p99 ms |');
    console.log('|---|---:|---:|---:|');
    for (const r of results) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |${r.non2xx ? ` ${r.non2xx}` : ''}`);
    console.log('');
    console.log(`catalogue GET / hello-world: ${((cat.rps / hw.rps) * 100).toFixed(0)}%`);
    console.log(`402 quote / hello-world:     ${((quote.rps / hw.rps) * 100).toFixed(0)}%  (goal >= 60%)`);
    console.log(`paid draws / raw synced batches: ${(pay.rps / raw.rps).toFixed(2)}x  (goal >= 1.00x)`);
  } finally {
    for (const p of children) if (p.exitCode === null) p.kill('SIGTERM');
    await rm(root, { recursive: true, force: true });
  }
}

await main();
