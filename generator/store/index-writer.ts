// Builds the per-product BM25 indexes with bounded memory.
//
// While units stream in, postings (docid, tf) are collected per product and term and spilled as
// sorted run files (posting-runs.ts) whenever the buffer holds `runPostings` postings. BM25
// impacts need the final document count, df and average length, so they are computed only at the
// end: finish() merges the runs term by term, orders each term's postings by impact
// (a counting sort over the few distinct impact values, so it is linear), cuts them into chunks
// of growing size and writes chunks and term headers into the store. The per-term work arrays
// are kept from one term to the next: the largest term sets the memory, not the sum of them.
import { endianness } from 'node:os';
import {
  KEY,
  bm25Idf,
  bm25Impact,
  chunkSize,
  encodeChunk,
  encodeForward,
  tokenize,
  type ProductIndexStats,
  type TermHeader,
} from '../../contract/store-format.ts';
import type { BatchWriter } from './batch.ts';
import { mergeRuns, RunWriter } from './posting-runs.ts';

if (endianness() !== 'LE') throw new Error('the unit store index is little-endian; this machine is not');

/** writeTerm's work arrays for terms of up to `size` postings. */
function workArrays(size: number) {
  return { group: new Uint32Array(size), docids: new Uint32Array(size), sorted: new Uint32Array(size), impacts: new Float64Array(size) };
}

class Postings {
  buf = new Uint32Array(16);
  n = 0; // pairs
  push(docid: number, tf: number) {
    if (this.n * 2 + 2 > this.buf.length) {
      const next = new Uint32Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n * 2] = docid;
    this.buf[this.n * 2 + 1] = tf;
    this.n++;
  }
}

export class IndexWriter {
  private readonly vocab = new Map<string, number>();
  private readonly terms: string[] = [];
  private readonly productIds: string[];
  private readonly productIndex: Map<string, number>;
  private readonly stats: ProductIndexStats[];
  private buffer: (Postings | undefined)[][]; // per product, by termId
  private readonly tf = new Map<number, number>();
  private buffered = 0;
  private runs = 0;
  private docLen = new Uint32Array(1 << 16);
  private docs = 0; // highest docid + 1
  /** Per product index: the words of its example query, and (during finish) the units they occur in. */
  private readonly watched = new Map<number, { query: string; terms: Set<string>; hits: Uint8Array | null; matches: number }>();

  /** Work arrays of writeTerm, grown to the largest term seen. */
  private work = workArrays(0);

  constructor(
    productIds: string[],
    /** A scratch folder for the run files (the caller removes it). */
    private readonly runDir: string,
    private readonly runPostings = 4_000_000,
  ) {
    this.productIds = [...productIds].sort();
    this.productIndex = new Map(this.productIds.map((p, i) => [p, i]));
    this.stats = this.productIds.map(() => ({ docs: 0, total_len: 0 }));
    this.buffer = this.productIds.map(() => []);
  }

  /**
   * Indexes one unit's text for the given products and returns its forward vector (stored under
   * f!<docid>), or null when the text has no searchable word.
   */
  async add(docid: number, ref: string, text: string, products: string[]): Promise<Buffer | null> {
    const tokens = tokenize(text);
    if (tokens.length === 0) return null;
    const tf = this.tf; // reused: this runs once per unit
    tf.clear();
    for (const t of tokens) {
      let id = this.vocab.get(t);
      if (id === undefined) {
        id = this.terms.length;
        this.vocab.set(t, id);
        this.terms.push(t);
      }
      tf.set(id, (tf.get(id) ?? 0) + 1);
    }
    if (docid >= this.docLen.length) {
      const next = new Uint32Array(Math.max(docid + 1, this.docLen.length * 2));
      next.set(this.docLen);
      this.docLen = next;
    }
    this.docLen[docid] = tokens.length;
    this.docs = Math.max(this.docs, docid + 1);
    for (const pid of products) {
      const p = this.productIndex.get(pid)!;
      this.stats[p].docs++;
      this.stats[p].total_len += tokens.length;
      const lists = this.buffer[p];
      for (const [id, n] of tf) {
        let list = lists[id];
        if (!list) lists[id] = list = new Postings();
        list.push(docid, n);
      }
      this.buffered += tf.size;
    }
    const fwd = encodeForward(tokens.length, tf, ref);
    if (this.buffered >= this.runPostings) await this.spill();
    return fwd;
  }

  /** Writes the buffered postings as one run file, in (product, term) order. */
  private async spill(): Promise<void> {
    if (this.buffered === 0) return;
    const w = await RunWriter.create(this.runDir, this.runs++);
    for (let p = 0; p < this.buffer.length; p++) {
      const lists = this.buffer[p];
      for (let id = 0; id < lists.length; id++) {
        const list = lists[id];
        if (list) await w.add(p, id, list.buf, list.n);
      }
    }
    await w.close();
    this.buffer = this.productIds.map(() => []);
    this.buffered = 0;
  }

