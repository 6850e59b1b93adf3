/**
 * The wire protocol between the C launcher (launcher/launcher.c) and the resident server, over a unix socket.
 * Integers are little-endian.
 *
 * 1. hello, client to server: `TSCNI` 0x02, u16 length + the build ID (launcher and server must be one build),
 *    u32 length of the request the client will send. The server answers `Y` and a u32: the call's time limit in
 *    milliseconds (send it; it will answer within that), or `N`, u16 length, a reason (the client runs the call
 *    itself: nothing of the call has been sent). A client sends nothing, not even the hello, to a listener it has
 *    not verified (sys/peer.ts's verifyListener; launcher.c's listener_refusal).
 * 2. request, client to server, only after `Y`: exactly the announced bytes, fields of u8 tag + u32 length +
 *    bytes ending with `Z` (length 0): `P` program (plugin type), `A` argument (repeated), `E` one `NAME=value`
 *    of the environment (repeated), `C` the caller's working directory, `U` the caller's umask (u32), `I` stdin.
 * 3. reply, server to client: frames of u8 tag + u32 length + bytes: `O` stdout, `R` stderr, and last `X` with
 *    the exit status as u32 — or, before any other frame, `B` (length 0): the server handed the call back without
 *    running any of it (no place for it: places.ts), and the client runs it itself. A connection that ends before
 *    `X` is a server that died during the call.
 * @module
 */

/** Where the server listens and the launcher looks unless told otherwise (launcher.c has the same default). */
export const DEFAULT_SOCKET = "/run/tscni/plugins.sock";

/** The lock file of the server on `socketPath`. */
export const lockPathOf = (socketPath: string): string => `${socketPath}.lock`;

export const HELLO_MAGIC = Buffer.from("TSCNI\x02", "latin1");
export const ACCEPT = 0x59; // "Y"
export const REFUSE = 0x4e; // "N"

export const TAG_PROGRAM = 0x50; // "P"
export const TAG_ARG = 0x41; // "A"
export const TAG_ENV = 0x45; // "E"
export const TAG_STDIN = 0x49; // "I"
export const TAG_CWD = 0x43; // "C"
export const TAG_UMASK = 0x55; // "U"
export const TAG_END = 0x5a; // "Z"
export const TAG_STDOUT = 0x4f; // "O"
export const TAG_STDERR = 0x52; // "R"
export const TAG_EXIT = 0x58; // "X"
export const TAG_BACK = 0x42; // "B"

/** The longest build ID a hello may carry. */
export const MAX_BUILD_ID = 255;
/** The longest hello. */
export const MAX_HELLO = HELLO_MAGIC.length + 2 + MAX_BUILD_ID + 4;
/** The largest request a server takes (a config and an environment); a larger call runs in the caller. */
export const MAX_REQUEST = 8 * 1024 * 1024;

/** A plugin call as the launcher sends it. */
export interface ResidentRequest {
  program: string;
  args: string[];
  env: Record<string, string>;
  stdin: Buffer;
  /** The caller's working directory, when it sent one. */
  cwd?: string;
  /** The caller's umask, when it sent one. */
  umask?: number;
}

/** A hello as the server reads it. */
export interface Hello {
  buildId: string;
  requestLength: number;
  /** Bytes the hello took. */
  size: number;
}

/** A protocol violation by the peer (the connection is dropped). */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** The hello message for `buildId` announcing a request of `requestLength` bytes. */
export function encodeHello(buildId: string, requestLength: number): Buffer {
  const id = Buffer.from(buildId, "utf8");
  const out = Buffer.alloc(HELLO_MAGIC.length + 2 + id.length + 4);
  HELLO_MAGIC.copy(out, 0);
  out.writeUInt16LE(id.length, HELLO_MAGIC.length);
  id.copy(out, HELLO_MAGIC.length + 2);
  out.writeUInt32LE(requestLength, HELLO_MAGIC.length + 2 + id.length);
  return out;
}

/** The hello at the start of `bytes`; undefined while more bytes are needed. Throws on anything else. */
export function parseHello(bytes: Buffer): Hello | undefined {
  const magic = bytes.subarray(0, HELLO_MAGIC.length);
  if (!HELLO_MAGIC.subarray(0, magic.length).equals(magic)) throw new ProtocolError("not a tscni launcher of this protocol (bad hello)");
  if (bytes.length < HELLO_MAGIC.length + 2) return undefined;
  const idLength = bytes.readUInt16LE(HELLO_MAGIC.length);
  if (idLength > MAX_BUILD_ID) throw new ProtocolError(`a build ID of ${idLength} bytes is too long`);
  const size = HELLO_MAGIC.length + 2 + idLength + 4;
  if (bytes.length < size) return undefined;
  return {
    buildId: bytes.toString("utf8", HELLO_MAGIC.length + 2, HELLO_MAGIC.length + 2 + idLength),
    requestLength: bytes.readUInt32LE(size - 4),
    size,
  };
}

