/**
 * Who is on the other end of a unix socket: its pid, uid and gid from the kernel (SO_PEERCRED, through Bun's FFI
 * to libc: Node has no call for it), and whether that process shares this one's network and mount namespaces
 * (the links /proc/<pid>/ns/{net,mnt} name the same namespaces as /proc/self/ns/...).
 * @module
 */
import { statSync } from "node:fs";
import { bindLibc } from "./libc.js";

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;

/** A socket peer's credentials. */
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

type GetsockoptFn = (fd: number, level: number, name: number, value: Uint8Array, length: Uint32Array) => number;
let ffi: Promise<{ getsockopt: GetsockoptFn } | null> | undefined;

/** The credentials of the peer of socket `fd`; undefined when they cannot be read here (no FFI: Node). */
export async function peerCredentials(fd: number): Promise<PeerCredentials | undefined> {
  const libc = await (ffi ??= bindLibc<{ getsockopt: GetsockoptFn }>({ getsockopt: { args: ["i32", "i32", "i32", "ptr", "ptr"], returns: "i32" } }));
  if (!libc) return undefined;
  const ucred = new Uint8Array(12);
  const length = new Uint32Array([ucred.length]);
  if (libc.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ucred, length) !== 0) return undefined;
  const view = new DataView(ucred.buffer);
  return { pid: view.getInt32(0, true), uid: view.getUint32(4, true), gid: view.getUint32(8, true) };
}

/** Whether process `pid` is in this process's namespace of kind `kind` (false when it cannot be told). */
export function sharesNamespace(pid: number, kind: "net" | "mnt"): boolean {
  // stat of /proc is a few microseconds and never blocks on a disk: synchronous, as every served call pays it.
  try {
    const theirs = statSync(`/proc/${pid}/ns/${kind}`);
    const mine = statSync(`/proc/self/ns/${kind}`);
    return theirs.dev === mine.dev && theirs.ino === mine.ino;
  } catch {
    return false;
  }
}
