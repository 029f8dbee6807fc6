// Builds the private unit store from catalog-src: ingests every served source through its
// adapter, routes EUR-Lex material through EuroVoc, writes units, product membership and the
// per-product BM25 indexes into a new store folder (format: contract/store-format.ts), and
// switches CURRENT to it only once it is complete. Held sources are never opened. Counts in the
// returned summary are what was written.
//
// Every large thing is written once, front to back, as plain files: unit records as they are read
// (unit-file.ts), references in sorted runs merged at the end (ref-order.ts), postings in sorted
// runs merged term by term at the end (index-writer.ts). The LevelDB of the store only takes the
// small keyed part (meta, licences, statistics, term headers); a scratch LevelDB is opened only
// for sources whose records must be grouped first (staging.ts).
import { ingestProgress } from './ingest-progress.ts';
import { createHash } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import { privateDir } from '../../contract/private-dir.ts';
import { join, resolve } from 'node:path';
import { Level } from 'level';
import {
  KEY,
  STORE_FILES,
  STORE_FORMAT,
  TOKENIZER,
  BM25,
  type StoreIndexMeta,
  type StoreMeta,
  type StoreProductMeta,
  type StoredUnit,
  type UnitLicence,
} from '../../contract/store-format.ts';
import { readActs } from '../ingest/acts.ts';
import { BadRecordCounter, failOnBadRecord, IngestError, type BadRecordHandler } from '../ingest/errors.ts';
import { labelKey } from '../ingest/eurlex-triples.ts';
import { readEuroVocDescriptors, type DescriptorPlacement } from '../ingest/eurovoc.ts';
import type { CatalogSrc, Source, SourceCount, StoreSummary } from '../model.ts';
import { BatchWriter, type Db } from './batch.ts';
import { IndexWriter } from './index-writer.ts';
import { ingestSpec } from './ingest-spec.ts';
import { PreviewPicker } from './preview.ts';
import { RefOrder } from './ref-order.ts';
import { RefHashSet } from './ref-set.ts';
import { fsyncTree, removeStaleTemp, tmpName } from '../durable.ts';
import { publishStore, pruneStores } from './publish.ts';
import { formatReport, type SourceReport } from './report.ts';
import { compileRule, routeAct, type RouteResult, type RoutingRule } from './routing.ts';
import { Staging } from './staging.ts';
import { UnitFile } from './unit-file.ts';
import { prepare, type PreparedUnit } from './prepared.ts';
import { unitLicence } from './units.ts';

export interface BuildStoreOptions {
  storeRoot: string;
  builtAt: string;
  skipBadRecords: boolean;
  progress?: (msg: string) => void;
  /** Postings buffered in memory before a run is spilled (tests lower it to exercise spilling). */
  runPostings?: number;
  /** References buffered in memory before a run is spilled (tests lower it likewise). */
  runRefs?: number;
  /**
   * Threads that turn the lines of large JSON Lines files into units beside the main one: default
   * one per core for files of PARALLEL_MIN_BYTES or more; 0 reads every file on the main thread;
   * tests give a number to use them on the small fixture files too.
   */
  workers?: number;
  /** Bytes of lines per block handed to a worker (tests lower it to cut a small file into many blocks). */
  workerBlockBytes?: number;
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

/** The LevelDB of the store (small: meta, statistics, term headers) or the scratch one (staging). */
const openDb = async (dir: string): Promise<Db> => {
  const db = new Level<string, Uint8Array>(dir, {
    keyEncoding: 'utf8',
    valueEncoding: 'view',
    createIfMissing: true,
    errorIfExists: true,
    writeBufferSize: 16 << 20,
    maxFileSize: 16 << 20,
    cacheSize: 4 << 20,
  });
  await db.open();
  return db;
};

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
  const runDir = join(root, tmpName('postings'));
  const refRunDir = join(root, tmpName('refs'));
  let db: Db | null = null;
  let scratch = null as Db | null;
  let units: UnitFile | null = null;

