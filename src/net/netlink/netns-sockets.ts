/**
 * Sockets in a container's network namespace, through Bun's FFI to libc (sys/libc), for a long-lived process that
 * talks on a container's link from the host (the dhcp daemon's DHCPv4 and DHCPv6 clients).
 *
 * A socket belongs to the namespace its creating thread was in, for its whole life. So the process enters the
 * namespace (setns), creates its sockets and comes straight back, in one synchronous stretch of JavaScript:
 * nothing else runs on the thread meanwhile, and every later call on those sockets (bind, sendto, recvfrom, ioctl)
 * acts in the container's namespace whatever the thread's is. The alternative, a helper started with
 * `nsenter --net=PATH`, costs a process per exchange. Node has no FFI, so under Node `socketsAvailable` is false.
 *
 * Also here: what ioctls on such a socket tell of a link and set on it, and the polling of non-blocking sockets
 * (neither runtime can wait on a foreign descriptor: a receive that finds nothing costs under a microsecond, and
 * a shared timer runs only while some receive waits).
 * @module
 */
import { statSync } from "node:fs";
import { ipFromBytes, parseIP } from "#ip/ip.js";
import { failure } from "#spec/errors.js";
import { bindLibc, type Pointer, type Libc as SysLibc } from "#sys/libc.js";
import { inThreadNetns, NetnsEnterError } from "#sys/thread-netns.js";
import { errnoText } from "./rtnetlink.js";

/** The libc functions the sockets use. */
export type Libc = Pick<SysLibc, "socket" | "bind" | "setsockopt" | "sendto" | "recvfrom" | "ioctl" | "close" | "setns">;

/** libc through Bun's FFI (sys/libc), with the helpers the sockets need. */
export interface Ffi {
  libc: Libc;
  errno: () => number;
  pointerOf: (b: Uint8Array) => Pointer;
}

let ffi: Promise<Ffi | null> | undefined;

/** libc and the pointer helper; null under Node. */
function loadFfi(): Promise<Ffi | null> {
  return (ffi ??= bindLibc(["socket", "bind", "setsockopt", "sendto", "recvfrom", "ioctl", "close", "setns"], { errno: true }).then((b) =>
    b ? { libc: b.fn, errno: b.errno, pointerOf: b.pointerOf } : null,
  ));
}

/** Whether this runtime can open sockets in other namespaces (Bun with FFI). */
export async function socketsAvailable(): Promise<boolean> {
  return (await loadFfi()) !== null;
}

export const AF_INET = 2;
export const AF_PACKET = 17;
const SOCK_DGRAM = 2;
const SOCK_NONBLOCK = 0x800;
const SOCK_CLOEXEC = 0x80000;
/** htons(ETH_P_IP) on a little-endian host. */
export const ETH_P_IP_BE = 0x0008;
export const SOL_SOCKET = 1;
export const SO_REUSEADDR = 2;
export const SO_BROADCAST = 6;
export const SO_BINDTODEVICE = 25;
export const SO_ATTACH_FILTER = 26;
export const MSG_DONTWAIT = 0x40;
export const MSG_TRUNC = 0x20;
const SIOCGIFADDR = 0x8915;
const SIOCGIFFLAGS = 0x8913;
const SIOCSIFFLAGS = 0x8914;
const SIOCGIFHWADDR = 0x8927;
const SIOCGIFINDEX = 0x8933;
const IFF_UP = 0x1;
const IFF_RUNNING = 0x40;
/** How long a link just set up may take to report its carrier. */
const CARRIER_WAIT_MS = 1000;
const ENODEV = 19;
const ENXIO = 6;
/** How often waiting receives look for what arrived. */
const POLL_INTERVAL_MS = 5;

/** The namespace path does not exist (any more). */
export class NetnsGoneError extends Error {
  constructor(readonly netns: string) {
    super(`network namespace ${netns} does not exist`);
    this.name = "NetnsGoneError";
  }
}

/** The interface does not exist in the namespace (any more). */
export class LinkGoneError extends Error {
  constructor(
    readonly ifName: string,
    readonly netns: string,
  ) {
    super(`interface ${ifName} does not exist in ${netns}`);
    this.name = "LinkGoneError";
  }
}

/**
 * The namespace path names this process's own network namespace (the host's): sockets are made only in
 * containers' namespaces, and no link is set there.
 */
export class OwnNetnsError extends Error {
  constructor(readonly netns: string) {
    super(`network namespace ${netns} is this process's own: it acts only in containers' namespaces`);
    this.name = "OwnNetnsError";
  }
}

/** A system call failed; `errno` is the kernel's reason. */
export class SocketError extends Error {
  constructor(
    operation: string,
    readonly errno: number,
  ) {
    super(`${operation}: ${errnoText(errno)}`);
    this.name = "SocketError";
  }
}

