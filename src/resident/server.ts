/**
 * The resident server (`cnitool daemon`): plugin calls served on a unix socket for the C launcher, so a call costs
 * no JavaScript start-up. For each connection: the hello (within a time limit), admission (admission.ts), a
 * request of the announced size (within a time limit, within the server's byte budget), the call run where it
 * must run (routing.ts), the reply. The server bounds what callers can make it hold (connections, request bytes,
 * time to send), leaves after a time without calls when asked to, and steps aside for a launcher of another build
 * (the binaries were replaced: the next call starts a server of the new build). A call's environment reaches the
 * plugin only through the call; namespaces are entered only in synchronous sections; a call that throws, gets bad
 * input or runs past its time limit fails alone.
 * @module
 */
import { closeSync } from "node:fs";
import net from "node:net";
import { readBuildId } from "#invoke/build-id.js";
import { setDefaultExec } from "#invoke/default-exec.js";
import {
  DEFAULT_SOCKET,
  encodeAccept,
  encodeRefusal,
  exitFrame,
  frame,
  MAX_REQUEST,
  type ResidentRequest,
  TAG_BACK,
  TAG_STDOUT,
} from "#invoke/resident-protocol.js";
import { messageOf } from "#spec/errors.js";
import { KeyedMutex } from "#sys/keyed-mutex.js";
import { type OwnIdentity, ownIdentity } from "#sys/peer.js";
import { tracedCall } from "#sys/phase-trace.js";
import { selfExecutable } from "#sys/self.js";
import { widenListenQueue } from "#sys/socket-queues.js";
import { currentUmask } from "#sys/umask.js";
import { admit } from "./admission.js";
import { Connection, type ConnectionServer } from "./connection.js";
import { DEFAULT_PLACES, Places } from "./places.js";
import { type CallContext, type CallOutcome, PluginModules, routeOf, runAsChild, runInProcess, ServerExec, type ServerProcess } from "./routing.js";
import { type RefusalReason, ServerMetrics } from "./server-metrics.js";
import {
  clearStartRecord,
  listenPrivately,
  prepareSocketDir,
  removeSocketFile,
  type SocketFile,
  socketFileIsCurrent,
  takeServerLock,
} from "./socket-dir.js";
import { WARM_UP_ROUNDS, warmUp } from "./warm-up.js";

export { DEFAULT_SOCKET } from "#invoke/resident-protocol.js";

/** What one server lets its callers make it hold. */
export interface ServerLimits {
  /** Connections open at once; more are told to run their call themselves. */
  connections: number;
  /** Bytes of announced requests not yet received, across connections. */
  pendingBytes: number;
  /** Time from accepting a connection to its whole hello. */
  helloMs: number;
  /** Time from the server's "Y" to the whole request. */
  requestMs: number;
  /** Calls running in the server's process at once in their first `longMs`; more wait their turn (places.ts). */
  running: number;
  /** Calls past their first `longMs` that may run besides (places.ts). */
  maxLong: number;
  /** How long a call waits for a place while none is given back, before it is handed back to its caller. */
  stallMs: number;
  /** After this long a running call gives its place back (places.ts). */
  longMs: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  connections: 4096,
  pendingBytes: 64 * 1024 * 1024,
  helloMs: 10_000,
  requestMs: 10_000,
  running: DEFAULT_PLACES.size,
  maxLong: DEFAULT_PLACES.maxLong,
  stallMs: DEFAULT_PLACES.stallMs,
  longMs: DEFAULT_PLACES.longMs,
};

/** How often the server looks whether its socket path still names its socket. */
const SOCKET_WATCH_MS = 1_000;

/** How a server is run. */
export interface ResidentServerOptions {
  socketPath?: string;
  /** A listening socket inherited from systemd (socket activation) instead of creating `socketPath`. */
  listenFd?: number;
  /** A descriptor of the socket's lock file, locked by the launcher that started this server. */
  lockFd?: number;
  /** The build the server belongs to (launchers of another build are refused); default: this program's. */
  buildId?: string;
  /** A call running longer than this fails with code 999 (its work may go on; default 5 minutes). */
  requestTimeoutMs?: number;
  /** Leave after this long without a call (0 or absent: never). */
  idleMs?: number;
  /** Started by a launcher (reported in the status). */
  autoStarted?: boolean;
  /** What the status says of where it runs, its self-repair and its memory cap (the command that runs it knows). */
  describe?: () => Pick<ServerStatus, "cgroup" | "selfRepair" | "memoryMax">;
  /** Rounds of the start-up warm-up (warm-up.ts; default WARM_UP_ROUNDS, 0: none). */
  warmUpRounds?: number;
  limits?: Partial<ServerLimits>;
  /** Diagnostics (default: stderr). */
  log?: (line: string) => void;
}

