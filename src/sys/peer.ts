/**
 * Who is on the other end of a unix socket, and whether a privileged server may act for it. The rule every tscni
 * server applies (the resident server, the dhcp daemon): a peer is served only if it could have done the same
 * thing itself — uid 0 in the server's user namespace, in the server's network and mount namespaces, with the
 * server's effective capabilities (no fewer: the server would do what the caller may not; no more: the server
 * would fail where the caller's own exec would not). The peer is named by a process identity that cannot be
 * recycled while it is checked: a pidfd (SO_PEERPIDFD, Linux >= 6.5) that must still name a live process after
 * /proc/<pid> was read, else the pid's start time, which must be unchanged across the reads and not later than
 * the connection's acceptance.
 * Needs Bun's FFI (getsockopt); under Node no peer can be identified, so every peer is refused.
 * @module
 */
import { closeSync, readFileSync, statSync } from "node:fs";
import { bindLibc } from "./libc.js";

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const SO_PEERPIDFD = 77;
const SYS_PIDFD_SEND_SIGNAL = 424; // the same number on every architecture (added after the tables were unified)

/** A socket peer's credentials as the kernel recorded them at connect(). */
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

/** What a peer is compared with: this process's namespaces (those a peer must share) and effective capabilities. */
export interface OwnIdentity {
  namespaces: Partial<Record<NamespaceKind, string>>;
  capEff: bigint;
}

export type NamespaceKind = "user" | "net" | "mnt";
const KINDS: readonly NamespaceKind[] = ["user", "net", "mnt"];

/**
 * Which rule refused a peer: not root, in other namespaces, other capabilities, or no identity that could be
 * relied on (unreadable credentials or process, a process that left or is younger than the connection).
 */
export type PeerRefusalKind = "not_root" | "namespace" | "capabilities" | "identity";

/** A refusal: why, in words for the refused caller, and which rule. */
export interface PeerRefusal {
  refusal: string;
  kind: PeerRefusalKind;
}

/** The verdict on a peer: served (with its pid), or refused. */
export type PeerVerdict = { pid: number } | PeerRefusal;

interface Libc {
  getsockopt: (fd: number, level: number, name: number, value: Uint8Array, length: Uint32Array) => number;
  syscall: (number: number, a: number, b: number, c: number, d: number) => number;
}
let ffi: Promise<Libc | null> | undefined;
const libc = () => (ffi ??= bindLibc<Libc>({
  getsockopt: { args: ["i32", "i32", "i32", "ptr", "ptr"], returns: "i32" },
  syscall: { args: ["i64", "i64", "i64", "i64", "i64"], returns: "i64" },
}));

/** The credentials of the peer of socket `fd`; undefined when they cannot be read here (no FFI: Node). */
export async function peerCredentials(fd: number): Promise<PeerCredentials | undefined> {
  const c = await libc();
  if (!c) return undefined;
  const ucred = new Uint8Array(12);
  const length = new Uint32Array([ucred.length]);
  if (c.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ucred, length) !== 0) return undefined;
  const view = new DataView(ucred.buffer);
  return { pid: view.getInt32(0, true), uid: view.getUint32(4, true), gid: view.getUint32(8, true) };
}

/** A pidfd naming the peer of socket `fd`, or undefined where the kernel has no SO_PEERPIDFD. */
async function peerPidfd(fd: number): Promise<number | undefined> {
  const c = await libc();
  if (!c) return undefined;
  const value = new Uint8Array(4);
  const length = new Uint32Array([4]);
  if (c.getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, value, length) !== 0) return undefined;
  return new DataView(value.buffer).getInt32(0, true);
}

/** Whether the process a pidfd names has not been reaped (its pid is still its own). */
async function pidfdAlive(pidfd: number): Promise<boolean> {
  const c = await libc();
  return !!c && Number(c.syscall(SYS_PIDFD_SEND_SIGNAL, pidfd, 0, 0, 0)) === 0;
}

