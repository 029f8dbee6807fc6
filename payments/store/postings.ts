// A cursor over one term's posting list (layout and invariants: contract/posting-list.ts), as the
// search loop (evaluation.ts) walks it: in docid order, reading postings straight from the
// bit-packed blocks (nothing is decoded ahead), computing an impact only when asked, and able to
// look at block maxima ahead of its position ("shallow" moves, as Lucene's advanceShallow), which
// is what lets the search skip blocks.
import { blockFields, checkListDirectory, listDirectory, postingListFailure, unpack, type BlockFields, type ListDirectory } from '../../contract/posting-list.ts';
import { bm25Idf, bm25Impact, type ProductIndexStats, type TermHeader } from '../../contract/store-format.ts';

/** A docid past every real one (docids are below 2^31 - 1): the position of an exhausted cursor. */
export const END = 0x7fffffff;

/** The lists whose directory has been checked whole (checkListDirectory): each list read from disk once. */
const checked = new WeakSet<Uint8Array>();

export class PostingCursor {
  private readonly dir: ListDirectory;
  private readonly words: Uint32Array;
  /** Postings in the list. */
  readonly df: number;
  private readonly idf: number;
  private readonly avgdl: number;
  /** The list's largest impact. */
  readonly max: number;
  /** The block shallow moves have reached: every block before it ends before the docids still wanted. */
  block = 0;
  /** The block the position is in (-1: none yet). Invariant: entered <= block. */
  private entered = -1;
  private readonly f: BlockFields = { first: 0, size: 0, offsetAt: 0, offsetWidth: 0, tfAt: 0, tfWidth: 0 };
  private pos = 0;
  /** The current posting's docid: -1 before the first advance, END once exhausted. */
  doc = -1;

  constructor(
    list: Uint8Array,
    header: TermHeader,
    stats: ProductIndexStats,
    /** Unit lengths by docid (lengths.dat). */
    private readonly lengths: Uint32Array,
    /** The term's position among the query's sorted terms: its place in the exact sum. */
    readonly term: number,
  ) {
    this.dir = listDirectory(list, header.blocks, header.df);
    if (!checked.has(list)) {
      checkListDirectory(this.dir, header.max);
      checked.add(list);
    }
    this.words = this.dir.words;
    this.df = header.df;
    this.idf = bm25Idf(stats.docs, header.df);
    this.avgdl = stats.total_len / stats.docs;
    this.max = header.max;
  }

  /**
   * The current posting's impact (valid while doc is neither -1 nor END), checked against its
   * block's maximum (P3) and its unit length (P4).
   */
  impact(): number {
    const { f, words, pos } = this;
    const tf = 1 + unpack(words, f.tfAt, f.tfWidth, pos);
    const dl = this.lengths[this.doc];
    const impact = bm25Impact(this.idf, tf, dl, this.avgdl);
    if (!(impact <= this.dir.blockMax[this.entered]) || !(dl >= tf)) postingListFailure(`block ${this.entered}: impact ${impact} above the block maximum, or tf ${tf} in a unit of ${dl} tokens`);
    return impact;
  }

  /**
   * Where part `i` of `parts` about equal runs of the list's postings starts (whole blocks; 0 <= i <=
   * parts, `parts` giving END): bounds that split a search's docids into ranges of similar work.
   */
  boundary(i: number, parts: number): number {
    if (i >= parts) return END;
    return this.firstOf(Math.floor((this.dir.blocks * i) / parts));
  }

  /** The smallest docid block b can hold. */
  private firstOf(b: number): number {
    return b === 0 ? 0 : this.dir.blockLast[b - 1] + 1;
  }

  /**
   * Moves the block pointer, without reading blocks, to the first block whose last docid is
   * >= target; returns that block's last docid, or END when no block is left.
   */
  shallow(target: number): number {
    const { blockLast, blocks } = this.dir;
    let b = this.block;
    if (b < blocks && blockLast[b] < target) {
      // gallop, then halve: skips are long in frequent lists
      let step = 1;
      let hi = b + 1;
      while (hi < blocks && blockLast[hi] < target) {
        b = hi;
        step *= 2;
        hi = b + step;
      }
      if (hi > blocks) hi = blocks;
      // blockLast[b] < target; the answer is in (b, hi]
      let lo = b + 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (blockLast[mid] < target) lo = mid + 1;
        else hi = mid;
      }
      b = lo;
      this.block = b;
    }
    return b < blocks ? blockLast[b] : END;
  }

  /**
   * The largest impact the list may have at docids in [from, to] (inclusive), from the block
   * maxima; 0 when it has no posting there. Moves the block pointer to `from`.
   */
  maxIn(from: number, to: number): number {
    if (this.doc > to) return 0; // also when exhausted
    if (this.shallow(Math.max(from, this.doc)) === END) return 0;
    const { blockLast, blockMax, blocks } = this.dir;
    let b = this.block;
    if (this.firstOf(b) > to) return 0;
    let m = blockMax[b];
    for (b++; b < blocks && blockLast[b - 1] < to; b++) if (blockMax[b] > m) m = blockMax[b];
    return m;
  }

  /** The last docid of the block the pointer is in (END when exhausted): where a window may end. */
  blockEnd(from: number): number {
    return this.shallow(Math.max(from, this.doc));
  }

  private enter(b: number): void {
    blockFields(this.dir, b, this.df, this.f);
    this.entered = b;
    this.block = b;
    this.pos = 0;
  }

  private docAt(i: number): number {
    const { f } = this;
    return f.first + unpack(this.words, f.offsetAt, f.offsetWidth, i);
  }

  /** Moves to the first posting with docid >= target (no move if the current one is); returns its docid or END. */
  advance(target: number): number {
    if (this.doc >= target) return this.doc;
    if (this.shallow(target) === END) return (this.doc = END);
    if (this.entered !== this.block) this.enter(this.block);
    // the block's last docid is >= target: gallop from the position, then halve
    let lo = this.pos;
    let step = 1;
    let hi = lo;
    while (this.docAt(hi) < target) {
      lo = hi + 1;
      hi = Math.min(this.f.size - 1, hi + step);
      step *= 2;
    }
    // docAt(lo - 1) < target <= docAt(hi)
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.docAt(mid) < target) lo = mid + 1;
      else hi = mid;
    }
    this.pos = lo;
    return (this.doc = this.docAt(lo));
  }

  /** Moves to the next posting; returns its docid or END. */
  next(): number {
    if (this.doc === -1) return this.advance(0);
    if (++this.pos < this.f.size) {
      const d = this.docAt(this.pos);
      if (!(d > this.doc)) postingListFailure(`block ${this.entered}: docid ${d} after ${this.doc}`); // P1
      return (this.doc = d);
    }
    // the blocks before `block` hold no docid still wanted (shallow's contract)
    const b = Math.max(this.entered + 1, this.block);
    if (b >= this.dir.blocks) return (this.doc = END);
    this.enter(b);
    return (this.doc = this.f.first);
  }
}
