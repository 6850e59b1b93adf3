/**
 * libc functions through Bun's FFI, for the few system calls Node cannot make (flock, netlink sockets, sockets
 * in another network namespace). Gives null under Node, or when FFI is unavailable, so callers fall back to the
 * command-line tools (or say they need the standalone build).
 * @module
 */

export type FfiType = "i32" | "u32" | "i64" | "u64" | "ptr" | "void";
export type Signatures = Record<string, { readonly args: readonly FfiType[]; readonly returns: FfiType }>;

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

/**
 * Every libc function tscni calls, with its C signature: the one declaration of libc's interface. Bun compiles a
 * trampoline per function bound (~0.05 ms each on the project's VM, the first binding ~0.6 ms), so a module binds
 * only the functions it uses, by name, and the table is never bound whole.
 */
const SIGNATURES = {
  socket: { args: ["i32", "i32", "i32"], returns: "i32" },
  bind: { args: ["i32", "ptr", "u32"], returns: "i32" },
  listen: { args: ["i32", "i32"], returns: "i32" },
  setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" },
  getsockopt: { args: ["i32", "i32", "i32", "ptr", "ptr"], returns: "i32" },
  getpeername: { args: ["i32", "ptr", "ptr"], returns: "i32" },
  send: { args: ["i32", "ptr", "u64", "i32"], returns: "i64" },
  recv: { args: ["i32", "ptr", "u64", "i32"], returns: "i64" },
  sendto: { args: ["i32", "ptr", "u64", "i32", "ptr", "u32"], returns: "i64" },
  recvfrom: { args: ["i32", "ptr", "u64", "i32", "ptr", "ptr"], returns: "i64" },
  ioctl: { args: ["i32", "u64", "ptr"], returns: "i32" },
  close: { args: ["i32"], returns: "i32" },
  setns: { args: ["i32", "i32"], returns: "i32" },
  flock: { args: ["i32", "i32"], returns: "i32" },
  syscall: { args: ["i64", "i64", "ptr", "ptr", "u64"], returns: "i64" },
  __errno_location: { args: [], returns: "ptr" },
} as const satisfies Signatures;

/** A buffer or an address, as a `ptr` argument. */
type Ptr = Uint8Array | Pointer;

/** The functions of {@link SIGNATURES} as JavaScript sees them (64-bit results may come back as bigint). */
export interface Libc {
  socket(domain: number, type: number, protocol: number): number;
  bind(fd: number, addr: Ptr, len: number): number;
  listen(fd: number, backlog: number): number;
  setsockopt(fd: number, level: number, name: number, value: Ptr, len: number): number;
  getsockopt(fd: number, level: number, name: number, value: Ptr, length: Uint32Array): number;
  getpeername(fd: number, addr: Ptr, length: Uint32Array): number;
  send(fd: number, buf: Ptr, len: number, flags: number): number | bigint;
  recv(fd: number, buf: Ptr, len: number, flags: number): number | bigint;
  sendto(fd: number, buf: Ptr, len: number, flags: number, addr: Ptr, addrLen: number): number | bigint;
  recvfrom(fd: number, buf: Ptr, len: number, flags: number, addr: Ptr, addrLen: Ptr): number | bigint;
  ioctl(fd: number, request: number, arg: Ptr): number;
  close(fd: number): number;
  setns(fd: number, nstype: number): number;
  flock(fd: number, op: number): number;
  /** syscall(2) with up to four arguments after the number (openat2). */
  syscall(n: number, a: number, b: Ptr, c: Ptr, d: number): number | bigint;
  __errno_location(): Pointer;
}

/** Bound functions, with what reading their results takes. */
export interface BoundLibc<K extends keyof Libc> {
  fn: Pick<Libc, K>;
  /** The calling thread's errno, right after a call that failed (bound with `{ errno: true }` only). */
  errno(): number;
  /** The address of a buffer's memory. */
  pointerOf(b: Uint8Array): Pointer;
}

/**
 * Binds the named libc functions (with `errno`, errno's location too: it cannot be bound later, since binding
 * may change errno), or null when not running under Bun (or the binding fails). Callers keep what it gives: each
 * call binds anew.
 */
export async function bindLibc<K extends keyof Libc>(names: readonly K[], opts: { errno?: boolean } = {}): Promise<BoundLibc<K> | null> {
  const ffi = await bunFfi();
  if (!ffi) return null;
  const wanted: Signatures = opts.errno ? { __errno_location: SIGNATURES.__errno_location } : {};
  for (const name of names) wanted[name] = SIGNATURES[name];
  try {
    const fn = ffi.dlopen("libc.so.6", wanted).symbols as Pick<Libc, K | "__errno_location">;
    const errno = () => {
      if (!opts.errno) throw new Error("libc bound without errno");
      return ffi.read.i32(fn.__errno_location(), 0);
    };
    return { fn, errno, pointerOf: ffi.ptr };
  } catch {
    return null;
  }
}
