// Read side of the unit store (format: contract/store-format.ts). Opens the store CURRENT names
// and answers look-ups by reference and BM25 search within a product. This file is the storage:
// the LevelDB part (meta, licences, index statistics, term dictionary) and the plain files
// (store-files.ts). Search itself is postings.ts (a cursor over one posting list), evaluation.ts
// (block-max MaxScore: the exact top k) and scoring.ts (the top list and its order).
// Results equal a brute-force BM25: score descending, then unit reference ascending.
import { join } from 'node:path';
import { Level } from 'level';
import { readCurrentVersion } from '../../contract/store-current.ts';
import {
  CURRENT_FILE,
  KEY,
  STORE_FORMAT,
  TOKENIZER,
  tokenize,
  type StoreIndexMeta,
  type StoreMeta,
  type StoredUnit,
  type TermHeader,
  type Unit,
  type UnitLicence,
  type UnitStoreReader,
} from '../../contract/store-format.ts';
import { MAX_TERMS } from './evaluation.ts';
import type { Hit } from './scoring.ts';
import { SearchThreads } from './search-threads.ts';
import { damaged, parseJson, StoreFiles } from './store-files.ts';

type Db = Level<string, Uint8Array>;

const text = (v: Uint8Array): string => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
const json = <T>(v: Uint8Array): T => JSON.parse(text(v)) as T;

class LevelUnitStore implements UnitStoreReader {
  constructor(
    private readonly db: Db,
    readonly meta: StoreMeta,
    private readonly licences: Record<string, UnitLicence>,
    private readonly index: StoreIndexMeta,
    private readonly files: StoreFiles,
    private readonly threads: SearchThreads,
  ) {}

  private toUnit(stored: StoredUnit): Unit {
    return { ...stored.unit, licence: this.licences[stored.unit.source] } as Unit;
  }

  async getUnits(productId: string, refs: string[]): Promise<{ units: Unit[]; unknown: string[] }> {
    const units: Unit[] = [];
    const unknown: string[] = [];
    if (!(productId in this.meta.products) || refs.length === 0) return { units, unknown: [...refs] };
    const docids = await this.files.docids(refs);
    const stored = await this.files.units(docids.filter((d) => d >= 0));
    let j = 0;
    refs.forEach((ref, i) => {
      if (docids[i] < 0) return void unknown.push(ref);
      const s = stored[j++];
      if (s.unit.ref !== ref) throw new Error(`unit store ${this.meta.store_version}: docid ${docids[i]} holds ${s.unit.ref}, not ${ref} (the store is damaged: rebuild it with lds build)`); // D2
      // a unit that exists but belongs to other products is unknown within this one
      if (!s.products.includes(productId)) unknown.push(ref);
      else units.push(this.toUnit(s));
    });
    return { units, unknown };
  }

  async search(productId: string, query: string, limit: number): Promise<Unit[]> {
    const hits = await this.rank(productId, query, limit);
    if (hits.length === 0) return [];
    return (await this.files.units(hits.map((h) => h.docid))).map((s) => this.toUnit(s));
  }

  /** The top `limit` units of a product for a query, with their exact BM25 scores (docids: reference order). */
  async rank(productId: string, query: string, limit: number): Promise<Hit[]> {
    const k = Math.floor(limit);
    const stats = this.index.products[productId];
    if (!(k > 0) || !stats || stats.docs === 0) return [];
    // the query's distinct terms in sorted order: the order exact scores are summed in
    const words = [...new Set(tokenize(query))].sort();
    if (words.length === 0) return [];
    const found = await this.db.getMany(words.map((w) => KEY.term(productId, w)));
    // a word no unit of the product has adds nothing; of the others, the first MAX_TERMS in sorted
    // order are ranked (the query length bound, maxQueryChars, makes more a rare case)
    const headers = found
      .flatMap((v, i) => (v ? [parseJson<TermHeader>(text(v), () => damaged(this.meta.store_version, `the term header of ${words[i]} in ${productId} is not JSON`))] : []))
      .slice(0, MAX_TERMS);
    if (headers.length === 0) return [];
    const lists = await Promise.all(headers.map((h) => this.files.postingList(h)));
    return this.threads.topK(lists, headers, stats, this.files.lengths, k);
  }

