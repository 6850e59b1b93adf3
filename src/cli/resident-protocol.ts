/**
 * The wire protocol between the C launcher (launcher/launcher.c) and the resident server (resident-server.ts),
 * over a unix socket. Binary and small, so the launcher stays a few dozen lines of C:
 *
 * 1. hello, client to server: `TSCNI` 0x01, then u16 length + the build ID (the launcher and the server must be
 *    the same build). The server answers one byte: `Y` (it will run the call) or `N` followed by u16 length +
 *    a reason (the client then runs the plugin itself; nothing has been sent yet, so nothing runs twice).
 * 2. request, client to server, only after `Y`: fields of u8 tag + u32 length + bytes, in any order, ended by
 *    `Z` (length 0): `P` the program (plugin type), `A` an argument (repeated), `E` one `NAME=value` of the
 *    environment (repeated), `I` stdin.
 * 3. reply, server to client: frames of u8 tag + u32 length + bytes: `O` stdout, `R` stderr, and last `X` with the
 *    exit status as u32. A connection that ends before `X` is a server that died during the call.
 *
 * Integers are little-endian.
 * @module
 */

/** Where the server listens and the launcher looks unless told otherwise (launcher.c has the same default). */
export const DEFAULT_SOCKET = "/run/tscni/plugins.sock";

export const HELLO_MAGIC = Buffer.from("TSCNI\x01", "latin1");
export const ACCEPT = 0x59; // "Y"
export const REFUSE = 0x4e; // "N"

export const TAG_PROGRAM = 0x50; // "P"
export const TAG_ARG = 0x41; // "A"
export const TAG_ENV = 0x45; // "E"
export const TAG_STDIN = 0x49; // "I"
export const TAG_CWD = 0x43; // "C": the launcher's working directory (relative paths in a call resolve against it)
export const TAG_END = 0x5a; // "Z"
export const TAG_STDOUT = 0x4f; // "O"
export const TAG_STDERR = 0x52; // "R"
export const TAG_EXIT = 0x58; // "X"

/** The longest field the server reads (stdin is a config: small). */
export const MAX_FIELD = 16 * 1024 * 1024;

/** A plugin call as the launcher sends it. */
export interface ResidentRequest {
  program: string;
  args: string[];
  env: Record<string, string>;
  stdin: Buffer;
  /** The caller's working directory, when it sent one. */
  cwd?: string;
}

/** The hello message for `buildId`. */
export function encodeHello(buildId: string): Buffer {
  const id = Buffer.from(buildId, "utf8");
  const len = Buffer.alloc(2);
  len.writeUInt16LE(id.length);
  return Buffer.concat([HELLO_MAGIC, len, id]);
}

/** One field or frame: tag, u32 length, bytes. */
export function frame(tag: number, data: Uint8Array = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(tag, 0);
  head.writeUInt32LE(data.length, 1);
  return Buffer.concat([head, data]);
}

/** The refusal answer with its reason. */
export function encodeRefusal(reason: string): Buffer {
  const text = Buffer.from(reason, "utf8").subarray(0, 0xffff);
  const len = Buffer.alloc(2);
  len.writeUInt16LE(text.length);
  return Buffer.concat([Buffer.from([REFUSE]), len, text]);
}

/** A whole request, as the launcher writes it. */
export function encodeRequest(req: ResidentRequest): Buffer {
  return Buffer.concat([
    frame(TAG_PROGRAM, Buffer.from(req.program)),
    ...req.args.map((a) => frame(TAG_ARG, Buffer.from(a))),
    ...Object.entries(req.env).map(([k, v]) => frame(TAG_ENV, Buffer.from(`${k}=${v}`))),
    frame(TAG_STDIN, req.stdin),
    ...(req.cwd !== undefined ? [frame(TAG_CWD, Buffer.from(req.cwd))] : []),
    frame(TAG_END),
  ]);
}

/** The exit frame. */
export function exitFrame(status: number): Buffer {
  const code = Buffer.alloc(4);
  code.writeUInt32LE(status >>> 0);
  return frame(TAG_EXIT, code);
}

/** A protocol violation by the peer (the connection is dropped). */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** The connection ended before any of the request came: a launcher that gave up waiting for the answer. */
export class CallerLeftError extends ProtocolError {
  constructor() {
    super("the caller left before sending its call");
    this.name = "CallerLeftError";
  }
}

/**
 * Reads from a byte stream as it arrives: exact byte counts, awaited. `push` feeds it; `end` marks the stream
 * closed (a pending read then fails).
 */
export class ByteReader {
  private buffered: Buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  private ended = false;

  /** Bytes that have arrived and were not read yet. */
  get pending(): number {
    return this.buffered.length;
  }

  push(chunk: Buffer): void {
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
    this.waiter?.();
  }

  end(): void {
    this.ended = true;
    this.waiter?.();
  }

  /** Exactly `n` bytes. */
  async read(n: number): Promise<Buffer> {
    while (this.buffered.length < n) {
      if (this.ended) throw new ProtocolError(`the peer closed the connection (wanted ${n} bytes, have ${this.buffered.length})`);
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
    }
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }
}

/** Reads and checks a hello; resolves to the client's build ID. */
export async function readHello(r: ByteReader): Promise<string> {
  const magic = await r.read(HELLO_MAGIC.length);
  if (!magic.equals(HELLO_MAGIC)) throw new ProtocolError("not a tscni launcher (bad hello)");
  const len = (await r.read(2)).readUInt16LE(0);
  return (await r.read(len)).toString("utf8");
}

/** Reads a request's fields up to `Z`. */
export async function readRequest(r: ByteReader): Promise<ResidentRequest> {
  const req: ResidentRequest = { program: "", args: [], env: {}, stdin: Buffer.alloc(0) };
  for (let first = true; ; first = false) {
    const head = await r.read(5).catch((e: unknown) => {
      throw first && r.pending === 0 ? new CallerLeftError() : e;
    });
    const tag = head.readUInt8(0);
    const len = head.readUInt32LE(1);
    if (len > MAX_FIELD) throw new ProtocolError(`a request field of ${len} bytes is too long`);
    const data = await r.read(len);
    switch (tag) {
      case TAG_PROGRAM: req.program = data.toString("utf8"); break;
      case TAG_ARG: req.args.push(data.toString("utf8")); break;
      case TAG_ENV: {
        const text = data.toString("utf8");
        const eq = text.indexOf("=");
        if (eq > 0) req.env[text.slice(0, eq)] = text.slice(eq + 1);
        break;
      }
      case TAG_STDIN: req.stdin = Buffer.from(data); break;
      case TAG_CWD: req.cwd = data.toString("utf8"); break;
      case TAG_END: return req;
      default: throw new ProtocolError(`unknown request field tag 0x${tag.toString(16)}`);
    }
  }
}
