// The search loop (payments/store/evaluation.ts: block-max MaxScore over the posting lists of
// contract/posting-list.ts) returns exactly the BM25 top k of a brute-force scorer: the same
// docids, the same scores bit for bit, ties in docid order. The corpus is built to stress the
// early exits: frequent terms with hundreds of blocks, rare and absent terms, and many equal
// scores (few distinct unit lengths and term counts); queries of one to six terms, limits 1 to 100.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodePostingList, POSTING_BLOCK } from '../contract/posting-list.ts';
import { bm25Idf, type ProductIndexStats, type TermHeader } from '../contract/store-format.ts';
import { mergeTop, topK } from '../payments/store/evaluation.ts';
import { END, PostingCursor } from '../payments/store/postings.ts';
import { upperBound } from '../payments/store/scoring.ts';
import { SearchThreads } from '../payments/store/search-threads.ts';
import { rng } from './helpers/random.ts';

const N = 40_000;
const r = rng(36);
// term -> share of units containing it
const SHARES: Record<string, number> = { f0: 0.55, f1: 0.3, f2: 0.18, f3: 0.1, f4: 0.05 };
for (let i = 0; i < 10; i++) SHARES[`m${i}`] = 0.004 + 0.002 * i;
const RARE = Array.from({ length: 8 }, (_, i) => `r${i}`);

/** Per unit: its length and term counts. Lengths and counts from small sets, so scores tie often. */
const units: { dl: number; tf: Map<string, number> }[] = [];
for (let d = 0; d < N; d++) {
  const tf = new Map<string, number>();
  for (const [t, share] of Object.entries(SHARES)) if (r() < share) tf.set(t, r() < 0.8 ? 1 : r() < 0.7 ? 2 : 1 + Math.floor(r() * 12));
  let sum = 0;
  for (const n of tf.values()) sum += n;
  const dl = Math.max(sum, [8, 8, 16, 24, 40, 40, 90][Math.floor(r() * 7)] + (r() < 0.1 ? Math.floor(r() * 400) : 0));
  units.push({ dl, tf });
}
// rare terms: 1 to 6 units each, some sharing a unit
RARE.forEach((t, i) => {
  for (let j = 0; j <= i % 6; j++) {
    const u = units[Math.floor(r() * N)];
    u.tf.set(t, 1 + (j % 2));
    let sum = 0;
    for (const n of u.tf.values()) sum += n;
    u.dl = Math.max(u.dl, sum);
  }
});

const stats: ProductIndexStats = { docs: N, total_len: units.reduce((s, u) => s + u.dl, 0) };
const lengths = Uint32Array.from(units, (u) => u.dl); // lengths.dat
const avgdl = stats.total_len / stats.docs;

// the index: one posting list per term, encoded as the build does
const lists = new Map<string, { list: Uint8Array; header: TermHeader }>();
for (const t of [...Object.keys(SHARES), ...RARE]) {
  const docids: number[] = [];
  units.forEach((u, d) => u.tf.has(t) && docids.push(d));
  const n = docids.length;
  const { bytes, max } = encodePostingList(
    Uint32Array.from(docids),
    Uint32Array.from(docids, (d) => units[d].tf.get(t)!),
    Uint32Array.from(docids, (d) => units[d].dl),
    n,
    bm25Idf(N, n),
    avgdl,
  );
  const list = new Uint8Array(new SharedArrayBuffer(bytes.byteLength)); // 8-byte aligned and shared, as the reader's buffers are
  list.set(bytes);
  lists.set(t, { list, header: { df: n, blocks: Math.ceil(n / POSTING_BLOCK), at: 0, bytes: bytes.byteLength, max } });
}

const dfOf = new Map<string, number>();
for (const u of units) for (const t of u.tf.keys()) dfOf.set(t, (dfOf.get(t) ?? 0) + 1);

/** Brute force: every unit scored, terms added in sorted order, k1 1.2, b 0.75; score desc, docid asc. */
function bruteForce(terms: string[], k: number): { docid: number; score: number }[] {
  const sorted = [...new Set(terms)].sort();
  const df = new Map(sorted.map((t) => [t, dfOf.get(t) ?? 0]));
  const out: { docid: number; score: number }[] = [];
  units.forEach((u, docid) => {
    let score = 0;
    for (const t of sorted) {
      const tf = u.tf.get(t);
      if (!tf) continue;
      const idf = Math.log(1 + (N - df.get(t)! + 0.5) / (df.get(t)! + 0.5));
      score += (idf * (tf * 2.2)) / (tf + 1.2 * (1 - 0.75 + (0.75 * u.dl) / avgdl));
    }
    if (score > 0) out.push({ docid, score });
  });
  return out.sort((a, b) => b.score - a.score || a.docid - b.docid).slice(0, k);
}