/** What `cnitool daemon status` prints. */
export interface ServerStatus {
  build: string;
  pid: number;
  autoStarted: boolean;
  /** Seconds without calls after which the server leaves (0: never). */
  idleSeconds: number;
  inFlight: number;
  /** Calls past their time limit whose work has not settled (their callers had an error). */
  overdue: number;
  /** Calls running past their first `longMs`, outside the places. */
  longRunning: number;
  served: number;
  warmedUp: boolean;
  /** Plugins loaded so far (each on its first call). */
  plugins: string[];
  connections: number;
  rssBytes: number;
  uptimeSeconds: number;
  /** Where it runs: its own cgroup (and its memory cap), as its log's first lines say. */
  cgroup?: string;
  /** Whether it puts back cached attachments' firewall rules by itself, and how often. */
  selfRepair?: string;
  /** The cap on its memory in bytes (its cgroup's limit), when one is set. */
  memoryMax?: number;
}

/** Connections the socket queues before the server accepts them (sys/socket-queues.ts); the kernel caps it at somaxconn. */
const LISTEN_QUEUE = 4096;

/** A server up for this long has started well: the launcher's record of failed starts is cleared. */
const STARTED_WELL_MS = 30_000;
/**
 * The warm-up waits until no real call has been under way for this long: a burst's calls come with short gaps
 * (a runtime between one pod's plugins), which the warm-up would otherwise fill with calls of its own.
 */
const WARM_UP_QUIET_MS = 250;

/** How long calls must have stopped before the server collects its garbage. */
const SETTLE_MS = 5_000;

/** A full garbage collection where the runtime offers one (Bun), else nothing. */
function collectGarbage(): void {
  (globalThis as { Bun?: { gc(force: boolean): void } }).Bun?.gc(true);
}

/** A running server. */
export class ResidentServer {
  readonly socketPath: string;
  /** Resolves with the reason once the server has left (idle, stepped aside, stopped, closed) and released its socket. */
  readonly left: Promise<string>;
  /** What `cnitool daemon metrics` prints; the server's own repairs count their runs here (countReload, countGcRun). */
  readonly metrics: ServerMetrics;

  private listener: net.Server;
  private readonly limits: ServerLimits;
  private readonly connectionServer: ConnectionServer;
  private readonly plugins = new PluginModules();
  private readonly queue = new KeyedMutex();
  private readonly places: Places;
  private overdueCalls = 0;
  private socketWatch: NodeJS.Timeout | undefined;
  private readonly process: ServerProcess;
  private readonly started = Date.now();
  private socketFile: SocketFile | undefined;
  private connections = 0;
  private pendingBytes = 0;
  private inFlightCalls = 0;
  private served = 0;
  /** When the last real call ended (performance.now()): the warm-up waits for a quiet spell after it. */
  private lastCallEndedAt = -Infinity;
  private warmedUp = false;
  private warming: Promise<void> = Promise.resolve();
  private leaving: string | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private startedWellTimer: NodeJS.Timeout | undefined;
  private drained: (() => void) | undefined;
  private drops = 0;
  private settleTimer: NodeJS.Timeout | undefined;
  private dropsLoggedAt = 0;
  private resolveLeft!: (reason: string) => void;

  private constructor(
    private readonly opts: ResidentServerOptions & { socketPath: string; buildId: string; requestTimeoutMs: number; log: (line: string) => void },
    private readonly own: OwnIdentity,
    private readonly lockFd: number,
  ) {
    this.socketPath = opts.socketPath;
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.connectionServer = this.connectionServerOf(this.limits);
    this.places = new Places({ size: this.limits.running, maxLong: this.limits.maxLong, stallMs: this.limits.stallMs, longMs: this.limits.longMs });
    this.process = {
      cwd: globalThis.process.cwd(),
      self: selfExecutable(),
      netlink: globalThis.process.env["TSCNI_NETLINK"] ?? "",
      umask: currentUmask(),
    };
    this.listener = this.newListener();
    this.left = new Promise((resolve) => (this.resolveLeft = resolve));
    this.metrics = new ServerMetrics({
      build: opts.buildId,
      inFlight: () => this.inFlightCalls,
      connections: () => this.connections,
      overdue: () => this.overdueCalls,
      longRunning: () => this.places.longRunning,
      waitingForPlace: () => this.places.waiters,
    });
  }

