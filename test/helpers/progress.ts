// Waiting on events, not clocks: a test that drives a stream of requests says "signal" after each
// answer it counts, and waits `until` its condition holds, instead of sleeping for a guessed time
// (too short on a loaded machine, wasted on a quiet one). The time limit is a failure bound only.
export class Progress {
  private readonly waiters = new Set<() => void>();

  /** Something a waiter may be counting happened: check the conditions again. */
  signal(): void {
    for (const check of [...this.waiters]) check();
  }

  /** Resolves once `condition()` holds (checked now and at every signal); rejects after `timeoutMs` naming `what`. */
  until(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
      }, timeoutMs);
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }
}
