/**
 * A FIFO mutex per key, within one process: the in-process half of every "one at a time" rule (per pod in the
 * runtime, per lock file in flock.ts, where it saves polling for waiters of the same process).
 * A waiter may leave the queue before its turn (its `signal` aborted: its bound passed, or its call was answered):
 * it is taken out at once, its `work` never runs, and the waiters behind it move up. The key passes from one
 * holder to the next waiter still queued when the holder's work settles, so a waiter that left can neither hold the
 * key nor lose the turn of the one behind it.
 * @module
 */

/** Options of one `run`. */
export interface MutexRunOptions {
  /** Aborted: the run leaves the queue (rejecting with the signal's reason) unless `work` has started. */
  signal?: AbortSignal;
}

/** A FIFO mutex per key; keys with no holder and no waiter are forgotten. */
export class KeyedMutex {
  /** Per held key, the grants of its waiters in order (empty: held, nobody waiting). */
  private readonly queues = new Map<string, Array<() => void>>();

  /**
   * Runs `work` when every earlier `run` of the same key has settled or left the queue. Rejects with the signal's
   * reason, without running `work`, when the signal aborts first (even once the turn came but before `work` ran).
   */
  async run<T>(key: string, work: () => Promise<T>, opts: MutexRunOptions = {}): Promise<T> {
    const { signal } = opts;
    signal?.throwIfAborted();
    const queue = this.queues.get(key);
    if (queue === undefined) this.queues.set(key, []);
    else {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          // Still queued (a granted waiter has stopped listening): leave, and nobody waits for us.
          const at = queue.indexOf(grant);
          if (at >= 0) queue.splice(at, 1);
          reject(signal!.reason);
        };
        const grant = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        queue.push(grant);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    }
    // The key is ours from here: `finally` hands it on whatever happens.
    try {
      signal?.throwIfAborted();
      return await work();
    } finally {
      this.handOn(key);
    }
  }

  /** Gives the held `key` to its next waiter, or forgets it when none waits. */
  private handOn(key: string): void {
    const queue = this.queues.get(key)!;
    const next = queue.shift();
    if (next) next();
    else this.queues.delete(key);
  }

  /** Keys with an operation running or waiting. */
  get busyKeys(): string[] {
    return [...this.queues.keys()];
  }

  /** How many runs of `key` wait for their turn (not counting the one running). */
  waiting(key: string): number {
    return this.queues.get(key)?.length ?? 0;
  }
}
