// Read side of the unit store (format: contract/store-format.ts). Opens the store CURRENT names
// and answers look-ups by reference and BM25 search within a product.
//
// Search never loads a whole index or a whole posting list: each term's postings are stored in
// impact order, in chunks with an upper bound per chunk. The reader reads chunks of the most
// promising term first, accumulating bounds on each document's score, and stops as soon as no
// unread posting can change the top `limit`; the few remaining candidates are then scored exactly
// from their forward vectors. Results are identical for an identical store and query: score
// descending, then unit reference ascending.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import {
  CURRENT_FILE,
  KEY,
  STORE_FORMAT,
  TOKENIZER,
  bm25Idf,
  bm25Impact,
  decodeChunk,
  tokenize,
  type StoreIndexMeta,
  type StoreMeta,
  type StoredUnit,
  type TermHeader,
  type Unit,
  type UnitLicence,
  type UnitStoreReader,
} from '../contract/store-format.ts';

type Db = Level<string, Uint8Array>;

const json = <T>(v: Uint8Array): T => JSON.parse(Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8')) as T;

/** Reads the forward vector in place: document length, ref and the tf of each wanted term. */
function scanForward(v: Uint8Array, wanted: number[], tfs: number[]): { dl: number; ref: () => string } {
  const b = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  const dl = b.readUInt32LE(0);
  const n = b.readUInt32LE(4);
  tfs.fill(0);
  for (let i = 0; i < n; i++) {
    const id = b.readUInt32LE(8 + i * 8);
    const k = wanted.indexOf(id);
    if (k >= 0) tfs[k] = b.readUInt32LE(12 + i * 8);
  }
  return { dl, ref: () => b.toString('utf8', 8 + n * 8) };
}

/** At most this many distinct query words are used (the first in sorted order). */
const MAX_TERMS = 31;
/** Candidate count below which the rest are scored exactly instead of reading more postings. */
const CANDIDATES = 1024;

function grow<T extends Float64Array | Uint32Array>(a: T): T {
  const next = new (a.constructor as new (n: number) => T)(a.length * 2);
  next.set(a);
  return next;
}

/** The k-th largest of acc[2 * ids[i]] (k >= 1, k <= ids.length), by quickselect on a copy. */
function kthLargest(ids: Uint32Array, acc: Float64Array, k: number): number {
  const a = new Float64Array(ids.length);
  for (let i = 0; i < ids.length; i++) a[i] = acc[2 * ids[i]];
  let lo = 0;
  let hi = a.length - 1;
  const want = k - 1; // index in descending order
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else return a[want];
  }
  return a[want];
}

interface Hit {
  score: number;
  ref: string;
  docid: number;
}

/** true when a ranks before b: higher score, then smaller ref. */
const before = (a: Hit, b: Hit) => a.score > b.score || (a.score === b.score && a.ref < b.ref);

/**
 * Per docid, interleaved so one cache line serves both (the arrays are larger than the CPU
 * caches at scale, and this loop is bound by memory access): acc[2d] = score lower bound,
 * acc[2d+1] = bit set of the query terms the document was seen in.
 */
type Accumulators = Float64Array;

class LevelUnitStore implements UnitStoreReader {
  private readonly pool: Accumulators[] = [];

  /** Zeroed accumulators sized for every docid; returned to the pool zeroed after each search. */
  private borrow(): Accumulators {
    return this.pool.pop() ?? new Float64Array(2 * this.index.doc_count);
  }

  constructor(
    private readonly db: Db,
    readonly meta: StoreMeta,
    private readonly licences: Record<string, UnitLicence>,
    private readonly index: StoreIndexMeta,
  ) {}

  private toUnit(stored: StoredUnit): Unit {
    return { ...stored.unit, licence: this.licences[stored.unit.source] } as Unit;
  }

