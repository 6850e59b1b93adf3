/**
 * A client of the resident server in JavaScript (the launcher is the C one): for `cnitool daemon status|stop`,
 * the warm-up and tests. Same protocol (resident-protocol.ts), same trust (nothing is sent to a listener that is not
 * provably the server: sys/peer.ts's verifyListener, unless the caller says it knows better), same outcomes:
 * refused (run it yourself), or the call's stdout, stderr and exit status, or a server that died during the call.
 * @module
 */
import net from "node:net";
import { ownIdentity, SAME_PROCESS_RULE, socketFd, verifyListener } from "#sys/peer.js";
import {
  ACCEPT,
  encodeHello,
  encodeRequest,
  lockPathOf,
  REFUSE,
  type ResidentRequest,
  TAG_BACK,
  TAG_EXIT,
  TAG_STDERR,
  TAG_STDOUT,
} from "./resident-protocol.js";

/** What a call through the server gave. */
export type ResidentOutcome =
  | { kind: "refused"; reason: string }
  | { kind: "served"; stdout: string; stderr: string; status: number }
  /** `unansweredMs`: the server took the call and gave no answer within its time limit and the caller's margin. */
  | { kind: "died"; stdout: string; stderr: string; unansweredMs?: number };

/** The bytes of a connection as they arrive, read in exact counts. */
class Incoming {
  private chunks: Buffer[] = [];
  private size = 0;
  private waiter: (() => void) | undefined;
  private ended = false;
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    this.waiter?.();
  }
  end(): void {
    this.ended = true;
    this.waiter?.();
  }
  /** Exactly `n` bytes; undefined when the connection ended first. */
  async read(n: number): Promise<Buffer | undefined> {
    while (this.size < n) {
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
    }
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.chunks = all.length > n ? [all.subarray(n)] : [];
    this.size -= n;
    return all.subarray(0, n);
  }
}

/** How a call is made. */
export interface CallOptions {
  /**
   * Send without verifying the listener: only for a server's call to itself (its warm-up) and for tests that play
   * an attacker.
   */
  unverified?: boolean;
  /**
   * Bounds, as the launcher's (launcher.c): an answer to the hello within `helloMs` (else refused: nothing of the
   * call was sent), and the reply within the server's time limit for the call and `replyMarginMs`. Unbounded when
   * not given.
   */
  helloMs?: number;
  replyMarginMs?: number;
}

/** Sends one call to the server at `socketPath` as build `buildId`. Rejects when no server answers. */
export async function callResident(socketPath: string, buildId: string, req: ResidentRequest, opts: CallOptions = {}): Promise<ResidentOutcome> {
  const socket = net.connect(socketPath);
  const incoming = new Incoming();
  socket.on("data", (b: Buffer) => incoming.push(b));
  socket.on("end", () => incoming.end());
  socket.on("close", () => incoming.end());
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => incoming.end());
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  /** Ends the connection after `ms` (its reads then come back empty). */
  const bound = (ms: number | undefined) => {
    clearTimeout(timer);
    if (ms !== undefined)
      timer = setTimeout(() => {
        timedOut = true;
        socket.destroy();
      }, ms);
  };
  try {
    if (!opts.unverified) {
      const fd = socketFd(socket);
      const verdict =
        fd === undefined
          ? { refusal: "the connection's descriptor cannot be read", kind: "identity" as const }
          : await verifyListener(fd, ownIdentity(), SAME_PROCESS_RULE, { lockPath: lockPathOf(socketPath), socketPath });
      if ("refusal" in verdict) return { kind: "refused", reason: `not sent: ${verdict.refusal}` };
    }
    const request = encodeRequest(req);
    bound(opts.helloMs);
    socket.write(encodeHello(buildId, request.length));
    const answer = (await incoming.read(1))?.[0];
    if (answer === undefined && timedOut) return { kind: "refused", reason: `no answer to the hello within ${opts.helloMs} ms` };
    if (answer === REFUSE) {
      const length = (await incoming.read(2))?.readUInt16LE(0) ?? 0;
      return { kind: "refused", reason: (await incoming.read(length))?.toString("utf8") ?? "" };
    }
    if (answer !== ACCEPT) throw new Error(answer === undefined ? "the server closed the connection" : `unexpected answer 0x${answer.toString(16)}`);
    // The call's time limit; a connection that ends before it had nothing of the call (as the launcher, run it here).
    const limit = await incoming.read(4);
    if (!limit)
      return {
        kind: "refused",
        reason: timedOut ? `no answer to the hello within ${opts.helloMs} ms` : "the connection ended before the call was sent",
      };
    const replyMs = opts.replyMarginMs !== undefined ? limit.readUInt32LE(0) + opts.replyMarginMs : undefined;
    bound(replyMs);
    socket.write(request);
    let stdout = "";
    let stderr = "";
    for (;;) {
      const head = await incoming.read(5);
      const data = head && (await incoming.read(head.readUInt32LE(1)));
      if (!head || !data) return { kind: "died", stdout, stderr, ...(timedOut && replyMs !== undefined ? { unansweredMs: replyMs } : {}) };
      const tag = head.readUInt8(0);
      if (tag === TAG_BACK && !stdout && !stderr) return { kind: "refused", reason: "handed back: no place for it in the server" };
      if (tag === TAG_STDOUT) stdout += data.toString();
      else if (tag === TAG_STDERR) stderr += data.toString();
      else if (tag === TAG_EXIT) return { kind: "served", stdout, stderr, status: data.readUInt32LE(0) };
    }
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}
