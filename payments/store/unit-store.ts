// Read side of the unit store (format: contract/store-format.ts). Opens the store CURRENT names
// and answers look-ups by reference and BM25 search within a product.
//
// Search never loads a whole index: each term's postings are stored in impact order, in chunks
// with an upper bound per chunk. The reader reads chunks in bound order, in a few large rounds,
// accumulating bounds on each document's score in arrays indexed in the order documents are first
// seen (a bit map in cache says whether a posting's document is new). Once no unread document can
// enter the top `limit` it follows only the remaining candidates (a bit map filters a frequent
// term's postings to them), and stops when their scores are known, or when scoring the last
// undecided ones from their forward vectors is cheaper than reading on. While it reads, the exact
// scores of the k best documents so far (from their forward vectors, when that costs no more than
// what was read) give a higher threshold than their lower bounds, so it closes sooner. Exact
// scores are summed in query-term order; ties are broken by the store's ref order (o!), so no unit
// is read before the final `limit`.
// Results equal a brute-force BM25: score descending, then unit reference ascending.
import { join } from 'node:path';
import { Level } from 'level';
import { readCurrentVersion } from '../../contract/store-current.ts';
import {
  CURRENT_FILE,
  KEY,
  RANK_BLOCK,
  STORE_FORMAT,
  TOKENIZER,
  bm25Idf,
  bm25Impact,
  decodeChunk,
  tokenize,
  type ProductIndexStats,
  type StoreIndexMeta,
  type StoreMeta,
  type StoredUnit,
  type TermHeader,
  type Unit,
  type UnitLicence,
  type UnitStoreReader,
} from '../../contract/store-format.ts';

type Db = Level<string, Uint8Array>;

