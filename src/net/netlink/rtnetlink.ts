/**
 * Route-netlink requests sent straight to the kernel: the framing of messages and attributes, reading
 * replies (acks, dumps, the kernel's error texts) and the socket, opened in any network namespace. Used for
 * what the iproute2 tools cannot express exactly as the Go plugins' netlink library does (a tbf qdisc with a
 * raw tick buffer) and, to save a process per step, for the hot link, address and route operations
 * (rtnetlink-backend.ts) and traffic control (tc.ts). The socket exists only under the standalone (Bun) build, through its FFI to libc; under
 * Node `openRtnetlink` gives null and callers fall back to the tools.
 * @module
 */

import { concatBytes } from "#sys/bytes.js";
import { bindLibc, type Libc as SysLibc } from "#sys/libc.js";
import { phaseSync } from "#sys/phase-trace.js";
import { inThreadNetns } from "#sys/thread-netns.js";
import { kindOfErrno, NetOpError } from "../errors.js";

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_APPEND = 0x800;
export const NLM_F_DUMP = 0x300;

const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const NLM_F_DUMP_INTR = 0x10;
const NLMSGERR_ATTR_MSG = 1;
const NLM_F_CAPPED = 0x100;
const NLM_F_ACK_TLVS = 0x200;

const align4 = (n: number): number => (n + 3) & ~3;

/** One netlink attribute (type, length, payload padded to 4 bytes). */
export function nlAttr(type: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(align4(4 + payload.length));
  const view = new DataView(out.buffer);
  view.setUint16(0, 4 + payload.length, true);
  view.setUint16(2, type, true);
  out.set(payload, 4);
  return out;
}

/** A NUL-terminated string attribute. */
export const nlString = (type: number, s: string): Uint8Array => nlAttr(type, new TextEncoder().encode(`${s}\0`));

export const nlU8 = (type: number, v: number): Uint8Array => nlAttr(type, Uint8Array.of(v & 0xff));

export const nlU32 = (type: number, v: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return nlAttr(type, b);
};

export const nlU64 = (type: number, v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v, true);
  return nlAttr(type, b);
};

/** A whole netlink message: header (length, type, flags, sequence, port 0) and body. */
export function nlMessage(type: number, flags: number, seq: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(16 + body.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, out.length, true);
  view.setUint16(4, type, true);
  view.setUint16(6, flags, true);
  view.setUint32(8, seq, true);
  out.set(body, 16);
  return out;
}

/** The C library's text for the errnos a route-netlink request can come back with (what `ip` prints). */
const ERRNO_TEXT: Record<number, string> = {
  1: "Operation not permitted",
  2: "No such file or directory",
  3: "No such process",
  4: "Interrupted system call",
  5: "Input/output error",
  6: "No such device or address",
  7: "Argument list too long",
  9: "Bad file descriptor",
  11: "Resource temporarily unavailable",
  12: "Cannot allocate memory",
  13: "Permission denied",
  14: "Bad address",
  16: "Device or resource busy",
  17: "File exists",
  18: "Invalid cross-device link",
  19: "No such device",
  20: "Not a directory",
  22: "Invalid argument",
  23: "Too many open files in system",
  24: "Too many open files",
  28: "No space left on device",
  34: "Numerical result out of range",
  36: "File name too long",
  39: "Directory not empty",
  40: "Too many levels of symbolic links",
  61: "No data available",
  71: "Protocol error",
  74: "Bad message",
  75: "Value too large for defined data type",
  90: "Message too long",
  93: "Protocol not supported",
  95: "Operation not supported",
  97: "Address family not supported by protocol",
  98: "Address already in use",
  99: "Cannot assign requested address",
  100: "Network is down",
  101: "Network is unreachable",
  105: "No buffer space available",
  110: "Connection timed out",
  113: "No route to host",
  125: "Operation canceled",
};

/** strerror(errno), as glibc words it. */
export const errnoText = (errno: number): string => ERRNO_TEXT[errno] ?? `Unknown error ${errno}`;

/**
 * A kernel refusal in `ip`'s words: the kernel's own message when it sent one (`Error: Nexthop has invalid
 * gateway.`), else `RTNETLINK answers: File exists`.
 */