/** The indexed terms of a query, in sorted order: one cursor each. */
const present = (terms: string[]) => [...new Set(terms)].sort().filter((t) => lists.has(t));
const cursors = (terms: string[]) => present(terms).map((t, i) => new PostingCursor(lists.get(t)!.list, lists.get(t)!.header, stats, lengths, i));

/** The search as the store runs it on one thread. */
function search(terms: string[], k: number) {
  return topK(cursors(terms), k);
}

/** The search as the store runs it with search threads. */
function threadSearch(threads: SearchThreads, terms: string[], k: number) {
  const p = present(terms);
  return threads.topK(p.map((t) => lists.get(t)!.list), p.map((t) => lists.get(t)!.header), stats, lengths, k);
}

const LIMITS = [1, 2, 3, 5, 10, 17, 50, 100];

test('the corpus is what the test needs: long lists, rare and absent terms, tied scores', () => {
  assert.ok(lists.get('f0')!.header.blocks > 150, 'a frequent term spans many blocks');
  assert.ok(lists.get('r0')!.header.df <= 2 && !lists.has('absent'));
  const top = bruteForce(['f3'], 100);
  assert.ok(top.filter((h, i) => i > 0 && h.score === top[i - 1].score).length > 20, 'units tie in the top 100 of a frequent term');
});

test('one to three terms, frequent, mid, rare and absent: same docids and scores as brute force, every limit', () => {
  const terms = ['f0', 'f1', 'f2', 'f3', 'f4', 'm0', 'm5', 'm9', 'r0', 'r3', 'r7', 'absent'];
  const queries: string[][] = terms.map((t) => [t]);
  for (let i = 0; i < terms.length; i++) for (let j = i + 1; j < terms.length; j++) queries.push([terms[i], terms[j]]);
  for (const q of [['f0', 'f1', 'f2'], ['f0', 'f1', 'r3'], ['f2', 'm5', 'r7'], ['f0', 'f0', 'absent'], ['f1', 'f3', 'f4'], ['m0', 'm9', 'f0']]) queries.push(q);
  for (const q of queries) {
    const expected = bruteForce(q, 100);
    for (const k of LIMITS) assert.equal(search(q, k), expected.slice(0, k), `${q.join(' ')} limit ${k}`);
  }
});

test('random queries of up to six terms: same docids and scores as brute force', () => {
  const pool = [...Object.keys(SHARES), ...RARE, 'absent'];
  const q = rng(3636);
  for (let i = 0; i < 150; i++) {
    const n = 1 + Math.floor(q() * 6);
    const terms = Array.from({ length: n }, () => pool[Math.floor(q() * pool.length)]);
    const k = LIMITS[Math.floor(q() * LIMITS.length)];
    assert.equal(search(terms, k), bruteForce(terms, k), `${terms.join(' ')} limit ${k}`);
  }
});

test('a limit past the matches returns every match, in order', () => {
  const all = bruteForce(['m0', 'r1'], N);
  assert.ok(all.length > 100 && all.length < N);
  assert.equal(search(['m0', 'r1'], N), all);
  assert.equal(search(['absent'], 10), []);
});

test('any split of the docids into ranges, each searched alone and the top lists merged, gives the same top k', () => {
  const q = rng(3637);
  const pool = [...Object.keys(SHARES), ...RARE, 'absent'];
  for (let i = 0; i < 120; i++) {
    const terms = Array.from({ length: 1 + Math.floor(q() * 5) }, () => pool[Math.floor(q() * pool.length)]);
    const k = LIMITS[Math.floor(q() * LIMITS.length)];
    // 2 to 5 ranges with random bounds, some empty, some inside a block
    const bounds = [0, ...Array.from({ length: 1 + Math.floor(q() * 4) }, () => Math.floor(q() * (N + 10))).sort((a, b) => a - b), END];
    let hits = topK(cursors(terms), k, bounds[0], bounds[1]);
    for (let r = 1; r + 1 < bounds.length; r++) hits = mergeTop(hits, topK(cursors(terms), k, bounds[r], bounds[r + 1]), k);
    assert.equal(hits, bruteForce(terms, k), `${terms.join(' ')} limit ${k} ranges ${bounds.join(',')}`);
  }
});