  /** Starts a server: its lock, its socket, then serving (while the warm-up runs). Rejects when another holds the socket. */
  static async start(options: ResidentServerOptions = {}): Promise<ResidentServer> {
    const socketPath = options.socketPath ?? DEFAULT_SOCKET;
    const log = options.log ?? ((line: string) => globalThis.process.stderr.write(`tscni daemon: ${line}\n`));
    if (options.listenFd === undefined) prepareSocketDir(socketPath);
    const lockFd = options.listenFd === undefined || options.lockFd !== undefined ? await takeServerLock(socketPath, options.lockFd) : -1;
    const server = new ResidentServer(
      { ...options, socketPath, log, buildId: options.buildId ?? readBuildId(), requestTimeoutMs: options.requestTimeoutMs ?? 5 * 60_000 },
      ownIdentity(),
      lockFd,
    );
    // Plugins that delegate to plugins of ours run them in this process too.
    setDefaultExec(new ServerExec());
    try {
      await server.listen();
    } catch (e) {
      if (lockFd >= 0) closeSync(lockFd);
      throw e;
    }
    return server;
  }

  private newListener(): net.Server {
    const listener = net.createServer({ allowHalfOpen: false }, (socket) => this.accept(socket));
    listener.on("error", (e) => this.opts.log(`listening socket: ${e.message}`));
    return listener;
  }

  /**
   * Looks every SOCKET_WATCH_MS whether the socket path still names this server's socket. Another process that
   * replaced it (any root process can unlink it) gets no caller (launchers verify the listener before they send),
   * but callers would then run in exec mode: a server that made its socket listens again on a new one (it holds
   * the lock: the path is its), one given by systemd leaves.
   */
  private watchSocket(): void {
    this.socketWatch = setInterval(() => {
      if (this.leaving !== undefined) return;
      const file = this.socketFile;
      if (!file) {
        if (this.opts.listenFd !== undefined && !socketFileIsCurrent(undefined, this.socketPath)) {
          void this.leave(`${this.socketPath} is no longer a socket (replaced or removed): leaving`);
        }
        return;
      }
      if (socketFileIsCurrent(file, this.socketPath)) return;
      this.opts.log(`${this.socketPath} no longer names this server's socket (replaced or removed): listening on a new one`);
      const old = this.listener;
      old.close();
      this.listener = this.newListener();
      listenPrivately(this.listener, this.socketPath).then(
        (made) => {
          this.socketFile = made;
          return widenListenQueue(this.listener, LISTEN_QUEUE);
        },
        (e: Error) => void this.leave(`cannot listen again on ${this.socketPath}: ${e.message}`),
      );
    }, SOCKET_WATCH_MS);
    this.socketWatch.unref();
  }

  private async listen(): Promise<void> {
    if (this.opts.listenFd !== undefined) {
      await new Promise<void>((resolve, reject) => {
        this.listener.once("error", reject);
        this.listener.listen({ fd: this.opts.listenFd }, resolve);
      });
    } else {
      this.socketFile = await listenPrivately(this.listener, this.socketPath);
    }
    if (!(await widenListenQueue(this.listener, LISTEN_QUEUE)) && (globalThis.process.versions as { bun?: string }).bun)
      this.opts.log(`the queue of connections keeps Bun's default (512): a burst larger than that runs its calls itself`);
    this.watchSocket();
    this.startedWellTimer = setTimeout(() => this.lockFd >= 0 && clearStartRecord(this.lockFd), STARTED_WELL_MS).unref();
    this.armIdle();
    // Through the socket it listens on; one handed over by systemd has no address here (Bun), but its unit's
    // command names it (--socket, as `cnitool install --resident` writes it).
    const bound = this.listener.address();
    const address = typeof bound === "string" && bound !== "" ? bound : this.socketPath;
    this.warming = warmUp({
      socketPath: address,
      buildId: this.opts.buildId,
      rounds: this.opts.warmUpRounds ?? WARM_UP_ROUNDS,
      env: this.process.netlink ? { TSCNI_NETLINK: this.process.netlink } : {},
      stopped: () => this.leaving !== undefined,
      busy: () => this.inFlightCalls > 0 || performance.now() - this.lastCallEndedAt < WARM_UP_QUIET_MS,
      log: this.opts.log,
    }).then(() => {
      this.warmedUp = true;
      if (this.inFlightCalls === 0) collectGarbage();
    });
  }

