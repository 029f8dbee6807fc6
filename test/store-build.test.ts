// Unit store build: counts, EuroVoc routing, held sources, bad records, reproducible versions.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFile, chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { REF_BLOCK } from '../contract/store-format.ts';
import { buildUnitStore } from '../generator/store/build-store.ts';
import { RefOrder } from '../generator/store/ref-order.ts';
import type { CatalogSrc } from '../generator/model.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { copyCatalogSrc, tempDir } from './helpers/build.ts';
import { BUILT_AT, catalog, expectedCounts, scanStore } from './helpers/store-fixtures.ts';

const opts = (storeRoot: string, extra: object = {}) => ({ storeRoot, builtAt: BUILT_AT, skipBadRecords: false, ...extra });

let cat: CatalogSrc;
let root: string;
let built: Awaited<ReturnType<typeof buildUnitStore>>;

test.before(async () => {
  cat = await catalog();
  root = await tempDir('store');
  // a small spill threshold makes the index builder merge many runs, as it does at scale
  built = await buildUnitStore(cat, opts(root, { runPostings: 2_000, runRefs: 1_000 }));
});

test('counts per product and source equal an independent recount of the fixture files', async () => {
  const { counts } = expectedCounts(cat);
  assert.equal(built.products, counts);
  // the sources that really have data are not all zero (the recount is not vacuous)
  assert.ok(counts['svc-language-eu']['fi.finlex'].units === 232);
  assert.ok(counts['svc-health-eu']['global.ecdc'].rows === 1240);
  assert.ok(counts['svc-agriculture-eu']['eu.eurlex'].rows > counts['svc-agriculture-eu']['eu.eurlex'].units);
  // the store's own meta says the same, and so does a full scan of its unit records
  const store = await openUnitStore(root);
  for (const [pid, bySource] of Object.entries(counts)) {
    assert.equal(store.meta.products[pid].by_source, bySource, pid);
    assert.is(store.meta.products[pid].units, Object.values(bySource).reduce((s, c) => s + c.units, 0));
  }
  await store.close();
  const scan = await scanStore(join(root, built.store_version!));
  const scanned: Record<string, Record<string, { units: number; rows: number }>> = {};
  scan.units.forEach((u, i) => {
    for (const pid of scan.products[i]) {
      const c = ((scanned[pid] ??= {})[u.source] ??= { units: 0, rows: 0 });
      c.units++;
      c.rows += u.rows.length;
    }
  });
  for (const [pid, bySource] of Object.entries(counts))
    for (const [sid, c] of Object.entries(bySource)) assert.equal(scanned[pid]?.[sid] ?? { units: 0, rows: 0 }, c, `${pid} ${sid}`);
});

