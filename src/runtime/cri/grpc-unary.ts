/**
 * One unary gRPC call over HTTP/2 on a unix socket (the gRPC "PROTOCOL-HTTP2" framing: a POST to
 * `/<service>/<method>`, the message behind a 5-byte prefix, the status in the trailers), with node:http2. Enough
 * for a CRI client that makes a call or two per run; a gRPC library would cost more to load than the calls take,
 * and product code may not depend on the test client's @grpc packages.
 * @module
 */
import type { ClientHttp2Session, IncomingHttpHeaders } from "node:http2";
import type { Socket } from "node:net";

/** gRPC status names by code, for messages. */
const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

/** The server could not be reached, or did not answer in time, or broke the protocol: nothing was learnt. */
export class GrpcTransportError extends Error {
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = "GrpcTransportError";
  }
}

/** The listener failed the caller's check (UnaryCall.checkListener): nothing was sent, not even the HTTP/2 preface. */
export class GrpcListenerRefusedError extends GrpcTransportError {
  constructor(
    readonly socketPath: string,
    readonly refusal: string,
  ) {
    super(`the listener on unix://${socketPath} is not trusted, nothing was sent: ${refusal}`);
    this.name = "GrpcListenerRefusedError";
  }
}

/** The server answered the call with a non-OK status. */
export class GrpcStatusError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly details: string,
  ) {
    super(`${method} failed (${STATUS_NAMES[code] ?? `status ${code}`}): ${details || "no message"}`);
    this.name = "GrpcStatusError";
  }

  /** The status name (`UNIMPLEMENTED`, `UNAVAILABLE`...). */
  get statusName(): string {
    return STATUS_NAMES[this.code] ?? String(this.code);
  }
}

/** What one call needs: the socket, the full method path, the encoded request and its limits. */
export interface UnaryCall {
  socketPath: string;
  /** `/package.Service/Method`. */
  method: string;
  request: Buffer;
  timeoutMs: number;
  /** A larger response is refused (the call is cancelled). */
  maxResponseBytes: number;
  /**
   * Asked once the connection is up and before a byte is written on it (the listener learns nothing, not even that
   * a gRPC client came): why the process listening is not to be sent the call, or undefined when it is. A refusal
   * fails the call with GrpcListenerRefusedError. Without it, any listener is sent the call.
   */
  checkListener?: (socket: Socket) => Promise<string | undefined>;
}

/** grpc-message is percent-encoded (gRPC over HTTP/2); a malformed one is shown as sent. */
function decodeGrpcMessage(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value.join(",") : (value ?? "");
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The single message of a unary response body (5-byte prefixes: compressed flag, big-endian length). */
function unframe(body: Buffer, method: string): Buffer {
  if (body.length < 5) throw new GrpcTransportError(`${method}: the response has no message (${body.length} bytes)`);
  if (body[0] !== 0) throw new GrpcTransportError(`${method}: the response is compressed (flag ${body[0]}), which was not asked for`);
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) {
    throw new GrpcTransportError(`${method}: the response body is ${body.length} bytes, its frame announces ${5 + length}`);
  }
  return body.subarray(5);
}

/**
 * Makes the call and resolves with the response message. Rejects with GrpcStatusError when the server answers with
 * an error status, and with GrpcTransportError when it cannot be reached, breaks the protocol, sends more than
 * `maxResponseBytes` or does not finish within `timeoutMs` (the deadline is also sent, as grpc-timeout), or with
 * its subclass GrpcListenerRefusedError when `checkListener` refuses the listener.
 */
export async function grpcUnary(call: UnaryCall): Promise<Buffer> {
  const { socketPath, method, timeoutMs } = call;
  // Loaded here: every cnitool command imports this module, few make a call.
  const [{ default: http2 }, { default: net }] = await Promise.all([import("node:http2"), import("node:net")]);
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    let session: ClientHttp2Session | undefined;
    // Connected here rather than by http2.connect, so that the listener is checked before the preface is written.
    const socket = net.connect(socketPath);
    const finish = (outcome: { message: Buffer } | { error: Error }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session?.destroy();
      socket.destroy();
      if ("message" in outcome) resolve(outcome.message);
      else reject(outcome.error);
    };
    const timer = setTimeout(
      () => finish({ error: new GrpcTransportError(`${method}: no answer from unix://${socketPath} within ${timeoutMs} ms`) }),
      timeoutMs,
    );
    const unreachable = (e: Error) => {
      // A stream cancelled because the connection failed carries that failure as its cause.
      const cause = (e as { cause?: unknown }).cause;
      return new GrpcTransportError(`cannot reach unix://${socketPath}: ${(cause instanceof Error ? cause : e).message}`, e);
    };
    /** The call, on a session whose connection is up and was checked. */
    const send = (session: ClientHttp2Session) => {
      let connected = false;
      session.on("connect", () => (connected = true));
      session.on("error", (e: Error) => finish({ error: unreachable(e) }));

      const frame = Buffer.alloc(5);
      frame.writeUInt32BE(call.request.length, 1);
      const stream = session.request({
        ":method": "POST",
        ":path": method,
        "content-type": "application/grpc",
        te: "trailers",
        "grpc-timeout": `${Math.max(1, Math.min(timeoutMs, 99_999_999))}m`,
        "grpc-accept-encoding": "identity",
        "user-agent": "tscni",
      });
      const chunks: Buffer[] = [];
      let received = 0;
      let headers: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders | undefined;
      stream.on("response", (h) => (headers = h));
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > 5 + call.maxResponseBytes) {
          stream.close(http2.constants.NGHTTP2_CANCEL);
          finish({ error: new GrpcTransportError(`${method}: the response is larger than ${call.maxResponseBytes} bytes`) });
          return;
        }
        chunks.push(chunk);
      });
      stream.on("error", (e: Error) =>
        finish({
          error: connected ? new GrpcTransportError(`${method} over unix://${socketPath}: ${e.message}`, e) : unreachable(e),
        }),
      );
      stream.on("end", () => {
        const httpStatus = Number(headers[":status"]);
        if (httpStatus !== 200) {
          finish({
            error: new GrpcTransportError(`${method}: HTTP status ${headers[":status"] ?? "missing"} from unix://${socketPath}, not a gRPC server?`),
          });
          return;
        }
        // A call that fails at once has its status in the headers ("trailers-only").
        const status = trailers?.["grpc-status"] ?? headers["grpc-status"];
        if (status === undefined) {
          finish({ error: new GrpcTransportError(`${method}: the response ended without a grpc-status`) });
          return;
        }
        const code = Number(status);
        if (code !== 0) {
          finish({ error: new GrpcStatusError(method, code, decodeGrpcMessage(trailers?.["grpc-message"] ?? headers["grpc-message"])) });
          return;
        }
        try {
          finish({ message: unframe(Buffer.concat(chunks), method) });
        } catch (e) {
          finish({ error: e as Error });
        }
      });
      stream.end(Buffer.concat([frame, call.request]));
    };
    const notConnected = (e: Error) => finish({ error: unreachable(e) });
    socket.once("error", notConnected);
    socket.once("connect", () => {
      void (async () => {
        let refusal: string | undefined;
        try {
          refusal = await call.checkListener?.(socket);
        } catch (e) {
          refusal = `it cannot be checked (${e instanceof Error ? e.message : String(e)})`;
        }
        if (settled) return;
        if (refusal !== undefined) {
          finish({ error: new GrpcListenerRefusedError(socketPath, refusal) });
          return;
        }
        socket.off("error", notConnected);
        session = http2.connect("http://localhost", { createConnection: () => socket });
        send(session);
      })();
    });
  });
}
