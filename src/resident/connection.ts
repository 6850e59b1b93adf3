/**
 * One connection of the resident server, from hello to the request handed over to run: a state machine whose
 * state is here, not in closures. The hello comes within its time (a hello waiting unread in the receive queue
 * gets the time again, up to HELLO_PATIENCE_MS); the server judges the caller (admission); the request comes with
 * the announced size, within its time, its bytes counted against the server's budget until it is complete.
 * Anything out of turn, too long or too late drops the connection.
 * @module
 */
import type net from "node:net";
import { decodeRequest, FixedBuffer, MAX_HELLO, ProtocolError, parseHello, type ResidentRequest } from "#invoke/resident-protocol.js";
import { messageOf } from "#spec/errors.js";
import { bytesWaiting } from "#sys/socket-queues.js";

/** The longest a connection waits for its hello to be read however busy the server (see `helloDue`). */
export const HELLO_PATIENCE_MS = 30_000;

/** A connection's progress. */
export type Phase = "hello" | "judging" | "request" | "running";

/** What a connection asks of its server. */
export interface ConnectionServer {
  /** How long a hello, and then a request, may take to come. */
  readonly helloMs: number;
  readonly requestMs: number;
  /** Admission and the request's size; answers a refused caller. Resolves to the served caller's pid. */
  judge(socket: net.Socket, buildId: string, requestLength: number, acceptedAt: number): Promise<number | undefined>;
  /**
   * Holds `bytes` of the server's request budget and answers the caller that it may send its request; false when
   * they do not fit (the caller has been refused).
   */
  reserve(socket: net.Socket, bytes: number): boolean;
  /** Gives back bytes `reserve` held. */
  unreserve(bytes: number): void;
  /** Runs a complete request (the connection's part is done). */
  run(socket: net.Socket, request: ResidentRequest, peerPid: number, acceptedAt: number): void;
  /** A connection dropped, `beforeAdmission` when its caller was never judged served. */
  dropped(why: string, beforeAdmission: boolean): void;
}

/** One connection (see the module comment); `start` begins waiting for its hello. */
export class Connection {
  private phase: Phase = "hello";
  private hello: Buffer = Buffer.alloc(0);
  private request: FixedBuffer | undefined;
  private reserved = 0;
  private peerPid = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly server: ConnectionServer,
    private readonly acceptedAt: number,
  ) {
    socket.once("close", () => {
      clearTimeout(this.timer);
      this.release();
    });
  }

  start(): void {
    this.helloDue();
    this.socket.on("data", (chunk: Buffer) => {
      try {
        this.receive(chunk);
      } catch (e) {
        this.drop(messageOf(e));
      }
    });
  }

  /**
   * The hello's time limit is the caller's, not the server's: a connection whose hello waits unread in its
   * receive queue (a server swamped by a burst reads hellos seconds after they were sent) gets the time again, up
   * to HELLO_PATIENCE_MS in all. The limit itself is generous (10 s): a launcher of a burst of 2,000 on 2 cores may
   * check the listener for seconds before it sends its hello, and one dropped runs its call itself.
   */
  private helloDue(): void {
    this.timer = setTimeout(() => {
      if ((bytesWaiting(this.socket) ?? 0) > 0 && performance.now() - this.acceptedAt < HELLO_PATIENCE_MS) this.helloDue();
      else this.drop("no hello in time");
    }, this.server.helloMs);
  }

  private receive(chunk: Buffer): void {
    if (this.phase === "hello") this.receiveHello(chunk);
    else if (this.phase === "request") this.receiveRequest(chunk);
    else throw new ProtocolError(this.phase === "judging" ? "data before the server's answer" : "data after the request");
  }

  private receiveHello(chunk: Buffer): void {
    this.hello = this.hello.length ? Buffer.concat([this.hello, chunk]) : chunk;
    const parsed = parseHello(this.hello);
    if (!parsed) {
      if (this.hello.length >= MAX_HELLO) throw new ProtocolError("the hello is too long");
      return;
    }
    if (this.hello.length > parsed.size) throw new ProtocolError("data before the server's answer");
    if (parsed.requestLength < 5) throw new ProtocolError(`a request of ${parsed.requestLength} bytes announced`);
    this.phase = "judging";
    clearTimeout(this.timer);
    void this.server.judge(this.socket, parsed.buildId, parsed.requestLength, this.acceptedAt).then(
      (pid) => {
        if (pid === undefined || this.socket.destroyed) return;
        this.peerPid = pid;
        if (!this.server.reserve(this.socket, parsed.requestLength)) return;
        this.reserved = parsed.requestLength;
        this.request = new FixedBuffer(parsed.requestLength);
        this.phase = "request";
        this.timer = setTimeout(() => this.drop("the request did not come in time"), this.server.requestMs);
      },
      (e: unknown) => this.drop(`admission failed: ${messageOf(e)}`),
    );
  }

  private receiveRequest(chunk: Buffer): void {
    const request = this.request!;
    if (!request.add(chunk)) throw new ProtocolError("more bytes than the hello announced");
    if (!request.complete) return;
    clearTimeout(this.timer);
    this.phase = "running";
    const decoded = decodeRequest(request.bytes);
    this.release();
    this.server.run(this.socket, decoded, this.peerPid, this.acceptedAt);
  }

  private release(): void {
    this.server.unreserve(this.reserved);
    this.reserved = 0;
  }

  private drop(why: string): void {
    this.server.dropped(why, this.phase === "hello" || this.phase === "judging");
    this.release();
    this.socket.destroy();
  }
}
