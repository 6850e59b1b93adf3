/**
 * A clock a test moves by hand, for code that takes `Timers` (resident/places.ts): what such a test asserts
 * about time holds however loaded the machine is, since no timer fires but when the test says so.
 */
import { setImmediate as turn } from "node:timers/promises";
import type { Timer, Timers } from "#resident/places.js";

interface Pending {
  at: number;
  readonly ms: number;
  readonly run: () => void;
}

export class FakeTimers implements Timers {
  /** Milliseconds since the clock was made. */
  now = 0;
  private readonly pending = new Set<Pending>();

  set(run: () => void, ms: number): Timer {
    const p: Pending = { at: this.now + ms, ms, run };
    this.pending.add(p);
    return {
      refresh: () => {
        p.at = this.now + p.ms;
        this.pending.add(p);
      },
      clear: () => void this.pending.delete(p),
    };
  }

  /** Moves the clock by `ms`, running each timer due on the way in order, and what its promises then do. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      await turn();
      let next: Pending | undefined;
      for (const p of this.pending) if (p.at <= end && (!next || p.at < next.at)) next = p;
      if (!next) break;
      this.now = next.at;
      this.pending.delete(next);
      next.run();
    }
    this.now = end;
    await turn();
  }
}
