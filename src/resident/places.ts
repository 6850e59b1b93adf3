/**
 * The places where calls run in the resident server's process, so that a call that never finishes stalls only
 * itself. A call takes a place before its plugin runs and gives it back when it ends, when it times out (its work
 * may go on: it is then "overdue"), or when it has run for `longMs` (it goes on as a "long" call, outside the
 * places: a call waiting on a DHCP server or on etcd must not keep others from running). A call that finds every
 * place taken waits as long as places keep being given back (a burst moves on); when none has been given back
 * for `stallMs` (every place is held by a call that is stuck), or when `size + maxLong` calls run already, it gets
 * no place and is handed back to its caller, which runs it itself (exec mode) — nothing of it has run here.
 * @module
 */

/** What a call holds while it runs. */
export interface Place {
  /** Gives the place back (once; later calls do nothing). */
  release(): void;
}

/** The bounds of the places. */
export interface PlacesLimits {
  /** Calls running at once in their first `longMs`. */
  size: number;
  /** Calls past their first `longMs` that may run besides. */
  maxLong: number;
  /** How long a waiting call waits without any place being given back. */
  stallMs: number;
  /** After this long a call gives its place back and runs on as a long call. */
  longMs: number;
}

export const DEFAULT_PLACES: PlacesLimits = { size: 16, maxLong: 64, stallMs: 500, longMs: 10_000 };

interface Waiter {
  grant: (place: Place | undefined) => void;
  timer: NodeJS.Timeout;
}

/** The server's places (see the module comment). */
export class Places {
  private fresh = 0;
  private long = 0;
  private readonly waiting: Waiter[] = [];

  constructor(readonly limits: PlacesLimits = DEFAULT_PLACES) {}

  /** Calls holding a place now. */
  get running(): number {
    return this.fresh;
  }

  /** Calls running past their first `longMs` (outside the places). */
  get longRunning(): number {
    return this.long;
  }

  /** Calls waiting for a place. */
  get waiters(): number {
    return this.waiting.length;
  }

  /** A place for a call, at once or after a wait; undefined: none, the caller runs the call itself. */
  take(): Promise<Place | undefined> {
    if (this.fresh + this.long >= this.limits.size + this.limits.maxLong) return Promise.resolve(undefined);
    if (this.fresh < this.limits.size && this.waiting.length === 0) return Promise.resolve(this.grant());
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => this.giveUp(waiter), this.limits.stallMs),
      };
      this.waiting.push(waiter);
    });
  }

  private giveUp(waiter: Waiter): void {
    const at = this.waiting.indexOf(waiter);
    if (at < 0) return;
    this.waiting.splice(at, 1);
    waiter.grant(undefined);
  }

  /** A new place, counted as fresh, that turns long after `longMs`. */
  private grant(): Place {
    this.fresh++;
    let state: "fresh" | "long" | "released" = "fresh";
    const turnLong = setTimeout(() => {
      if (state !== "fresh") return;
      state = "long";
      this.fresh--;
      this.long++;
      this.gaveBack();
    }, this.limits.longMs);
    turnLong.unref?.();
    return {
      release: () => {
        if (state === "released") return;
        clearTimeout(turnLong);
        if (state === "fresh") this.fresh--;
        else this.long--;
        state = "released";
        this.gaveBack();
      },
    };
  }

  /** A place was given back: the first waiter gets it, and every waiter's patience starts again. */
  private gaveBack(): void {
    for (const w of this.waiting) {
      w.timer.refresh();
    }
    this.wake();
  }

  private wake(): void {
    while (this.waiting.length > 0 && this.fresh < this.limits.size && this.fresh + this.long < this.limits.size + this.limits.maxLong) {
      const next = this.waiting.shift()!;
      clearTimeout(next.timer);
      next.grant(this.grant());
    }
  }
}
