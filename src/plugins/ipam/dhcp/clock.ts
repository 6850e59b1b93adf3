/**
 * Time for the DHCP client and the lease upkeep: the current time, sleeping (cut short by an abort) and the
 * randomness of resend jitter, behind one interface so tests can drive T1, T2 and expiry with a fake clock
 * instead of waiting for them.
 * @module
 */

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A number in [0, 1). */
  random(): number;
}

/** The longest single timer Node and Bun accept (about 24.8 days); longer sleeps are chained. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted || !(ms > 0)) return resolve();
      const end = Date.now() + ms;
      let timer: NodeJS.Timeout;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const arm = () => {
        const left = end - Date.now();
        if (left <= 0) return done();
        timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
      };
      signal?.addEventListener("abort", done, { once: true });
      arm();
    });
  },
};
