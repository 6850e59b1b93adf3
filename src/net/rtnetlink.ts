/**
 * Route-netlink requests sent straight to the kernel, for the few settings the iproute2 tools cannot express
 * exactly as the Go plugins' netlink library does (a tbf qdisc with a raw tick buffer). Messages are built
 * here as bytes; the socket exists only under the standalone (Bun) build, through its FFI to libc. Under Node
 * `openRtnetlink` gives null and callers fall back to the tools.
 * @module
 */
import { NetOpError } from "./exec.js";
import { bindLibc } from "../sys/libc.js";

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;

const NLMSG_ERROR = 2;
const NLMSGERR_ATTR_MSG = 1;
const NLM_F_CAPPED = 0x100;
const NLM_F_ACK_TLVS = 0x200;

const align4 = (n: number): number => (n + 3) & ~3;

/** Concatenates byte strings. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

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

const ERRNO_TEXT: Record<number, string> = {
  1: "Operation not permitted", 2: "No such file or directory", 16: "Device or resource busy", 17: "File exists",
  19: "No such device", 22: "Invalid argument", 34: "Numerical result out of range", 95: "Operation not supported",
};

/** What the kernel said to request `seq`: nothing yet (another message), success, or a refusal and why. */
export type AckOutcome = { kind: "none" } | { kind: "ok" } | { kind: "error"; errno: number; reason: string };

/**
 * Finds the acknowledgement of request `seq` in a reply: its errno and, with extended acks, the kernel's own
 * message (e.g. "Exclusivity flag on, cannot modify").
 */
export function parseAck(reply: Uint8Array, seq: number): AckOutcome {
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength);
  for (let at = 0; at + 16 <= reply.length;) {
    const len = view.getUint32(at, true);
    if (len < 16) break;
    const type = view.getUint16(at + 4, true);
    const flags = view.getUint16(at + 6, true);
    if (type === NLMSG_ERROR && view.getUint32(at + 8, true) === seq) {
      const errno = -view.getInt32(at + 16, true);
      if (errno === 0) return { kind: "ok" };
      let reason = ERRNO_TEXT[errno] ?? `errno ${errno}`;
      if (flags & NLM_F_ACK_TLVS) {
        // After the error code comes the failed request: its header only when capped, else all of it; then TLVs.
        const capped = (flags & NLM_F_CAPPED) !== 0;
        let tlv = at + 20 + (capped ? 16 : align4(view.getUint32(at + 20, true)));
        while (tlv + 4 <= at + len) {
          const tlvLen = view.getUint16(tlv, true);
          if (tlvLen < 4) break;
          if (view.getUint16(tlv + 2, true) === NLMSGERR_ATTR_MSG) {
            const text = new TextDecoder().decode(reply.subarray(tlv + 4, tlv + tlvLen)).replace(/\0+$/, "");
            if (text) reason = `${text} (${reason})`;
          }
          tlv += align4(tlvLen);
        }
      }
      return { kind: "error", errno, reason };
    }
    at += align4(len);
  }
  return { kind: "none" };
}

/** A route-netlink socket in this process's network namespace. */
export interface RtnetlinkSocket {
  /** Sends one request and waits for its acknowledgement; a refusal is a NetOpError described by `operation`. */
  request(type: number, flags: number, body: Uint8Array, operation: string): void;
  close(): void;
}

interface Libc {
  socket: (domain: number, type: number, protocol: number) => number;
  setsockopt: (fd: number, level: number, name: number, value: Uint8Array, len: number) => number;
  send: (fd: number, buf: Uint8Array, len: number, flags: number) => number | bigint;
  recv: (fd: number, buf: Uint8Array, len: number, flags: number) => number | bigint;
  close: (fd: number) => number;
}

let libc: Promise<Libc | null> | undefined;

/** libc through Bun's FFI, or null when not running under Bun. */
function loadLibc(): Promise<Libc | null> {
  return (libc ??= bindLibc<Libc>({
    socket: { args: ["i32", "i32", "i32"], returns: "i32" },
    setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" },
    send: { args: ["i32", "ptr", "u64", "i32"], returns: "i64" },
    recv: { args: ["i32", "ptr", "u64", "i32"], returns: "i64" },
    close: { args: ["i32"], returns: "i32" },
  }));
}

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0x80000;
const NETLINK_ROUTE = 0;
const SOL_NETLINK = 270;
const NETLINK_EXT_ACK = 11;

/** Opens a route-netlink socket (with extended acks), or gives null when this runtime has no FFI. */
export async function openRtnetlink(): Promise<RtnetlinkSocket | null> {
  const c = await loadLibc();
  if (!c) return null;
  const fd = c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return null;
  const one = new Uint8Array(4);
  new DataView(one.buffer).setUint32(0, 1, true);
  c.setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, one, 4); // best effort: only the error texts depend on it
  let seq = Math.floor(Date.now() / 1000) & 0x7fffffff;
  return {
    request(type, flags, body, operation) {
      seq++;
      const msg = nlMessage(type, flags | NLM_F_REQUEST | NLM_F_ACK, seq, body);
      if (Number(c.send(fd, msg, msg.length, 0)) !== msg.length) throw new NetOpError(operation, "cannot send the netlink request");
      const reply = new Uint8Array(65536);
      for (;;) {
        const n = Number(c.recv(fd, reply, reply.length, 0));
        if (n <= 0) throw new NetOpError(operation, "no reply from the kernel on the netlink socket");
        const ack = parseAck(reply.subarray(0, n), seq);
        if (ack.kind === "error") throw new NetOpError(operation, ack.reason);
        if (ack.kind === "ok") return;
      }
    },
    close() {
      c.close(fd);
    },
  };
}
