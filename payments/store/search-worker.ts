// A search thread (search-threads.ts): the top k of one docid range of a query, over the posting
// lists and unit lengths the service thread shares with it (SharedArrayBuffer, nothing copied).
import { parentPort } from 'node:worker_threads';
import { topK } from './evaluation.ts';
import { PostingCursor } from './postings.ts';
import type { RangeAnswer, RangeJob } from './search-threads.ts';

parentPort!.on('message', (job: RangeJob) => {
  let answer: RangeAnswer;
  try {
    const cursors = job.lists.map((list, i) => new PostingCursor(list, job.headers[i], job.stats, job.lengths, i));
    answer = { id: job.id, hits: topK(cursors, job.k, job.from, job.end) };
  } catch (err) {
    answer = { id: job.id, error: (err as Error).message };
  }
  parentPort!.postMessage(answer);
});
