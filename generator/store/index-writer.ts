// Builds the per-product BM25 indexes with bounded memory.
//
// While units stream in, postings (docid, tf) are collected per product and term and spilled as
// sorted runs into a scratch LevelDB whenever the buffer holds `runPostings` postings. BM25
// impacts need the final document count, df and average length, so they are computed only at the
// end: finish() walks the scratch runs term by term, orders each term's postings by impact
// (a counting sort over the few distinct impact values, so it is linear), cuts them into chunks
// of growing size and writes chunks and term headers into the store.
import { endianness } from 'node:os';
import {
  KEY,
  bm25Idf,
  bm25Impact,
  chunkSize,
  encodeChunk,
  encodeForward,
  hex,
  tokenize,
  type ProductIndexStats,
  type TermHeader,
} from '../../contract/store-format.ts';
import { BatchWriter, type Db } from './batch.ts';

if (endianness() !== 'LE') throw new Error('the unit store index is little-endian; this machine is not');

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

  constructor(
    productIds: string[],
    private readonly scratch: Db,
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

  /** Writes the buffered postings as one run: scratch key x!<product#>!<termId>!<run#>. */
  private async spill(): Promise<void> {
    if (this.buffered === 0) return;
    const w = new BatchWriter(this.scratch);
    const run = hex(this.runs++, 6);
    for (let p = 0; p < this.buffer.length; p++) {
      for (const [id, list] of this.buffer[p].entries()) {
        if (!list) continue;
        const bytes = new Uint8Array(list.buf.buffer, 0, list.n * 8); // the buffer is dropped after the spill
        await w.put(`x!${hex(p, 4)}!${hex(id, 8)}!${run}`, bytes);
      }
    }
    await w.flush();
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
    let current = '';
    let pieces: Uint32Array[] = [];
    let terms = 0;
    let postings = 0;
    const flushTerm = async () => {
      if (!current) return;
      const [p, id] = current.slice(2).split('!').map((h) => parseInt(h, 16));
      const n = pieces.reduce((s, x) => s + x.length / 2, 0);
      await this.writeTerm(out, p, id, pieces, n);
      terms++;
      postings += n;
      if (terms % 50_000 === 0) progress(`index: ${terms} terms, ${postings} postings`);
    };
    for await (const [key, value] of this.scratch.iterator({ gte: 'x!', lt: 'x~' })) {
      const group = key.slice(0, 15); // x!<product#>!<termId>
      if (group !== current) {
        await flushTerm();
        current = group;
        pieces = [];
      }
      // copy: LevelDB's buffer may not be 4-byte aligned
      const copy = new Uint8Array(value.byteLength);
      copy.set(value);
      pieces.push(new Uint32Array(copy.buffer));
    }
    await flushTerm();
    for (const w of this.watched.values()) w.hits = null;
    return { terms, postings };
  }

  private countMatches(p: number, termId: number, pieces: Uint32Array[]): void {
    const w = this.watched.get(p);
    if (!w || !w.terms.has(this.terms[termId])) return;
    w.hits ??= new Uint8Array(this.docs);
    for (const piece of pieces) {
      for (let i = 0; i < piece.length; i += 2) {
        if (w.hits[piece[i]] === 0) w.matches++;
        w.hits[piece[i]] = 1;
      }
    }
  }

  private async writeTerm(out: BatchWriter, p: number, termId: number, pieces: Uint32Array[], n: number): Promise<void> {
    this.countMatches(p, termId, pieces);
    const pid = this.productIds[p];
    const { docs, total_len } = this.stats[p];
    const avgdl = total_len / docs;
    const idf = bm25Idf(docs, n);
    // Group postings by impact value; runs are in docid order, so each group stays docid-ascending.
    const impactOf = new Map<number, number>(); // (tf, dl) -> impact
    const groupOf = new Map<number, number>(); // impact -> group index
    const groupImpact: number[] = [];
    const counts: number[] = [];
    const gi = new Uint32Array(n);
    const docs32 = new Uint32Array(n);
    let k = 0;
    for (const piece of pieces) {
      for (let i = 0; i < piece.length; i += 2) {
        const docid = piece[i];
        const tf = piece[i + 1];
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
        docs32[k++] = docid;
      }
    }
    const order = groupImpact.map((_, g) => g).sort((a, b) => groupImpact[b] - groupImpact[a]);
    const start = new Array<number>(order.length);
    let acc = 0;
    for (const g of order) {
      start[g] = acc;
      acc += counts[g];
    }
    const sorted = new Uint32Array(n);
    const impacts = new Float64Array(n);
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
