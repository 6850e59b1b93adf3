/**
 * `dhcp daemon`: the long-lived process that holds every container's DHCP lease. It listens on a unix socket
 * (`-socketpath`, default /run/cni/dhcp.sock: made 0600 in a directory that must be root's and writable by root
 * alone, 0700 when made here; or the one socket systemd passes on fd 3), answers the dhcp plugin's requests
 * (protocol.ts) concurrently, keeps its leases in `-leasedir` and takes them up again when restarted. A caller is
 * served only under sys/peer.ts's rule for it (CALLER_RULE: root in the daemon's user namespace, with at least its
 * capabilities and no stricter confinement, from any mount or network namespace, as Go's daemon serves a
 * DaemonSet pod's callers), checked before any of its request is read; anyone else gets an error answer naming
 * why. The namespace a caller names is opened as the caller sees it (sys/caller-root.ts, through the caller's
 * root), so no caller reaches a namespace it could not open itself, and a lease keeps acting in the namespace its
 * ADD opened (leases.ts). A bad request gets an error answer
 * and nothing else; SIGTERM or SIGINT stops it cleanly, releasing nothing (the leases stay on disk for the next
 * daemon). Loaded only for `dhcp daemon`, never by the plugin.
 * @module
 */
import { closeSync, lstatSync, mkdirSync, openSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import type { JsonObject } from "#go-json/json.js";
import { LinkGoneError, linkExists, NetnsGoneError, OwnNetnsError, setLinkDown, socketsAvailable } from "#net/netlink/netns-sockets.js";
import { CniError, ErrorCode, failure, invalidEnv, messageOf, reworded, tryAgainLater } from "#spec/errors.js";
import { type CallerFile, CallerPathError, nsfsDevice, openProcessRoot, openRootDirectory, resolveInRoot } from "#sys/caller-root.js";
import { tryFlockFd } from "#sys/flock.js";
import { admitPeerWith, type OwnIdentity, ownIdentity, type PeerRule, socketFd } from "#sys/peer.js";
import { takeListenFd } from "#sys/socket-activation.js";
import { systemClock } from "./clock.js";
import { type DaemonFlags, FlagError, HelpRequested, parseDaemonFlags, usage } from "./flags.js";
import { LeaseStore } from "./lease-file.js";
import { LeaseManager, type LeaseWorld } from "./leases.js";
import { openDhcpSockets } from "./netns-sockets.js";
import { LinkLocalError, openDhcp6Sockets, removeAddress6 } from "./netns-sockets6.js";
import { type DaemonRequest, decodeRequest, encodeError, encodeResult, readLine } from "./protocol.js";

/** How long a connection may take to send its request. */
const REQUEST_READ_TIMEOUT_MS = 30_000;
/** How long a refused caller's connection stays open for it to read the refusal. */
const REFUSED_LINGER_MS = 5000;

/** A log line on stderr, stamped as Go's log package stamps them. */
function log(line: string): void {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, "0");
  process.stderr.write(
    `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${line}\n`,
  );
}

/** The error ADD reports when the container's interface cannot be used. */
function describeOpenError(e: unknown): CniError {
  if (e instanceof OwnNetnsError) return invalidEnv(`network namespace ${e.netns} is the dhcp daemon's own: it acts only in containers' namespaces`);
  if (e instanceof NetnsGoneError) return invalidEnv(e.message);
  if (e instanceof LinkGoneError) return failure(`error looking up ${JSON.stringify(e.ifName)}: ${e.message}`);
  if (e instanceof LinkLocalError) return tryAgainLater(`no DHCPv6 lease: ${e.message}`);
  return CniError.from(e);
}

