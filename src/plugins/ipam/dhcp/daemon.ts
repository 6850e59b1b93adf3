/**
 * `dhcp daemon`: the long-lived process that holds every container's DHCP lease. It listens on a unix socket
 * (`-socketpath`, default /run/cni/dhcp.sock, its directory created 0700; or the one socket systemd passes on
 * fd 3), answers the dhcp plugin's requests (protocol.ts) concurrently, keeps its leases in `-leasedir` and
 * takes them up again when restarted. A bad request gets an error answer and nothing else; SIGTERM or SIGINT
 * stops it cleanly, releasing nothing (the leases stay on disk for the next daemon). Loaded only for
 * `dhcp daemon`, never by the plugin.
 * @module
 */
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { CniError, ErrorCode } from "../../../spec/errors.js";
import type { JsonObject } from "../../../spec/json.js";
import { systemClock } from "./clock.js";
import { FlagError, HelpRequested, parseDaemonFlags, usage, type DaemonFlags } from "./flags.js";
import { LeaseStore } from "./lease-file.js";
import { takeListenFd } from "../../../sys/socket-activation.js";
import { LeaseManager, type LeaseWorld } from "./leases.js";
import {
  linkExists, LinkGoneError, NetnsGoneError, openDhcpSockets, sendFromDaemonNamespace, setLinkDown, socketsAvailable, tryLock,
} from "./netns-sockets.js";
import { decodeRequest, encodeError, encodeResult, readLine, type DaemonRequest } from "./protocol.js";

/** How long a connection may take to send its request. */
const REQUEST_READ_TIMEOUT_MS = 30_000;

/** A log line on stderr, stamped as Go's log package stamps them. */
function log(line: string): void {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, "0");
  process.stderr.write(`${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${line}\n`);
}

/** The error ADD reports when the container's interface cannot be used. */
function describeOpenError(e: unknown): CniError {
  if (e instanceof NetnsGoneError) return new CniError(ErrorCode.InvalidEnvironmentVariables, e.message);
  if (e instanceof LinkGoneError) return new CniError(ErrorCode.Internal, `error looking up ${JSON.stringify(e.ifName)}: ${e.message}`);
  return CniError.from(e);
}

/** Runs one request; every failure becomes a CNI error answer. */
async function handle(leases: LeaseManager, req: DaemonRequest): Promise<JsonObject> {
  switch (req.method) {
    case "ADD":
      return (await leases.add(req.args)) as unknown as JsonObject;
    case "CHECK":
      await leases.check(req.args);
      return {};
    case "DEL":
      await leases.del(req.args);
      return {};
    case "GC":
      return { released: await leases.gc(req.args) };
    case "STATUS":
      return { leases: leases.records().length };
  }
}

function serve(leases: LeaseManager, socket: net.Socket): void {
  socket.setTimeout(REQUEST_READ_TIMEOUT_MS, () => socket.destroy());
  socket.on("error", () => undefined); // a client that went away; nothing to answer
  void (async () => {
    let answer: string;
    try {
      const line = await readLine(socket, "the request");
      if (line.startsWith("CONNECT ")) {
        // Go's dhcp plugin opens net/rpc with an HTTP CONNECT: tell it, in an answer its client prints, where it is.
        log("a request in Go's net/rpc protocol (Go's dhcp plugin?): refused, this daemon speaks tscni's protocol only");
        socket.end("HTTP/1.0 501 this is tscni's dhcp daemon: Go's dhcp plugin cannot use it, run tscni's dhcp plugin\r\n\r\n");
        return;
      }
      const req = decodeRequest(line);
      socket.setTimeout(0); // the request is in; acquiring a lease may take up to -resendtimeout
      const started = Date.now();
      try {
        answer = encodeResult(await handle(leases, req));
        log(`${req.method} ${req.args.containerID}/${req.args.ifName}: ok (${Date.now() - started} ms)`);
      } catch (e) {
        const err = CniError.from(e);
        log(`${req.method} ${req.args.containerID}/${req.args.ifName}: error ${err.code}: ${err.msg}`);
        answer = encodeError(err);
      }
    } catch (e) {
      const err = CniError.from(e, ErrorCode.DecodingFailure);
      log(`a bad request: ${err.msg}`);
      answer = encodeError(err);
    }
    if (!socket.destroyed) socket.end(answer);
  })().catch((e: unknown) => {
    log(`a connection failed: ${(e as Error).message}`);
    socket.destroy();
  });
}