export function ipErrorText(errno: number, message?: string): string {
  if (message) return `Error: ${message}${message.endsWith(".") ? "" : "."}`;
  return `RTNETLINK answers: ${errnoText(errno)}`;
}

/** What the kernel said to request `seq`: nothing yet (another message), success, or a refusal and why. */
export type AckOutcome = { kind: "none" } | { kind: "ok" } | { kind: "error"; errno: number; reason: string; message?: string };

/** One netlink message of a reply. */
export interface NlMessage {
  type: number;
  flags: number;
  seq: number;
  /** The bytes after the 16-byte header. */
  payload: Uint8Array;
}

/** The messages in a reply buffer. */
export function splitMessages(reply: Uint8Array): NlMessage[] {
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength);
  const out: NlMessage[] = [];
  for (let at = 0; at + 16 <= reply.length; ) {
    const len = view.getUint32(at, true);
    if (len < 16 || at + len > reply.length) break;
    out.push({
      type: view.getUint16(at + 4, true),
      flags: view.getUint16(at + 6, true),
      seq: view.getUint32(at + 8, true),
      payload: reply.subarray(at + 16, at + len),
    });
    at += align4(len);
  }
  return out;
}

/** The attributes in `bytes` by type (nested and byte-order flags masked off); the last of a repeated type wins. */
export function parseAttrs(bytes: Uint8Array): Map<number, Uint8Array> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const attrs = new Map<number, Uint8Array>();
  for (let at = 0; at + 4 <= bytes.length; ) {
    const len = view.getUint16(at, true);
    if (len < 4 || at + len > bytes.length) break;
    attrs.set(view.getUint16(at + 2, true) & 0x3fff, bytes.subarray(at + 4, at + len));
    at += align4(len);
  }
  return attrs;
}

/** The acknowledgement in an NLMSG_ERROR payload: errno 0 for success, and the kernel's extended-ack message. */
function decodeError(m: NlMessage): { errno: number; message?: string } {
  const view = new DataView(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength);
  const errno = -view.getInt32(0, true);
  if (!(m.flags & NLM_F_ACK_TLVS) || m.payload.length < 20) return { errno };
  // After the error code comes the failed request: its header only when capped, else all of it; then TLVs.
  const echoed = m.flags & NLM_F_CAPPED ? 16 : align4(view.getUint32(4, true));
  const text = parseAttrs(m.payload.subarray(4 + echoed)).get(NLMSGERR_ATTR_MSG);
  const message = text ? new TextDecoder().decode(text).replace(/\0+$/, "") : "";
  return message ? { errno, message } : { errno };
}

/**
 * Finds the acknowledgement of request `seq` in a reply: its errno and, with extended acks, the kernel's own
 * message (e.g. "Exclusivity flag on, cannot modify").
 */
export function parseAck(reply: Uint8Array, seq: number): AckOutcome {
  for (const m of splitMessages(reply)) {
    if (m.type !== NLMSG_ERROR || m.seq !== seq) continue;
    const { errno, message } = decodeError(m);
    if (errno === 0) return { kind: "ok" };
    const text = errnoText(errno);
    return message ? { kind: "error", errno, reason: `${message} (${text})`, message } : { kind: "error", errno, reason: text };
  }
  return { kind: "none" };
}

/** The kernel's answer to one request: the messages it sent back (a dump's, or a get's), or its refusal. */
export interface Exchange {
  messages: NlMessage[];
  error?: { errno: number; message?: string };
  /** A dump that the kernel marked inconsistent (something changed while it ran): worth repeating. */
  interrupted: boolean;
}

/** A route-netlink socket in one network namespace. */
export interface RtnetlinkSocket {
  /** Sends one request and waits for its acknowledgement; a refusal is a NetOpError described by `operation`. */
  request(type: number, flags: number, body: Uint8Array, operation: string): void;
  /**
   * Sends one request and collects what comes back: with NLM_F_DUMP every message up to the end of the dump,
   * otherwise the reply (if the request has one) and the acknowledgement. Throws only when the socket fails.
   */
  exchange(type: number, flags: number, body: Uint8Array, operation: string): Exchange;
  /**
   * Sends requests, each datagram of `datagrams` in one send (NLM_F_REQUEST added, each request its own
   * sequence number, no other flag added: a request wants NLM_F_ACK to be answered), and reads until the last
   * request is answered; resolves to the errors the kernel reported, by the request's index counted across the
   * datagrams. The last request must be one that is always answered (after an nf_tables batch, a request of
   * its own: the kernel reads nothing after a batch's end in the batch's datagram). Throws only when the socket
   * fails.
   */
  exchangeMany(
    datagrams: ReadonlyArray<ReadonlyArray<{ type: number; flags: number; body: Uint8Array }>>,
    operation: string,
  ): Array<{ index: number; errno: number; message?: string }>;
  close(): void;
}

