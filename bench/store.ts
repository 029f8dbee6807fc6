// Unit store benchmark: `npm run bench:store` (options: BENCH_UNITS=1000000 BENCH_SEED=20261101
// BENCH_DIR=<dir, default os tmpdir> BENCH_BASELINES=0|1, default 1 up to 1M units: the MiniSearch
// baseline holds the whole product in memory, ~3.5 GiB at 1M). One run:
//   1. synthesises >= BENCH_UNITS P units from the real aligned EUR-Lex paragraphs (seeded, so
//      the same corpus every time) plus an acts file that gives every synthetic act the EuroVoc
//      descriptors of a real act, so routing works as it does on real data;
//   2. baseline: a plain stream-parse of the same JSONL (readline + JSON.parse);
//   3. builds the unit store from it with the real build (buildUnitStore);
//   4. runs a fixed set of 100 queries against the store (p50/p95/p99, the slowest five, RSS),
//      then 200 reference draws of 10 refs each (seeded, random acts routed to the product: what a
//      paid draw by unit list reads), each pass twice;
//   5. baseline: the same queries over the same product's pivot texts with MiniSearch in memory.
// Every phase runs in its own child process so each peak RSS is that phase's alone.
// `npm run bench:store -- curve 100000 1000000 5000000` prints the growth curve from the result.json
// of earlier runs of those sizes (same seed and BENCH_DIR rule), with each size's ratio to the previous.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tokenize } from '../contract/store-format.ts';
import { readLines } from '../generator/ingest/lines.ts';
import { actProducts, benchQueries, buildStore, corpusOf, latencies, PARAS_PER_ACT, PRODUCT, SEED, synth, type Para } from './corpus.ts';
import { rng } from '../test/helpers/random.ts';

const UNITS = Number(process.env.BENCH_UNITS ?? 1_000_000);
const C = corpusOf(UNITS);
const DIR = C.dir;
const CORPUS = C.paragraphs;
const STORE = C.store;

/** The celex ids of the synthetic acts routed to PRODUCT. */
async function actsInProduct(): Promise<string[]> {
  return [...(await actProducts(C))].filter(([, products]) => products.includes(PRODUCT)).map(([celex]) => celex);
}

// ---- phase: baseline stream-parse ------------------------------------------------------------
async function parse(): Promise<Record<string, number>> {
  const t0 = performance.now();
  let n = 0;
  let rows = 0;
  for await (const { text } of readLines(CORPUS)) {
    const v = JSON.parse(text) as Para;
    rows += v.langs.length;
    n++;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { units: n, rows, seconds, units_per_s: n / seconds, peak_rss_mb: process.resourceUsage().maxRSS / 1024 };
}

// ---- phase: queries on the store ---------------------------------------------------------------
async function query(): Promise<Record<string, unknown>> {
  const { openUnitStore } = await import('../payments/store/unit-store.ts');
  const queries = await benchQueries();
  const rssBefore = process.memoryUsage().rss / 2 ** 20;
  const store = await openUnitStore(STORE);
  const passes: Record<string, unknown>[] = [];
  let hits = 0;
  let slowest: string[] = [];
  for (let pass = 0; pass < 2; pass++) {
    const ms: number[] = [];
    for (const q of queries) {
      const t = performance.now();
      const res = await store.search(PRODUCT, q, 10);
      ms.push(performance.now() - t);
      if (pass === 0) hits += res.length;
    }
    passes.push(latencies(ms));
    // where the tail is: the slowest queries of the second pass
    slowest = queries.map((q, i) => [q, ms[i]] as const).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([q, t]) => `${q} (${t.toFixed(1)} ms)`);
  }
  const again = (await store.search(PRODUCT, queries[0], 10)).map((u) => u.ref);
  // Reference draws: 10 refs of random acts routed to the product (decided from the acts file and
  // the routing rules, not from the store, so no ref is read before it is timed), twice.
  const draws = await referenceDraws(200, 10);
  const refPasses: Record<string, unknown>[] = [];
  let found = 0;
  for (let pass = 0; pass < 2; pass++) {
    const ms: number[] = [];
    for (const refs of draws) {
      const t = performance.now();
      const got = await store.getUnits(PRODUCT, refs);
      ms.push(performance.now() - t);
      if (pass === 0) found += got.units.length;
    }
    refPasses.push(latencies(ms));
  }
  await store.close();
  if (found !== draws.length * 10) throw new Error(`reference draws found ${found} of ${draws.length * 10} units: the acts routed to ${PRODUCT} are not what the store holds`);
  return { product: PRODUCT, queries: queries.length, limit: 10, results: hits, first_pass: passes[0], second_pass: passes[1], slowest_second_pass: slowest, ref_draws: draws.length, ref_first_pass: refPasses[0], ref_second_pass: refPasses[1], rss_before_open_mb: rssBefore, peak_rss_mb: process.resourceUsage().maxRSS / 1024, sample: { query: queries[0], top: again.slice(0, 3) } };
}

