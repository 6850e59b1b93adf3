/**
 * The places where calls run in the resident server's process, so that a call that never finishes stalls only
 * itself. A call takes a place before its plugin runs and gives it back when it ends, when it times out (its work
 * may go on: it is then "overdue"), or when it has run for `longMs` (it goes on as a "long" call, outside the
 * places: a call waiting on a DHCP server or on etcd must not keep others from running). A call that finds every
 * place taken waits as long as the server makes progress: places given back, the server (with the tools it runs)
 * busy computing — a burst of calls on a slow machine may give none back for seconds — or the calls that hold the
 * places getting answers from what they wait on (sys/progress.ts: 2,000 cluster-ipam calls at once wait on a slow
 * etcd, and each call handed back would become one more program on the node, meeting the same etcd). When for
 * `stallMs` none of that has happened (every place is held by a call that waits on something that does not come),
 * or when `size + maxLong` calls run already, it gets no place and is handed back to its caller, which runs it
 * itself (exec mode) — nothing of it has run here.
 *
 * A call that waits on the kernel's work for other calls too (a batch of veth deletions: net/link/veth-batch.ts) steps
 * aside meanwhile (Place.stepAside): its place goes to the first waiting call, which can then join the same batch
 * instead of forming the next one, and the call takes it back — over the size if need be, never waiting — when its
 * wait ends. Calls aside count with the long ones: at most `maxLong` of both, and `size + maxLong` calls in all,
 * so calls stuck aside (a kernel that never answers) hold no place, and the bound on calls under way stands.
 * @module
 */
import { readFileSync } from "node:fs";
import { answersNoted } from "#sys/progress.js";

/** What a call holds while it runs. */
export interface Place {
  /** Gives the place back (once; later calls do nothing). */
  release(): void;
  /** Waits for `wait` with the place lent out (see the module comment); just `wait` when none can be lent. */
  stepAside<T>(wait: Promise<T>): Promise<T>;
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

/** CPU time a busy server spends in `stallMs`, at least: a fifth of one core. */
const BUSY_SHARE = 0.2;

/** The CPU time (ms) this process and the children it has waited for have used, from /proc/self/stat. */
export function cpuMsWithChildren(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "latin1");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime, stime, cutime, cstime: fields 14 to 17 (counted from 1, with pid and comm), in ticks of 10 ms
    return [11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i] ?? 0), 0) * 10;
  } catch {
    const { user, system } = process.cpuUsage(); // (no children's)
    return (user + system) / 1000;
  }
}

/** A timer of `Timers`: `refresh` starts its full delay again (and re-arms it when it has fired). */
export interface Timer {
  refresh(): void;
  clear(): void;
}

/** The timers the places keep: the process's own, or a test's clock (so no test depends on the machine's load). */
export interface Timers {
  /** `weak`: the timer does not keep the process alive. */
  set(run: () => void, ms: number, weak?: boolean): Timer;
}

/** Node's timers. */
export const processTimers: Timers = {
  set(run, ms, weak = false) {
    const t = setTimeout(run, ms);
    if (weak) t.unref();
    return { refresh: () => void t.refresh(), clear: () => clearTimeout(t) };
  },
};

interface Waiter {
  grant: (place: Place | undefined) => void;
  timer: Timer;
  /** The CPU time when the waiter's patience last started. */
  cpuAt: number;
  /** The answers noted (sys/progress.ts) when the waiter's patience last started. */
  answersAt: number;
}

/** The server's places (see the module comment). */
export class Places {
  private fresh = 0;
  private long = 0;
  private aside = 0;
  private readonly waiting: Waiter[] = [];

  /**
   * `cpuMs`: cumulative CPU time of the server (and its tools); `answers`: answers its calls got from outside.
   * Either moving is the sign of progress when no place is given back.
   */
  constructor(
    readonly limits: PlacesLimits = DEFAULT_PLACES,
    private readonly cpuMs: () => number = cpuMsWithChildren,
    private readonly answers: () => number = answersNoted,
    private readonly timers: Timers = processTimers,
  ) {}

