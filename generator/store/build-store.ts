// Builds the private unit store from catalog-src: ingests every served source through its
// adapter, routes EUR-Lex material through EuroVoc, writes units, product membership and the
// per-product BM25 indexes into a new LevelDB, and switches CURRENT to it only once it is
// complete. Held sources are never opened. Counts in the returned summary are what was written.
//
// Write order matters for speed at scale: during ingestion the store only receives d!<docid>
// records, in key order; everything written in another order (ref index, forward vectors, index
// runs, Akoma Ntoso staging) goes to a scratch LevelDB or file and is copied in key order at the
// end, so LevelDB never has to rewrite overlapping files.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { privateDir } from '../../contract/private-dir.ts';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { Level } from 'level';
import {
  KEY,
  RANK_BLOCK,
  STORE_FORMAT,
  TOKENIZER,
  BM25,
  hex,
  type StoreIndexMeta,
  type StoreMeta,
  type StoreProductMeta,
  type UnitLicence,
} from '../../contract/store-format.ts';
import { readActs } from '../ingest/acts.ts';
import { BadRecordCounter, failOnBadRecord, IngestError, type BadRecordHandler } from '../ingest/errors.ts';
import { readEuroVocDescriptors, type DescriptorPlacement } from '../ingest/eurovoc.ts';
import type { CatalogSrc, Source, SourceCount, StoreSummary } from '../model.ts';
import { BatchWriter, type Db } from './batch.ts';
import { IndexWriter } from './index-writer.ts';
import { ingestSpec } from './ingest-spec.ts';
import { PreviewPicker } from './preview.ts';
import { RefHashSet } from './ref-set.ts';
import { fsyncTree, removeStaleTemp, tmpName } from '../durable.ts';
import { publishStore, pruneStores } from './publish.ts';
import { formatReport, type SourceReport } from './report.ts';
import { compileRule, routeAct, type RouteResult, type RoutingRule } from './routing.ts';
import { Staging } from './staging.ts';
import { unitLicence, type BuiltUnit } from './units.ts';

export interface BuildStoreOptions {
  storeRoot: string;
  builtAt: string;
  skipBadRecords: boolean;
  progress?: (msg: string) => void;
  /** Postings buffered in memory before a run is spilled (tests lower it to exercise spilling). */
  runPostings?: number;
  /** Store versions never pruned besides the new and the previous one: the one the served dist/ names (build.ts). */
  keepVersions?: string[];
}

type Plan =
  | { id: string; state: 'served'; src: Source }
  | { id: string; state: 'held'; src: Source }
  | { id: string; state: 'no-data'; src: Source; reason: string }
  | { id: string; state: 'tables'; src: Source; reason: string };

/** Decides, per source named by a product, whether it is read; held sources never are. */
function planSources(cat: CatalogSrc): Plan[] {
  const ids = [...new Set(cat.products.flatMap((p) => p.sources.map((s) => s.source)))].sort();
  return ids.map((id): Plan => {
    const src = cat.sources.get(id);
    if (!src) throw new Error(`product source "${id}" has no source definition`);
    if (src.held || !src.ruling) return { id, state: 'held', src };
    if (src.unit === null) return { id, state: 'tables', src, reason: 'reference tables used for routing; this source sells no units' };
    if (!src.data?.length) return { id, state: 'no-data', src, reason: src.no_data_reason ?? 'no data is configured for this source' };
    return { id, state: 'served', src };
  });
}

/**
 * Why a routed source with units sells none in a product: no act it read matches the product's
 * EuroVoc rule. Said per product, with the number of acts read, so a zero is never unexplained.
 */
function routingNotes(
  cat: CatalogSrc,
  reports: Map<string, SourceReport>,
  actRoutes: Map<string, { routes: Map<string, RouteResult>; lines: number }>,
  counts: Record<string, Record<string, { rows: number; units: number }>>,
): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const rep of reports.values()) {
    const src = cat.sources.get(rep.source)!;
    if (!src.routed || rep.units === 0) continue;
    const files = src.data!.map((d) => d.acts ?? d.path).filter((f) => actRoutes.has(f));
    const acts = new Set(files.flatMap((f) => [...actRoutes.get(f)!.routes.keys()])).size;
    for (const p of cat.products) {
      if (counts[p.product_id][rep.source]?.units !== 0) continue;
      const r = p.routing;
      const rule = [r.domains.length ? `domains ${r.domains.join(', ')}` : '', r.microthesauri.length ? `microthesauri ${r.microthesauri.join(', ')}` : '', r.descriptors.length ? `descriptors ${r.descriptors.join(', ')}` : ''].filter(Boolean).join('; ');
      (out[p.product_id] ??= {})[rep.source] = `none of the ${acts} acts ingested (${files.join(', ')}) carries a EuroVoc descriptor in this product's rule (${rule || 'empty'}); no units are invented to fill it`;
    }
  }
  return out;
}