/** libc through Bun's FFI; throws under Node. */
export async function requireFfi(): Promise<Ffi> {
  const f = await loadFfi();
  if (!f) throw failure("sockets in another network namespace need the standalone (Bun) build: Node has no FFI");
  return f;
}

/** The identity ("dev:ino") of the calling thread's network namespace. */
const threadNetns = (): string => {
  const s = statSync("/proc/thread-self/ns/net");
  return `${s.dev}:${s.ino}`;
};
let daemonNetns: string | undefined;

/**
 * Runs `make` with the thread in the namespace at `netnsPath` and comes back. Throws OwnNetnsError, running
 * nothing, when that namespace is the daemon's own (checked once entered, so a path swapped meanwhile is caught
 * too).
 */
export function inNetns<T>(f: Ffi, netnsPath: string, make: () => T): T {
  const own = (daemonNetns ??= threadNetns());
  try {
    return inThreadNetns(
      f.libc.setns,
      f.errno,
      netnsPath,
      () => {
        if (threadNetns() === own) throw new OwnNetnsError(netnsPath);
        return make();
      },
      "tscni",
    );
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new NetnsGoneError(netnsPath);
    if (e instanceof NetnsEnterError) throw new SocketError(`entering network namespace ${netnsPath}`, e.errno ?? 0);
    throw e;
  }
}

/** A non-blocking, close-on-exec datagram socket in the calling thread's namespace. */
export function newSocket(f: Ffi, domain: number, protocol: number, what: string): number {
  const fd = f.libc.socket(domain, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
  if (fd < 0) throw new SocketError(`creating the ${what} socket`, f.errno());
  return fd;
}

/** A `struct ifreq` naming `ifName`. */
export function ifreq(ifName: string): Uint8Array {
  const b = new Uint8Array(40);
  const name = Buffer.from(ifName, "utf8");
  if (name.length > 15) throw new LinkGoneError(ifName, "(the name is longer than an interface name can be)");
  b.set(name, 0);
  return b;
}

/** A socket option's int value. */
export const int32Option = (v: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, v, true);
  return b;
};

/** Sets a socket option (at SOL_SOCKET unless `level` says otherwise); throws naming `what`. */
export function setOption(f: Ffi, fd: number, name: number, value: Uint8Array, what: string, level = SOL_SOCKET): void {
  if (f.libc.setsockopt(fd, level, name, value, value.length) !== 0) throw new SocketError(what, f.errno());
}

/** What ioctls tell of a link. */
export interface LinkInfo {
  index: number;
  /** The hardware type (ARPHRD_*) and address. */
  hwType: number;
  mac: Uint8Array;
  up: boolean;
  /** The primary IPv4 address. */
  address: string | undefined;
}

/** The link's index, hardware type and address, up flag and primary IPv4 address, through ioctls on `fd` (a socket in the link's namespace). */
export function linkInfo(f: Ffi, fd: number, ifName: string, netns: string): LinkInfo {
  const req = ifreq(ifName);
  const call = (request: number, what: string) => {
    if (f.libc.ioctl(fd, request, req) === 0) return;
    const errno = f.errno();
    if (errno === ENODEV || errno === ENXIO) throw new LinkGoneError(ifName, netns);
    throw new SocketError(`${what} of ${ifName} in ${netns}`, errno);
  };
  const view = new DataView(req.buffer);
  call(SIOCGIFINDEX, "reading the index");
  const index = view.getInt32(16, true);
  call(SIOCGIFHWADDR, "reading the hardware address");
  const hwType = view.getUint16(16, true);
  const mac = req.slice(18, 24);
  call(SIOCGIFFLAGS, "reading the flags");
  const up = (view.getUint16(16, true) & IFF_UP) !== 0;
  // No address is EADDRNOTAVAIL; the answer is a struct sockaddr_in, its address at offset 4.
  const address = f.libc.ioctl(fd, SIOCGIFADDR, req) === 0 ? ipFromBytes(req.subarray(20, 24)).text : undefined;
  return { index, hwType, mac, up, address };
}

/** Sets IFF_UP on or off, through ioctls on `fd`. */
export function setUp(f: Ffi, fd: number, ifName: string, netns: string, up: boolean): void {
  const req = ifreq(ifName);
  const view = new DataView(req.buffer);
  if (f.libc.ioctl(fd, SIOCGIFFLAGS, req) !== 0) throw new SocketError(`reading the flags of ${ifName} in ${netns}`, f.errno());
  const flags = view.getUint16(16, true);
  view.setUint16(16, up ? flags | IFF_UP : flags & ~IFF_UP, true);
  if (f.libc.ioctl(fd, SIOCSIFFLAGS, req) !== 0) throw new SocketError(`setting ${ifName} ${up ? "up" : "down"} in ${netns}`, f.errno());
}

/**
 * Waits (up to CARRIER_WAIT_MS) for a link just set up to be running: until the kernel has processed its
 * carrier (and, for a veth on a bridge, enabled the bridge port), what is sent is dropped (for DHCP, a lost first
 * DISCOVER costs a whole `-timeout`).
 */
