// Builds the per-product BM25 indexes with bounded memory.
//
// While units stream in, postings (ingestion number, tf) are collected per product and term and
// spilled as sorted run files (posting-runs.ts) whenever the buffer holds `runPostings` postings.
// Docids (reference order, D1) and the BM25 statistics are known only at the end: finish() merges
// the runs term by term, maps each posting to its docid, sorts a list only when reference order
// differs from ingestion order, and appends the term's posting list (contract/posting-list.ts) to
// postings.dat with its header in the LevelDB. The per-term work arrays are kept from one term to
// the next: the largest term sets the memory, not the sum of them.
import { writeFile } from 'node:fs/promises';
import { endianness } from 'node:os';
import { encodePostingList, POSTING_BLOCK } from '../../contract/posting-list.ts';
import { KEY, bm25Idf, tokenize, type ProductIndexStats, type TermHeader } from '../../contract/store-format.ts';
import type { BatchWriter } from './batch.ts';
import { FileWriter } from './file-io.ts';
import { mergeRuns, RunWriter } from './posting-runs.ts';

if (endianness() !== 'LE') throw new Error('the unit store index is little-endian; this machine is not');

/** A posting's sort key while a list is put in docid order: docid * 2^21 + tf (exact below 2^53). */
const TF_SPAN = 2 ** 21;

/** finish()'s work arrays for terms of up to `size` postings. */
function workArrays(size: number) {
  return { docids: new Uint32Array(size), tfs: new Uint32Array(size), dls: new Uint32Array(size), keys: new Float64Array(size) };
}

/** Appends a posting list to postings.dat at the next multiple of 8 bytes (P lists are 8-byte aligned); returns where it starts. */
async function appendList(out: FileWriter, list: Uint8Array): Promise<number> {
  const pad = (8 - (out.position % 8)) % 8;
  if (pad) await out.write(ZEROS.subarray(0, pad));
  const at = out.position;
  await out.write(list);
  return at;
}
const ZEROS = new Uint8Array(8);

/** A growable Uint32Array. */
function ensure(a: Uint32Array<ArrayBuffer>, n: number): Uint32Array<ArrayBuffer> {
  if (a.length >= n) return a;
  const next = new Uint32Array(Math.max(n, a.length * 2));
  next.set(a);
  return next;
}

export class IndexWriter {
  private readonly vocab = new Map<string, number>();
  private readonly terms: string[] = [];
  private readonly productIds: string[];
  private readonly productIndex: Map<string, number>;
  private readonly stats: ProductIndexStats[];
  /** Per product: the postings since the last spill, as (term, unit, tf) triples, in unit order. */
  private logs: Uint32Array<ArrayBuffer>[];
  private logLength: number[];
  private buffered = 0;
  private runs = 0;
  private docLen = new Uint32Array(1 << 16) as Uint32Array<ArrayBuffer>; // by ingestion number
  private docs = 0; // highest ingestion number + 1
  /** termsOf's counts by term id (zero between calls) and its results. */
  private tfOf = new Uint32Array(1024) as Uint32Array<ArrayBuffer>;
  private unitTerms = new Uint32Array(256) as Uint32Array<ArrayBuffer>;
  private unitTfs = new Uint32Array(256) as Uint32Array<ArrayBuffer>;
  /** Per product index: the words of its example query, and (during finish) the units they occur in. */
  private readonly watched = new Map<number, { query: string; terms: Set<string>; hits: Uint8Array | null; matches: number }>();

