/**
 * A FIFO mutex per key, within one process: the in-process half of every "one at a time" rule (per pod in the
 * runtime, per lock file in flock.ts, where it saves polling for waiters of the same process).
 * @module
 */

/** A FIFO mutex per key; keys with no holder and no waiter are forgotten. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `work` when every earlier `run` of the same key has settled. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys with an operation running or waiting. */
  get busyKeys(): string[] {
    return [...this.tails.keys()];
  }
}