  try {
    db = await openDb(storeDir);
    await mkdir(refRunDir);
    units = await UnitFile.create(join(storeDir, STORE_FILES.units));
    const unitFile = units;
    const out = new BatchWriter(db);
    // the scratch database, opened when a source first stages records
    let side: { db: Db; w: BatchWriter } | null = null;
    const staging = async () => {
      if (!side) {
        scratch = await openDb(scratchDir);
        side = { db: scratch, w: new BatchWriter(scratch) };
      }
      return side;
    };
    const index = new IndexWriter(productIds, runDir, opts.runPostings);
    for (const p of cat.products) index.watch(p.product_id, p.example_query);
    const refOrder = new RefOrder(refRunDir, opts.runRefs);
    const previews = new PreviewPicker();
    const hash = createHash('sha256');
    const refs = new RefHashSet();
    const collided = new Set<string>(); // references whose hash pair an earlier, different reference has
    const productJson = new WeakMap<string[], string>(); // product lists are shared by the units of an act
    const counts: Record<string, Record<string, { rows: number; units: number }>> = {};
    for (const p of cat.products) counts[p.product_id] = Object.fromEntries(p.sources.map((s) => [s.source, { rows: 0, units: 0 }]));
    const reports = new Map<string, SourceReport>();
    const licences: Record<string, UnitLicence> = {};

    /** true when a unit of this reference is already stored. */
    const stored = async (ref: string, id: number): Promise<boolean> => {
      const prior = refs.add(ref, id);
      if (prior < 0) return false;
      // same hashes as an earlier reference: compare with it
      if (collided.has(ref) || (JSON.parse(await unitFile.read(prior)) as StoredUnit).unit.ref === ref) return true;
      collided.add(ref);
      return false;
    };

    /** Stores one unit in the given products (none: counted as routed nowhere, not stored). */
    const emit = async (rep: SourceReport, u: PreparedUnit, products: string[], file: string, where: string) => {
      rep.records++;
      if (products.length === 0) {
        rep.unrouted++;
        return;
      }
      const { ref } = u;
      if (await stored(ref, unitFile.count)) {
        onBad(new IngestError(file, where, `duplicate unit ${ref}`));
        rep.duplicates++;
        return;
      }
      let productsJson = productJson.get(products);
      if (productsJson === undefined) productJson.set(products, (productsJson = JSON.stringify(products)));
      const id = await unitFile.append(u.json, productsJson);
      hash.update(u.digest).update(`${productsJson}\n`);
      await refOrder.add(ref, id);
      await index.addTerms(id, u.termIds, u.tfs, u.termStart, u.termEnd, u.dl, products);
      rep.units++;
      rep.rows += u.rows;
      for (const pid of products) {
        const c = counts[pid][rep.source];
        c.units++;
        c.rows += u.rows;
      }
      previews.offer(products, rep.source, u.group, u.unit);
      meter.unit();
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

    // English label -> descriptor id, for acts that carry labels (eurlex-triples); built on first use.
    let byLabel: Map<string, string> | null = null;
    const descriptorOfLabel = (label: string): string | undefined => {
      if (!byLabel) {
        byLabel = new Map();
        for (const [id, p] of table) if (p.label) byLabel.set(labelKey(p.label), id);
      }
      return byLabel.get(labelKey(label));
    };
    // Which data entry each act's P units came through: one act, one set of units.
    const actOwner = new Map<string, string>();
    const claimAct = (celex: string, entry: string): string | null => {
      const had = actOwner.get(celex);
      if (had === undefined) actOwner.set(celex, entry);
      return had === undefined || had === entry ? null : had;
    };

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

    // progress on the terminal: phase, units, rate and time left by the bytes of data read
    const served = plan.flatMap((item) => (item.state === 'served' ? item.src.data!.map((spec) => join(cat.root, spec.path)) : []));
    const sizeOf = async (p: string) => stat(p).then((s) => (s.isFile() ? s.size : 0), () => 0); // a folder counts 0
    const sizes = new Map<string, number>();
    for (const p of served) sizes.set(p, await sizeOf(p));
    // a file read by two sources (aligned paragraphs and rows) is read, and counted, twice
    const meter = ingestProgress(served.reduce((a, p) => a + (sizes.get(p) ?? 0), 0), progress);

    for (const item of plan) {
      if (item.state !== 'served') continue;
      const src = item.src;
      const rep: SourceReport = { source: src.id, unit: src.unit!, records: 0, units: 0, rows: 0, unrouted: 0, duplicates: 0, noAct: 0, acts: new Map() };
      reports.set(src.id, rep);
      licences[src.id] = unitLicence(src);
      const listed = listing.get(src.id) ?? [];
      for (const spec of src.data!) {
        progress(`ingest: ${src.id} from ${spec.path} (${spec.adapter})`);
        meter.file(`${src.id} from ${spec.path}`, sizes.get(join(cat.root, spec.path)) ?? 0);
        await ingestSpec({
          cat,
          src,
          spec,
          path: join(cat.root, spec.path),
          listed,
          rep,
          onBad,
          emit: (b, products, file, where) => emit(rep, prepare(b, index), products, file, where),
          emitPrepared: (u, products, file, where) => emit(rep, u, products, file, where),
          index,
          workers: opts.workers,
          workerBlockBytes: opts.workerBlockBytes,
          routesFor,
          routeAct: routeInline,
          descriptorOfLabel,
          readAt: (bytes: number) => meter.readAt(bytes),
          claimAct,
          staging: <T>(name: string) => new Staging<T>(staging, `s!${name}!`),
        });
      }
    }

    const nextDoc = unitFile.count;
    progress(`ingest done: ${nextDoc} units; putting references in order`);
    const docidOf = await refOrder.finish(join(storeDir, STORE_FILES.refs), join(storeDir, STORE_FILES.refIndex));
    await unitFile.finish(join(storeDir, STORE_FILES.unitIndex), docidOf);
    units = null;
    progress('building the search index');
    const idx = await index.finish(docidOf, { lengths: join(storeDir, STORE_FILES.lengths), postings: join(storeDir, STORE_FILES.postings) }, out, progress);
    progress(`index: ${idx.terms} terms, ${idx.postings} postings`);

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
    await scratch?.close();
    scratch = null;
    await rm(scratchDir, { recursive: true, force: true });
    await rm(runDir, { recursive: true, force: true });
    await rm(refRunDir, { recursive: true, force: true });
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
    await units?.abort();
    await rm(storeDir, { recursive: true, force: true });
    await rm(scratchDir, { recursive: true, force: true });
    await rm(runDir, { recursive: true, force: true });
    await rm(refRunDir, { recursive: true, force: true });
    throw err;
  }
}
