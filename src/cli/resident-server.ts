/**
 * The resident server (`cnitool daemon`): every plugin loaded once, plugin calls served on a unix socket for the
 * C launcher (protocol: resident-protocol.ts), so a call costs no JavaScript start-up. Its rules:
 * - it serves only peers with uid 0 (SO_PEERCRED) in its own network and mount namespaces, and only launchers
 *   of its own build; anyone else is told to run the plugin itself (the launcher then execs it, as without a
 *   server), before anything of the call has been sent;
 * - a request's environment reaches the plugin only through its CmdArgs (the plugins read no process.env or
 *   cwd on a request's path; the tools they run, ip and iptables, are found on the server's PATH completed with
 *   the system directories, as a tool's location is the host's, not the caller's), namespaces are entered only
 *   in synchronous sections, and a plugin that throws, gets bad input or runs past the request timeout fails
 *   that request alone;
 * - calls of one container and interface run one after the other, so a DEL that follows an ADD whose caller was
 *   killed (the ADD goes on here) waits for that ADD instead of racing it, as it would in exec mode, where the
 *   ADD died with its process. Programs the server execs itself are marked (TSCNI_RESIDENT_NESTED) and never
 *   wait in that queue, so a delegation that comes back through the socket cannot deadlock;
 * - relative paths resolve against the caller's working directory, as in exec mode: a call that carries one
 *   (CNI_NETNS, CNI_PATH, or a path-like config value such as a relative dataDir) from a launcher in another
 *   directory than the server's runs as a child process of the program in the caller's directory; so does a
 *   call whose TSCNI_NETLINK differs from the server's;
 * - one server per socket (a lock file beside it); the socket's directory is 0700 and the socket 0600; SIGTERM
 *   lets the calls under way finish, then exits. It can take its listening socket from systemd (LISTEN_FDS);
 * - once listening it warms up (warmUp): host-local calls through its own socket on a private temporary store, one
 *   at a time between the real calls, so that those find the code compiled by the JIT rather than interpreted.
 * @module
 */
import { spawn } from "node:child_process";
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { tryFlockFd } from "../sys/flock.js";
import { peerCredentials, sharesNamespace } from "../sys/peer.js";
import type { Env } from "../invoke/args.js";
import type { ExecOptions, PluginExec } from "../invoke/exec.js";
import { setDefaultExec } from "../invoke/default-exec.js";
import { KeyedMutex } from "../sys/keyed-mutex.js";
import { CniError, ErrorCode } from "../spec/errors.js";
import { runPlugin, type PluginDefinition } from "../skel/skel.js";
import { MulticallExec } from "./inprocess.js";
import {
  ACCEPT, ByteReader, CallerLeftError, DEFAULT_SOCKET, encodeRefusal, exitFrame, frame, readHello, readRequest, TAG_STDERR, TAG_STDOUT, type ResidentRequest,
} from "./resident-protocol.js";
import { PLUGINS } from "./registry.js";
import { selfExecutable } from "./self.js";

export { DEFAULT_SOCKET } from "./resident-protocol.js";

/** How a server is run. */
export interface ResidentServerOptions {
  socketPath?: string;
  /** A listening socket inherited from systemd (socket activation) instead of creating `socketPath`. */
  listenFd?: number;
  /** The build the server belongs to (launchers of another build are refused); default: dist/build-id. */
  buildId?: string;
  /** A call running longer than this fails with code 999 (its work may go on; default 5 minutes). */
  requestTimeoutMs?: number;
  /** Diagnostics (default: stderr). */
  log?: (line: string) => void;
  /** Rounds of the start-up warm-up (see warmUp; default WARM_UP_ROUNDS, 0: none). */
  warmUpRounds?: number;
}

/** A running server. */
export interface ResidentServer {
  socketPath: string;
  /** Calls being served now. */
  readonly inFlight: number;
  /** Stops accepting, lets the calls under way finish, releases the socket. */
  close(): Promise<void>;
}

// The standalone build compiles the build ID in (bun build --define), so a copied program keeps it.
declare const TSCNI_BUILD_ID: string | undefined;

/** This program's build ID: compiled in, or (the Node build) the file scripts/link-bins.mjs writes beside it. */
export function readBuildId(): string {
  if (typeof TSCNI_BUILD_ID === "string") return TSCNI_BUILD_ID;
  const self = selfExecutable();
  if (!self) return "";
  try {
    // Under Node `self` is dist/cli/main.js; scripts/link-bins.mjs writes dist/build-id.
    return readFileSync(path.join(path.dirname(self), "..", "build-id"), "utf8").trim();
  } catch {
    return "";
  }
}

