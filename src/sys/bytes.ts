/**
 * Random bytes and their hex text, without node:crypto (loading it costs a compiled plugin 2-5 ms of start-up):
 * the Web Crypto global of both Bun and Node.
 * @module
 */

/** `n` random bytes. */
export const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n));

/** Lower-case hex of `bytes`, two digits each, joined by `separator` (":" for a MAC address). */
export const hexOf = (bytes: Uint8Array, separator = ""): string =>
  Array.from(bytes, (x) => x.toString(16).padStart(2, "0")).join(separator);
