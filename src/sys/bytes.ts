/**
 * Random bytes and their hex text, from the Web Crypto global of both Bun and Node: no node:crypto on a plugin's
 * start path (docs/startup.md).
 * @module
 */

/** `n` random bytes. */
export const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n));

/** Lower-case hex of `bytes`, two digits each, joined by `separator` (":" for a MAC address). */
export function hexOf(bytes: Uint8Array, separator = ""): string {
  // (A plain loop: Array.from over a typed array costs a first-use compile of builtins on every netlink call.)
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const x = bytes[i]!;
    out += (i > 0 ? separator : "") + (x < 0x10 ? "0" : "") + x.toString(16);
  }
  return out;
}

/** Whether two byte strings are equal. */
export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Byte strings joined into one. */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (let i = 0; i < parts.length; i++) length += parts[i]!.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
