// Scoring of the unit store's search: the k best units so far and the threshold a unit must beat,
// with the store's order (score descending, then docid ascending, which is reference order: D1 in
// contract/store-format.ts), and the slack that keeps pruning by bounds safe from rounding.

/**
 * An upper bound of any exact score made of impacts no larger than `n` numbers whose
 * floating-point sum, added in any order, is `sum`. Exact scores add their impacts in the query's
 * sorted term order and bounds add block maxima in another order: each sum of n positive numbers
 * is within a relative (n - 1) * 2^-53 of the real sum, so `sum` is inflated by more than twice
 * that (as Lucene's MathUtil.sumUpperBound does). One number is exact: an exact score made of one
 * impact is that impact, and it is below a block maximum or equal to it. That case matters: the
 * impacts of a frequent word are nearly all equal, and the units tied at the threshold can be
 * skipped only when the bound is exact.
 */
export function upperBound(sum: number, n: number): number {
  return n <= 1 ? sum : sum + sum * n * 2 ** -51;
}

export interface Hit {
  docid: number;
  score: number;
}

/**
 * The k best (score, docid) offered, as a binary heap with the worst at the root: lowest score,
 * and of equal scores the highest docid. Units are offered in increasing docid order (the search
 * walks docids upwards), so a unit whose score equals the threshold never beats the units already
 * kept: it enters only with a strictly higher score.
 */
export class TopK {
  private scores: Float64Array;
  private docids: Int32Array;
  private n = 0;
  private last = -1;

  constructor(readonly k: number, expected: number) {
    const size = Math.max(1, Math.min(k, expected));
    this.scores = new Float64Array(size);
    this.docids = new Int32Array(size);
  }

  /**
   * What a unit must score more than to enter: 0 until k units are kept (every match scores > 0).
   * A unit whose upper bound (upperBound) is not above it cannot enter.
   */
  threshold(): number {
    return this.n < this.k ? 0 : this.scores[0];
  }

  offer(score: number, docid: number): void {
    if (!(docid > this.last)) throw new Error(`unit store search: docid ${docid} offered after ${this.last}`);
    this.last = docid;
    if (!(score > 0)) throw new Error(`unit store search: docid ${docid} scored ${score}`);
    if (this.n < this.k) {
      if (this.n === this.scores.length) this.grow();
      this.siftUp(this.n++, score, docid);
    } else if (score > this.scores[0]) {
      this.siftDown(score, docid);
    }
  }

  private grow(): void {
    const size = Math.min(this.k, this.scores.length * 2);
    const s = new Float64Array(size);
    s.set(this.scores);
    const d = new Int32Array(size);
    d.set(this.docids);
    this.scores = s;
    this.docids = d;
  }

  /** true when (s1, d1) is worse than (s2, d2): a lower score, or an equal score and a higher docid. */
  private static worse(s1: number, d1: number, s2: number, d2: number): boolean {
    return s1 < s2 || (s1 === s2 && d1 > d2);
  }

  private siftUp(at: number, score: number, docid: number): void {
    const { scores, docids } = this;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!TopK.worse(score, docid, scores[parent], docids[parent])) break;
      scores[at] = scores[parent];
      docids[at] = docids[parent];
      at = parent;
    }
    scores[at] = score;
    docids[at] = docid;
  }

  /** Replaces the root with (score, docid) and restores the heap. */
  private siftDown(score: number, docid: number): void {
    const { scores, docids, n } = this;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && TopK.worse(scores[child + 1], docids[child + 1], scores[child], docids[child])) child++;
      if (!TopK.worse(scores[child], docids[child], score, docid)) break;
      scores[at] = scores[child];
      docids[at] = docids[child];
      at = child;
    }
    scores[at] = score;
    docids[at] = docid;
  }

  /** The kept units, best first. */
  sorted(): Hit[] {
    const out: Hit[] = [];
    for (let i = 0; i < this.n; i++) out.push({ docid: this.docids[i], score: this.scores[i] });
    return out.sort((a, b) => b.score - a.score || a.docid - b.docid);
  }
}
