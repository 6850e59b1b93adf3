/**
 * A pause that an AbortSignal cuts short: the waits between tries (a lock held by another process, a plugin
 * binary being replaced) end early when the call they belong to is aborted, never keeping it alive.
 * @module
 */

/** Waits `ms`, or less when `signal` aborts first (at once when it has already). */
export function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
