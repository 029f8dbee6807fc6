// Searches that use more than one core. Where block maxima cannot skip (the frequent-word tail: every
// word of the query in 5-40 % of the units, impacts nearly all equal), a search reads hundreds of
// thousands of postings, and one thread is the limit. Such a query is split into docid ranges of
// about equal work: the service thread searches the first range while idle search threads search
// the others, and the top lists are merged. The top k of the whole is the best k of the ranges'
// top k (evaluation.ts mergeTop), so the answer is the same, scores bit for bit.
//
// The posting lists and unit lengths live in SharedArrayBuffers (store-files.ts): a range costs one
// message each way, nothing is copied. A thread busy with another query is not waited for: under
// load each query runs on its own thread, as with no helpers at all. A range whose thread fails is
// searched on the service thread, which raises the same error where the failure was the data's (a
// damaged list); the thread is started again at the next split, or retired when its worker never
// answered (SearchThread).
import type { Worker } from 'node:worker_threads';
import type { ProductIndexStats, TermHeader } from '../../contract/store-format.ts';
import { startWorker } from '../../contract/worker-thread.ts';
import { mergeTop, topK } from './evaluation.ts';
import { PostingCursor } from './postings.ts';
import type { Hit } from './scoring.ts';
import { defaultSearchThreads, SPLIT_MIN_POSTINGS } from './search-settings.ts';

/** What a search thread is asked: the top k of the query's lists among the docids in [from, end). */
export interface RangeJob {
  id: number;
  lists: Uint8Array[];
  headers: TermHeader[];
  stats: ProductIndexStats;
  lengths: Uint32Array;
  k: number;
  from: number;
  end: number;
}

export type RangeAnswer = { id: number; hits: Hit[] } | { id: number; error: string };

let jobs = 0;

/**
 * One search worker, started at its first job; it keeps the process alive only while it has one.
 * A worker that stops after answering is started again at the next job; one that stops before it
 * ever answered (it cannot start here: a flag it inherits, a resource limit) retires the thread, so
 * queries do not pay a failed start each time; they run on the serving thread, as with no helpers.
 */
class SearchThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, (hits: Hit[] | null) => void>();
  private answered = false;
  /** Workers started (the tests count them). */
  starts = 0;
  retired = false;

  constructor(private readonly module: string) {}

  /** Not to be given a job now: one is in progress, or the thread is retired. */
  get busy(): boolean {
    return this.retired || this.pending.size > 0;
  }

  /** The range's top k, or null when the thread failed (then the caller searches the range itself). */
  search(job: Omit<RangeJob, 'id'>): Promise<Hit[] | null> {
    const worker = (this.worker ??= this.start());
    const id = ++jobs;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ ...job, id } satisfies RangeJob);
    });
  }

  private start(): Worker {
    this.starts++;
    const worker = startWorker(import.meta.url, this.module, {});
    worker.unref();
    worker.on('message', (a: RangeAnswer) => {
      this.answered = true;
      this.settle(a.id, 'hits' in a ? a.hits : null);
    });
    const fail = () => {
      if (this.worker === worker) this.worker = null;
      if (!this.answered) this.retired = true;
      for (const id of [...this.pending.keys()]) this.settle(id, null);
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    return worker;
  }

  private settle(id: number, hits: Hit[] | null): void {
    const resolve = this.pending.get(id);
    if (!resolve) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker?.unref();
    resolve(hits);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }
}

export class SearchThreads {
  private readonly helpers: SearchThread[];
  /** Ranges the helper threads answered (a failed one is searched here and not counted). */
  helped = 0;

  /**
   * `threads`: how many threads one search may use, the calling one included (1: no helpers;
   * default defaultSearchThreads());
   * `workerModule`: the worker's module beside this one (tests name one that cannot start).
   */
  constructor(
    threads = defaultSearchThreads(),
    private readonly minPostings = SPLIT_MIN_POSTINGS,
    workerModule = 'search-worker',
  ) {
    if (!(Number.isInteger(threads) && threads >= 1)) throw new Error(`search threads must be an integer >= 1: ${threads}`);
    this.helpers = Array.from({ length: threads - 1 }, () => new SearchThread(workerModule));
  }

  /** Workers started so far, and helper threads retired because their worker could not start. */
  get workers(): { started: number; retired: number } {
    return { started: this.helpers.reduce((n, h) => n + h.starts, 0), retired: this.helpers.filter((h) => h.retired).length };
  }

  /** The k best units for the query's lists (one per term, in sorted term order). */
  async topK(lists: Uint8Array[], headers: TermHeader[], stats: ProductIndexStats, lengths: Uint32Array, k: number): Promise<Hit[]> {
    const cursors = () => lists.map((list, i) => new PostingCursor(list, headers[i], stats, lengths, i));
    const here = cursors();
    const postings = here.reduce((s, c) => s + c.df, 0);
    const idle = postings >= this.minPostings ? this.helpers.filter((h) => !h.busy) : [];
    if (idle.length === 0) return topK(here, k);
    // ranges of about equal work: equal shares of the longest list's blocks
    const longest = here.reduce((a, c) => (c.df > a.df ? c : a));
    const bounds = Array.from({ length: idle.length + 2 }, (_, i) => longest.boundary(i, idle.length + 1));
    const far = idle.map((h, i) => h.search({ lists, headers, stats, lengths, k, from: bounds[i + 1], end: bounds[i + 2] }));
    let hits = topK(here, k, 0, bounds[1]);
    for (let i = 0; i < far.length; i++) {
      const got = await far[i];
      if (got) this.helped++;
      hits = mergeTop(hits, got ?? topK(cursors(), k, bounds[i + 1], bounds[i + 2]), k);
    }
    return hits;
  }

  async close(): Promise<void> {
    await Promise.all(this.helpers.map((h) => h.close()));
  }
}