/** The namespace `/proc/<pid>/ns/<kind>` names, as "dev:ino"; undefined when it cannot be read. */
function namespaceOf(pid: number | "self", kind: NamespaceKind): string | undefined {
  try {
    const s = statSync(`/proc/${pid}/ns/${kind}`);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

/** A `/proc/<pid>/status` field. */
function statusField(status: string, field: string): string | undefined {
  const at = status.indexOf(`\n${field}:`);
  if (at < 0) return undefined;
  const end = status.indexOf("\n", at + 1);
  return status.slice(at + field.length + 2, end < 0 ? undefined : end).trim();
}

/** A process's start time in clock ticks after boot (field 22 of /proc/<pid>/stat), or undefined. */
export function startTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const value = Number(fields[19]); // field 22 counts from 1 and includes pid and comm
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Clock ticks since boot now (the unit of startTime), from /proc/uptime. */
export function ticksSinceBoot(): number {
  const seconds = Number(readFileSync("/proc/uptime", "latin1").split(" ")[0]);
  return Math.ceil(seconds * 100) + 1; // USER_HZ is 100 on Linux; rounded up, so "not later" errs towards admitting
}

/**
 * This process's identity, for comparing peers with it (read it once, at start). `kinds`: the namespaces a peer
 * must share (all three unless a server has a reason to serve callers of other ones).
 */
export function ownIdentity(kinds: readonly NamespaceKind[] = KINDS): OwnIdentity {
  const status = readFileSync("/proc/self/status", "latin1");
  const namespaces = Object.fromEntries(kinds.map((k) => [k, namespaceOf("self", k) ?? "unknown"]));
  return { namespaces, capEff: BigInt(`0x${statusField(status, "CapEff") ?? "0"}`) };
}

/** The file descriptor under a connected net.Socket (Bun and Node keep it on the handle). */
export function socketFd(socket: object): number | undefined {
  const fd = (socket as { _handle?: { fd?: number } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/** Capability numbers set in `a` and not in `b`, for a refusal's words. */
function capsMissing(a: bigint, b: bigint): string {
  const missing: number[] = [];
  for (let bit = 0; bit < 64; bit++) if ((a >> BigInt(bit)) & 1n && !((b >> BigInt(bit)) & 1n)) missing.push(bit);
  return missing.join(",");
}

/**
 * The rule for the process `pid` (already identified as the peer): what /proc says of it now, compared with
 * `own`. Pure of the peer's identity check, which the caller brackets around it.
 */
export function judgeProcess(pid: number, own: OwnIdentity): PeerRefusal | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return { refusal: "the caller's process cannot be read (it left?)", kind: "identity" };
  }
  const euid = statusField(status, "Uid")?.split(/\s+/)[1];
  if (euid !== "0") return { refusal: `uid ${euid ?? "?"} is not served (root only)`, kind: "not_root" };
  for (const kind of KINDS) {
    if (own.namespaces[kind] !== undefined && namespaceOf(pid, kind) !== own.namespaces[kind]) {
      return { refusal: `the caller is in another ${kind === "net" ? "network" : kind === "mnt" ? "mount" : "user"} namespace`, kind: "namespace" };
    }
  }
  const capEff = BigInt(`0x${statusField(status, "CapEff") ?? "0"}`);
  if ((capEff & own.capEff) !== own.capEff) {
    return { refusal: `the caller lacks capabilities the server has (${capsMissing(own.capEff, capEff)}): it may not do what the server would do for it`, kind: "capabilities" };
  }
  if (capEff !== own.capEff) {
    return { refusal: `the caller has capabilities the server lacks (${capsMissing(capEff, own.capEff)}): the server would do less than the caller's own exec`, kind: "capabilities" };
  }
  return undefined;
}

/**
 * Whether the peer of socket `fd` is served (see the module comment). `acceptedAt` (performance.now() when the
 * connection was accepted) is used only without SO_PEERPIDFD: a process that started after the connection was
 * accepted cannot be the peer.
 */
export async function admitPeer(fd: number, own: OwnIdentity, acceptedAt?: number): Promise<PeerVerdict> {
  const peer = await peerCredentials(fd);
  if (!peer) return { refusal: "the peer's credentials cannot be read (the server needs the standalone build)", kind: "identity" };
  // Before anything else: a peer that was not root when it connected is never served, whatever it is now.
  if (peer.uid !== 0) return { refusal: `uid ${peer.uid} is not served (root only)`, kind: "not_root" };
  const pidfd = await peerPidfd(fd);
  if (pidfd !== undefined) {
    try {
      const refusal = judgeProcess(peer.pid, own);
      if (refusal) return refusal;
      // The pid named the peer throughout the reads only if the peer has not been reaped since.
      if (!(await pidfdAlive(pidfd))) return { refusal: "the caller left while it was checked", kind: "identity" };
      return { pid: peer.pid };
    } finally {
      closeSync(pidfd);
    }
  }
  const before = startTime(peer.pid);
  if (before === undefined) return { refusal: "the caller's process cannot be read (it left?)", kind: "identity" };
  const acceptedTicks = acceptedAt === undefined ? undefined : ticksSinceBoot() - Math.floor((performance.now() - acceptedAt) / 10);
  if (acceptedTicks !== undefined && before > acceptedTicks) return { refusal: "the caller's pid names a process younger than the connection", kind: "identity" };
  const refusal = judgeProcess(peer.pid, own);
  if (refusal) return refusal;
  if (startTime(peer.pid) !== before) return { refusal: "the caller left while it was checked", kind: "identity" };
  return { pid: peer.pid };
}

/** Whether process `pid` is in this process's namespace of kind `kind` (false when it cannot be told). */
export function sharesNamespace(pid: number, kind: NamespaceKind): boolean {
  const theirs = namespaceOf(pid, kind);
  return theirs !== undefined && theirs === namespaceOf("self", kind);
}
