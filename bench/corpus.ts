// The benchmark corpus shared by `npm run bench:store` and `npm run bench:search`: N synthetic P
// units made from the real aligned EUR-Lex paragraphs (seeded, so the same corpus every time),
// an acts file giving every synthetic act the EuroVoc descriptors of a real act (so routing works
// as on real data), the fixed query set, the real store build over it, and the memory sampler
// both benchmarks report with. Work files live in $TMPDIR/lds-bench-store-<units>-<seed>/ (or
// BENCH_DIR), so the two benchmarks reuse one corpus.
import { createWriteStream, readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tokenize } from '../contract/store-format.ts';
import { readLines } from '../generator/ingest/lines.ts';
import type { Source } from '../generator/model.ts';
import { rng } from '../test/helpers/random.ts';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SRC = join(REPO, 'catalog-src');
export const SEED = Number(process.env.BENCH_SEED ?? 20261101);
/** The product most synthetic acts route to: every query runs in it. */
export const PRODUCT = 'svc-agriculture-eu';
export const PARAS_PER_ACT = 40;

export interface Corpus {
  units: number;
  dir: string;
  paragraphs: string; // the synthetic units (aligned-paragraphs JSON Lines)
  acts: string; // the synthetic acts and their EuroVoc descriptors
  store: string; // the unit store root the build writes
}

/** The corpus of `units` units: BENCH_DIR, else $TMPDIR/lds-bench-store-<units>-<seed>. */
export function corpusOf(units: number): Corpus {
  const dir = resolve(process.env.BENCH_DIR ?? join(tmpdir(), `lds-bench-store-${units}-${SEED}`));
  return { units, dir, paragraphs: join(dir, 'data', 'paragraphs.jsonl'), acts: join(dir, 'data', 'acts.jsonl'), store: join(dir, 'store') };
}

export interface Para { celex_id: string; para_idx: number; pivot_lang: string; langs: string[]; text: Record<string, string> }