  /**
   * Counts, for a product, the units that contain at least one word of `query`: exactly the units
   * a search for it can return, so the documentation can say what its examples give.
   */
  watch(productId: string, query: string): void {
    const p = this.productIndex.get(productId);
    if (p !== undefined) this.watched.set(p, { query, terms: new Set(tokenize(query)), hits: null, matches: 0 });
  }

  /** After finish(): per watched product, its query and how many units match it. */
  examples(): Record<string, { query: string; matches: number }> {
    return Object.fromEntries([...this.watched].map(([p, w]) => [this.productIds[p], { query: w.query, matches: w.matches }]));
  }

  productStats(): Record<string, ProductIndexStats> {
    return Object.fromEntries(this.productIds.map((p, i) => [p, { ...this.stats[i] }]));
  }

  /** Orders every term's postings by impact and writes chunks + headers through `out`. */
  async finish(out: BatchWriter, progress: (msg: string) => void): Promise<{ terms: number; postings: number }> {
    await this.spill();
    this.buffer = [];
    let terms = 0;
    let postings = 0;
    await mergeRuns(this.runDir, async (p, id, pairs, n) => {
      await this.writeTerm(out, p, id, pairs, n);
      terms++;
      postings += n;
      if (terms % 50_000 === 0) progress(`index: ${terms} terms, ${postings} postings`);
    });
    for (const w of this.watched.values()) w.hits = null;
    this.work = workArrays(0);
    return { terms, postings };
  }

  private countMatches(p: number, termId: number, pairs: Uint32Array, n: number): void {
    const w = this.watched.get(p);
    if (!w || !w.terms.has(this.terms[termId])) return;
    w.hits ??= new Uint8Array(this.docs);
    for (let i = 0; i < n * 2; i += 2) {
      if (w.hits[pairs[i]] === 0) w.matches++;
      w.hits[pairs[i]] = 1;
    }
  }

  /** The work arrays, at least n long. */
  private workFor(n: number) {
    if (this.work.group.length < n) this.work = workArrays(Math.max(n, this.work.group.length * 2));
    return this.work;
  }

  /** pairs: the term's n (docid, tf) pairs in docid order. */
  private async writeTerm(out: BatchWriter, p: number, termId: number, pairs: Uint32Array, n: number): Promise<void> {
    this.countMatches(p, termId, pairs, n);
    const pid = this.productIds[p];
    const { docs, total_len } = this.stats[p];
    const avgdl = total_len / docs;
    const idf = bm25Idf(docs, n);
    // Group postings by impact value; runs are in docid order, so each group stays docid-ascending.
    const impactOf = new Map<number, number>(); // (tf, dl) -> impact
    const groupOf = new Map<number, number>(); // impact -> group index
    const groupImpact: number[] = [];
    const counts: number[] = [];
    const { group: gi, docids: docs32, sorted, impacts } = this.workFor(n);
    for (let k = 0; k < n; k++) {
      const docid = pairs[2 * k];
      const tf = pairs[2 * k + 1];
      const dl = this.docLen[docid];
      const pair = tf * 4294967296 + dl;
      let impact = impactOf.get(pair);
      if (impact === undefined) impactOf.set(pair, (impact = bm25Impact(idf, tf, dl, avgdl)));
      let g = groupOf.get(impact);
      if (g === undefined) {
        g = groupImpact.length;
        groupOf.set(impact, g);
        groupImpact.push(impact);
        counts.push(0);
      }
      counts[g]++;
      gi[k] = g;
      docs32[k] = docid;
    }
    const order = groupImpact.map((_, g) => g).sort((a, b) => groupImpact[b] - groupImpact[a]);
    const start = new Array<number>(order.length);
    let acc = 0;
    for (const g of order) {
      start[g] = acc;
      acc += counts[g];
    }
    for (let i = 0; i < n; i++) {
      const at = start[gi[i]]++;
      sorted[at] = docs32[i];
      impacts[at] = groupImpact[gi[i]];
    }
    const header: TermHeader = { id: termId, df: n, n: [], max: [] };
    for (let c = 0, off = 0; off < n; c++) {
      const len = Math.min(chunkSize(c), n - off);
      header.n.push(len);
      header.max.push(impacts[off]);
      await out.put(KEY.chunk(pid, termId, c), encodeChunk(sorted.subarray(off, off + len), impacts.subarray(off, off + len)));
      off += len;
    }
    await out.put(KEY.term(pid, this.terms[termId]), Buffer.from(JSON.stringify(header)));
  }
}