  /** Calls holding a place now. */
  get running(): number {
    return this.fresh;
  }

  /** Calls running past their first `longMs` (outside the places). */
  get longRunning(): number {
    return this.long;
  }

  /** Calls stepped aside (Place.stepAside), their places lent out. */
  get asideNow(): number {
    return this.aside;
  }

  /** Calls waiting for a place. */
  get waiters(): number {
    return this.waiting.length;
  }

  /** A place for a call, at once or after a wait; undefined: none, the caller runs the call itself. */
  take(): Promise<Place | undefined> {
    if (this.fresh + this.long + this.aside >= this.limits.size + this.limits.maxLong) return Promise.resolve(undefined);
    if (this.fresh < this.limits.size && this.waiting.length === 0) return Promise.resolve(this.grant());
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: resolve,
        timer: this.timers.set(() => this.giveUp(waiter), this.limits.stallMs),
        cpuAt: this.cpuMs(),
        answersAt: this.answers(),
      };
      this.waiting.push(waiter);
    });
  }

  private giveUp(waiter: Waiter): void {
    const at = this.waiting.indexOf(waiter);
    if (at < 0) return;
    const cpu = this.cpuMs();
    const answers = this.answers();
    if (cpu - waiter.cpuAt >= this.limits.stallMs * BUSY_SHARE || answers !== waiter.answersAt) {
      // Busy, or answered: the calls that hold the places are getting on. Patience again.
      waiter.cpuAt = cpu;
      waiter.answersAt = answers;
      waiter.timer.refresh();
      return;
    }
    this.waiting.splice(at, 1);
    waiter.grant(undefined);
  }

  /** A new place, counted as fresh, that turns long after `longMs` (aside meanwhile: Place.stepAside). */
  private grant(): Place {
    this.fresh++;
    let state: "fresh" | "aside" | "long" | "released" = "fresh";
    /** The call's waits under way with its place lent out (stepAside); it is aside while there are some. */
    let waits = 0;
    const turnLong = this.timers.set(
      () => {
        if (state === "fresh") this.fresh--;
        else if (state === "aside") this.aside--;
        else return;
        state = "long";
        this.long++;
        this.gaveBack();
      },
      this.limits.longMs,
      true,
    );
    const back = () => {
      if (--waits > 0 || state !== "aside") return;
      // Back to work: its place again, at once (the count may pass the size for a while: nothing new is let in).
      this.aside--;
      this.fresh++;
      state = "fresh";
    };
    return {
      release: () => {
        if (state === "released") return;
        turnLong.clear();
        if (state === "fresh") this.fresh--;
        else if (state === "aside") this.aside--;
        else this.long--;
        state = "released";
        this.gaveBack();
      },
      stepAside: <T>(wait: Promise<T>): Promise<T> => {
        if (state === "fresh" && this.long + this.aside < this.limits.maxLong) {
          state = "aside";
          this.fresh--;
          this.aside++;
          this.gaveBack();
        } else if (state !== "aside") return wait;
        waits++;
        return wait.finally(back);
      },
    };
  }

  /** A place was given back: the first waiter gets it, and every waiter's patience starts again. */
  private gaveBack(): void {
    if (this.waiting.length > 0) {
      const cpu = this.cpuMs();
      const answers = this.answers();
      for (const w of this.waiting) {
        w.timer.refresh();
        w.cpuAt = cpu;
        w.answersAt = answers;
      }
    }
    this.wake();
  }

  private wake(): void {
    const all = this.limits.size + this.limits.maxLong;
    while (this.waiting.length > 0 && this.fresh < this.limits.size && this.fresh + this.long + this.aside < all) {
      const next = this.waiting.shift()!;
      next.timer.clear();
      next.grant(this.grant());
    }
  }
}
