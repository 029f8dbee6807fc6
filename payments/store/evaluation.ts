// The search loop: the exact BM25 top k of a disjunctive query, by block-max MaxScore over
// docid-ordered posting lists (Turtle & Flood's MaxScore, with the block maxima and windows of
// Lucene's MaxScoreBulkScorer; see also PISA's block_max_maxscore).
//
// It walks docids upwards in windows. For each window it takes every term's largest impact inside
// the window (from block maxima, without decoding) and sorts the terms by it: the longest prefix of
// terms whose window maxima add up to no more than the threshold (the k-th best score so far) is
// "non-essential": a unit found only in them cannot enter the top k. A window where every term is
// non-essential is skipped whole. Otherwise the units of the essential terms' postings in the window
// are gathered, then checked against the non-essential terms from the largest maximum down, each
// unit dropped as soon as its partial score plus what the remaining terms can add cannot beat the
// threshold. What survives is scored exactly and offered to the top k.
//
// Exactness: nothing is skipped unless a bound proves it cannot enter (allowing for rounding,
// scoring.ts upperBound); every unit offered is scored from all the terms it contains, summed in the query's
// sorted term order (contract/store-format.ts bm25Impact), so scores equal a brute-force BM25 bit
// for bit, and ties rank by docid, i.e. by reference (units are offered in docid order: TopK).
import { POSTING_BLOCK } from '../../contract/posting-list.ts';
import { END, type PostingCursor } from './postings.ts';
import { TopK, upperBound, type Hit } from './scoring.ts';

/** At most this many distinct query terms are used (the first in sorted order): one bit each in an int. */
export const MAX_TERMS = 31;
/** The longest window a sparse window may be stretched to (docids): Lucene's INNER_WINDOW_SIZE. */
const MAX_WINDOW = 4096;
/**
 * Units one window can gather: a window ends where the first essential term's block ends (at most
 * POSTING_BLOCK postings per essential term), or is at most MAX_WINDOW docids long.
 */
const BUFFER = Math.max(MAX_WINDOW, POSTING_BLOCK * MAX_TERMS);

// Scratch of the (synchronous) search loop, shared by every search of the process.
const bufDoc = new Int32Array(BUFFER);
const bufScore = new Float64Array(BUFFER); // partial score, for pruning
const bufMask = new Int32Array(BUFFER); // terms the unit was found in
const live = new Int32Array(BUFFER);
let bufImp = new Float64Array(BUFFER); // bufImp[i * T + term]: the unit's impact of each term found

/**
 * The k best units over the cursors (one per query term, `term` = its place in sorted order), best
 * first, among the docids in [from, end): the top k of a query is the best k of the top k of any
 * split of the docids into ranges (mergeTop), which is how a search uses more than one thread
 * (search-threads.ts). The cursors must not have moved yet.
 */
export function topK(cursors: PostingCursor[], k: number, from = 0, end = END): Hit[] {
  const T = cursors.length;
  if (T === 0 || k < 1) return [];
  if (T > MAX_TERMS) throw new Error(`unit store search: ${T} terms, at most ${MAX_TERMS}`);
  cursors.forEach((c, i) => {
    if (c.term !== i) throw new Error('unit store search: cursors must come in term order');
  });
  if (bufImp.length < BUFFER * T) bufImp = new Float64Array(BUFFER * T);
  const top = new TopK(k, cursors.reduce((s, c) => s + c.df, 0));
  new Search(cursors, top, end).run(from);
  return top.sorted();
}

/** The k best of two top lists of disjoint docid ranges, each best first (the store's order: scoring.ts). */
export function mergeTop(a: Hit[], b: Hit[], k: number): Hit[] {
  const out: Hit[] = [];
  let i = 0;
  let j = 0;
  while (out.length < k && (i < a.length || j < b.length)) {
    const takeA = j >= b.length || (i < a.length && (a[i].score > b[j].score || (a[i].score === b[j].score && a[i].docid < b[j].docid)));
    out.push(takeA ? a[i++] : b[j++]);
  }
  return out;
}

function bitCount(m: number): number {
  let c = 0;
  for (; m; m &= m - 1) c++;
  return c;
}

class Search {
  private readonly T: number;
  /** The cursors by window maximum, ascending: order[0 .. firstEssential) are non-essential. */
  private readonly order: PostingCursor[];
  private firstEssential = 0;
  /** Per term (by `term`): its largest impact in the current window. */
  private readonly windowMax: Float64Array;
  /** sums[i]: the window maxima of order[0 .. i] added up; nonzero[i]: how many of them are not 0. */
  private readonly sums: Float64Array;
  private readonly nonzero: Int32Array;
  // Lucene's heuristic against windows too short to pay for their bounds: stretch them while they
  // gather fewer than 32 units per term on average.
  private minWindow = 1;
  private windows = 0;
  private gathered = 0;

  constructor(
    private readonly cursors: PostingCursor[],
    private readonly top: TopK,
    /** The search covers docids below this. */
    private readonly end: number,
  ) {
    this.T = cursors.length;
    this.order = [...cursors];
    this.windowMax = new Float64Array(this.T);
    this.sums = new Float64Array(this.T);
    this.nonzero = new Int32Array(this.T);
  }

