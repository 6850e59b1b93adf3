/**
 * What waits in a socket's queues, for a server swamped by a burst of calls. Bun listens with a queue of 512
 * connections (it ignores the backlog it is given): a burst larger than that (2,000 cluster-ipam calls at once)
 * finds the queue full, and each launcher that gives up runs its call itself, one more program on a node that is
 * already swamped; listen(2) on a socket that listens already sets a new bound (Linux; capped at
 * net.core.somaxconn, 4096 by default). And a connection whose hello the server has not read in time may have
 * sent it long ago, the server being too busy to read: the bytes waiting in its receive queue tell.
 * @module
 */
import { type BoundLibc, bindLibc } from "./libc.js";
import { socketFd } from "./peer.js";

/** ioctl(2) request: bytes in a socket's receive queue (SIOCINQ). */
const FIONREAD = 0x541b;

let bound: Promise<BoundLibc<"listen" | "ioctl"> | null> | undefined;
const libc = () => (bound ??= bindLibc(["listen", "ioctl"]));
let ready: Awaited<ReturnType<typeof libc>> | undefined;

/** Lets `server`'s socket queue up to `backlog` connections; false when that cannot be done here (Node, no FFI). */
export async function widenListenQueue(server: object, backlog: number): Promise<boolean> {
  const fd = socketFd(server);
  ready = await libc();
  return fd !== undefined && ready !== null && ready.fn.listen(fd, backlog) === 0;
}

/**
 * Bytes the kernel holds for `socket` that this process has not read; undefined when that cannot be told (Node, no
 * FFI, or before `widenListenQueue` bound the functions).
 */
export function bytesWaiting(socket: object): number | undefined {
  const fd = socketFd(socket);
  if (fd === undefined || !ready) return undefined;
  const count = new Int32Array(1);
  return ready.fn.ioctl(fd, FIONREAD, ready.pointerOf(new Uint8Array(count.buffer))) === 0 ? count[0] : undefined;
}