const openDb = async (dir: string, big: boolean): Promise<Db> => {
  // A large write buffer for the store: fewer, bigger level-0 tables. Scratch data is short-lived,
  // so it skips compression. Tables of 16 MiB, not larger: LevelDB reads a compaction's inputs
  // (up to 25 tables' worth) through mmap, and those pages count in the build's RSS until the
  // inputs are deleted. With 64 MiB tables the 5M-unit benchmark build peaked at ~1 GiB of such
  // pages; with 16 MiB at 0.28 GiB, in the same time (BENCHMARKS.md). The reader keeps up to 1,000
  // tables open (classic-level's default): ~16 GB of store, about 6M units.
  const db = new Level<string, Uint8Array>(dir, {
    keyEncoding: 'utf8',
    valueEncoding: 'view',
    createIfMissing: true,
    errorIfExists: true,
    compression: big,
    writeBufferSize: big ? 32 << 20 : 16 << 20,
    maxFileSize: 16 << 20,
    cacheSize: 4 << 20,
  });
  await db.open();
  return db;
};

/** Forward vectors arrive in docid order; a flat file keeps them until the store can take them in order. */
class ForwardSpool {
  private readonly out;
  constructor(readonly path: string) {
    this.out = createWriteStream(path);
  }
  async append(docid: number, fwd: Buffer): Promise<void> {
    const head = Buffer.alloc(8);
    head.writeUInt32LE(docid, 0);
    head.writeUInt32LE(fwd.length, 4);
    this.out.write(head);
    if (!this.out.write(fwd)) await once(this.out, 'drain');
  }
  async close(): Promise<void> {
    this.out.end();
    await once(this.out, 'close');
  }
  async copyInto(w: BatchWriter): Promise<void> {
    let pending: Buffer = Buffer.alloc(0);
    for await (const chunk of createReadStream(this.path, { highWaterMark: 1 << 20 })) {
      pending = pending.length ? Buffer.concat([pending, chunk as Buffer]) : (chunk as Buffer);
      let off = 0;
      while (pending.length - off >= 8) {
        const docid = pending.readUInt32LE(off);
        const len = pending.readUInt32LE(off + 4);
        if (pending.length - off - 8 < len) break;
        await w.put(KEY.forward(docid), pending.subarray(off + 8, off + 8 + len)); // read chunks are never reused
        off += 8 + len;
      }
      pending = pending.subarray(off);
    }
  }
}

/**
 * Copies the r!<ref> -> docid entries of the scratch database into the store, in key order, and
 * writes the ref order (o!<block>, see RANK_BLOCK) that the reader breaks score ties with.
 */