/** `n` draws of `k` distinct refs each, seeded: random paragraphs of random acts routed to PRODUCT. */
async function referenceDraws(n: number, k: number): Promise<string[][]> {
  const acts = await actsInProduct();
  const r = rng(SEED ^ 0xd1a3);
  const draws: string[][] = [];
  const lastAct = Math.ceil(UNITS / PARAS_PER_ACT) - 1;
  while (draws.length < n) {
    const refs = new Set<string>();
    while (refs.size < k) {
      const celex = acts[Math.floor(r() * acts.length)];
      const paras = Number(celex.slice(6)) === lastAct ? UNITS - lastAct * PARAS_PER_ACT : PARAS_PER_ACT;
      refs.add(`eu.eurlex:${celex}/${Math.floor(r() * paras)}`);
    }
    draws.push([...refs]);
  }
  return draws;
}

// ---- phase: MiniSearch baseline ----------------------------------------------------------------
async function minisearch(): Promise<Record<string, unknown>> {
  const { default: MiniSearch } = await import('minisearch');
  const queries = await benchQueries();
  // the same documents the store's product index holds: the pivot text of units routed to PRODUCT
  const inProduct = new Set(await actsInProduct());
  const t0 = performance.now();
  const ms = new MiniSearch<{ id: string; text: string }>({ fields: ['text'], storeFields: [], tokenize: (s) => tokenize(s), processTerm: (t) => t });
  let batch: { id: string; text: string }[] = [];
  let docs = 0;
  for await (const { text } of readLines(CORPUS)) {
    const v = JSON.parse(text) as Para;
    if (!inProduct.has(v.celex_id)) continue;
    batch.push({ id: `eu.eurlex:${v.celex_id}/${v.para_idx}`, text: v.text.en });
    if (batch.length === 10_000) { ms.addAll(batch); docs += batch.length; batch = []; }
  }
  ms.addAll(batch);
  docs += batch.length;
  const indexSeconds = (performance.now() - t0) / 1000;
  const passes: Record<string, unknown>[] = [];
  for (let pass = 0; pass < 2; pass++) {
    const lat: number[] = [];
    for (const q of queries) {
      const t = performance.now();
      ms.search(q, { combineWith: 'OR' }).slice(0, 10);
      lat.push(performance.now() - t);
    }
    passes.push(latencies(lat));
  }
  if (global.gc) global.gc();
  return { product: PRODUCT, docs, index_seconds: indexSeconds, first_pass: passes[0], second_pass: passes[1], rss_after_index_mb: process.memoryUsage().rss / 2 ** 20, peak_rss_mb: process.resourceUsage().maxRSS / 1024 };
}

// ---- driver --------------------------------------------------------------------------------------
const phases: Record<string, () => Promise<Record<string, unknown>>> = { synth: () => synth(C), parse, build: () => buildStore(C), query, minisearch };

async function child(phase: string): Promise<Record<string, any>> {
  console.error(`# ${phase}`);
  // Only the in-memory MiniSearch baseline needs a larger heap. The build runs with Node's default
  // heap limit, as `npx lds build` does: a larger limit lets V8 put off collecting, and the build's
  // peak RSS would then measure the flag rather than the build.
  const heap = phase === 'minisearch' ? ['--max-old-space-size=16384'] : [];
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', ...heap, fileURLToPath(import.meta.url), phase], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    env: process.env,
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`bench phase ${phase} failed (exit ${r.status})`);
  const result = JSON.parse(r.stdout.trim().split('\n').pop()!);
  console.error(JSON.stringify(result));
  return result;
}

const BASELINES = process.env.BENCH_BASELINES !== undefined ? process.env.BENCH_BASELINES === '1' : UNITS <= 1_000_000;
const f = (x: number, d = 1) => x.toFixed(d);
const lat = (l: { p50_ms: number; p95_ms: number; p99_ms: number }) => `${f(l.p50_ms, 2)} / ${f(l.p95_ms, 2)} / ${f(l.p99_ms, 2)}`;