async function realParagraphs(): Promise<Para[]> {
  return (await readFile(join(SRC, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

async function realActs(): Promise<{ celex_id: string; eurovoc_concepts: { all_levels: string[] } }[]> {
  const out = [];
  for await (const { text } of readLines(join(SRC, 'data/eurlex/multi_eurlex_sample.jsonl'))) {
    const a = JSON.parse(text);
    out.push({ celex_id: a.celex_id, eurovoc_concepts: { all_levels: a.eurovoc_concepts.all_levels } });
  }
  return out;
}

/**
 * The fixed query set: 100 queries of 1-3 words taken from real English paragraphs (seeded). Many
 * hold a word found in a fifth or more of the units ("regulation", "commission", "council"): the
 * frequent-word tail.
 */
export async function benchQueries(): Promise<string[]> {
  const paras = await realParagraphs();
  const r = rng(SEED ^ 0x5eed);
  const out: string[] = [];
  while (out.length < 100) {
    const words = tokenize(paras[Math.floor(r() * paras.length)].text.en).filter((w) => w.length >= 4 && !/^\d+$/.test(w)); // tokenize already drops stop words
    if (words.length < 3) continue;
    const n = 1 + Math.floor(r() * 3);
    const q = new Set<string>();
    while (q.size < n) q.add(words[Math.floor(r() * words.length)]);
    out.push([...q].join(' '));
  }
  return out;
}

/** Writes the corpus: the units, the acts file and the EuroVoc tables. */
export async function synth(c: Corpus): Promise<Record<string, number>> {
  const t0 = performance.now();
  await mkdir(dirname(c.paragraphs), { recursive: true });
  const paras = await realParagraphs();
  const acts = await realActs();
  const r = rng(SEED);
  const out = createWriteStream(c.paragraphs, { highWaterMark: 1 << 20 });
  const actsOut = createWriteStream(c.acts);
  let bytes = 0;
  const nActs = Math.ceil(c.units / PARAS_PER_ACT);
  for (let a = 0; a < nActs; a++) {
    const celex = `3BENCH${String(a).padStart(7, '0')}`;
    const like = acts[Math.floor(r() * acts.length)];
    actsOut.write(JSON.stringify({ celex_id: celex, eurovoc_concepts: like.eurovoc_concepts }) + '\n');
    for (let i = 0; i < PARAS_PER_ACT && a * PARAS_PER_ACT + i < c.units; i++) {
      // a real paragraph, half the time followed by a second real paragraph in every language
      // both share: lengths and term frequencies vary as in real text, every word is real
      const p = paras[Math.floor(r() * paras.length)];
      const q = r() < 0.5 ? paras[Math.floor(r() * paras.length)] : null;
      const langs = q ? p.langs.filter((l) => q.langs.includes(l)) : p.langs;
      const text: Record<string, string> = {};
      for (const l of langs) text[l] = q ? `${p.text[l]} ${q.text[l]}` : p.text[l];
      const line = JSON.stringify({ celex_id: celex, para_idx: i, pivot_lang: 'en', langs, text }) + '\n';
      bytes += Buffer.byteLength(line);
      if (!out.write(line)) await once(out, 'drain');
    }
  }
  out.end();
  actsOut.end();
  await Promise.all([once(out, 'close'), once(actsOut, 'close')]);
  await mkdir(join(c.dir, 'data', 'eurovoc'), { recursive: true });
  await copyFile(join(SRC, 'data/eurovoc/descriptors.csv'), join(c.dir, 'data', 'eurovoc', 'descriptors.csv'));
  return { units: c.units, acts: nActs, bytes, seconds: (performance.now() - t0) / 1000 };
}

/**
 * The real store build (buildUnitStore, everything `lds build` does for the store) over the
 * corpus, with the real 14 products and rules; only eu.eurlex (pointed at the corpus) and the
 * EuroVoc tables are read, so the figures are about P units. Reports time, peak memory and bytes.
 * `eurlex` given: eu.eurlex reads those data entries of catalog-src itself (with its own EuroVoc
 * tables) instead of the synthetic corpus (bench/corpus-real.ts: the shipped EUR-Lex-Triples cut).
 */
export async function buildStore(c: Corpus, eurlex?: NonNullable<Source['data']>): Promise<Record<string, number | string>> {
  const { loadCatalogSrc } = await import('../generator/load.ts');
  const { buildUnitStore } = await import('../generator/store/build-store.ts');
  const real = await loadCatalogSrc(SRC);
  const sources = new Map<string, Source>([...real.sources].map(([id, s]): [string, Source] => {
    if (id === 'eu.eurlex') return [id, { ...s, data: eurlex ?? [{ adapter: 'aligned-paragraphs', path: 'data/paragraphs.jsonl', acts: 'data/acts.jsonl' }] }];
    if (id === 'eu.eurovoc_taxonomy') return [id, eurlex ? s : { ...s, data: [{ adapter: 'eurovoc', path: 'data/eurovoc' }] }];
    return [id, { ...s, data: undefined, no_data_reason: 'not part of the benchmark' }];
  }));
  await rm(c.store, { recursive: true, force: true });
  const t0 = performance.now();
  const rss = rssSampler();
  const res = await buildUnitStore({ ...real, root: eurlex ? SRC : c.dir, sources }, {
    storeRoot: c.store,
    builtAt: '2026-11-01T00:00:00.000Z',
    skipBadRecords: false,
    ...(process.env.BENCH_WORKERS !== undefined ? { workers: Number(process.env.BENCH_WORKERS) } : {}),
    progress: (m) => console.error(`[build ${((performance.now() - t0) / 1000).toFixed(1)}s ${rss.now(m)}] ${m}`),
  });
  const seconds = (performance.now() - t0) / 1000;
  const peaks = rss.stop();
  const units = Object.values(res.products).reduce((s, p) => s + (p['eu.eurlex']?.units ?? 0), 0);
  const read = eurlex ? res.sources!['eu.eurlex']!.units : c.units; // the real cut: what the store holds, each unit once
  console.error(res.report.split('\n').filter((l) => l.includes('svc-') || l.startsWith('unit store')).join('\n'));
  const dir = join(c.store, res.store_version!);
  const unitBytes = (await stat(join(dir, 'units.dat'))).size + (await stat(join(dir, 'units.idx'))).size;
  const total = await du(dir);
  return {
    store_version: res.store_version!,
    seconds,
    units_read: read,
    units_per_s: read / seconds,
    product_memberships: units,
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,
    peak_rss_anon_mb: peaks.anon,
    peak_rss_file_mb: peaks.file,
    peak_rss_anon_after: peaks.after.anon,
    peak_rss_anon_parts: peaks.parts,
    peak_rss_file_after: peaks.after.file,
    store_mb: total / 2 ** 20,
    // the search part: everything but the unit records (units.dat, units.idx)
    index_mb: (total - unitBytes) / 2 ** 20,
    cpu_user_s: process.resourceUsage().userCPUTime / 1e6,
    cpu_system_s: process.resourceUsage().systemCPUTime / 1e6,
  };
}

/**
 * Samples the process's resident memory twice a second, split as Linux reports it: anonymous pages
 * (the JS heap, native buffers, LevelDB's memtables and caches) and file pages (LevelDB reads its
 * table files through mmap, so every page of a table it reads counts in RSS until the file is
 * closed, although the kernel can drop it at any time). maxRSS alone cannot tell the two apart.
 * At the anonymous peak it also keeps how much of it was the V8 heap and array buffers (the rest is
 * native: LevelDB's memtables, caches and compaction buffers, malloc's arenas).
 */
export function rssSampler() {
  const read = () => {
    const s = readFileSync('/proc/self/status', 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? 0);
    return { anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
  };
  const peak = { anon: 0, file: 0 };
  let parts = '';
  // the progress line before each peak: which phase it came in
  let phase = 'start';
  const after = { anon: phase, file: phase };
  const sample = () => {
    const r = read();
    if (r.anon > peak.anon) {
      [peak.anon, after.anon] = [r.anon, phase];
      const m = process.memoryUsage();
      const mib = (b: number) => (b / 2 ** 20).toFixed(0);
      parts = `V8 heap ${mib(m.heapTotal)} MiB, array buffers ${mib(m.arrayBuffers)} MiB, other native ${mib(r.anon * 2 ** 20 - m.heapTotal - m.arrayBuffers)} MiB`;
    }
    if (r.file > peak.file) [peak.file, after.file] = [r.file, phase];
    return r;
  };
  const timer = setInterval(sample, 500);
  return {
    now: (msg: string) => {
      const r = sample();
      phase = msg;
      return `anon ${r.anon.toFixed(0)} MiB, file ${r.file.toFixed(0)} MiB`;
    },
    stop: () => {
      clearInterval(timer);
      sample();
      return { anon: Math.round(peak.anon), file: Math.round(peak.file), after, parts };
    },
  };
}

/** Bytes under a folder. */
export async function du(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) total += e.isDirectory() ? await du(join(dir, e.name)) : (await stat(join(dir, e.name))).size;
  return total;
}

/** Which products each synthetic act routes to (by the real routing rules). */
export async function actProducts(c: Corpus): Promise<Map<string, string[]>> {
  const { loadCatalogSrc } = await import('../generator/load.ts');
  const { readEuroVocDescriptors } = await import('../generator/ingest/eurovoc.ts');
  const { routeAct, compileRule } = await import('../generator/store/routing.ts');
  const real = await loadCatalogSrc(SRC);
  const table = await readEuroVocDescriptors(join(c.dir, 'data', 'eurovoc'), 'eurovoc', (e) => { throw e; });
  const rules = real.products.map((p) => compileRule(p.product_id, p.routing));
  const out = new Map<string, string[]>();
  for await (const { text } of readLines(c.acts)) {
    const a = JSON.parse(text);
    out.set(a.celex_id, routeAct(a.eurovoc_concepts.all_levels, rules, table).products);
  }
  return out;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

export function latencies(ms: number[]) {
  return { p50_ms: pct(ms, 50), p95_ms: pct(ms, 95), p99_ms: pct(ms, 99), max_ms: Math.max(...ms) };
}