/** Why a peer is not served, or the served peer's pid. */
async function admission(socket: net.Socket, clientBuild: string, buildId: string): Promise<{ refusal: string } | { pid: number }> {
  if (!buildId || clientBuild !== buildId) return { refusal: `the server is build "${buildId}", the launcher "${clientBuild}"` };
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  const peer = fd === undefined ? undefined : await peerCredentials(fd);
  if (!peer) return { refusal: "the peer's credentials cannot be read" };
  if (peer.uid !== 0) return { refusal: `uid ${peer.uid} is not served (root only)` };
  if (!sharesNamespace(peer.pid, "net")) return { refusal: "the caller is in another network namespace" };
  if (!sharesNamespace(peer.pid, "mnt")) return { refusal: "the caller is in another mount namespace" };
  return { pid: peer.pid };
}

/** Loads every plugin module once (a call then costs only its own work). */
async function loadPlugins(): Promise<Map<string, PluginDefinition>> {
  const loaded = new Map<string, PluginDefinition>();
  for (const [name, entry] of Object.entries(PLUGINS)) {
    const mod = (await entry.load()) as { plugin?: PluginDefinition };
    if (mod.plugin) loaded.set(name, mod.plugin);
  }
  return loaded;
}

/** Set in the environment of everything the server execs: such a call, served here again, skips the queue. */
export const NESTED_MARK = "TSCNI_RESIDENT_NESTED";

/** The server's exec for delegations: in-process for its own plugins, and marked as nested when exec'd. */
class ServerExec implements PluginExec {
  private readonly inner = new MulticallExec();
  execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options?: ExecOptions): Promise<Buffer> {
    return this.inner.execPlugin(pluginPath, stdin, { ...env, [NESTED_MARK]: "1" }, options);
  }
}

/** The queue a call waits in: one per container and interface, none for nested or container-less calls. */
function queueKey(env: Readonly<Record<string, string>>): string | undefined {
  const command = env["CNI_COMMAND"];
  if (env[NESTED_MARK] || !env["CNI_CONTAINERID"] || !(command === "ADD" || command === "DEL" || command === "CHECK")) return undefined;
  return `${env["CNI_CONTAINERID"]}\0${env["CNI_IFNAME"] ?? ""}`;
}

/** The program name of the health check (`cnitool daemon status`): answered with the build and the load. */
export const HEALTH_PROGRAM = "tscni-health";

/**
 * Config keys whose string values are file system paths (dataDir, resolvConf, daemonSocketPath, subnetFile, ...):
 * the ending, as a sysctl key such as `net.ipv4.conf.IFNAME.rp_filter` is no path.
 */
const PATH_KEY = /(dir|path|file|conf|socket)$/i;

/** Whether a call names a relative path, which must resolve against its caller's working directory. */
function carriesRelativePath(req: ResidentRequest): boolean {
  const relative = (p: string) => p !== "" && !p.startsWith("/");
  if (relative(req.env["CNI_NETNS"] ?? "") || (req.env["CNI_PATH"] ?? "").split(":").some(relative)) return true;
  let config: unknown;
  try {
    config = JSON.parse(req.stdin.toString("utf8"));
  } catch {
    return false; // the plugin reads no path from a config it cannot parse
  }
  const walk = (v: unknown, key: string, depth: number): boolean => {
    if (depth > 32) return false;
    if (typeof v === "string") return PATH_KEY.test(key) && relative(v);
    if (Array.isArray(v)) return v.some((x) => walk(x, key, depth + 1));
    if (v !== null && typeof v === "object") return Object.entries(v).some(([k, x]) => walk(x, k, depth + 1));
    return false;
  };
  return walk(config, "", 0);
}

/** Runs a call as a child process of the program in the caller's directory; its output is relayed as it comes. */
function runAsChild(self: string, req: ResidentRequest, timeoutMs: number, write: (b: Buffer) => void): Promise<number> {
  return new Promise((resolve) => {
    // `tscni <program> args...` (main.ts), with the server out of the way so the call is not sent back here.
    const child = spawn(self, [req.program, ...req.args], {
      argv0: "tscni", cwd: req.cwd, env: { ...req.env, TSCNI_RESIDENT_SOCKET: "" }, stdio: ["pipe", "pipe", "pipe"], timeout: timeoutMs, killSignal: "SIGKILL",
    });
    child.stdout.on("data", (b: Buffer) => write(frame(TAG_STDOUT, b)));
    child.stderr.on("data", (b: Buffer) => write(frame(TAG_STDERR, b)));
    child.stdin.on("error", () => undefined);
    child.on("error", (e) => {
      write(frame(TAG_STDOUT, Buffer.from(new CniError(ErrorCode.Internal, `tscni resident server: cannot run ${req.program} in ${req.cwd}: ${e.message}`).print())));
      resolve(1);
    });
    child.on("close", (code, signal) => resolve(code ?? (signal ? 128 + 9 : 1)));
    child.stdin.end(req.stdin);
  });
}