type Libc = Pick<SysLibc, "socket" | "setsockopt" | "send" | "recv" | "close" | "setns">;

let libc: Promise<Libc | null> | undefined;

/** libc through Bun's FFI (sys/libc), or null when not running under Bun. */
function loadLibc(): Promise<Libc | null> {
  return (libc ??= bindLibc(["socket", "setsockopt", "send", "recv", "close", "setns"]).then((b) => b?.fn ?? null));
}

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0x80000;
const NETLINK_ROUTE = 0;
/** The netfilter family's protocol (nf_tables: net/netlink/nfnetlink.ts). */
export const NETLINK_NETFILTER = 12;
const SOL_SOCKET = 1;
const SO_RCVTIMEO = 20;
const SOL_NETLINK = 270;
const NETLINK_EXT_ACK = 11;
const MSG_TRUNC = 0x20;
/** How long one reply may take; a blocked receive is retried (a signal) until then. */
const REPLY_TIMEOUT_MS = 10_000;
const REPLY_BUFFER = 1 << 18;
/**
 * The one receive buffer of the process, made at its first socket: a reply is split and copied out before the
 * exchange that received it returns, and exchanges are synchronous (no other receive runs in between), so every
 * socket can share it. A buffer per socket cost a resident server a zeroed 256 KiB per request (~6% of its time).
 */
let replyBuffer: Uint8Array | undefined;

/**
 * Creates the socket inside the network namespace at `netnsPath` (a netlink socket belongs to the namespace its
 * creator was in); -1 when the namespace cannot be entered.
 */
function socketInNetns(c: Libc, netnsPath: string, protocol: number): number {
  try {
    return inThreadNetns(
      c.setns,
      () => undefined,
      netnsPath,
      () => c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol),
      "tscni",
    );
  } catch {
    return -1;
  }
}

/**
 * Runs `work` synchronously with this thread in the network namespace at `netnsPath` (sys/thread-netns.ts), for
 * file accesses that show the thread's namespace (/proc/sys/net); undefined when this runtime has no FFI (callers
 * run a tool in the namespace then). Opening the namespace fails with node:fs's error.
 */
export async function inNetnsThread<T>(netnsPath: string, work: () => T): Promise<{ value: T } | undefined> {
  const c = await loadLibc();
  if (!c) return undefined;
  return { value: inThreadNetns(c.setns, () => undefined, netnsPath, work, "tscni") };
}

/**
 * Opens a route-netlink socket (with extended acks) in this process's network namespace, or in the one at
 * `netnsPath`; null when this runtime has no FFI or the socket cannot be made (callers use the tools then).
 */
export function openRtnetlink(netnsPath?: string): Promise<RtnetlinkSocket | null> {
  return openNetlink(NETLINK_ROUTE, netnsPath);
}