test('search threads: a split search equals brute force, queries at once share the helpers, a damaged list fails as on one thread', async () => {
  const threads = new SearchThreads(3, 0); // every query split, two helper threads
  const run = (terms: string[], k: number) => threadSearch(threads, terms, k);
  try {
    for (const q of [['f0'], ['f0', 'f1', 'f2'], ['f3', 'm5', 'r7'], ['m0', 'r1'], ['r3']]) for (const k of [1, 10, 100]) assert.equal(await run(q, k), bruteForce(q, k), `${q.join(' ')} limit ${k}`);
    assert.ok(threads.helped >= 30, `the helpers answered ranges (${threads.helped})`);
    // many at once: a busy helper is not waited for, every answer is still exact
    const q = rng(3638);
    const pool = [...Object.keys(SHARES), ...RARE];
    const queries = Array.from({ length: 40 }, () => Array.from({ length: 1 + Math.floor(q() * 4) }, () => pool[Math.floor(q() * pool.length)]));
    const got = await Promise.all(queries.map((t) => run(t, 10)));
    queries.forEach((t, i) => assert.equal(got[i], bruteForce(t, 10), t.join(' ')));
    // A list whose block maxima are lowered below their impacts in the last third (the second
    // helper's range; the list's largest maximum stays, so its directory still passes the check):
    // that helper fails, its range is searched here and raises the store's error.
    const { list, header } = lists.get('f1')!;
    const bad = new Uint8Array(new SharedArrayBuffer(list.byteLength));
    bad.set(list);
    const blockMax = new Float64Array(bad.buffer, 0, header.blocks); // the directory's first field (contract/posting-list.ts)
    for (let b = Math.floor((header.blocks * 2) / 3); b < header.blocks; b++) if (blockMax[b] !== header.max) blockMax[b] = 1e-9;
    const helpedBefore = threads.helped;
    const err = await threads.topK([bad], [header], stats, lengths, 10).then(() => null, (e: Error) => e);
    assert.match(String(err?.message), /above the block maximum/);
    assert.is(threads.helped, helpedBefore + 1, 'the first helper answered, the second failed');
  } finally {
    await threads.close();
  }
});

test('search threads whose worker cannot start: tried once, then every query on one thread, answers exact', async () => {
  const threads = new SearchThreads(2, 0, 'no-such-search-worker');
  try {
    for (const q of [['f0'], ['f0', 'f1', 'f2'], ['m0', 'r1'], ['f3', 'm5', 'r7'], ['f1']]) assert.equal(await threadSearch(threads, q, 10), bruteForce(q, 10), q.join(' '));
    assert.is(threads.helped, 0);
    assert.equal(threads.workers, { started: 1, retired: 1 }, 'one failed start, not one per query');
  } finally {
    await threads.close();
  }
  // a worker that can start and answers is not retired
  const good = new SearchThreads(2, 0);
  try {
    await threadSearch(good, ['f0'], 10);
    assert.equal(good.workers, { started: 1, retired: 0 });
  } finally {
    await good.close();
  }
});

test('a bound added in another order than the exact score still bounds it (rounding)', () => {
  // Exact scores add impacts in sorted term order, bounds add maxima in another; without the
  // allowance for rounding, some of these sums would come out a few ulps below the exact one.
  const q = rng(99);
  let reordered = 0;
  for (let i = 0; i < 200_000; i++) {
    const n = 2 + Math.floor(q() * 5);
    const xs = Array.from({ length: n }, () => q() * 10 ** Math.floor(q() * 4 - 2));
    const exact = xs.reduce((s, x) => s + x, 0);
    const other = [...xs].reverse().reduce((s, x) => s + x, 0);
    if (other < exact) reordered++;
    assert.ok(exact <= upperBound(other, n), `${xs} ${exact} ${other}`);
  }
  assert.ok(reordered > 1000, 'the orders do round differently');
  // one impact is its own bound: a unit tied with the threshold is skipped
  for (const x of [0.1, 1 / 3, 2.718281828459045]) assert.is(upperBound(x, 1), x);
});

test.run();
