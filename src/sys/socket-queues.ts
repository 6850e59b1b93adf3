/**
 * What waits in a socket's queues, for a server swamped by a burst of calls. Bun listens with a queue of 512
 * connections (it ignores the backlog it is given): a burst larger than that (2,000 cluster-ipam calls at once)
 * finds the queue full, and each launcher that gives up runs its call itself, one more program on a node that is
 * already swamped; listen(2) on a socket that listens already sets a new bound (Linux; capped at
 * net.core.somaxconn, 4096 by default). And a connection whose hello the server has not read in time may have
 * sent it long ago, the server being too busy to read: the bytes waiting in its receive queue tell.
 * @module
 */
import { bindLibc, bunFfi, type Pointer } from "./libc.js";
import { socketFd } from "./peer.js";

interface Libc {
  listen: (fd: number, backlog: number) => number;
  ioctl: (fd: number, request: number, arg: Pointer) => number;
}

/** ioctl(2) request: bytes in a socket's receive queue (SIOCINQ). */
const FIONREAD = 0x541b;

let bound: Promise<{ libc: Libc; ptr: (b: Uint8Array) => Pointer } | null> | undefined;
const libc = () =>
  (bound ??= (async () => {
    const ffi = await bunFfi();
    const symbols = await bindLibc<Libc>({
      listen: { args: ["i32", "i32"], returns: "i32" },
      ioctl: { args: ["i32", "u64", "ptr"], returns: "i32" },
    });
    return ffi && symbols ? { libc: symbols, ptr: ffi.ptr } : null;
  })());
let ready: Awaited<ReturnType<typeof libc>> | undefined;

/** Lets `server`'s socket queue up to `backlog` connections; false when that cannot be done here (Node, no FFI). */
export async function widenListenQueue(server: object, backlog: number): Promise<boolean> {
  const fd = socketFd(server);
  ready = await libc();
  return fd !== undefined && ready !== null && ready.libc.listen(fd, backlog) === 0;
}

/**
 * Bytes the kernel holds for `socket` that this process has not read; undefined when that cannot be told (Node, no
 * FFI, or before `widenListenQueue` bound the functions).
 */
export function bytesWaiting(socket: object): number | undefined {
  const fd = socketFd(socket);
  if (fd === undefined || !ready) return undefined;
  const count = new Int32Array(1);
  return ready.libc.ioctl(fd, FIONREAD, ready.ptr(new Uint8Array(count.buffer))) === 0 ? count[0] : undefined;
}
