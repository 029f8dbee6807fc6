// The search threads' settings (search-threads.ts), in a module of their own: the service's
// configuration (payments/config.ts) reads the default here without loading the search itself.
import { availableParallelism } from 'node:os';

/**
 * Queries with fewer postings than this (all terms together) run on one thread: a message each way
 * costs ~0.1 ms, and below ~50k postings the whole search takes ~1 ms (bench:search at 5M units).
 */
export const SPLIT_MIN_POSTINGS = 50_000;

/** Threads a search may use by default: the service thread and one more where there is a second core. */
export function defaultSearchThreads(): number {
  return Math.min(2, availableParallelism());
}
