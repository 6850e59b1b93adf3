/**
 * Random bytes and their hex text, from the Web Crypto global of both Bun and Node: no node:crypto on a plugin's
 * start path (docs/startup.md).
 * @module
 */

/** `n` random bytes. */
export const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n));

/** Lower-case hex of `bytes`, two digits each, joined by `separator` (":" for a MAC address). */
export const hexOf = (bytes: Uint8Array, separator = ""): string => Array.from(bytes, (x) => x.toString(16).padStart(2, "0")).join(separator);

/** Whether two byte strings are equal. */
export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Byte strings joined into one. */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