test('routing: an act in two products\' rules is in both, an act in no rule is in none', async () => {
  const { actProducts } = expectedCounts(cat);
  // acts that have paragraph 0 in the paragraph file (some acts of the sample have none)
  const withParagraphs = new Set(
    (await readFile(join(cat.root, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((x) => x.para_idx === 0).map((x) => x.celex_id),
  );
  const acts = [...actProducts].filter(([c]) => withParagraphs.has(c));
  const two = acts.filter(([, ps]) => ps.length >= 2);
  const none = acts.filter(([, ps]) => ps.length === 0);
  assert.ok(two.length > 0 && none.length > 0, 'the fixtures have both kinds of act');
  const store = await openUnitStore(root);
  try {
    for (const [celex, products] of [...two, ...none]) {
      const ref = `eu.eurlex:${celex}/0`;
      for (const p of cat.products) {
        const r = await store.getUnits(p.product_id, [ref]);
        if (products.includes(p.product_id)) assert.equal(r.units.map((u) => u.ref), [ref], `${celex} should be in ${p.product_id}`);
        else assert.equal(r.unknown, [ref], `${celex} should not be in ${p.product_id}`);
      }
    }
    // the routing report names the act routed nowhere
    for (const [celex] of none) assert.ok(built.report.includes(celex), built.report);
  } finally {
    await store.close();
  }
});

test('no unit, row, count or licence in the store comes from a held source', async () => {
  const held = new Set([...cat.sources.values()].filter((s) => s.held).map((s) => s.id));
  assert.ok(held.size > 5);
  const scan = await scanStore(join(root, built.store_version!));
  assert.ok(scan.units.length > 0);
  for (const u of scan.units) {
    assert.not.ok(held.has(u.source), u.ref);
    assert.not.ok(held.has(u.ref.split(':')[0]), u.ref);
  }
  for (const key of scan.keys) for (const h of held) assert.not.ok(key.includes(h), key);
  for (const [pid, bySource] of Object.entries(built.products))
    for (const [sid, c] of Object.entries(bySource)) if (held.has(sid)) assert.equal(c, { units: 0, rows: 0 }, `${pid} ${sid}`);
  const store = await openUnitStore(root);
  for (const p of Object.values(store.meta.products)) for (const sid of Object.keys(p.by_source)) if (held.has(sid)) assert.is(p.by_source[sid].units + p.by_source[sid].rows, 0);
  await store.close();
});

test('a held source is never read, even when it names data', async () => {
  // If the build opened this path it would fail: the file does not exist.
  const sources = new Map(cat.sources);
  const europeana = sources.get('global.europeana')!;
  assert.ok(europeana.held);
  sources.set('global.europeana', { ...europeana, data: [{ adapter: 'csv', path: 'data/does-not-exist.csv', key: ['id'] }] });
  const heldRoot = join(await tempDir('store-held'), 'made', 'by-the-build');
  const r = await buildUnitStore({ ...cat, sources }, opts(heldRoot));
  assert.equal(r.products['svc-cultural-heritage-eu']['global.europeana'], { units: 0, rows: 0 });
  assert.is(r.store_version, built.store_version, 'nothing of the held source changes the store');
  assert.is((await stat(heldRoot)).mode & 0o777, 0o700, 'a store root the build makes is owner-only');
});

test('sources without data report zero and say why; same inputs give the same store version; the store root is made owner-only', async () => {
  assert.equal(built.products['svc-agriculture-eu']['eu.eurostat'], { units: 0, rows: 0 });
  assert.match(built.notes['eu.eurostat'], /P units/);
  assert.ok(built.notes['eu.eurovoc_taxonomy']);
  assert.not.ok('eu.eurlex' in built.notes);
  assert.match(built.store_version!, /^store-[0-9a-f]{12}$/);
  // A store root that others can read (0755, as earlier versions made it) is made owner-only, and the build says so.
  const againRoot = join(await tempDir('store-again'), 'store');
  await mkdir(againRoot, { mode: 0o755 });
  await chmod(againRoot, 0o755);
  const said: string[] = [];
  const again = await buildUnitStore(cat, opts(againRoot, { progress: (m: string) => said.push(m) }));
  assert.is(again.store_version, built.store_version);
  assert.equal(again.products, built.products);
  assert.is((await stat(againRoot)).mode & 0o777, 0o700);
  assert.ok(said.some((m) => m === `${againRoot} could be read by others (mode 755): made it owner-only (700)`), said.join('\n'));
});

test('malformed input fails the build with file and line, and leaves the store as it was', async () => {
  const src = await copyCatalogSrc();
  await appendFile(join(src, 'data/ecdc/covid19_weekly_cases_deaths_2023w27-w46.csv'), '"Austria","AT","cases"\n');
  const broken = await catalog(src);
  const storeRoot = await tempDir('store-bad');
  const first = await buildUnitStore(cat, opts(storeRoot));
  const before = await readFile(join(storeRoot, 'CURRENT'), 'utf8');
  const err = await buildUnitStore(broken, opts(storeRoot)).then(() => null, (e: Error) => e);
  assert.ok(err, 'the build must fail');
  assert.match(err!.message, /data\/ecdc\/covid19_weekly_cases_deaths_2023w27-w46\.csv:1242: /);
  assert.is(await readFile(join(storeRoot, 'CURRENT'), 'utf8'), before);
  assert.equal((await readdir(storeRoot)).sort(), ['CURRENT', first.store_version!], 'no temporary directory is left behind');

  // with the flag the record is skipped and counted in the report
  const skipped = await buildUnitStore(broken, opts(storeRoot, { skipBadRecords: true }));
  assert.match(skipped.report, /skipped 1 bad record/);
  assert.match(skipped.report, /covid19_weekly_cases_deaths_2023w27-w46\.csv:1242/);
  assert.equal(skipped.products['svc-health-eu']['global.ecdc'], { units: 1240, rows: 1240 });
});

test('a malformed JSON line in the paragraphs fails with its line number, read by the main thread or by workers', async () => {
  const src = await copyCatalogSrc();
  await appendFile(join(src, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl'), '{"celex_id": "32006D0213", "para_idx": 900, \n');
  for (const workers of [0, 2]) {
    const err = await buildUnitStore(await catalog(src), opts(await tempDir('store-bad-json'), { workers, workerBlockBytes: 8 << 10 })).then(() => null, (e: Error) => e);
    assert.ok(err, `workers: ${workers}`);
    assert.match(err!.message, /data\/eurlex\/multi_eurlex_paragraphs_aligned\.jsonl:750: invalid JSON/);
  }
  // stopped near the start, with blocks still being read: the input file is closed all the same
  const early = await copyCatalogSrc();
  const path = join(early, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl');
  const lines = (await readFile(path, 'utf8')).split('\n');
  lines.splice(1, 0, '{"celex_id": ');
  await writeFile(path, lines.join('\n'));
  const err = await buildUnitStore(await catalog(early), opts(await tempDir('store-bad-json-early'), { workers: 2, workerBlockBytes: 8 << 10 })).then(() => null, (e: Error) => e);
  assert.match(err?.message ?? '', /multi_eurlex_paragraphs_aligned\.jsonl:2: invalid JSON/);
  const linkOf = (fd: string) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return null; // closed since listed
    }
  };
  const open = (await readdir('/proc/self/fd')).map(linkOf);
  assert.not.ok(open.includes(path), 'the paragraphs file is closed after the failed build');
});

test('docids: every unit gets the position of its reference in JavaScript string order (refs.dat, refs.idx)', async () => {
  // UTF-8 byte order puts U+FF5E before U+1F600; JavaScript (UTF-16 code units: U+1F600 is
  // D83D DE00) puts U+1F600 first, and search ties follow JavaScript order. Enough references
  // for several spilled runs and several REF_BLOCKs.
  const refs = ['x:\u{1F600}', 'x:\uFF5E', 'x:a', 'x:B', 'x:a/10', 'x:a/2', 'fi.finlex:/akn#sec_1'];
  for (let i = 0; refs.length < 3 * REF_BLOCK + 5; i++) refs.push(`y:${(i * 7919) % 100003}`);
  const unique = [...new Set(refs)];
  const dir = await tempDir('store-refs');
  await mkdir(join(dir, 'runs'));
  const order = new RefOrder(join(dir, 'runs'), 50);
  for (const [id, ref] of unique.entries()) await order.add(ref, id);
  const docidOf = await order.finish(join(dir, 'refs.dat'), join(dir, 'refs.idx'));
  const sorted = [...unique].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  unique.forEach((ref, id) => assert.is(docidOf[id], sorted.indexOf(ref), ref));
  assert.ok(docidOf[unique.indexOf('x:\u{1F600}')] < docidOf[unique.indexOf('x:\uFF5E')]);
  // refs.dat: u16 length + UTF-8, in docid order; refs.idx: where each block starts, and its first reference
  const data = await readFile(join(dir, 'refs.dat'));
  const read: string[] = [];
  const starts: number[] = [];
  for (let at = 0; at < data.length; ) {
    starts.push(at);
    const len = data.readUInt16LE(at);
    read.push(data.toString('utf8', at + 2, at + 2 + len));
    at += 2 + len;
  }
  assert.equal(read, sorted);
  const index = JSON.parse(await readFile(join(dir, 'refs.idx'), 'utf8'));
  assert.is(index.count, unique.length);
  assert.equal(index.first, sorted.filter((_, i) => i % REF_BLOCK === 0));
  assert.equal(index.offsets, [...starts.filter((_, i) => i % REF_BLOCK === 0), data.length]);
  // a repeated reference cannot get two docids
  const again = new RefOrder(join(dir, 'runs2'), 50);
  await mkdir(join(dir, 'runs2'));
  for (const [id, ref] of ['a', 'b', 'a'].entries()) await again.add(ref, id);
  const err = await again.finish(join(dir, 'r2.dat'), join(dir, 'r2.idx')).then(() => null, (e: Error) => e);
  assert.match(String(err?.message), /reference a is repeated/);
});

test('the store holds what format 4 says: units.idx points at each docid\'s record, refs.dat in reference order', async () => {
  const dir = join(root, built.store_version!);
  const refs: string[] = [];
  const data = await readFile(join(dir, 'refs.dat'));
  for (let at = 0; at < data.length; at += 2 + data.readUInt16LE(at)) refs.push(data.toString('utf8', at + 2, at + 2 + data.readUInt16LE(at)));
  const units = await readFile(join(dir, 'units.dat'));
  const idx = await readFile(join(dir, 'units.idx'));
  assert.is(idx.length, refs.length * 12);
  refs.forEach((ref, docid) => {
    if (docid > 0) assert.ok(refs[docid - 1] < ref, `${refs[docid - 1]} < ${ref}`);
    const offset = idx.readUInt32LE(docid * 12) + idx.readUInt32LE(docid * 12 + 4) * 2 ** 32;
    const length = idx.readUInt32LE(docid * 12 + 8);
    assert.is(units.readUInt32LE(offset - 4), length);
    assert.is(JSON.parse(units.toString('utf8', offset, offset + length)).unit.ref, ref);
  });
  const scan = await scanStore(dir);
  assert.equal([...scan.units.map((u) => u.ref)].sort(), refs, 'every record has exactly one docid');
});

test('ingest workers give the same store as the main thread alone: records, references, lengths, posting lists, counts, search', async () => {
  // the fixture paragraphs cut into many 8 KiB blocks, handed out to two worker threads in turn
  const parallelRoot = await tempDir('store-workers');
  const parallel = await buildUnitStore(cat, opts(parallelRoot, { workers: 2, workerBlockBytes: 8 << 10 }));
  assert.is(parallel.store_version, built.store_version);
  assert.equal(parallel.products, built.products);
  assert.equal(parallel.previews, built.previews);
  assert.equal(parallel.examples, built.examples);
  for (const file of ['units.dat', 'units.idx', 'refs.dat', 'refs.idx', 'lengths.dat', 'postings.dat'])
    assert.ok((await readFile(join(parallelRoot, parallel.store_version!, file))).equals(await readFile(join(root, built.store_version!, file))), `${file} is the same`);
  const a = await openUnitStore(root);
  const b = await openUnitStore(parallelRoot);
  try {
    for (const q of ['regulation application council', 'export refunds', 'milk producers Portugal', 'member states shall'])
      for (const pid of ['svc-agriculture-eu', 'svc-finance-eu']) assert.equal(await b.rank(pid, q, 40), await a.rank(pid, q, 40), `${pid} "${q}"`);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a changed input changes the store version', async () => {
  const src = await copyCatalogSrc();
  const path = join(src, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl');
  const lines = (await readFile(path, 'utf8')).split('\n');
  const first = JSON.parse(lines[0]);
  first.text.en = 'COMMISSION DECISION (edited)';
  lines[0] = JSON.stringify(first);
  await writeFile(path, lines.join('\n'));
  const r = await buildUnitStore(await catalog(src), opts(await tempDir('store-changed')));
  assert.is.not(r.store_version, built.store_version);
});

test.run();
