// Concurrency primitives of the ledger: a per-key async mutex and a group committer.
import type { FaultHooks, FaultOp } from '../../faults.ts';

/**
 * Per-key FIFO mutex. Callers that need several keys must always take them in the same global
 * order (the ledger takes claim keys before balance keys) so two operations can never deadlock.
 */
export class KeyedMutex {
  private tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      // Drop the map entry when nobody queued behind us, so the map does not grow with every
      // quote id ever seen.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

export type BatchOp = { type: 'put'; key: string; value: unknown } | { type: 'del'; key: string };

interface Waiter {
  ops: BatchOp[];
  /** what kind of change this is, for the simulator's fault hooks (payments/faults.ts) */
  tag?: FaultOp;
  resolve: () => void;
  reject: (e: unknown) => void;
}

interface BatchWriter {
  batch(ops: BatchOp[], options: { sync: boolean }): Promise<void>;
}

/**
 * Group commit: while one synced batch is being written, every state change that arrives is
 * queued; when the write returns, the whole queue goes out as ONE synced batch. Each state change
 * is still all-or-nothing (its ops are never split across batches), batches are written strictly
 * in order, and a waiter is only released once its own batch - and therefore every earlier one -
 * is durable. One fsync then pays for many draws, which is how the service outruns a plain loop
 * of synced batches.
 *
 * Fail-stop: if a write fails we cannot know what reached the disk (a failed fsync may still have
 * left the batch in the log), and the ledger's in-memory view may already include the queued
 * changes. So the committer refuses all further work; the process must restart and reload from
 * disk. Silently carrying on would risk answering from a state that never became durable.
 */
export class GroupCommitter {
  private queue: Waiter[] = [];
  private writing = false;
  private failure: Error | null = null;

  constructor(
    private readonly db: BatchWriter,
    private readonly onFatal: (e: Error) => void = () => {},
    /** Simulator only (payments/faults.ts); production never passes it. */
    private readonly faults?: FaultHooks,
  ) {}

  get failed(): Error | null {
    return this.failure;
  }

  /** Resolves once `ops` are durable. An empty op list is a barrier: it resolves after every earlier change. */
  enqueue(ops: BatchOp[], tag?: FaultOp): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ops, resolve, reject, ...(tag ? { tag } : {}) });
      if (!this.writing) void this.drain();
    });
  }

  flush(): Promise<void> {
    return this.enqueue([]);
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0 && !this.failure) {
        const group = this.queue.splice(0);
        const ops = group.flatMap((w) => w.ops);
        try {
          if (ops.length > 0) {
            const written = this.db.batch(ops, { sync: true });
            if (this.faults) for (const w of group) if (w.tag) this.faults.commit('during-commit', w.tag);
            await written;
          }
        } catch (e) {
          const err = e instanceof Error ? e : new Error(String(e));
          this.failure = new Error(`ledger write failed; refusing further changes until restart: ${err.message}`, { cause: err });
          for (const w of group) w.reject(this.failure);
          for (const w of this.queue.splice(0)) w.reject(this.failure);
          this.onFatal(this.failure);
          return;
        }
        for (const w of group) w.resolve();
      }
    } finally {
      this.writing = false;
    }
  }
}