/** Whether something answers on the unix socket at `file`. */
function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createConnection(file);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** The listening socket: systemd's (LISTEN_FDS, fd 3), else a new one at `socketPath`. */
async function listen(server: net.Server, socketPath: string): Promise<{ created: boolean }> {
  const fd = takeListenFd();
  if (fd !== undefined) {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ fd }, () => resolve());
    });
    return { created: false };
  }
  mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  let existing;
  try {
    existing = lstatSync(socketPath);
  } catch { /* nothing there */ }
  if (existing) {
    if (!existing.isSocket()) throw new Error(`${socketPath} exists and is not a socket`);
    if (await answers(socketPath)) throw new Error(`another daemon is listening on ${socketPath}`);
    rmSync(socketPath, { force: true }); // left by a daemon that was killed
  }
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  chmodSync(socketPath, 0o600);
  return { created: true };
}

async function runDaemon(flags: DaemonFlags): Promise<void> {
  if (!(await socketsAvailable())) {
    throw new Error("the dhcp daemon needs the standalone (Bun) build of tscni: Node cannot open sockets in a container's network namespace");
  }
  if (flags.pidfile && !path.isAbsolute(flags.pidfile)) throw new Error(`Error writing pidfile ${JSON.stringify(flags.pidfile)}: path not absolute`);
  const socketPath = flags.hostprefix + flags.socketpath;
  const store = new LeaseStore(flags.hostprefix + flags.leasedir);
  await store.init();
  // One daemon per lease directory: the lock is held (through this open file) until the process ends.
  const lockFd = openSync(path.join(store.dir, "lock"), "a", 0o600);
  if (!(await tryLock(lockFd))) throw new Error(`another dhcp daemon uses the lease directory ${store.dir}`);
  if (flags.pidfile) writeFileSync(flags.pidfile, String(process.pid), { mode: 0o644 });

  const world: LeaseWorld = {
    clock: systemClock,
    settings: { timeoutMs: flags.timeout, resendMaxMs: flags.resendmax, resendTimeoutMs: flags.resendtimeout, broadcast: flags.broadcast },
    hostPrefix: flags.hostprefix,
    store,
    open: openDhcpSockets,
    linkExists,
    setLinkDown,
    sendFromDaemon: sendFromDaemonNamespace,
    isGone: (e) => e instanceof NetnsGoneError || e instanceof LinkGoneError,
    describeOpenError,
    log,
  };
  const leases = new LeaseManager(world);
  const { records, problems } = await store.loadAll();
  for (const p of problems) log(`ignoring a lease file: ${p}`);
  await leases.resume(records);

  const server = net.createServer((socket) => serve(leases, socket));
  const { created } = await listen(server, socketPath);
  log(`dhcp daemon listening on ${created ? socketPath : "the socket systemd passed"}; leases in ${store.dir} (${records.length} found)`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping (leases are kept in ${store.dir})`);
    server.close();
    void leases.shutdown().finally(() => {
      if (created) rmSync(socketPath, { force: true });
      if (flags.pidfile) rmSync(flags.pidfile, { force: true });
      closeSync(lockFd);
      process.exit(0);
    });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/** `dhcp daemon [flags]`. */
export async function main(args: readonly string[]): Promise<void> {
  let flags: DaemonFlags;
  try {
    flags = parseDaemonFlags(args);
  } catch (e) {
    if (e instanceof HelpRequested) {
      process.stderr.write(usage());
      return;
    }
    if (e instanceof FlagError) {
      process.stderr.write(`${e.message}\n${usage()}`);
      process.exitCode = 2;
      return;
    }
    throw e;
  }
  // One request gone wrong must not end the daemon: anything that escapes is logged, and it carries on.
  process.on("uncaughtException", (e) => log(`unexpected error (the daemon carries on): ${e.stack ?? e.message}`));
  process.on("unhandledRejection", (e) => log(`unexpected error (the daemon carries on): ${e instanceof Error ? e.stack ?? e.message : String(e)}`));
  try {
    await runDaemon(flags);
  } catch (e) {
    log((e as Error).message);
    process.exit(1);
  }
}