/** One field or frame: tag, u32 length, bytes. */
export function frame(tag: number, data: Uint8Array = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(5 + data.length);
  out.writeUInt8(tag, 0);
  out.writeUInt32LE(data.length, 1);
  out.set(data, 5);
  return out;
}

/** The refusal answer with its reason. */
export function encodeRefusal(reason: string): Buffer {
  const text = Buffer.from(reason, "utf8").subarray(0, 0xffff);
  const out = Buffer.alloc(3 + text.length);
  out.writeUInt8(REFUSE, 0);
  out.writeUInt16LE(text.length, 1);
  text.copy(out, 3);
  return out;
}

/** A whole request, as the launcher writes it. */
export function encodeRequest(req: ResidentRequest): Buffer {
  return Buffer.concat([
    frame(TAG_PROGRAM, Buffer.from(req.program)),
    ...req.args.map((a) => frame(TAG_ARG, Buffer.from(a))),
    ...Object.entries(req.env).map(([k, v]) => frame(TAG_ENV, Buffer.from(`${k}=${v}`))),
    ...(req.cwd !== undefined ? [frame(TAG_CWD, Buffer.from(req.cwd))] : []),
    ...(req.umask !== undefined ? [frame(TAG_UMASK, u32(req.umask))] : []),
    frame(TAG_STDIN, req.stdin),
    frame(TAG_END),
  ]);
}

/** A u32, little-endian. */
function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

/** The exit frame. */
export function exitFrame(status: number): Buffer {
  return frame(TAG_EXIT, u32(status));
}

/** The answer that admits a call: `Y` and the call's time limit in milliseconds. */
export function encodeAccept(timeoutMs: number): Buffer {
  return Buffer.concat([Buffer.from([ACCEPT]), u32(Math.min(timeoutMs, 0xffffffff))]);
}

/** A whole request's bytes (exactly what the hello announced) read back; throws ProtocolError on anything else. */
export function decodeRequest(bytes: Buffer): ResidentRequest {
  const req: ResidentRequest = { program: "", args: [], env: {}, stdin: Buffer.alloc(0) };
  let at = 0;
  while (at + 5 <= bytes.length) {
    const tag = bytes.readUInt8(at);
    const length = bytes.readUInt32LE(at + 1);
    const start = at + 5;
    if (length > bytes.length - start) throw new ProtocolError(`a request field of ${length} bytes runs past the request's end`);
    at = start + length;
    const text = () => bytes.toString("utf8", start, at);
    switch (tag) {
      case TAG_PROGRAM:
        req.program = text();
        break;
      case TAG_ARG:
        req.args.push(text());
        break;
      case TAG_ENV: {
        const pair = text();
        const eq = pair.indexOf("=");
        if (eq > 0) req.env[pair.slice(0, eq)] = pair.slice(eq + 1);
        break;
      }
      case TAG_STDIN:
        req.stdin = bytes.subarray(start, at);
        break;
      case TAG_CWD:
        req.cwd = text();
        break;
      case TAG_UMASK:
        if (length !== 4) throw new ProtocolError(`a umask field of ${length} bytes`);
        req.umask = bytes.readUInt32LE(start) & 0o777;
        break;
      case TAG_END:
        if (at !== bytes.length) throw new ProtocolError(`${bytes.length - at} bytes after the end of the request`);
        return req;
      default:
        throw new ProtocolError(`unknown request field tag 0x${tag.toString(16)}`);
    }
  }
  throw new ProtocolError("the request ends without its end field");
}

/**
 * Collects a byte stream into one buffer of a known length, copying each chunk once (no re-concatenation as
 * chunks arrive). `add` returns false when the chunk would overflow it.
 */
export class FixedBuffer {
  readonly bytes: Buffer;
  private filled = 0;
  constructor(length: number) {
    this.bytes = Buffer.allocUnsafe(length);
  }
  get complete(): boolean {
    return this.filled === this.bytes.length;
  }
  add(chunk: Uint8Array): boolean {
    if (chunk.length > this.bytes.length - this.filled) return false;
    this.bytes.set(chunk, this.filled);
    this.filled += chunk.length;
    return true;
  }
}
