// The store build's worker threads (ingest-worker.ts) for large aligned paragraph files: the main
// thread reads the file in blocks of whole lines and hands them out in turn; the workers check
// each line, build, serialise and tokenize its unit; the main thread takes their answers back in
// file order, so everything after (routing, duplicates, ingestion numbers, the store version) is
// what the sequential reader gives, in the same order. Memory: at most two blocks per worker in
// flight.
import { open } from 'node:fs/promises';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../contract/worker-thread.ts';
import type { IndexWriter } from './index-writer.ts';
import type { PreparedUnit } from './prepared.ts';
import type { StoredUnitBody } from './units.ts';

/** Files this large or larger are read by the workers (when the build has any). */
export const PARALLEL_MIN_BYTES = 32 << 20;
const BLOCK = 4 << 20;
const IN_FLIGHT = 2; // blocks per worker

/** What a worker is given once: which adapter, for which source, under which file name. */
export interface LineJob {
  adapter: 'aligned-paragraphs' | 'aligned-rows';
  src: { id: string; publisher: string };
  displayName: string;
}

/** A worker's answer for one block: its items (units and bad lines) in line order. */
export interface BlockAnswer {
  spare: ArrayBuffer | null; // the block's buffer, given back to be read into again
  lines: number; // lines in the block (blank ones included)
  items: number;
  line: number[]; // per item: its line within the block (1-based)
  reason: (string | null)[]; // why the line is bad, or null for a unit
  ref: string[];
  celex: string[];
  json: Uint8Array; // the units' JSON, back to back
  jsonEnd: Uint32Array; // per item: where its JSON ends
  digests: Uint8Array; // per item: SHA-256 of its JSON (32 bytes; zeros for a bad line)
  rows: Uint32Array;
  dl: Uint32Array;
  termEnd: Uint32Array; // per item: where its terms end in terms/tfs
  terms: Uint32Array; // worker term ids
  tfs: Uint32Array;
  newTerms: string[]; // the worker's terms first seen in this block, in id order
}

export type LineItem = { ok: true; line: number; celex: string; unit: PreparedUnit } | { ok: false; line: number; reason: string };

class LineWorker {
  private readonly worker: Worker;
  private readonly waiting: { resolve: (a: BlockAnswer) => void; reject: (e: Error) => void }[] = [];
  private failed: Error | null = null;
  /** worker term id -> index term id */
  readonly termIds: number[] = [];

  constructor(job: LineJob) {
    this.worker = spawnWorker(job);
    this.worker.on('message', (a: BlockAnswer) => this.waiting.shift()?.resolve(a));
    const fail = (err: Error) => {
      this.failed ??= err;
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`store build: an ingest worker stopped (exit ${code})`)));
  }

  /** Hands a block out, with a buffer for its units' JSON when there is one to reuse. */
  run(block: Uint8Array, last: boolean, sink: ArrayBuffer | null): Promise<BlockAnswer> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.worker.postMessage({ block, last, sink }, sink ? [block.buffer as ArrayBuffer, sink] : [block.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.failed ??= new Error('closed');
    await this.worker.terminate();
  }
}

/** The worker thread (ingest-worker.ts). */
function spawnWorker(job: LineJob): Worker {
  // A worker makes a few MB of short-lived strings per block: a young generation of 64 MB (V8's
  // default is 16) collects them with fewer scavenges (~15 % less CPU in a 200k-unit build).
  return startWorker(import.meta.url, 'ingest-worker', { workerData: job, resourceLimits: { maxYoungGenerationSizeMb: 64 } });
}

/**
 * The file in blocks of whole lines (the last may end without a newline), each in a buffer of its
 * own, taken from `spare` (buffers the workers gave back) when one is large enough: reusing them
 * saves the page faults of fresh memory and the garbage collections that external memory brings.
 */