  /** Calls being served now. */
  get inFlight(): number {
    return this.inFlightCalls;
  }

  status(): ServerStatus {
    return {
      build: this.opts.buildId,
      pid: globalThis.process.pid,
      autoStarted: this.opts.autoStarted ?? false,
      idleSeconds: Math.round((this.opts.idleMs ?? 0) / 1000),
      inFlight: this.inFlightCalls,
      overdue: this.overdueCalls,
      longRunning: this.places.longRunning,
      served: this.served,
      warmedUp: this.warmedUp,
      plugins: this.plugins.names,
      connections: this.connections,
      rssBytes: globalThis.process.memoryUsage.rss(),
      uptimeSeconds: Math.round((Date.now() - this.started) / 1000),
      ...this.opts.describe?.(),
    };
  }

  /** Stops accepting, lets the calls under way finish, releases the socket and the lock. */
  close(): Promise<string> {
    void this.leave("closed");
    return this.left;
  }

  /** Leaves (once): no new connections, the socket file removed at once, then the calls under way finish. */
  private async leave(reason: string): Promise<void> {
    if (this.leaving !== undefined) return;
    this.leaving = reason;
    if (this.drops > 0) this.opts.log(`${this.drops} connection(s) dropped since the last report`);
    clearTimeout(this.idleTimer);
    clearTimeout(this.settleTimer);
    clearTimeout(this.startedWellTimer);
    clearInterval(this.socketWatch);
    const closed = new Promise<void>((resolve) => this.listener.close(() => resolve()));
    if (this.socketFile) removeSocketFile(this.socketFile);
    await this.warming;
    await closed;
    if (this.inFlightCalls > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    if (this.lockFd >= 0) {
      if (reason !== "closed" || Date.now() - this.started >= STARTED_WELL_MS) clearStartRecord(this.lockFd);
      closeSync(this.lockFd);
    }
    this.resolveLeft(reason);
  }

  /** Answers a caller that is not served (counted by `reason`), and closes the connection once the answer is out. */
  private refuse(socket: net.Socket, reason: RefusalReason, words: string): void {
    this.metrics.refused(reason);
    socket.end(encodeRefusal(words), () => socket.destroy());
  }

  /** Logs why connections are dropped: the first at once, then at most a line per minute with the count (a flood must not fill the log). */
  private noteDrop(why: string): void {
    this.drops++;
    const now = Date.now();
    if (now - this.dropsLoggedAt < 60_000 && this.dropsLoggedAt > 0) return;
    this.opts.log(`${this.drops} connection(s) dropped since the last report; the last: ${why}`);
    this.drops = 0;
    this.dropsLoggedAt = now;
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    clearTimeout(this.settleTimer);
    // Once calls have stopped for a moment, the memory a burst took is given back (a full collection: Bun keeps
    // freed pages otherwise, and an idle server's footprint is part of the node's bill).
    this.settleTimer = setTimeout(() => {
      if (this.inFlightCalls === 0) collectGarbage();
    }, SETTLE_MS).unref();
    const idleMs = this.opts.idleMs ?? 0;
    if (idleMs <= 0 || this.leaving !== undefined) return;
    this.idleTimer = setTimeout(() => {
      if (this.inFlightCalls === 0) void this.leave(`no call for ${Math.round(idleMs / 1000)} s`);
    }, idleMs);
  }

  /** One connection, from hello to reply (see the module comment; connection.ts carries it to its request). */
  private accept(socket: net.Socket): void {
    const acceptedAt = performance.now();
    this.connections++;
    socket.once("close", () => this.connections--);
    socket.on("error", () => undefined);
    if (this.connections > this.limits.connections || this.leaving !== undefined) {
      if (this.leaving !== undefined) this.refuse(socket, "leaving", "the server is leaving");
      else this.refuse(socket, "busy", `the server is busy (${this.connections - 1} connections)`);
      return;
    }
    new Connection(socket, this.connectionServer, acceptedAt).start();
  }

  /** What connections ask of this server (connection.ts). */
  private connectionServerOf(limits: ServerLimits): ConnectionServer {
    return {
      helloMs: limits.helloMs,
      requestMs: limits.requestMs,
      judge: (socket, buildId, requestLength, acceptedAt) => this.judge(socket, buildId, requestLength, acceptedAt),
      reserve: (socket, bytes) => {
        if (bytes > this.limits.pendingBytes - this.pendingBytes) {
          this.refuse(socket, "busy", `the server is busy (${this.pendingBytes} bytes of requests pending)`);
          return false;
        }
        this.pendingBytes += bytes;
        socket.write(encodeAccept(this.opts.requestTimeoutMs));
        return true;
      },
      unreserve: (bytes) => {
        this.pendingBytes -= bytes;
      },
      // The warm-up's calls come from this process and are not counted.
      run: (socket, request, peerPid, acceptedAt) => void this.run(socket, request, peerPid !== globalThis.process.pid, acceptedAt),
      dropped: (why, beforeAdmission) => {
        if (beforeAdmission) this.metrics.refused("dropped");
        this.noteDrop(why);
      },
    };
  }

  /** Admission (admission.ts) and the request's size; answers a refused caller. Resolves to the served caller's pid. */
  private async judge(socket: net.Socket, clientBuild: string, requestLength: number, acceptedAt: number): Promise<number | undefined> {
    const verdict = await admit(socket, clientBuild, this.opts.buildId, this.own, acceptedAt);
    if (!verdict.admitted) {
      this.refuse(socket, verdict.kind, verdict.reason);
      if (verdict.otherBuild !== undefined)
        void this.leave(`a launcher of build "${verdict.otherBuild}" called: stepping aside for a server of its build`);
      return undefined;
    }
    if (requestLength > MAX_REQUEST) {
      this.refuse(socket, "too_large", `a request of ${requestLength} bytes is larger than the server takes (${MAX_REQUEST})`);
      return undefined;
    }
    if (this.leaving !== undefined) {
      this.refuse(socket, "leaving", "the server is leaving");
      return undefined;
    }
    return verdict.pid;
  }

  /** Runs an admitted request and ends the connection with its exit status; a counted one is measured from `acceptedAt`. */
  private async run(socket: net.Socket, req: ResidentRequest, counted: boolean, acceptedAt: number): Promise<void> {
    const write = (b: Buffer) => {
      if (!socket.destroyed) socket.write(b);
    };
    const route = routeOf(req, this.process);
    if (route === "metrics") {
      write(frame(TAG_STDOUT, Buffer.from(this.metrics.render())));
      socket.end(exitFrame(0));
      return;
    }
    if (route === "health" || route === "stop") {
      write(frame(TAG_STDOUT, Buffer.from(JSON.stringify(this.status()) + "\n")));
      socket.end(exitFrame(0));
      if (route === "stop") void this.leave("asked to stop (cnitool daemon stop)");
      return;
    }
    if (counted) {
      this.inFlightCalls++;
      clearTimeout(this.idleTimer);
      clearTimeout(this.settleTimer);
    }
    let outcome: CallOutcome | undefined;
    try {
      const ctx: CallContext = {
        req,
        write,
        timeoutMs: this.opts.requestTimeoutMs,
        queue: this.queue,
        places: this.places,
        overdue: (delta) => (this.overdueCalls += delta),
      };
      const call = {
        program: req.program,
        command: req.env["CNI_COMMAND"] ?? "",
        containerID: req.env["CNI_CONTAINERID"] ?? "",
        ifName: req.env["CNI_IFNAME"] ?? "",
      };
      outcome = await tracedCall({ ...call, where: route === "child" ? "server, as a child process" : "server" }, () =>
        route === "child" ? runAsChild(ctx, this.process.self!) : runInProcess(ctx, this.plugins),
      );
      if (outcome.handedBack) {
        this.metrics.refused("no_place");
        if (!socket.destroyed) socket.end(frame(TAG_BACK));
      } else if (!socket.destroyed) {
        socket.end(exitFrame(outcome.status));
      }
    } catch (e) {
      this.opts.log(`a call failed outside its plugin: ${(e instanceof Error && e.stack) || messageOf(e)}`);
      socket.destroy();
    } finally {
      if (counted && !outcome?.handedBack) {
        this.served++;
        this.metrics.callServed({ program: req.program, command: req.env["CNI_COMMAND"], seconds: (performance.now() - acceptedAt) / 1000, outcome });
      }
      if (counted) this.lastCallEndedAt = performance.now();
      if (counted && --this.inFlightCalls === 0) {
        this.drained?.();
        this.armIdle();
      }
    }
  }
}