  async getUnits(productId: string, refs: string[]): Promise<{ units: Unit[]; unknown: string[] }> {
    const units: Unit[] = [];
    const unknown: string[] = [];
    if (!(productId in this.meta.products) || refs.length === 0) return { units, unknown: [...refs] };
    const ids = await this.db.getMany(refs.map((r) => KEY.ref(r)));
    const docKeys = ids.map((id) => (id ? `d!${Buffer.from(id).toString('utf8')}` : null));
    const docs = await this.db.getMany(docKeys.filter((k): k is string => k !== null));
    let j = 0;
    refs.forEach((ref, i) => {
      if (!docKeys[i]) return void unknown.push(ref);
      const stored = json<StoredUnit>(docs[j++]!);
      // a unit that exists but belongs to other products is unknown within this one
      if (!stored.products.includes(productId)) unknown.push(ref);
      else units.push(this.toUnit(stored));
    });
    return { units, unknown };
  }

  async search(productId: string, query: string, limit: number): Promise<Unit[]> {
    const hits = await this.rank(productId, query, limit);
    if (hits.length === 0) return [];
    const docs = await this.db.getMany(hits.map((h) => KEY.doc(h.docid)));
    return docs.map((d) => this.toUnit(json<StoredUnit>(d!)));
  }

  /** The top `limit` documents of a product for a query, with their exact BM25 scores. */
  async rank(productId: string, query: string, limit: number): Promise<Hit[]> {
    const k = Math.floor(limit);
    const stats = this.index.products[productId];
    if (!(k > 0) || !stats || stats.docs === 0) return [];
    const words = [...new Set(tokenize(query))].sort().slice(0, MAX_TERMS);
    if (words.length === 0) return [];
    const found = await this.db.getMany(words.map((w) => KEY.term(productId, w)));
    // terms in a fixed order, so every exact score is summed in the same order
    const terms = found.flatMap((v) => (v ? [json<TermHeader>(v)] : [])).map((h, i) => ({ h, idf: bm25Idf(stats.docs, h.df), next: 0, bit: 2 ** i }));
    if (terms.length === 0) return [];
    const bound = (t: (typeof terms)[number]) => (t.next < t.h.n.length ? t.h.max[t.next] : 0);

    // Phase 1: read chunks of the term with the highest remaining bound and accumulate, per
    // document, a lower bound of its score (impacts seen so far) and which terms it was seen in.
    // Accumulators are dense arrays over docids, borrowed from a pool (searches may interleave).
    const acc = this.borrow();
    let docs = new Uint32Array(1024);
    let count = 0;
    let candidates: number[] = [];
    let sinceCheck = 0; // postings read since the last stop test
    try {
      for (;;) {
        let best: (typeof terms)[number] | null = null;
        for (const t of terms) if (t.next < t.h.n.length && (!best || bound(t) > bound(best))) best = t;
        if (best) {
          const raw = await this.db.get(KEY.chunk(productId, best.h.id, best.next));
          if (!raw) throw new Error(`unit store ${this.meta.store_version}: missing index chunk (${productId}, term ${best.h.id})`);
          best.next++;
          const { runs, docids } = decodeChunk(raw);
          const bit = best.bit;
          sinceCheck += docids.length;
          for (let r = 0, at = 0; r < runs.length; r += 2) {
            const impact = runs[r];
            for (const end = at + runs[r + 1]; at < end; at++) {
              const d = docids[at];
              const m = acc[2 * d + 1];
              if (m === 0) {
                if (count === docs.length) docs = grow(docs);
                docs[count++] = d;
              }
              acc[2 * d] += impact;
              acc[2 * d + 1] = m | bit;
            }
          }
        }
        const more = terms.some((t) => t.next < t.h.n.length);
        // The stop test costs O(documents seen); running it only after reading as many postings
        // again as there are documents seen keeps the total linear in the postings read.
        if (more && (count < k || sinceCheck < Math.max(256, count))) continue;
        sinceCheck = 0;
        // Stop test. kth = the k-th best lower bound (-Infinity if fewer than k documents). An
        // unseen document scores at most `unseen`; a seen one at most its lower bound plus the
        // bounds of the terms it was not seen in yet. Documents that cannot reach kth are out.
        const unseen = terms.reduce((s, t) => s + bound(t), 0);
        const kth = count < k ? -Infinity : kthLargest(docs.subarray(0, count), acc, k);
        const eps = 1e-9 * Math.max(1, Math.abs(kth)); // slack for summation order; exact scores decide below
        if (more && !(unseen < kth - eps)) continue;
        // what a document may still gain, by the set of terms it was seen in
        const pending = terms.filter((t) => bound(t) > 0).map((t) => [t.bit, bound(t)] as const);
        const table = terms.length <= 10 ? new Float64Array(2 ** terms.length) : null;
        const gain = (seen: number) => {
          let g = 0;
          for (const [bit, b] of pending) if (!(seen & bit)) g += b;
          return g;
        };
        if (table) for (let m = 0; m < table.length; m++) table[m] = gain(m);
        const cand: number[] = [];
        let open = 0;
        for (let i = 0; i < count; i++) {
          const d = docs[i];
          const lb = acc[2 * d];
          const seen = acc[2 * d + 1];
          const ub = lb + (table ? table[seen] : gain(seen));
          if (ub >= kth - eps) {
            cand.push(d);
            if (ub > lb) open++;
          }
        }
        // Few enough candidates (or nothing left to learn from the lists): score them exactly.
        // Fetching a forward vector costs about as much as reading a few hundred postings, so
        // up to ~1000 candidates are cheaper to score than to narrow down further.
        if (!more || open === 0 || cand.length <= Math.max(4 * k + 64, CANDIDATES)) {
          candidates = cand;
          break;
        }
      }
    } finally {
      for (let i = 0; i < count; i++) {
        acc[2 * docs[i]] = 0;
        acc[2 * docs[i] + 1] = 0;
      }
      this.pool.push(acc);
    }

    // Phase 2: exact scores from the forward vectors, summed in term order; ties by reference.
    const avgdl = stats.total_len / stats.docs;
    const ids = terms.map((t) => t.h.id);
    const tfs = new Array<number>(terms.length).fill(0);
    const vectors = await this.db.getMany(candidates.map((d) => KEY.forward(d)));
    const hits: Hit[] = vectors.map((v, i) => {
      if (!v) throw new Error(`unit store ${this.meta.store_version}: missing forward vector of document ${candidates[i]}`);
      const f = scanForward(v, ids, tfs);
      let score = 0;
      for (let j = 0; j < terms.length; j++) if (tfs[j] > 0) score += bm25Impact(terms[j].idf, tfs[j], f.dl, avgdl);
      return { score, ref: f.ref(), docid: candidates[i] };
    });
    hits.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
    return hits.slice(0, k);
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

export interface OpenUnitStoreOptions {
  /** LevelDB block cache in bytes; small by default, the OS page cache does the rest. */
  cacheSize?: number;
}

/** Opens the store that <storeRoot>/CURRENT names. Throws with a clear message when there is none. */
export async function openUnitStore(storeRoot: string, opts: OpenUnitStoreOptions = {}): Promise<UnitStoreReader & { rank: LevelUnitStore['rank'] }> {
  let version: string;
  try {
    version = (await readFile(join(storeRoot, CURRENT_FILE), 'utf8')).trim();
  } catch {
    throw new Error(`no unit store in ${storeRoot} (no ${CURRENT_FILE} file): build it first (npm run build)`);
  }
  // The service only reads; LevelDB still takes a lock, which also tells the build's pruning that
  // this store is in use.
  const db: Db = new Level<string, Uint8Array>(join(storeRoot, version), {
    keyEncoding: 'utf8',
    valueEncoding: 'view',
    createIfMissing: false,
    cacheSize: opts.cacheSize ?? 8 << 20,
  });
  await db.open();
  try {
    const [m, l, x] = await db.getMany([KEY.meta, KEY.licences, KEY.index]);
    if (!m || !l || !x) throw new Error(`unit store ${version} is incomplete (no meta)`);
    const meta = json<StoreMeta>(m);
    const index = json<StoreIndexMeta>(x);
    if (meta.format !== STORE_FORMAT || meta.store_version !== version) throw new Error(`unit store ${version}: unexpected format ${meta.format} / version ${meta.store_version}`);
    if (index.tokenizer !== TOKENIZER) throw new Error(`unit store ${version} was built with tokenizer ${index.tokenizer}, this service uses ${TOKENIZER}: rebuild the store`);
    return new LevelUnitStore(db, meta, json<Record<string, UnitLicence>>(l), index);
  } catch (err) {
    await db.close();
    throw err;
  }
}