export async function waitRunning(f: Ffi, fd: number, ifName: string): Promise<void> {
  const req = ifreq(ifName);
  const deadline = Date.now() + CARRIER_WAIT_MS;
  while (Date.now() < deadline) {
    if (f.libc.ioctl(fd, SIOCGIFFLAGS, req) !== 0 || new DataView(req.buffer).getUint16(16, true) & IFF_RUNNING) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A `struct sockaddr_in`. */
export function sockaddrIn(address: string, port: number): Uint8Array {
  const b = new Uint8Array(16);
  const view = new DataView(b.buffer);
  view.setUint16(0, AF_INET, true);
  view.setUint16(2, port); // network order
  b.set(parseIP(address).bytes, 4);
  return b;
}

/** A `struct sockaddr_ll` for IPv4 on link `ifindex`, to the broadcast address with `broadcastMac`. */
export function sockaddrLl(ifindex: number, broadcastMac?: boolean): Uint8Array {
  const b = new Uint8Array(20);
  const view = new DataView(b.buffer);
  view.setUint16(0, AF_PACKET, true);
  view.setUint16(2, ETH_P_IP_BE, true);
  view.setInt32(4, ifindex, true);
  if (broadcastMac) {
    b[11] = 6;
    b.fill(0xff, 12, 18);
  }
  return b;
}

interface Waiter {
  deadline: number;
  resolve: (d: Uint8Array | undefined) => void;
}

/** Something polled for what arrived on its sockets. */
interface Pollable {
  poll(): void;
}

/** The exchanges waiting for a reply, polled together by one timer that runs only while there are any. */
const receivers = new Set<Pollable>();
let pollTimer: NodeJS.Timeout | undefined;

function schedulePoll(): void {
  if (pollTimer || receivers.size === 0) return;
  pollTimer = setInterval(() => {
    for (const r of receivers) r.poll();
    if (receivers.size === 0) {
      clearInterval(pollTimer);
      pollTimer = undefined;
    }
  }, POLL_INTERVAL_MS);
}

/**
 * The receiving side of one exchange's sockets: what `drain` reads is queued, and handed to the one waiting
 * `receive` when it is polled (by the shared timer, only while a receive waits). `close` ends a waiting receive.
 */
export abstract class PolledReceiver implements Pollable {
  private readonly queue: Uint8Array[] = [];
  private waiter: Waiter | undefined;
  protected closed = false;

  /** Reads, without blocking, everything that arrived; returns the payloads that may be replies. */
  protected abstract drain(): Uint8Array[];

  receive(deadline: number, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    if (this.closed || signal?.aborted) return Promise.resolve(undefined);
    this.poll();
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => {
      const done = (d: Uint8Array | undefined) => {
        signal?.removeEventListener("abort", onAbort);
        this.waiter = undefined;
        receivers.delete(this);
        resolve(d);
      };
      const onAbort = () => done(undefined);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiter = { deadline, resolve: done };
      receivers.add(this);
      schedulePoll();
    });
  }

  /** Reads what arrived; hands the first reply (or the deadline) to the waiting exchange. */
  poll(): void {
    if (this.closed) return;
    this.queue.push(...this.drain());
    const w = this.waiter;
    if (!w) return;
    const next = this.queue.shift();
    if (next) w.resolve(next);
    else if (Date.now() >= w.deadline) w.resolve(undefined);
  }

  /** Ends a waiting receive and stops polling; the subclass closes its descriptors. */
  protected stopReceiving(): void {
    this.waiter?.resolve(undefined);
    this.closed = true;
    receivers.delete(this);
  }
}

/** Runs `use` with a plain UDP socket (IPv4 unless `domain` says otherwise) in the namespace (for ioctls on the link). */
export async function withProbeSocket<T>(netns: string, use: (f: Ffi, fd: number) => T, domain = AF_INET): Promise<T> {
  const f = await requireFfi();
  const fd = inNetns(f, netns, () => newSocket(f, domain, 0, "UDP"));
  try {
    return use(f, fd);
  } finally {
    f.libc.close(fd);
  }
}

/** Whether `ifName` exists in the namespace at `netns` (false when either is gone, or it is the daemon's own). */
export async function linkExists(netns: string, ifName: string): Promise<boolean> {
  try {
    await withProbeSocket(netns, (f, fd) => linkInfo(f, fd, ifName, netns));
    return true;
  } catch (e) {
    if (e instanceof NetnsGoneError || e instanceof LinkGoneError || e instanceof OwnNetnsError) return false;
    throw e;
  }
}

/** Sets the link down (what a client does when its lease expires). */
export async function setLinkDown(netns: string, ifName: string): Promise<void> {
  await withProbeSocket(netns, (f, fd) => setUp(f, fd, ifName, netns, false));
}