/** Runs one call (in this process, or as a child where it must: see the module comment), writing its reply frames; resolves to its exit status. */
async function serveCall(plugins: Map<string, PluginDefinition>, queue: KeyedMutex, req: ResidentRequest, timeoutMs: number,
  write: (b: Buffer) => void, health: () => string, own: { cwd: string; self: string | undefined; netlink: string }): Promise<number> {
  if (req.program === HEALTH_PROGRAM) {
    write(frame(TAG_STDOUT, Buffer.from(health())));
    return 0;
  }
  // What the plugins read from the process rather than the call (the cwd, the netlink switch) must be the
  // caller's: a call that differs from the server there runs as a child process with its own.
  const ownProcess = (req.cwd !== undefined && req.cwd !== own.cwd && carriesRelativePath(req)) ||
    (req.env["TSCNI_NETLINK"] ?? "") !== own.netlink;
  if (ownProcess && own.self) {
    const key = queueKey(req.env);
    const run = () => runAsChild(own.self!, req, timeoutMs, write);
    return key === undefined ? run() : queue.run(key, run);
  }
  const plugin = plugins.get(req.program);
  if (!plugin) {
    write(frame(TAG_STDOUT, Buffer.from(new CniError(ErrorCode.Internal, `tscni resident server: unknown plugin "${req.program}"`).print())));
    return 1;
  }
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<CniError>((resolve) => {
    timer = setTimeout(() => resolve(new CniError(ErrorCode.Internal, `tscni resident server: ${req.program} ran longer than ${timeoutMs} ms`)), timeoutMs);
  });
  const stdout: string[] = [];
  let answered = false;
  const run = () => runPlugin(plugin.funcs, plugin.versionInfo, plugin.about, {
    env: req.env,
    readStdin: async () => req.stdin,
    writeStdout: (s) => stdout.push(s),
    // A call that timed out may still write: its caller has its answer, the rest goes nowhere.
    writeStderr: (s) => {
      if (!answered) write(frame(TAG_STDERR, Buffer.from(s)));
    },
  });
  const key = queueKey(req.env);
  try {
    // The queue is held until the call's work has settled, even past its timeout.
    const failure = await Promise.race([key === undefined ? run() : queue.run(key, run), timedOut]);
    answered = true;
    // Like a plugin process: its output, then the error (if any) as the last document on stdout.
    if (failure) stdout.push(failure.print());
    if (stdout.length) write(frame(TAG_STDOUT, Buffer.from(stdout.join(""))));
    return failure ? 1 : 0;
  } finally {
    answered = true;
    clearTimeout(timer);
  }
}

/** How many rounds (ADD, CHECK, DEL) the warm-up runs by default: ~1 s of one core here. */
export const WARM_UP_ROUNDS = 500;

/**
 * Sends host-local ADD, CHECK and DEL `rounds` times through the server's own socket, against a private temporary
 * store, one call at a time, so that everything a call goes through (the connection and protocol code, the peer
 * checks, skel, Go-compatible JSON and decoding, IP arithmetic, results) is compiled by the JIT before real calls
 * need it: a fresh server otherwise runs its first few hundred calls interpreted, ~1.5× slower each (bench:
 * host-local ADD+DEL). Real calls are served between the warm-up's. Nothing outside the temporary directory is
 * touched; it is removed at the end. Stops early when `stopped()`.
 */