async function* blocks(path: string, size: number, spare: ArrayBuffer[]): AsyncGenerator<{ block: Uint8Array; last: boolean }> {
  const fh = await open(path, 'r');
  try {
    let carry = Buffer.alloc(0);
    for (;;) {
      const reuse = spare.pop();
      const buf = reuse && reuse.byteLength >= carry.length + size ? Buffer.from(reuse) : Buffer.allocUnsafeSlow(carry.length + size);
      carry.copy(buf, 0);
      const { bytesRead } = await fh.read(buf, carry.length, size, null);
      const end = carry.length + bytesRead;
      if (bytesRead === 0) {
        if (end > 0) yield { block: buf.subarray(0, end), last: true };
        return;
      }
      const nl = buf.lastIndexOf(10, end - 1);
      if (nl === -1) {
        carry = buf.subarray(0, end); // one line longer than a block: read on
        continue;
      }
      carry = Buffer.from(buf.subarray(nl + 1, end));
      yield { block: buf.subarray(0, nl + 1), last: false };
    }
  } finally {
    await fh.close();
  }
}

/**
 * The items of an aligned paragraphs file, in file order, made by `workers` threads. Term ids of
 * the units are the index's (`index.termId`).
 */
export async function* parallelLines(path: string, job: LineJob, workers: number, index: IndexWriter, blockBytes = BLOCK): AsyncGenerator<LineItem> {
  const pool = Array.from({ length: Math.max(1, workers) }, () => new LineWorker(job));
  const inFlight: { answer: Promise<BlockAnswer>; worker: LineWorker }[] = [];
  const spareBlocks: ArrayBuffer[] = [];
  const spareSinks: ArrayBuffer[] = [];
  const source = blocks(path, blockBytes, spareBlocks);
  let read = source.next(); // the next block is always being read
  try {
    let next = 0;
    let done = false;
    let lineBase = 0;
    for (;;) {
      while (!done && inFlight.length < IN_FLIGHT * pool.length) {
        const r = await read;
        if (r.done) done = true;
        else {
          read = source.next();
          const worker = pool[next++ % pool.length];
          const answer = worker.run(r.value.block, r.value.last, spareSinks.pop() ?? null);
          answer.catch(() => {}); // awaited in order below
          inFlight.push({ answer, worker });
        }
      }
      const head = inFlight.shift();
      if (!head) return;
      const a = await head.answer;
      yield* items(a, head.worker, lineBase, index);
      lineBase += a.lines;
      // every unit of the block is stored (its JSON copied): both buffers can be used again
      if (a.spare) spareBlocks.push(a.spare);
      spareSinks.push(a.json.buffer as ArrayBuffer);
    }
  } finally {
    // stopped early (a bad record, a failed write): let the pending read end, then close the file
    await read.catch(() => {});
    await source.return(undefined);
    await Promise.all(pool.map((w) => w.close()));
  }
}

function* items(a: BlockAnswer, worker: LineWorker, lineBase: number, index: IndexWriter): Generator<LineItem> {
  for (const t of a.newTerms) worker.termIds.push(index.termId(t));
  const termIds = new Uint32Array(a.terms.length);
  for (let i = 0; i < termIds.length; i++) termIds[i] = worker.termIds[a.terms[i]];
  for (let i = 0; i < a.items; i++) {
    const line = lineBase + a.line[i];
    const reason = a.reason[i];
    if (reason !== null) {
      yield { ok: false, line, reason };
      continue;
    }
    const from = i === 0 ? 0 : a.jsonEnd[i - 1];
    const json = a.json.subarray(from, a.jsonEnd[i]);
    const unit: PreparedUnit = {
      ref: a.ref[i],
      json,
      digest: a.digests.subarray(32 * i, 32 * i + 32),
      rows: a.rows[i],
      group: a.celex[i],
      unit: () => JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8')) as StoredUnitBody,
      termIds,
      tfs: a.tfs,
      termStart: i === 0 ? 0 : a.termEnd[i - 1],
      termEnd: a.termEnd[i],
      dl: a.dl[i],
    };
    yield { ok: true, line, celex: a.celex[i], unit };
  }
}
