/**
 * libc functions through Bun's FFI, for the few system calls Node cannot make (flock, netlink sockets).
 * Gives null under Node, or when FFI is unavailable, so callers fall back to the command-line tools.
 * @module
 */

export type FfiType = "i32" | "u32" | "i64" | "u64" | "ptr" | "void";
export type Signatures = Record<string, { args: FfiType[]; returns: FfiType }>;

/** Binds the named libc functions, or null when not running under Bun (or the binding fails). */
export async function bindLibc<T>(signatures: Signatures): Promise<T | null> {
  if (!(process.versions as Record<string, string | undefined>)["bun"]) return null;
  try {
    const specifier = "bun:ffi"; // a variable, so Node's and TypeScript's resolvers leave it alone
    const ffi = (await import(specifier)) as { dlopen: (lib: string, s: Signatures) => { symbols: T } };
    return ffi.dlopen("libc.so.6", signatures).symbols;
  } catch {
    return null;
  }
}