async function warmUp(socketPath: string, buildId: string, rounds: number, ownEnv: Record<string, string>, stopped: () => boolean,
  log: (line: string) => void): Promise<void> {
  if (rounds <= 0) return;
  let dir: string;
  try {
    dir = mkdtempSync(path.join(os.tmpdir(), "tscni-warm-up-"));
  } catch (e) {
    log(`warm-up skipped: ${(e as Error).message}`);
    return;
  }
  try {
    const { callResident } = await import("./resident-client.js");
    const stdin = Buffer.from(JSON.stringify({
      cniVersion: "1.1.0", name: "tscni-warm-up", type: "host-local",
      ipam: { type: "host-local", ranges: [[{ subnet: "10.255.0.0/16" }], [{ subnet: "fd00:7f::/64" }]], routes: [{ dst: "0.0.0.0/0" }], dataDir: dir },
    }));
    for (let i = 0; i < rounds && !stopped(); i++) {
      for (const command of ["ADD", "CHECK", "DEL"]) {
        const env = { ...ownEnv, CNI_COMMAND: command, CNI_CONTAINERID: `warm-up-${i}`, CNI_NETNS: path.join(dir, "netns"), CNI_IFNAME: "eth0", CNI_PATH: dir };
        const outcome = await callResident(socketPath, buildId, { program: "host-local", args: [], env, stdin, cwd: dir });
        if (outcome.kind !== "served" || outcome.status !== 0) {
          log(`warm-up stopped: host-local ${command}: ${outcome.kind === "refused" ? outcome.reason : outcome.stdout.trim()}`);
          return;
        }
      }
    }
  } catch (e) {
    log(`warm-up stopped: ${(e as Error).message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts a server (see the module comment). Rejects when another server holds the socket. */
export async function startResidentServer(opts: ResidentServerOptions = {}): Promise<ResidentServer> {
  const socketPath = opts.socketPath ?? DEFAULT_SOCKET;
  const buildId = opts.buildId ?? readBuildId();
  const timeoutMs = opts.requestTimeoutMs ?? 5 * 60_000;
  // The server's own directory and program, read once at start (never on a request's path).
  const own = { cwd: process.cwd(), self: selfExecutable(), netlink: process.env["TSCNI_NETLINK"] ?? "" };
  const log = opts.log ?? ((line: string) => process.stderr.write(`tscni daemon: ${line}\n`));

  // The directories made here are 0700 (whatever the umask); one that exists (say /tmp) is left as it is: the
  // socket's own mode and the peer checks guard it.
  const socketDir = path.dirname(socketPath);
  const made = mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  if (made !== undefined) {
    for (let dir = socketDir; dir.length >= made.length; dir = path.dirname(dir)) chmodSync(dir, 0o700);
  }
  const lockFd = openSync(`${socketPath}.lock`, "a", 0o600);
  if (!(await tryFlockFd(lockFd, `${socketPath}.lock`))) {
    closeSync(lockFd);
    throw new Error(`another tscni server serves ${socketPath}`);
  }

  const plugins = await loadPlugins();
  // Plugins that delegate to plugins of ours run them in this process too.
  setDefaultExec(new ServerExec());
  const queue = new KeyedMutex();

  let inFlight = 0;
  let servedCalls = 0;
  let warmedUp = false;
  let idle: (() => void) | undefined;
  const server = net.createServer({ allowHalfOpen: false }, (socket) => {
    const reader = new ByteReader();
    socket.on("data", (b: Buffer) => reader.push(b));
    socket.on("end", () => reader.end());
    socket.on("close", () => reader.end());
    socket.on("error", () => reader.end());
    void (async () => {
      let served = false;
      try {
        const clientBuild = await readHello(reader);
        const admitted = await admission(socket, clientBuild, buildId);
        if ("refusal" in admitted) {
          socket.end(encodeRefusal(admitted.refusal));
          return;
        }
        socket.write(Buffer.from([ACCEPT]));
        const req = await readRequest(reader);
        // The warm-up's calls (this process's own) are not counted; close() waits for the warm-up itself.
        served = admitted.pid !== process.pid;
        if (served) inFlight++;
        if (served && req.program !== HEALTH_PROGRAM) servedCalls++;
        const status = await serveCall(plugins, queue, req, timeoutMs, (b) => socket.write(b),
          () => JSON.stringify({ build: buildId, plugins: [...plugins.keys()], inFlight: served ? inFlight - 1 : inFlight, served: servedCalls, warmedUp }) + "\n", own);
        socket.end(exitFrame(status));
      } catch (e) {
        // A launcher that waited longer than its limit for the answer ran the plugin itself (a busy server).
        log(e instanceof CallerLeftError
          ? "a caller left before sending its call: it gave up waiting for this server's answer and ran the plugin itself"
          : `a connection failed: ${(e as Error).message}`);
        socket.destroy();
      } finally {
        if (served && --inFlight === 0) idle?.();
      }
    })();
  });
  server.on("error", (e) => log(`listening socket: ${e.message}`));

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (opts.listenFd !== undefined) {
      server.listen({ fd: opts.listenFd }, resolve);
    } else {
      rmSync(socketPath, { force: true }); // a stale socket of a dead server (we hold the lock)
      server.listen(socketPath, () => {
        chmodSync(socketPath, 0o600);
        resolve();
      });
    }
  });

  let closing = false;
  // Through the socket it listens on; one handed over by systemd has no address here (Bun), but its unit's
  // command names it (--socket, as `cnitool install --resident` writes it).
  const bound = server.address();
  const address = typeof bound === "string" && bound !== "" ? bound : socketPath;
  const warming = (address !== ""
    ? warmUp(address, buildId, opts.warmUpRounds ?? WARM_UP_ROUNDS, own.netlink ? { TSCNI_NETLINK: own.netlink } : {}, () => closing, log)
    : Promise.resolve()).then(() => {
    warmedUp = true;
  });

  return {
    socketPath,
    get inFlight() {
      return inFlight;
    },
    async close() {
      closing = true;
      await warming;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      if (opts.listenFd === undefined) rmSync(socketPath, { force: true });
      closeSync(lockFd);
    },
  };
}