const json = <T>(v: Uint8Array): T => JSON.parse(Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8')) as T;

/** Reads the forward vector in place: the tf of each wanted term into tfs; returns the document length. */
function scanForward(v: Uint8Array, wanted: number[], tfs: number[]): number {
  const b = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  const dl = b.readUInt32LE(0);
  const n = b.readUInt32LE(4);
  tfs.fill(0);
  for (let i = 0; i < n; i++) {
    const id = b.readUInt32LE(8 + i * 8);
    const k = wanted.indexOf(id);
    if (k >= 0) tfs[k] = b.readUInt32LE(12 + i * 8);
  }
  return dl;
}

/** At most this many distinct query words are used (the first in sorted order). */
const MAX_TERMS = 31;
/**
 * What scoring one document from its forward vector (a random LevelDB read) costs, in postings
 * read from the impact-ordered lists. Decides when to stop reading lists and score the remaining
 * undecided candidates from their forward vectors instead.
 */
const FORWARD_COST = 1000;
/** What scanning a posting once more costs, relative to reading it the first time. */
const RESCAN_COST = 0.2;
/** Postings read in the first round of a search; each later round reads as many as all before. */
const ROUND = 4096;
/** Documents a search's dense arrays hold at first; they double as needed and stay with the pool. */
const DENSE = 1024;

function bitCount(m: number): number {
  let c = 0;
  for (; m; m &= m - 1) c++;
  return c;
}

function grow<T extends Float64Array | Uint32Array | Int32Array>(a: T): T {
  const next = new (a.constructor as new (n: number) => T)(a.length * 2);
  next.set(a);
  return next;
}

/** The k-th largest of lb[ids[i]] (k >= 1, k <= n), by quickselect on a copy. */
function kthLargest(ids: Uint32Array, n: number, lb: Float64Array, k: number): number {
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = lb[ids[i]];
  let lo = 0;
  let hi = n - 1;
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

export interface Hit {
  score: number;
  docid: number;
  /** position of the unit's ref in ref order: breaks score ties */
  order: number;
}

/**
 * Scratch of one search, returned to the pool with `known` and `marks` zeroed.
 * Per docid (sized for every docid): two bit maps, the documents seen (`known`) and the documents
 * a scan follows (`marks`: the candidates once phase 1 has closed, then the decided documents in
 * phase 2), and local[d], the document's index in the dense arrays below, valid only where its
 * `known` bit is set (so it is never cleared).
 * Per document seen, in the order first seen (grown as needed, never zeroed: a slot is written
 * when its document is first seen): its docid, its score lower bound (impacts seen so far), the
 * bit set of the query terms it was seen in plus HOT while it is on the list of documents that
 * may be in the top k, and its row in the final scoring.
 * Why: a frequent term's postings are mostly documents not seen before, at random docids. The bit
 * maps (1/32 of the docids' size) stay in cache where a per-docid number array would not, so a
 * new document costs a bit test and a write; everything else a search does per document (the
 * k-th best bound, pruning, scoring) runs over the dense arrays, in cache and mostly in order.
 */
interface Scratch {
  known: Uint32Array;
  marks: Uint32Array;
  local: Int32Array;
  ids: Uint32Array;
  lb: Float64Array;
  seen: Uint32Array;
  row: Int32Array;
}

const HOT = 0x80000000;
const TERM_BITS = 0x7fffffff; // MAX_TERMS bits

/**
 * The documents one search has seen (phase 1), as indices into the scratch's dense arrays. Its
 * hot loops are small methods of their own, so V8 optimizes them after a few chunks instead of
 * after many searches.
 * Before closing, the k-th best lower bound is taken over the "hot" documents only: those whose
 * lower bound reached the previous one (theta), which always include the k best.
 */
class Seen {
  count = 0; // documents seen: dense indices 0 .. count-1
  hot = new Uint32Array(1024);
  nHot = 0;
  theta = -Infinity;

  constructor(readonly s: Scratch) {}

  /** Adds a chunk's impacts (runs: impact, count, ...) for term `bit`, following new documents. */
  add(runs: Float64Array, docids: Uint32Array, bit: number): void {
    const { s, theta } = this;
    const { known, local } = s;
    let { ids, lb, seen } = s;
    let { count, hot, nHot } = this;
    for (let r = 0, at = 0; r < runs.length; r += 2) {
      const impact = runs[r];
      for (const end = at + runs[r + 1]; at < end; at++) {
        const d = docids[at];
        const w = d >>> 5;
        const b = 1 << (d & 31);
        let i: number;
        let v = impact;
        let m = bit;
        if (!(known[w] & b)) {
          if (count === ids.length) {
            this.growDense();
            ({ ids, lb, seen } = s);
          }
          known[w] |= b;
          i = count++;
          local[d] = i;
          ids[i] = d;
        } else {
          i = local[d];
          v += lb[i];
          m |= seen[i];
        }
        lb[i] = v;
        if (v >= theta && !(m & HOT)) {
          if (nHot === hot.length) hot = grow(hot);
          hot[nHot++] = i;
          m |= HOT;
        }
        seen[i] = m;
      }
    }
    this.count = count;
    this.hot = hot;
    this.nHot = nHot;
  }

  private growDense(): void {
    const { s } = this;
    s.ids = grow(s.ids);
    s.lb = grow(s.lb);
    s.seen = grow(s.seen);
    s.row = grow(s.row);
  }

  /**
   * Adds a chunk's impacts to the candidates only (bit set in `marks`). Once closed, most postings
   * of a frequent term are of documents that are out: the bit test keeps them to a bit map that
   * stays in cache.
   */
  addCandidates(runs: Float64Array, docids: Uint32Array, bit: number): void {
    const { local, marks, lb, seen } = this.s;
    for (let r = 0, at = 0; r < runs.length; r += 2) {
      const impact = runs[r];
      for (const end = at + runs[r + 1]; at < end; at++) {
        const d = docids[at];
        if (!((marks[d >>> 5] >>> (d & 31)) & 1)) continue;
        const i = local[d];
        lb[i] += impact;
        seen[i] |= bit;
      }
    }
  }

  /** New threshold: documents below it leave the hot list (and rejoin if they reach it). */
  raise(theta: number): void {
    const { lb, seen } = this.s;
    const { hot } = this;
    this.theta = theta;
    let n = 0;
    for (let i = 0; i < this.nHot; i++) {
      const j = hot[i];
      if (lb[j] >= theta) hot[n++] = j;
      else seen[j] &= TERM_BITS;
    }
    this.nHot = n;
  }

  clear(): void {
    const { known, ids } = this.s;
    // one word per document, or the whole map when that is less to write
    if (this.count > known.length / 8) known.fill(0);
    else for (let i = 0; i < this.count; i++) known[ids[i] >>> 5] = 0;
  }
}

/**
 * Keeps the candidates whose upper bound (lower bound + what they may still gain) reaches
 * `threshold`, in place, and unmarks the others. Returns how many are kept, how many of them are
 * undecided (may still gain), and the terms those were not seen in.
 */
function prune(cand: Uint32Array, n: number, { lb, seen: seenOf, ids, marks }: Scratch, table: Float64Array | null, gain: (seen: number) => number, threshold: number, pendingBits: number): [number, number, number] {
  let kept = 0;
  let open = 0;
  let need = 0;
  for (let i = 0; i < n; i++) {
    const j = cand[i];
    const seen = seenOf[j] & TERM_BITS;
    const g = table ? table[seen] : gain(seen);
    if (lb[j] + g >= threshold) {
      cand[kept++] = j;
      if (g > 0) {
        open++;
        need |= pendingBits & ~seen;
      }
    } else {
      const d = ids[j];
      marks[d >>> 5] &= ~(1 << (d & 31));
    }
  }
  return [kept, open, need];
}

/** The (at most) k entries of ids[0 .. n) with the largest lb, best first. */
function topK(ids: Uint32Array, n: number, lb: Float64Array, k: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const j = ids[i];
    const v = lb[j];
    if (out.length === k) {
      if (v <= lb[out[k - 1]]) continue;
      out.pop();
    }
    let at = out.length;
    out.push(j);
    for (; at > 0 && lb[out[at - 1]] < v; at--) out[at] = out[at - 1];
    out[at] = j;
  }
  return out;
}

/** 0, 1, ..., n - 1: every document seen, as the first candidate list. */
function everyOne(n: number): Uint32Array<ArrayBuffer> {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** Marks the documents of the dense indices list[0 .. n). */
function mark(list: Uint32Array | number[], n: number, { ids, marks }: Scratch): void {
  for (let i = 0; i < n; i++) {
    const d = ids[list[i]];
    marks[d >>> 5] |= 1 << (d & 31);
  }
}

/** Clears the marks of the documents of list[0 .. n), whole words: all marks are cleared together. */
function unmark(list: Uint32Array | number[], n: number, { ids, marks }: Scratch): void {
  for (let i = 0; i < n; i++) marks[ids[list[i]] >>> 5] = 0;
}

/** imp[row * T + j] = impact of d in a chunk of term j, for the documents marked. */
function collect(runs: Float64Array, docids: Uint32Array, { marks, local, row }: Scratch, imp: Float64Array, T: number, j: number): void {
  for (let r = 0, at = 0; r < runs.length; r += 2) {
    const impact = runs[r];
    for (const end = at + runs[r + 1]; at < end; at++) {
      const d = docids[at];
      if ((marks[d >>> 5] >>> (d & 31)) & 1) imp[row[local[d]] * T + j] = impact;
    }
  }
}

interface Chunk {
  runs: Float64Array; // impact, count, impact, count, ...
  docids: Uint32Array;
}

interface TermState {
  h: TermHeader;
  idf: number;
  bit: number;
  next: number; // next chunk to read
  read: number; // postings read
  chunks: Chunk[]; // chunks read, kept to recover exact per-term impacts at the end
}

class LevelUnitStore implements UnitStoreReader {
  private readonly pool: Scratch[] = [];
  private order: Promise<Uint32Array> | null = null;

  private borrow(): Scratch {
    const n = this.index.doc_count;
    const { dense } = this.tuning;
    return this.pool.pop() ?? { known: new Uint32Array((n + 31) >>> 5), marks: new Uint32Array((n + 31) >>> 5), local: new Int32Array(n), ids: new Uint32Array(dense), lb: new Float64Array(dense), seen: new Uint32Array(dense), row: new Int32Array(dense) };
  }

  /** Reads what every search needs: the ref order. */
  async ready(): Promise<void> {
    await this.ranks();
  }

  /** rank[docid]: the ref order (o!<block>), read once (at open). */
  private ranks(): Promise<Uint32Array> {
    this.order ??= (async () => {
      const n = this.index.doc_count;
      const keys: string[] = [];
      for (let b = 0; b * RANK_BLOCK < n; b++) keys.push(KEY.rank(b));
      const parts = keys.length ? await this.db.getMany(keys) : [];
      const out = new Uint32Array(n);
      parts.forEach((v, b) => {
        const len = Math.min(RANK_BLOCK, n - b * RANK_BLOCK);
        if (!v || v.byteLength !== 4 * len) throw new Error(`unit store ${this.meta.store_version}: missing or short ref order block ${b}`);
        new Uint8Array(out.buffer, 4 * b * RANK_BLOCK, 4 * len).set(v);
      });
      return out;
    })();
    this.order.catch(() => (this.order = null));
    return this.order;
  }

  constructor(
    private readonly db: Db,
    readonly meta: StoreMeta,
    private readonly licences: Record<string, UnitLicence>,
    private readonly index: StoreIndexMeta,
    private readonly tuning: { round: number; forwardCost: number; dense: number },
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
    const terms: TermState[] = found
      .flatMap((v) => (v ? [json<TermHeader>(v)] : []))
      .map((h, i) => ({ h, idf: bm25Idf(stats.docs, h.df), bit: 2 ** i, next: 0, read: 0, chunks: [] }));
    if (terms.length === 0) return [];
    const ranks = await this.ranks();
    const bound = (t: TermState) => (t.next < t.h.n.length ? t.h.max[t.next] : 0);

    // Phase 1: read chunks in the order of their bounds (always the next chunk of the term with
    // the highest remaining bound) and accumulate, per document, a lower bound of its score
    // (impacts seen so far) and which terms it was seen in. Chunks are read in rounds of one
    // getMany each, every round as large as everything read before (a LevelDB round trip costs
    // as much as thousands of postings), with a check after each round. Once no unseen document
    // can reach the top `limit` ("closed"), only documents already seen are followed, those
    // whose upper bound falls below the k-th best lower bound drop out, and only terms some
    // undecided candidate was not seen in are read on. Reading stops when every remaining
    // candidate's score is known, or when scoring the undecided ones from their forward vectors
    // is cheaper than reading on.
    const scratch = this.borrow();
    const st = new Seen(scratch);
    let closed = false;
    let cand = new Uint32Array(0); // once closed: the documents (dense indices) that may still be in the top k
    let nCand = 0;
    let open = 0; // candidates whose score is not known yet
    let read = 0; // postings read
    let need = 0; // bits of the terms worth reading on (all while not closed)
    for (const t of terms) need |= t.bit;
    const exact = new Map<number, number>(); // docid -> exact score, of documents scored early
    let exactKth = -Infinity; // the k-th best of those: a lower bound of the final k-th score
    const hits: Hit[] = [];
    const openIds: number[] = []; // docids
    const decided: number[] = []; // dense indices
    try {
      for (;;) {
        // plan one round
        const budget = Math.max(this.tuning.round, read);
        const plan: TermState[] = [];
        const keys: string[] = [];
        const next = terms.map((t) => t.next);
        for (let planned = 0; planned < budget; ) {
          let best = -1;
          for (let j = 0; j < terms.length; j++) {
            const t = terms[j];
            if (need & t.bit && next[j] < t.h.n.length && (best < 0 || t.h.max[next[j]] > terms[best].h.max[next[best]])) best = j;
          }
          if (best < 0) break;
          plan.push(terms[best]);
          keys.push(KEY.chunk(productId, terms[best].h.id, next[best]));
          planned += terms[best].h.n[next[best]++];
        }
        const raws = keys.length ? await this.db.getMany(keys) : [];
        for (let i = 0; i < plan.length; i++) {
          const t = plan[i];
          const raw = raws[i];
          if (!raw) throw new Error(`unit store ${this.meta.store_version}: missing index chunk (${productId}, term ${t.h.id})`);
          t.next++;
          const chunk = decodeChunk(raw);
          t.chunks.push(chunk);
          const { runs, docids } = chunk;
          const bit = t.bit;
          t.read += docids.length;
          read += docids.length;
          if (!closed) st.add(runs, docids, bit);
          else st.addCandidates(runs, docids, bit); // documents not seen before cannot reach the top k any more
        }
        const more = terms.some((t) => need & t.bit && t.next < t.h.n.length);
        // kth = the k-th best lower bound (-Infinity if fewer than k documents). An unseen
        // document scores at most `unseen`; a seen one at most its lower bound plus the bounds
        // of the terms it was not seen in yet. Documents that cannot reach kth are out.
        const kthBound = closed ? kthLargest(cand, nCand, scratch.lb, k) : st.nHot < k ? -Infinity : kthLargest(st.hot, st.nHot, scratch.lb, k);
        let kth = kthBound;
        // what an unseen document may still score: the bounds of every term's unread postings
        const unseen = closed ? 0 : terms.reduce((s, t) => s + bound(t), 0);
        if (!closed) {
          // Not closing yet: the k best lower bounds lack the impacts of terms not read that far.
          // The exact scores of the k best documents so far (forward vectors) are a higher lower
          // bound of the final k-th score, and close the reading sooner.
          if (more && !(unseen < Math.max(kth, exactKth) - 1e-9 * Math.max(1, Math.abs(unseen)))) {
            exactKth = Math.max(exactKth, await this.exactKth(terms, stats, st, exact, k, read));
          }
        }
        kth = Math.max(kth, exactKth);
        const eps = 1e-9 * Math.max(1, Math.abs(kth)); // slack for summation order; exact scores decide below
        if (!closed) {
          if (more && !(unseen < kth - eps)) {
            st.raise(kthBound); // the hot list follows the bounds: exactKth picks its documents from it
            continue;
          }
          closed = true;
          nCand = st.count;
          cand = everyOne(nCand);
          mark(cand, nCand, scratch);
        }
        // what a document may still gain, by the set of terms it was seen in
        const pending = terms.filter((t) => bound(t) > 0).map((t) => [t.bit, bound(t)] as const);
        let pendingBits = 0;
        for (const [bit] of pending) pendingBits |= bit;
        const gain = (seen: number) => {
          let g = 0;
          for (const [bit, b] of pending) if (!(seen & bit)) g += b;
          return g;
        };
        const table = terms.length <= 10 ? Float64Array.from({ length: 2 ** terms.length }, (_, m) => gain(m)) : null;
        [nCand, open, need] = prune(cand, nCand, scratch, table, gain, kth - eps, pendingBits);
        if (open === 0) break;
        // Undecided candidates: read on, or score them from their forward vectors once that
        // costs no more than what was read so far or than reading the rest of the lists.
        const rest = terms.reduce((s, t) => s + (need & t.bit ? t.h.df - t.read : 0), 0);
        if (open * this.tuning.forwardCost <= Math.max(read, rest)) break;
      }

      // Phase 2: exact scores, summed in term order. Decided candidates from the impacts read,
      // undecided ones from their forward vectors. A lower bound is already the exact score of
      // a decided document seen in at most two terms (0 + a + b = 0 + b + a in floating point);
      // for the others the chunks read are scanned once more for the impacts, term by term.
      // (Or, when there are few of those, from their forward vectors: cheaper than a scan.)
      unmark(cand, nCand, scratch); // phase 2 marks the decided ones
      const { ids, lb, seen: seenOf, row, marks } = scratch;
      const T = terms.length;
      let multi = 0; // decided documents seen in three terms or more
      for (let i = 0; i < nCand; i++) {
        const seen = seenOf[cand[i]] & TERM_BITS;
        if (!(open > 0 && this.undecided(terms, seen)) && bitCount(seen) > 2) multi++;
      }
      const scanFirst = multi * this.tuning.forwardCost > read * RESCAN_COST;
      let rescan = false;
      for (let i = 0; i < nCand; i++) {
        const j = cand[i];
        const seen = seenOf[j] & TERM_BITS;
        const many = bitCount(seen) > 2;
        if ((open > 0 && this.undecided(terms, seen)) || (many && !scanFirst)) openIds.push(ids[j]);
        else {
          row[j] = decided.length;
          decided.push(j);
          marks[ids[j] >>> 5] |= 1 << (ids[j] & 31);
          if (many) rescan = true;
        }
      }
      const imp = new Float64Array(decided.length * T);
      if (!rescan) decided.forEach((j, i) => (imp[i * T] = lb[j]));
      else {
        for (let t = 0; t < T; t++) for (const { runs, docids } of terms[t].chunks) collect(runs, docids, scratch, imp, T, t);
      }
      decided.forEach((j, i) => {
        let score = 0;
        for (let t = 0; t < T; t++) if (imp[i * T + t] > 0) score += imp[i * T + t];
        hits.push({ score, docid: ids[j], order: ranks[ids[j]] });
      });
    } finally {
      unmark(cand, nCand, scratch);
      unmark(decided, decided.length, scratch);
      st.clear();
      this.pool.push(scratch);
    }
    if (openIds.length > 0) {
      const scores = await this.forwardScores(terms, stats, openIds);
      openIds.forEach((d, i) => hits.push({ score: scores[i], docid: d, order: ranks[d] }));
    }
    hits.sort((a, b) => b.score - a.score || a.order - b.order);
    return hits.slice(0, k);
  }

  /** Exact BM25 scores of documents from their forward vectors, summed in query-term order. */
  private async forwardScores(terms: TermState[], stats: ProductIndexStats, docids: number[]): Promise<number[]> {
    const avgdl = stats.total_len / stats.docs;
    const ids = terms.map((t) => t.h.id);
    const tfs = new Array<number>(terms.length).fill(0);
    const vectors = await this.db.getMany(docids.map((d) => KEY.forward(d)));
    return vectors.map((v, i) => {
      if (!v) throw new Error(`unit store ${this.meta.store_version}: missing forward vector of document ${docids[i]}`);
      const dl = scanForward(v, ids, tfs);
      let score = 0;
      for (let j = 0; j < terms.length; j++) if (tfs[j] > 0) score += bm25Impact(terms[j].idf, tfs[j], dl, avgdl);
      return score;
    });
  }

  /**
   * The k-th best exact score known: of the k documents with the best lower bounds (scored from
   * their forward vectors, unless seen in every term: then the bound is the score) and of those
   * scored before (`exact`, which it extends). Scores only while the forward vectors cost no more
   * than the postings read so far; -Infinity with fewer than k scores.
   */
  private async exactKth(terms: TermState[], stats: ProductIndexStats, st: Seen, exact: Map<number, number>, k: number, read: number): Promise<number> {
    const { lb, seen, ids } = st.s;
    let all = 0;
    for (const t of terms) all |= t.bit;
    const best = topK(st.hot, st.nHot, lb, k);
    const missing = best.map((j) => ids[j]).filter((d, i) => !exact.has(d) && (seen[best[i]] & TERM_BITS) !== all);
    if (missing.length * this.tuning.forwardCost > read) return -Infinity;
    const scores = missing.length ? await this.forwardScores(terms, stats, missing) : [];
    missing.forEach((d, i) => exact.set(d, scores[i]));
    const known = new Map(exact); // per document once: a bound that is already the score counts once
    for (const j of best) if ((seen[j] & TERM_BITS) === all && !known.has(ids[j])) known.set(ids[j], lb[j]);
    return known.size < k ? -Infinity : [...known.values()].sort((a, b) => b - a)[k - 1];
  }

  /** true when a document seen in the terms `seen` may still have impacts in unread postings. */
  private undecided(terms: TermState[], seen: number): boolean {
    for (const t of terms) if (!(seen & t.bit) && t.next < t.h.n.length) return true;
    return false;
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

export interface OpenUnitStoreOptions {
  /** LevelDB block cache in bytes; small by default, the OS page cache does the rest. */
  cacheSize?: number;
  /** Search tuning (tests use it to drive every path of the search): see ROUND, FORWARD_COST, DENSE. */
  round?: number;
  forwardCost?: number;
  dense?: number;
  /** Open this store version (a `store-<12 hex>` folder of the root) instead of the one CURRENT names. */
  version?: string;
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
    if (meta.format !== STORE_FORMAT) throw new Error(`unit store ${version} has format ${meta.format}, this service reads format ${STORE_FORMAT}: rebuild the store (npm run build)`);
    if (meta.store_version !== version) throw new Error(`unit store ${version}: unexpected version ${meta.store_version}`);
    if (index.tokenizer !== TOKENIZER) throw new Error(`unit store ${version} was built with tokenizer ${index.tokenizer}, this service uses ${TOKENIZER}: rebuild the store`);
    const store = new LevelUnitStore(db, meta, json<Record<string, UnitLicence>>(l), index, {
      round: opts.round ?? ROUND,
      forwardCost: opts.forwardCost ?? FORWARD_COST,
      dense: opts.dense ?? DENSE,
    });
    await store.ready();
    return store;
  } catch (err) {
    await db.close();
    throw err;
  }
}
