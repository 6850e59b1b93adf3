/**
 * A counting semaphore within one process: at most `size` holders at once, the rest served in arrival order.
 * @module
 */

/** At most `size` runs at once; the others wait their turn, first come first served. */
export class Semaphore {
  private holders = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(readonly size: number) {}

  /** Runs `work` once a place is free; the place is given back when it settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.holders >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.holders++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.holders--;
    }
  }

  /** Runs holding or waiting for a place. */
  get busy(): number {
    return this.holders + this.waiting.length;
  }
}