/** The growth curve from earlier runs' result.json (one per size, found by the default BENCH_DIR rule). */
async function curve(sizes: number[]): Promise<void> {
  const rows: string[] = [];
  let prev: { units: number; seconds: number } | undefined;
  for (const n of sizes) {
    const file = join(process.env.BENCH_DIR ? resolve(process.env.BENCH_DIR, '..', `lds-bench-store-${n}-${SEED}`) : join(tmpdir(), `lds-bench-store-${n}-${SEED}`), 'result.json');
    if (!existsSync(file)) {
      rows.push(`| ${n.toLocaleString('en')} | (no run: ${file}) | | | | | | | |`);
      continue;
    }
    const r = JSON.parse(await readFile(file, 'utf8'));
    const b = r.build;
    const q = r.query;
    const growth = prev ? `${f(b.seconds / prev.seconds, 2)}× for ${f(n / prev.units, 0)}× the units` : '';
    rows.push(`| ${n.toLocaleString('en')} | ${f(b.seconds)} | ${growth} | ${f(b.peak_rss_mb, 0)}${b.peak_rss_anon_mb !== undefined ? ` (anon ${b.peak_rss_anon_mb}, file ${b.peak_rss_file_mb})` : ''} | ${f(b.store_mb, 0)} | ${lat(q.second_pass)} (1st: ${lat(q.first_pass)}) | ${q.ref_second_pass ? `${lat(q.ref_second_pass)} (1st: ${lat(q.ref_first_pass)})` : '(not measured)'} | ${f(q.peak_rss_mb, 0)} | ${r.started} (load ${r.load ?? '?'}) |`);
    prev = { units: n, seconds: b.seconds };
  }
  console.log([
    `unit store growth (seed ${SEED}; query draws: 100 queries, limit 10, ${PRODUCT}; reference draws: 200 × 10 refs)`,
    '',
    '| units | build s | build growth | build peak RSS MiB (peak anonymous, peak file-backed) | store MiB | query p50 / p95 / p99 ms, 2nd pass | reference draw p50 / p95 / p99 ms, 2nd pass | query process RSS MiB | run (load average 1 5 15 min at the build\'s end) |',
    '|---:|---:|---|---:|---:|---|---|---:|---|',
    ...rows,
  ].join('\n'));
}

const phase = process.argv[2];
if (phase === 'curve') {
  await curve(process.argv.slice(3).map(Number));
} else if (phase) {
  console.log(JSON.stringify(await phases[phase]()));
} else {
  const started = new Date().toISOString();
  const s = existsSync(CORPUS) && existsSync(C.acts) && process.env.BENCH_RESYNTH !== '1' ? { reused: 1 } : await child('synth');
  const p = BASELINES ? await child('parse') : undefined;
  const b = await child('build');
  const buildLoad = loadavg().map((x) => x.toFixed(2)).join(' ');
  const q = await child('query');
  const m = BASELINES ? await child('minisearch') : undefined;
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${f(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${process.platform}`;
  const none = '(not run: BENCH_BASELINES=0)';
  const lines = [
    `unit store benchmark (${started}; ${machine}; load average at the build's end ${buildLoad})`,
    `corpus: ${UNITS} P units${p ? ` / ${p.rows} rows` : ''} synthesised from the real paragraphs (seed ${SEED}; ${JSON.stringify(s)})`,
    '',
    `| measure | unit store | baseline |`,
    `|---|---|---|`,
    `| build: units/s | ${f(b.units_per_s, 0)} (${f(b.seconds)} s for ${b.units_read} units) | ${p ? `stream-parse: ${f(p.units_per_s, 0)} (${f(p.seconds)} s)` : none} |`,
    `| build: peak RSS | ${f(b.peak_rss_mb, 0)} MiB | ${p ? `stream-parse: ${f(p.peak_rss_mb, 0)} MiB` : none} |`,
    `| store size on disk | ${f(b.store_mb, 0)} MiB | input JSONL: ${f((await stat(CORPUS)).size / 2 ** 20, 0)} MiB |`,
    `| query p50 / p95 / p99 (${q.queries} queries, limit 10, ${q.product}; 2nd pass) | ${lat(q.second_pass)} ms | ${m ? `MiniSearch: ${lat(m.second_pass)} ms` : none} |`,
    `| query p50 / p95 / p99 (1st pass, store just opened) | ${lat(q.first_pass)} ms | ${m ? `MiniSearch: ${lat(m.first_pass)} ms` : none} |`,
    `| reference draw (10 refs) p50 / p95 / p99, 1st / 2nd pass (${q.ref_draws} draws) | ${lat(q.ref_first_pass)} / ${lat(q.ref_second_pass)} ms | |`,
    `| query: slowest of the 2nd pass | ${q.slowest_second_pass.join('; ')} | |`,
    `| query process peak RSS | ${f(q.peak_rss_mb, 0)} MiB | ${m ? `MiniSearch: ${f(m.peak_rss_mb, 0)} MiB (${m.docs} docs indexed in ${f(m.index_seconds)} s)` : none} |`,
    '',
    `store ${b.store_version}; ${b.product_memberships} unit-product memberships; sample query "${q.sample.query}" -> ${q.sample.top.join(', ')}`,
  ];
  console.log(lines.join('\n'));
  await writeFile(join(DIR, 'result.json'), JSON.stringify({ started, load: buildLoad, machine, synth: s, parse: p, build: b, query: q, minisearch: m }, null, 2));
}