/** openRtnetlink for another netlink protocol (NETLINK_NETFILTER). */
export async function openNetlink(protocol: number, netnsPath?: string): Promise<RtnetlinkSocket | null> {
  const c = await loadLibc();
  if (!c) return null;
  const fd = netnsPath
    ? phaseSync("netns", "netlink socket in a namespace", () => socketInNetns(c, netnsPath, protocol))
    : c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (fd < 0) return null;
  const one = new Uint8Array(4);
  new DataView(one.buffer).setUint32(0, 1, true);
  c.setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, one, 4); // best effort: only the error texts depend on it
  const timeout = new Uint8Array(16); // struct timeval
  new DataView(timeout.buffer).setBigInt64(0, BigInt(REPLY_TIMEOUT_MS / 1000), true);
  c.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, timeout, 16);
  const buffer = (replyBuffer ??= new Uint8Array(REPLY_BUFFER));
  let seq = Math.floor(Date.now() / 1000) & 0x7fffffff;

  /** The messages of the next datagram (retrying a receive interrupted by a signal). */
  function receive(operation: string): NlMessage[] {
    const deadline = Date.now() + REPLY_TIMEOUT_MS;
    for (;;) {
      const n = Number(c!.recv(fd, buffer, buffer.length, MSG_TRUNC));
      if (n > buffer.length) throw new NetOpError(operation, `a netlink reply of ${n} bytes did not fit the ${buffer.length}-byte buffer`);
      if (n > 0) return splitMessages(buffer.subarray(0, n));
      if (n === 0 || Date.now() >= deadline) throw new NetOpError(operation, "no reply from the kernel on the netlink socket");
    }
  }

  const exchange = (type: number, flags: number, body: Uint8Array, operation: string): Exchange =>
    phaseSync("netlink", operation, () => exchangeNow(type, flags, body, operation));

  function exchangeNow(type: number, flags: number, body: Uint8Array, operation: string): Exchange {
    seq = (seq + 1) & 0x7fffffff;
    const dump = (flags & NLM_F_DUMP) === NLM_F_DUMP;
    const msg = nlMessage(type, flags | NLM_F_REQUEST | (dump ? 0 : NLM_F_ACK), seq, body);
    if (Number(c!.send(fd, msg, msg.length, 0)) !== msg.length) throw new NetOpError(operation, "cannot send the netlink request");
    const result: Exchange = { messages: [], interrupted: false };
    for (;;) {
      for (const m of receive(operation)) {
        if (m.seq !== seq) continue; // a late answer to an earlier request
        if (m.type === NLMSG_ERROR) {
          const { errno, message } = decodeError(m);
          if (errno !== 0) result.error = message ? { errno, message } : { errno };
          return result;
        }
        if (m.type === NLMSG_DONE) {
          const code = m.payload.length >= 4 ? new DataView(m.payload.buffer, m.payload.byteOffset).getInt32(0, true) : 0;
          if (code < 0) result.error = { errno: -code };
          if (m.flags & NLM_F_DUMP_INTR) result.interrupted = true;
          return result;
        }
        if (m.flags & NLM_F_DUMP_INTR) result.interrupted = true;
        result.messages.push({ ...m, payload: m.payload.slice() });
      }
    }
  }

  function exchangeMany(datagrams: ReadonlyArray<ReadonlyArray<{ type: number; flags: number; body: Uint8Array }>>, operation: string) {
    const first = (seq + 1) & 0x7fffffff;
    let count = 0;
    for (const requests of datagrams) {
      const parts = requests.map((r) => {
        seq = (seq + 1) & 0x7fffffff;
        count++;
        return nlMessage(r.type, r.flags | NLM_F_REQUEST, seq, r.body);
      });
      const datagram = concatBytes(...parts);
      if (Number(c!.send(fd, datagram, datagram.length, 0)) !== datagram.length) throw new NetOpError(operation, "cannot send the netlink requests");
    }
    const last = seq;
    const errors: Array<{ index: number; errno: number; message?: string }> = [];
    const indexOf = (s: number) => (s - first + 0x80000000) % 0x80000000;
    for (;;) {
      for (const m of receive(operation)) {
        const index = indexOf(m.seq);
        if (index >= count) continue; // an answer to an earlier request
        if (m.type === NLMSG_ERROR) {
          const { errno, message } = decodeError(m);
          if (errno !== 0) errors.push(message ? { index, errno, message } : { index, errno });
        }
        if (m.seq === last && (m.type === NLMSG_ERROR || m.type === NLMSG_DONE)) return errors;
      }
    }
  }

  return {
    exchange,
    exchangeMany: (requests, operation) => phaseSync("netlink", operation, () => exchangeMany(requests, operation)),
    request(type, flags, body, operation) {
      const { error } = exchange(type, flags, body, operation);
      if (!error) return;
      const text = errnoText(error.errno);
      throw new NetOpError(operation, error.message ? `${error.message} (${text})` : text, null, undefined, kindOfErrno(error.errno));
    },
    close() {
      c.close(fd);
    },
  };
}