  async close(): Promise<void> {
    await this.threads.close();
    await this.files.close();
    await this.db.close();
  }
}

/**
 * Posting lists kept in memory, least recently used out first: the lists of frequent words, which
 * most searches read, stay resident (at 5M units the longest is ~5 MB).
 */
export const POSTING_CACHE_BYTES = 256 << 20;

export interface OpenUnitStoreOptions {
  /** Bytes of posting lists kept in memory (default POSTING_CACHE_BYTES; 0: none). */
  postingCacheBytes?: number;
  /** LevelDB block cache in bytes; small by default, the OS page cache does the rest. */
  cacheSize?: number;
  /** Open this store version (a `store-<12 hex>` folder of the root) instead of the one CURRENT names. */
  version?: string;
  /** Threads one search may use, the calling one included (default defaultSearchThreads() in search-settings.ts: 2 where there are 2 cores; 1: no helpers). */
  searchThreads?: number;
  /** Tests: split searches with at least this many postings (default SPLIT_MIN_POSTINGS). */
  splitMinPostings?: number;
}

/** Opening failed because another process holds the unit store's LevelDB lock. */
export class UnitStoreLockedError extends Error {}

/** Opens the store that <storeRoot>/CURRENT names. Throws with a clear message when there is none. */
export async function openUnitStore(storeRoot: string, opts: OpenUnitStoreOptions = {}): Promise<UnitStoreReader & { rank: LevelUnitStore['rank'] }> {
  const version = opts.version ?? (await readCurrentVersion(storeRoot));
  if (version === null) throw new Error(`no unit store in ${storeRoot} (no ${CURRENT_FILE} file naming a store version): build it first (npm run build)`);
  // The service only reads; LevelDB still takes a lock, which also tells the build's pruning that
  // this store is in use.
  const db: Db = new Level<string, Uint8Array>(join(storeRoot, version), {
    keyEncoding: 'utf8',
    valueEncoding: 'view',
    createIfMissing: false,
    cacheSize: opts.cacheSize ?? 8 << 20,
  });
  try {
    await db.open();
  } catch (err) {
    const dir = join(storeRoot, version);
    if ((err as { cause?: { code?: string } }).cause?.code === 'LEVEL_LOCKED') {
      throw new UnitStoreLockedError(
        `the unit store database ${dir} is held by another process (a running service, or a build pruning it). A LevelDB opens in one process only: ` +
          'stop the other process, or give each service instance its own copy of the unit store (copy the store folder and point LDS_STORE_DIR at the copy); ' +
          'to run several instances on one ledger, use the PostgreSQL ledger (LDS_LEDGER_URL=postgres://...).',
        { cause: err },
      );
    }
    throw new Error(`the unit store database ${dir} could not be opened: ${(err as Error).message}${(err as { cause?: Error }).cause ? ` (${(err as { cause: Error }).cause.message})` : ''}`, { cause: err });
  }
  try {
    const [m, l, x] = await db.getMany([KEY.meta, KEY.licences, KEY.index]);
    if (!m || !l || !x) throw new Error(`unit store ${version} is incomplete (no meta)`);
    const meta = json<StoreMeta>(m);
    const index = json<StoreIndexMeta>(x);
    if (meta.format !== STORE_FORMAT) throw new Error(`unit store ${version} has format ${meta.format}, this service reads format ${STORE_FORMAT}: rebuild it with lds build`);
    if (meta.store_version !== version) throw new Error(`unit store ${version}: unexpected version ${meta.store_version}`);
    if (index.tokenizer !== TOKENIZER) throw new Error(`unit store ${version} was built with tokenizer ${index.tokenizer}, this service uses ${TOKENIZER}: rebuild it with lds build`);
    const threads = new SearchThreads(opts.searchThreads, opts.splitMinPostings);
    const files = await StoreFiles.open(join(storeRoot, version), version, index.doc_count, opts.postingCacheBytes ?? POSTING_CACHE_BYTES);
    return new LevelUnitStore(db, meta, json<Record<string, UnitLicence>>(l), index, files, threads);
  } catch (err) {
    await db.close();
    throw err;
  }
}