  run(start: number): void {
    let from = start;
    while (from < this.end) {
      let to = this.windowEnd(from); // exclusive
      for (;;) {
        this.boundWindow(from, to - 1);
        if (!this.partition()) break; // nothing in [from, to) can enter
        const again = this.windowEnd(from);
        if (again >= to) {
          this.scoreWindow(from, to);
          break;
        }
        to = again;
      }
      this.windows++;
      from = to;
    }
  }

  /** Where a window starting at `from` ends (exclusive): the first block end of the essential terms. */
  private windowEnd(from: number): number {
    const { order, T, end } = this;
    let to = end;
    for (let i = Math.min(this.firstEssential, T - 1); i < T; i++) {
      const last = order[i].blockEnd(from);
      if (last < to) to = last + 1;
    }
    if (T - this.firstEssential > 1) {
      this.minWindow = this.gathered < this.windows * 32 * T ? Math.min(this.minWindow * 2, MAX_WINDOW) : 1;
      to = Math.max(to, Math.min(end, from + this.minWindow));
    }
    return to;
  }

  private boundWindow(from: number, to: number): void {
    for (const c of this.cursors) this.windowMax[c.term] = c.maxIn(from, to);
  }

  /** Sorts the terms by window maximum and splits them; false when every term is non-essential. */
  private partition(): boolean {
    const { order, windowMax, sums, T } = this;
    for (let i = 1; i < T; i++) {
      const c = order[i];
      const m = windowMax[c.term];
      let j = i;
      for (; j > 0 && (windowMax[order[j - 1].term] > m || (windowMax[order[j - 1].term] === m && order[j - 1].term > c.term)); j--) order[j] = order[j - 1];
      order[j] = c;
    }
    const threshold = this.top.threshold();
    let sum = 0;
    let nonzero = 0;
    let i = 0;
    for (; i < T; i++) {
      const m = windowMax[order[i].term];
      const n = nonzero + (m > 0 ? 1 : 0);
      if (upperBound(sum + m, n) > threshold) break;
      sums[i] = sum += m;
      this.nonzero[i] = nonzero = n;
    }
    this.firstEssential = i;
    return i < T;
  }

  /** Gathers the units of the essential terms in [from, to), filters them through the others, offers the rest. */
  private scoreWindow(from: number, to: number): void {
    const { order, T, firstEssential, top } = this;
    let n = 0;
    for (let i = firstEssential; i < T; i++) order[i].advance(from);
    if (firstEssential === T - 1) {
      const c = order[T - 1];
      const t = c.term;
      const bit = 1 << t;
      for (let d = c.doc; d < to; d = c.next()) {
        const imp = c.impact();
        bufDoc[n] = d;
        bufScore[n] = imp;
        bufMask[n] = bit;
        bufImp[n * T + t] = imp;
        n++;
      }
    } else {
      for (;;) {
        let d = END;
        for (let i = firstEssential; i < T; i++) if (order[i].doc < d) d = order[i].doc;
        if (d >= to) break;
        let partial = 0;
        let mask = 0;
        for (let i = firstEssential; i < T; i++) {
          const c = order[i];
          if (c.doc !== d) continue;
          const imp = c.impact();
          partial += imp;
          mask |= 1 << c.term;
          bufImp[n * T + c.term] = imp;
          c.next();
        }
        bufDoc[n] = d;
        bufScore[n] = partial;
        bufMask[n] = mask;
        n++;
      }
    }
    if (n > BUFFER) throw new Error(`unit store search: ${n} units in one window`);
    this.gathered += n;

    // The non-essential terms, largest window maximum first: a unit stays only while its partial
    // score plus what the terms not yet checked can add may beat the threshold.
    const threshold = top.threshold();
    for (let i = 0; i < n; i++) live[i] = i;
    let m = n;
    for (let i = firstEssential - 1; i >= 0 && m > 0; i--) {
      const c = order[i];
      const bound = this.sums[i];
      const more = this.nonzero[i];
      const t = c.term;
      const bit = 1 << t;
      let kept = 0;
      for (let j = 0; j < m; j++) {
        const x = live[j];
        if (upperBound(bufScore[x] + bound, bitCount(bufMask[x]) + more) <= threshold) continue;
        const d = bufDoc[x];
        if (c.advance(d) === d) {
          const imp = c.impact();
          bufScore[x] += imp;
          bufMask[x] |= bit;
          bufImp[x * T + t] = imp;
        }
        live[kept++] = x;
      }
      m = kept;
    }

    // Exact scores, in term order, for what may still enter.
    for (let j = 0; j < m; j++) {
      const x = live[j];
      const mask = bufMask[x];
      let score = 0;
      for (let t = 0, row = x * T; t < T; t++) if ((mask >>> t) & 1) score += bufImp[row + t];
      if (score > top.threshold()) top.offer(score, bufDoc[x]);
    }
  }
}
