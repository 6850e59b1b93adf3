/**
 * libc functions through Bun's FFI, for the few system calls Node cannot make (flock, netlink sockets, sockets
 * in another network namespace). Gives null under Node, or when FFI is unavailable, so callers fall back to the
 * command-line tools (or say they need the standalone build).
 * @module
 */

export type FfiType = "i32" | "u32" | "i64" | "u64" | "ptr" | "void";
export type Signatures = Record<string, { args: FfiType[]; returns: FfiType }>;

/** An address in memory, as Bun's FFI passes pointers. */
export type Pointer = number;

/** The parts of Bun's FFI module tscni uses. */
export interface BunFfi {
  dlopen: (lib: string, signatures: Signatures) => { symbols: unknown };
  /** The address of a buffer's memory. */
  ptr: (b: Uint8Array) => Pointer;
  read: { i32: (p: Pointer, offset: number) => number };
}

let ffiModule: Promise<BunFfi | null> | undefined;

/** Bun's FFI module, or null when not running under Bun. */
export function bunFfi(): Promise<BunFfi | null> {
  return (ffiModule ??= (async () => {
    if (!(process.versions as Record<string, string | undefined>)["bun"]) return null;
    try {
      const specifier = "bun:ffi"; // a variable, so Node's and TypeScript's resolvers leave it alone
      return (await import(specifier)) as BunFfi;
    } catch {
      return null;
    }
  })());
}

/** Binds the named libc functions, or null when not running under Bun (or the binding fails). */
export async function bindLibc<T>(signatures: Signatures): Promise<T | null> {
  const ffi = await bunFfi();
  if (!ffi) return null;
  try {
    return ffi.dlopen("libc.so.6", signatures).symbols as T;
  } catch {
    return null;
  }
}