  /** Work arrays of finish, grown to the largest term seen. */
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
    this.logs = this.productIds.map(() => new Uint32Array(3 * 1024));
    this.logLength = this.productIds.map(() => 0);
  }

  /** The id of a term: ids are given in the order terms are first seen. */
  termId(term: string): number {
    let id = this.vocab.get(term);
    if (id === undefined) {
      id = this.terms.length;
      this.vocab.set(term, id);
      this.terms.push(term);
    }
    return id;
  }

  /**
   * A text's distinct terms (ids, first-seen order) and their counts, and its token count (dl).
   * The arrays are reused: valid until the next call.
   */
  termsOf(text: string): { ids: Uint32Array; tfs: Uint32Array; n: number; dl: number } {
    const tokens = tokenize(text);
    let n = 0;
    for (const t of tokens) {
      const id = this.termId(t);
      if (id >= this.tfOf.length) this.tfOf = ensure(this.tfOf, id + 1);
      if (this.tfOf[id]++ === 0) {
        if (n === this.unitTerms.length) this.unitTerms = ensure(this.unitTerms, n + 1);
        this.unitTerms[n++] = id;
      }
    }
    if (this.unitTfs.length < n) this.unitTfs = ensure(this.unitTfs, n);
    for (let i = 0; i < n; i++) {
      this.unitTfs[i] = this.tfOf[this.unitTerms[i]];
      this.tfOf[this.unitTerms[i]] = 0;
    }
    return { ids: this.unitTerms, tfs: this.unitTfs, n, dl: tokens.length };
  }

  /**
   * Indexes one unit (ingestion number `unit`) for the given products by its distinct terms
   * ids[from .. to), their counts tfs[from .. to) and its token count.
   */
  async addTerms(unit: number, ids: Uint32Array, tfs: Uint32Array, from: number, to: number, dl: number, products: string[]): Promise<void> {
    const n = to - from;
    if (n === 0) return;
    if (!(unit >= this.docs)) throw new Error(`index: unit ${unit} indexed after unit ${this.docs - 1}`); // postings stay in unit order
    if (unit >= this.docLen.length) this.docLen = ensure(this.docLen, unit + 1);
    this.docLen[unit] = dl;
    this.docs = unit + 1;
    for (const pid of products) {
      const p = this.productIndex.get(pid)!;
      this.stats[p].docs++;
      this.stats[p].total_len += dl;
      let at = this.logLength[p];
      const log = (this.logs[p] = ensure(this.logs[p], at + 3 * n));
      for (let i = from; i < to; i++) {
        log[at++] = ids[i];
        log[at++] = unit;
        log[at++] = tfs[i];
      }
      this.logLength[p] = at;
      this.buffered += n;
    }
    if (this.buffered >= this.runPostings) await this.spill();
  }

  /**
   * Writes the buffered postings as one run file, in (product, term) order, each term's pairs in
   * unit order: a counting sort of each product's log by term, which keeps the unit order.
   */
  private async spill(): Promise<void> {
    if (this.buffered === 0) return;
    const w = await RunWriter.create(this.runDir, this.runs++);
    const counts = new Uint32Array(this.terms.length); // per term: postings, zero between products
    const next = new Uint32Array(this.terms.length); // per term: where its next pair goes
    for (let p = 0; p < this.logs.length; p++) {
      const log = this.logs[p];
      const m = this.logLength[p] / 3;
      if (m === 0) continue;
      const present: number[] = [];
      for (let i = 0; i < 3 * m; i += 3) if (counts[log[i]]++ === 0) present.push(log[i]);
      present.sort((a, b) => a - b);
      let acc = 0;
      for (const t of present) {
        next[t] = acc;
        acc += counts[t];
      }
      const pairs = new Uint32Array(2 * m);
      for (let i = 0; i < 3 * m; i += 3) {
        const at = 2 * next[log[i]]++;
        pairs[at] = log[i + 1];
        pairs[at + 1] = log[i + 2];
      }
      for (const t of present) {
        const n = counts[t];
        await w.add(p, t, pairs.subarray(2 * (next[t] - n)), n);
        counts[t] = 0;
      }
      this.logLength[p] = 0;
    }
    await w.close();
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

  /**
   * Writes the unit lengths by docid into lengths.dat, every posting list into postings.dat and
   * every term header through `out`. docidOf[ingestion number] is the unit's docid.
   */
  async finish(docidOf: Uint32Array, paths: { lengths: string; postings: string }, out: BatchWriter, progress: (msg: string) => void): Promise<{ terms: number; postings: number }> {
    await this.spill();
    this.logs = [];
    // unit lengths by docid (D5)
    const dlOf = new Uint32Array(docidOf.length);
    for (let i = 0; i < this.docs; i++) dlOf[docidOf[i]] = this.docLen[i];
    this.docLen = new Uint32Array(0);
    await writeFile(paths.lengths, dlOf, { flag: 'wx' });
    const file = await FileWriter.create(paths.postings, 8 << 20);
    let terms = 0;
    let postings = 0;
    try {
      await mergeRuns(this.runDir, async (p, id, pairs, n) => {
        this.countMatches(p, id, pairs, n);
        const { docids, tfs, dls } = this.inDocidOrder(pairs, n, docidOf, dlOf);
        const pid = this.productIds[p];
        const { docs, total_len } = this.stats[p];
        const { bytes, max } = encodePostingList(docids, tfs, dls, n, bm25Idf(docs, n), total_len / docs);
        const at = await appendList(file, bytes);
        const header: TermHeader = { df: n, blocks: Math.ceil(n / POSTING_BLOCK), at, bytes: bytes.byteLength, max };
        await out.put(KEY.term(pid, this.terms[id]), Buffer.from(JSON.stringify(header)));
        terms++;
        postings += n;
        if (terms % 50_000 === 0) progress(`index: ${terms} terms, ${postings} postings`);
      });
    } finally {
      await file.close();
    }
    for (const w of this.watched.values()) w.hits = null;
    this.work = workArrays(0);
    return { terms, postings };
  }

  /** A term's pairs (ingestion number, tf) as docids ascending, with their tf and unit length. */
  private inDocidOrder(pairs: Uint32Array, n: number, docidOf: Uint32Array, dlOf: Uint32Array) {
    const w = this.workFor(n);
    const { docids, tfs, dls, keys } = w;
    let sorted = true;
    for (let k = 0; k < n; k++) {
      const d = docidOf[pairs[2 * k]];
      docids[k] = d;
      tfs[k] = pairs[2 * k + 1];
      if (k > 0 && d < docids[k - 1]) sorted = false;
    }
    if (!sorted) {
      for (let k = 0; k < n; k++) {
        if (tfs[k] >= TF_SPAN) throw new Error(`unit store build: a unit repeats one word ${tfs[k]} times (at most ${TF_SPAN - 1})`);
        keys[k] = docids[k] * TF_SPAN + tfs[k];
      }
      const order = keys.subarray(0, n).sort();
      for (let k = 0; k < n; k++) {
        const d = Math.floor(order[k] / TF_SPAN);
        docids[k] = d;
        tfs[k] = order[k] - d * TF_SPAN;
      }
    }
    for (let k = 0; k < n; k++) dls[k] = dlOf[docids[k]];
    return w;
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
    if (this.work.docids.length < n) this.work = workArrays(Math.max(n, this.work.docids.length * 2));
    return this.work;
  }
}