export async function copyRefs(from: Db, w: BatchWriter, docs: number): Promise<void> {
  const ranks = new Uint32Array(docs);
  const range = { gte: 'r!', lt: 'r~' };
  const docidOf = (v: Uint8Array) => parseInt(Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8'), 16);
  let i = 0;
  let prev: string | null = null;
  let inJsOrder = true;
  for await (const [key, value] of from.iterator(range)) {
    await w.put(key, value.slice());
    const ref = key.slice(2);
    if (prev !== null && !(prev < ref)) inJsOrder = false;
    prev = ref;
    ranks[docidOf(value)] = i++;
  }
  if (i !== docs) throw new Error(`unit store: ${i} references for ${docs} units`);
  if (!inJsOrder) {
    // LevelDB orders keys by UTF-8 bytes, JavaScript strings by UTF-16 code units; the two differ
    // only for characters beyond U+FFFF. Rare: sort once more in the order the reader uses.
    const all: [string, number][] = [];
    for await (const [key, value] of from.iterator(range)) all.push([key.slice(2), docidOf(value)]);
    all.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    all.forEach(([, d], r) => (ranks[d] = r));
  }
  for (let b = 0; b * RANK_BLOCK < docs; b++) {
    const part = ranks.subarray(b * RANK_BLOCK, Math.min(docs, (b + 1) * RANK_BLOCK));
    await w.put(KEY.rank(b), new Uint8Array(part.buffer, part.byteOffset, part.byteLength));
  }
}

export async function buildUnitStore(
  cat: CatalogSrc,
  opts: BuildStoreOptions,
): Promise<StoreSummary & { report: string }> {
  const progress = opts.progress ?? (() => {});
  const root = resolve(opts.storeRoot);
  // Owner-only: the store is what is sold, never published (contract/private-dir.ts).
  const loose = await privateDir(root);
  if (loose !== null) progress(`${root} could be read by others (mode ${loose.toString(8)}): made it owner-only (700)`);
  for (const name of await removeStaleTemp(root)) progress(`removed ${name}, left by an interrupted build`);

  const bad = new BadRecordCounter();
  const onBad: BadRecordHandler = opts.skipBadRecords ? bad.handler : failOnBadRecord;
  const plan = planSources(cat);
  const productIds = cat.products.map((p) => p.product_id).sort();
  const listing = new Map<string, string[]>(); // source -> products naming it
  for (const p of cat.products) for (const s of p.sources) listing.set(s.source, [...(listing.get(s.source) ?? []), p.product_id].sort());
  const rules: RoutingRule[] = cat.products.map((p) => compileRule(p.product_id, p.routing)).sort((a, b) => (a.productId < b.productId ? -1 : 1));

  const storeDir = join(root, tmpName('store'));
  const scratchDir = join(root, tmpName('scratch'));
  const spoolPath = join(root, tmpName('forward'));
  const runDir = join(root, tmpName('postings'));
  let db: Db | null = null;
  let scratch: Db | null = null;
  let spool: ForwardSpool | null = null;

  try {
    db = await openDb(storeDir, true);
    scratch = await openDb(scratchDir, false);
    spool = new ForwardSpool(spoolPath);
    const out = new BatchWriter(db);
    const side = new BatchWriter(scratch);
    const index = new IndexWriter(productIds, runDir, opts.runPostings);
    for (const p of cat.products) index.watch(p.product_id, p.example_query);
    const previews = new PreviewPicker();
    const hash = createHash('sha256');
    const refs = new RefHashSet();
    let nextDoc = 0;

    const counts: Record<string, Record<string, { rows: number; units: number }>> = {};
    for (const p of cat.products) counts[p.product_id] = Object.fromEntries(p.sources.map((s) => [s.source, { rows: 0, units: 0 }]));
    const reports = new Map<string, SourceReport>();
    const licences: Record<string, UnitLicence> = {};

    /** Stores one unit in the given products (none: counted as routed nowhere, not stored). */
    const emit = async (rep: SourceReport, b: BuiltUnit, products: string[], file: string, where: string) => {
      rep.records++;
      if (products.length === 0) {
        rep.unrouted++;
        return;
      }
      const { ref } = b.unit;
      if (!refs.add(ref)) {
        // same hashes as an earlier reference: confirm against the references written so far
        await side.flush();
        if ((await scratch!.get(KEY.ref(ref))) !== undefined) {
          onBad(new IngestError(file, where, `duplicate unit ${ref}`));
          rep.duplicates++;
          return;
        }
      }
      const docid = nextDoc++;
      const body = Buffer.from(JSON.stringify({ unit: b.unit, products }));
      hash.update(body).update('\n');
      await out.put(KEY.doc(docid), body);
      await side.put(KEY.ref(ref), Buffer.from(hex(docid, 8)));
      const fwd = await index.add(docid, ref, b.searchText, products);
      if (fwd) await spool!.append(docid, fwd);
      rep.units++;
      rep.rows += b.unit.rows.length;
      for (const pid of products) {
        const c = counts[pid][rep.source];
        c.units++;
        c.rows += b.unit.rows.length;
      }
      previews.offer(products, b);
      if (nextDoc % 100_000 === 0) progress(`ingest: ${nextDoc} units`);
    };

    // EuroVoc tables come from a served source's 'eurovoc' data (never from a held one).
    let table = new Map<string, DescriptorPlacement>();
    let tablesFrom: string | null = null;
    for (const src of [...cat.sources.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
      if (src.held || !src.ruling) continue;
      const spec = src.data?.find((d) => d.adapter === 'eurovoc');
      if (!spec || tablesFrom) continue;
      table = await readEuroVocDescriptors(join(cat.root, spec.path), spec.path, onBad);
      tablesFrom = `${src.id} (${spec.path}, ${table.size} descriptors)`;
    }

    const actRoutes = new Map<string, { routes: Map<string, RouteResult>; lines: number }>();
    const routesFor = async (acts: string): Promise<Map<string, RouteResult>> => {
      let r = actRoutes.get(acts);
      if (r) return r.routes;
      progress(`routing: reading ${acts}`);
      r = { routes: new Map(), lines: 0 };
      for await (const a of readActs(join(cat.root, acts), acts, onBad)) {
        if (r.routes.has(a.celex)) {
          onBad(new IngestError(acts, String(a.line), `act ${a.celex} is listed twice`));
          continue;
        }
        r.routes.set(a.celex, routeAct(a.descriptors, rules, table));
        r.lines++;
      }
      actRoutes.set(acts, r);
      return r.routes;
    };
    /** An act that carries its descriptors with its text (EURLEX57K): routed as it is read. */
    const routeInline = (file: string, celex: string, descriptors: string[]): RouteResult => {
      let r = actRoutes.get(file);
      if (!r) actRoutes.set(file, (r = { routes: new Map(), lines: 0 }));
      const route = routeAct(descriptors, rules, table);
      r.routes.set(celex, route);
      r.lines++;
      return route;
    };

    for (const item of plan) {
      if (item.state !== 'served') continue;
      const src = item.src;
      const rep: SourceReport = { source: src.id, unit: src.unit!, records: 0, units: 0, rows: 0, unrouted: 0, duplicates: 0, noAct: 0, acts: new Map() };
      reports.set(src.id, rep);
      licences[src.id] = unitLicence(src);
      const listed = listing.get(src.id) ?? [];
      for (const spec of src.data!) {
        progress(`ingest: ${src.id} from ${spec.path} (${spec.adapter})`);
        await ingestSpec({
          cat,
          src,
          spec,
          path: join(cat.root, spec.path),
          listed,
          rep,
          onBad,
          emit: (b, products, file, where) => emit(rep, b, products, file, where),
          routesFor,
          routeAct: routeInline,
          staging: <T>(name: string) => new Staging<T>(scratch!, side, `s!${name}!`),
        });
      }
    }

    await out.flush();
    await side.flush();
    await spool.close();
    progress(`ingest done: ${nextDoc} units; building the search index`);
    const idx = await index.finish(out, progress);
    progress(`index: ${idx.terms} terms, ${idx.postings} postings; copying look-up tables`);
    await spool.copyInto(out);
    await copyRefs(scratch, out, nextDoc);

    hash.update(JSON.stringify(Object.entries(licences).sort()));
    hash.update(`\nformat ${STORE_FORMAT}`);
    const storeVersion = `store-${hash.digest('hex').slice(0, 12)}`;
    const productMeta: Record<string, StoreProductMeta> = {};
    for (const pid of productIds) {
      const by_source = counts[pid];
      productMeta[pid] = {
        units: Object.values(by_source).reduce((s, c) => s + c.units, 0),
        rows: Object.values(by_source).reduce((s, c) => s + c.rows, 0),
        by_source,
      };
    }
    const meta: StoreMeta = { format: STORE_FORMAT, store_version: storeVersion, built_at: opts.builtAt, products: productMeta };
    const indexMeta: StoreIndexMeta = { tokenizer: TOKENIZER, doc_count: nextDoc, bm25: { ...BM25 }, products: index.productStats() };
    await out.put(KEY.index, Buffer.from(JSON.stringify(indexMeta)));
    await out.put(KEY.licences, Buffer.from(JSON.stringify(licences)));
    await out.flush();
    // the last write is synced; the fsync pass below covers every table file as well
    await db.put(KEY.meta, Buffer.from(JSON.stringify(meta)), { sync: true });
    await db.close();
    db = null;
    await scratch.close();
    scratch = null;
    await rm(scratchDir, { recursive: true, force: true });
    await rm(spoolPath, { force: true });
    await rm(runDir, { recursive: true, force: true });
    await fsyncTree(storeDir);

    const { previous, reused } = await publishStore(root, storeDir, storeVersion);
    const pruned = await pruneStores(root, [storeVersion, previous, ...(opts.keepVersions ?? [])]);
    progress(`store ${storeVersion} ${reused ? 'unchanged (same content)' : 'written'}; CURRENT -> ${storeVersion}${pruned.length ? `; pruned ${pruned.join(', ')}` : ''}`);

    const notes: Record<string, string> = {};
    for (const item of plan) {
      if (item.state === 'no-data' || item.state === 'tables') notes[item.id] = item.reason;
      if (item.state === 'served' && (reports.get(item.id)?.units ?? 0) === 0) notes[item.id] = 'its data produced no units (see the build report)';
    }
    const sources: Record<string, SourceCount> = {};
    for (const rep of reports.values()) sources[rep.source] = { units: rep.units, rows: rep.rows };
    const summary: StoreSummary = {
      store_version: storeVersion,
      computed_at: opts.builtAt,
      products: counts,
      notes,
      product_notes: routingNotes(cat, reports, actRoutes, counts),
      sources,
      examples: index.examples(),
      previews: previews.result(new Map(cat.products.map((p) => [p.product_id, p.sources.map((s) => s.source)]))),
    };
    const report = formatReport({ storeVersion, plan, reports, counts, actRoutes, tablesFrom, bad, skip: opts.skipBadRecords, units: nextDoc, index: idx });
    return { ...summary, report };
  } catch (err) {
    await db?.close().catch(() => {});
    await scratch?.close().catch(() => {});
    await spool?.close().catch(() => {});
    await rm(storeDir, { recursive: true, force: true });
    await rm(scratchDir, { recursive: true, force: true });
    await rm(spoolPath, { force: true });
    await rm(runDir, { recursive: true, force: true });
    throw err;
  }
}
