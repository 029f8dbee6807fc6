// Starting a worker thread from a module beside the caller, compiled or not: from build/ the worker
// is the compiled `.js`; run by tsx (development, tests, benchmarks) the worker registers tsx first,
// as a worker does not inherit the loader of `--import tsx`. Used by the store build's ingest
// workers (generator/store/parallel-lines.ts) and the search threads (payments/store/search-threads.ts).
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** A worker running the module `./<name>.js` (or `.ts`) beside the module at `callerUrl` (its import.meta.url). */
export function startWorker(callerUrl: string, name: string, options: WorkerOptions): Worker {
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, callerUrl), options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const worker = new URL(`./${name}.ts`, callerUrl).href;
  return new Worker(`import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(worker)}); });`, { ...options, eval: true });
}