/** Runs one request on the leases (its answer); a failure is thrown, as the CNI error the caller gets. */
export async function handleRequest(leases: LeaseManager, req: DaemonRequest): Promise<JsonObject> {
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

/**
 * Who the daemon serves: root of its user namespace with at least its capabilities, not more confined than it is
 * (seccomp, no_new_privs; LSM labels differ between a pod and the host by design), from any mount, network or pid
 * namespace whose process this daemon's /proc shows (the namespace it names is resolved in its own root).
 */
export const CALLER_RULE: PeerRule = { namespaces: ["user"], capabilities: "at-least", confinement: "no-stricter" };

/** The caller of `socket` with its root directory held open, or why it is not served. */
async function admitCaller(socket: net.Socket, own: OwnIdentity, acceptedAt: number): Promise<{ root: number } | { refusal: string }> {
  const fd = socketFd(socket);
  if (fd === undefined) return { refusal: "the connection's descriptor cannot be read" };
  const verdict = await admitPeerWith(fd, own, CALLER_RULE, acceptedAt, openProcessRoot);
  return "refusal" in verdict ? { refusal: verdict.refusal } : { root: verdict.value };
}

/** The namespace a request names, opened as its caller sees it (the request's `view`); a CNI error when it cannot be. */
async function viewOfNetns(root: number, netns: string): Promise<CallerFile | undefined> {
  if (!netns) return undefined;
  if (!netns.startsWith("/")) throw invalidEnv(`the netns path ${JSON.stringify(netns)} is not absolute`);
  let view: CallerFile;
  try {
    view = await resolveInRoot(root, netns);
  } catch (e) {
    if (e instanceof CallerPathError && e.notFound) throw invalidEnv(`network namespace ${netns} does not exist (as the caller sees it)`);
    throw failure(`cannot open the network namespace ${netns} as the caller sees it: ${messageOf(e)}`);
  }
  // A namespace file is on nsfs, as this process's own namespace files are.
  if (view.dev !== nsfsDevice()) {
    view.close();
    throw invalidEnv(`${netns} is not a network namespace (as the caller sees it)`);
  }
  return view;
}

/**
 * The namespace of a lease taken up from disk, whose caller is gone: `netns` resolved as in a caller's root, in
 * -hostprefix (else /), the root its callers are declared to share with the daemon, and taken only when it is
 * the namespace the lease was acquired in (the record's inode; nsfs numbers live namespaces uniquely). A caller
 * of another root (a pod's private /run/netns) may have named something else there: the inode check refuses
 * that, so no restart makes a lease act in a namespace its ADD did not open. A record without the inode (written
 * before it was kept) cannot be checked and is refused. What remains: a namespace number is given again once its
 * namespace has died, so a lease whose namespace died while the daemon was down is taken up in a namespace of
 * that number under that name, if the root now has one.
 */
async function reopenNetns(hostPrefix: string, netns: string, inode: number | undefined): Promise<CallerFile> {
  if (inode === undefined) throw new Error(`its file does not say which namespace ${netns} was when it was acquired (written by an older daemon)`);
  if (!netns.startsWith("/")) throw new Error(`the netns path ${JSON.stringify(netns)} is not absolute`);
  const root = openRootDirectory(hostPrefix || "/");
  let view: CallerFile;
  try {
    view = await resolveInRoot(root, netns);
  } catch (e) {
    throw e instanceof CallerPathError && e.notFound ? new Error(`network namespace ${netns} does not exist`) : e;
  } finally {
    closeSync(root);
  }
  if (view.dev !== nsfsDevice() || view.ino !== inode) {
    view.close();
    throw new Error(`${netns} is not the network namespace the lease was acquired in any more`);
  }
  return view;
}

/**
 * One connection: the peer is judged first, on a socket that has read nothing yet (the server pauses new
 * connections); a refused peer gets an error answer and the connection is closed. Then its one request is read,
 * run and answered.
 */
function serve(leases: LeaseManager, own: OwnIdentity, socket: net.Socket): void {
  const acceptedAt = performance.now();
  socket.setTimeout(REQUEST_READ_TIMEOUT_MS, () => socket.destroy());
  socket.on("error", () => undefined); // a client that went away; nothing to answer
  void (async () => {
    const caller = await admitCaller(socket, own, acceptedAt);
    if ("refusal" in caller) {
      const refusal = caller.refusal;
      log(`refused a caller: ${refusal}`);
      // The answer, then the connection closed when the caller closes its end (at most REFUSED_LINGER_MS later).
      // Whatever it sent is discarded, never parsed: closing with it unread would reset the connection under the
      // caller before it reads the answer.
      socket.setTimeout(0);
      const linger = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
      socket.once("close", () => clearTimeout(linger));
      socket.on("data", () => undefined);
      socket.resume();
      socket.end(encodeError(failure(`the dhcp daemon serves only root callers of its user namespace, with its capabilities: ${refusal}`)));
      return;
    }
    let answer: string;
    let view: CallerFile | undefined;
    try {
      const reading = readLine(socket, "the request");
      socket.resume();
      const line = await reading;
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
        // ADD and CHECK act in the namespace named; DEL and GC on the leases held, wherever their namespaces went.
        if (req.method === "ADD" || req.method === "CHECK") view = await viewOfNetns(caller.root, req.args.netns);
        answer = encodeResult(await handleRequest(leases, { ...req, args: { ...req.args, ...(view ? { view } : {}) } }));
        log(`${req.method} ${req.args.containerID}/${req.args.ifName}: ok (${Date.now() - started} ms)`);
      } catch (e) {
        let err = CniError.from(e);
        // The caller named its namespace by its path, not by the descriptor this daemon opened it through.
        if (view) err = reworded(err, (text) => view!.inCallerTerms(text));
        log(`${req.method} ${req.args.containerID}/${req.args.ifName}: error ${err.code}: ${err.msg}`);
        answer = encodeError(err);
      }
    } catch (e) {
      const err = CniError.from(e, ErrorCode.DecodingFailure);
      log(`a bad request: ${err.msg}`);
      answer = encodeError(err);
    } finally {
      view?.close();
      closeSync(caller.root);
    }
    if (!socket.destroyed) socket.end(answer);
  })().catch((e: unknown) => {
    log(`a connection failed: ${messageOf(e)}`);
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

/** A file mode in octal, as chmod takes it. */
const modeText = (mode: number): string => `0${(mode & 0o7777).toString(8)}`;

/** Runs `make` with the process umask set to `mask`, restored after. */
function withUmask<T>(mask: number, make: () => T): T {
  const previous = process.umask(mask);
  try {
    return make();
  } finally {
    process.umask(previous);
  }
}

/**
 * The socket's directory, made 0700 when missing. It must be a directory (not a symbolic link to one), owned by
 * root, writable by no one else: whoever could write there could replace the socket. Throws naming what is wrong.
 */
function checkSocketDir(dir: string): void {
  try {
    withUmask(0o077, () => mkdirSync(dir, { recursive: true, mode: 0o700 }));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e; // (a dangling symbolic link: said below)
  }
  const st = lstatSync(dir);
  const refuse = (what: string) =>
    new Error(`the socket directory ${dir} ${what}: refusing to listen there (it must be a directory owned by root, writable by root alone)`);
  if (st.isSymbolicLink()) throw refuse("is a symbolic link");
  if (!st.isDirectory()) throw refuse("is not a directory");
  if (st.uid !== 0) throw refuse(`is owned by uid ${st.uid}`);
  if (st.mode & 0o022) throw refuse(`is writable by its group or others (mode ${modeText(st.mode)})`);
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
  checkSocketDir(path.dirname(socketPath));
  let existing;
  try {
    existing = lstatSync(socketPath);
  } catch {
    /* nothing there */
  }
  if (existing) {
    if (!existing.isSocket()) throw new Error(`${socketPath} exists and is not a socket`);
    if (await answers(socketPath)) throw new Error(`another daemon is listening on ${socketPath}`);
    rmSync(socketPath, { force: true }); // left by a daemon that was killed
  }
  // The socket is born 0600: listen() binds before it returns (checked below), under a umask that leaves the
  // owner read and write only. Nothing changes its mode afterwards.
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    withUmask(0o177, () => server.listen(socketPath, () => resolve()));
  });
  const st = lstatSync(socketPath);
  if (!st.isSocket() || st.uid !== 0 || (st.mode & 0o777) !== 0o600) {
    server.close();
    throw new Error(
      `the socket ${socketPath} came out ${st.isSocket() ? `with mode ${modeText(st.mode)}, uid ${st.uid}` : "as something else than a socket"}, not root's 0600: refusing to serve on it`,
    );
  }
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
  const lockPath = path.join(store.dir, "lock");
  const lockFd = openSync(lockPath, "a", 0o600);
  if (!(await tryFlockFd(lockFd, lockPath))) throw new Error(`another dhcp daemon uses the lease directory ${store.dir}`);
  if (flags.pidfile) writeFileSync(flags.pidfile, String(process.pid), { mode: 0o644 });

  const world: LeaseWorld = {
    clock: systemClock,
    settings: { timeoutMs: flags.timeout, resendMaxMs: flags.resendmax, resendTimeoutMs: flags.resendtimeout, broadcast: flags.broadcast },
    reopen: (netns, inode) => reopenNetns(flags.hostprefix, netns, inode),
    store,
    open: openDhcpSockets,
    open6: openDhcp6Sockets,
    linkExists,
    setLinkDown,
    removeAddress6,
    isGone: (e) => e instanceof NetnsGoneError || e instanceof LinkGoneError || e instanceof OwnNetnsError,
    describeOpenError,
    log,
  };
  const leases = new LeaseManager(world);
  const { records, problems } = await store.loadAll();
  for (const p of problems) log(`ignoring a lease file: ${p}`);
  await leases.resume(records);

  // Callers' namespaces are opened through their own roots; -hostprefix is for the leases taken up from disk, whose
  // callers are gone (their paths are read under the prefix, as Go's daemon reads every path).
  const own = ownIdentity();
  const server = net.createServer({ pauseOnConnect: true }, (socket) => serve(leases, own, socket));
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
  process.on("unhandledRejection", (e) =>
    log(`unexpected error (the daemon carries on): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`),
  );
  try {
    await runDaemon(flags);
  } catch (e) {
    log(messageOf(e));
    process.exit(1);
  }
}
