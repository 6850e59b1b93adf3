/**
 * Where and how the resident server runs an admitted call:
 * - the server's own programs (status, stop, metrics) are answered by the server;
 * - a call that reads from the process what must be the caller's (a relative path from another working directory,
 *   another TSCNI_NETLINK, another umask) runs as a child process of the program in the caller's directory, under
 *   the caller's umask;
 * - everything else runs in the server's process, its plugin's code loaded on the first call that needs it, in one
 *   of the server's places (places.ts); a call that gets none is handed back to its caller before any of it ran.
 * Calls of one container and interface run one after another (so a DEL that follows an ADD whose caller was killed
 * waits for that ADD), until the earlier one's time limit: a call past it has had its answer (an error), and gives
 * up its container's queue and its place while its work, if stuck, goes on ("overdue"); its call's signal
 * (sys/call-signal.ts) aborts then, so a wait for a lock it is in ends and what the lock guards never runs for a
 * caller that has its answer (an ADD finished later would leak its address). Calls the server itself
 * started (a delegation exec'd back into it) are marked and skip the queue, which they would otherwise deadlock on.
 * @module
 */
import { spawn } from "node:child_process";
import type { Env } from "#invoke/args.js";
import type { ExecOptions, PluginExec } from "#invoke/exec.js";
import { frame, type ResidentRequest, TAG_STDERR, TAG_STDOUT } from "#invoke/resident-protocol.js";
import { MulticallExec } from "#plugins/inprocess.js";
import { PLUGINS } from "#plugins/registry.js";
import { type PluginDefinition, runPlugin } from "#skel/skel.js";
import { type CniError, ErrorCode, failure } from "#spec/errors.js";
import { CallAbandonedError, withCallSignal } from "#sys/call-signal.js";
import type { KeyedMutex } from "#sys/keyed-mutex.js";
import { endPhase, phaseClock } from "#sys/phase-trace.js";
import type { Places } from "./places.js";

/** The program name of `cnitool daemon status`: answered with the server's state. */
export const HEALTH_PROGRAM = "tscni-health";
/** The program name of `cnitool daemon stop`: the server leaves once its calls are done. */
export const STOP_PROGRAM = "tscni-stop";
/** The program name of `cnitool daemon metrics`: answered with the server's metrics in Prometheus' text format. */
export const METRICS_PROGRAM = "tscni-metrics";

/** Set in the environment of everything the server execs: such a call, served here again, skips the queue. */
export const NESTED_MARK = "TSCNI_RESIDENT_NESTED";

/** What the server's process holds that a call may need to differ from. */
export interface ServerProcess {
  cwd: string;
  /** The multicall executable, for calls run as children (undefined: none can be). */
  self: string | undefined;
  /** TSCNI_NETLINK of the server's environment. */
  netlink: string;
  /** The server's umask. */
  umask: number;
}

/** Where a call runs. */
export type Route = "health" | "stop" | "metrics" | "child" | "in-process";

/**
 * Config keys whose string values are file system paths (dataDir, resolvConf, daemonSocketPath, subnetFile, ...),
 * matched at the key's end: `net.ipv4.conf.IFNAME.rp_filter` is a sysctl, not a path.
 */
const PATH_KEY = /(dir|path|file|conf|socket)$/i;

/** Whether a call names a relative path, which must resolve against its caller's working directory. */
export function carriesRelativePath(req: ResidentRequest): boolean {
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

/** Where `req` runs, given the server's process. */
export function routeOf(req: ResidentRequest, server: ServerProcess): Route {
  if (req.program === HEALTH_PROGRAM) return "health";
  if (req.program === STOP_PROGRAM) return "stop";
  if (req.program === METRICS_PROGRAM) return "metrics";
  const ownProcess =
    (req.cwd !== undefined && req.cwd !== server.cwd && carriesRelativePath(req)) ||
    (req.env["TSCNI_NETLINK"] ?? "") !== server.netlink ||
    (req.umask !== undefined && req.umask !== server.umask);
  return ownProcess && server.self ? "child" : "in-process";
}

/** The queue a call waits in: one per container and interface; none for nested or container-less calls. */
export function queueKey(env: Readonly<Record<string, string>>): string | undefined {
  const command = env["CNI_COMMAND"];
  if (env[NESTED_MARK] || !env["CNI_CONTAINERID"] || !(command === "ADD" || command === "DEL" || command === "CHECK")) return undefined;
  return `${env["CNI_CONTAINERID"]}\0${env["CNI_IFNAME"] ?? ""}`;
}

/** The server's exec for delegations: in-process for its own plugins, and marked as nested when exec'd. */
export class ServerExec implements PluginExec {
  private readonly inner = new MulticallExec();
  execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options?: ExecOptions): Promise<Buffer> {
    return this.inner.execPlugin(pluginPath, stdin, { ...env, [NESTED_MARK]: "1" }, options);
  }
}

/** The plugins' definitions, each loaded on its first call (an idle server holds only what was called). */
export class PluginModules {
  private readonly loading = new Map<string, Promise<PluginDefinition | undefined>>();
  get(name: string): Promise<PluginDefinition | undefined> {
    let loaded = this.loading.get(name);
    if (!loaded) {
      const entry = PLUGINS[name];
      loaded = entry ? entry.load() : Promise.resolve(undefined);
      this.loading.set(name, loaded);
    }
    return loaded;
  }
  /** The plugins loaded so far. */
  get names(): string[] {
    return [...this.loading.keys()];
  }
}

/** How a call is run: where its reply goes and how long it may take. */
export interface CallContext {
  req: ResidentRequest;
  /** Writes one reply frame to the caller. */
  write: (frame: Buffer) => void;
  timeoutMs: number;
  queue: KeyedMutex;
  /** Places for calls running in the server's process (a burst of calls would otherwise all hold memory at once). */
  places: Places;
  /** Told when a call passes its time limit with its work still under way, and when that work settles. */
  overdue?: (delta: 1 | -1) => void;
}

/**
 * How a call ended: its exit status, and the code of the CNI error it reported (when it failed with one); or
 * handed back (`handedBack`: nothing of it ran, the caller runs it itself).
 */
export interface CallOutcome {
  status: number;
  errorCode?: number;
  handedBack?: boolean;
}

/** The code of the CNI error document a failed program printed (its whole stdout), if it is one. */
function errorCodeOf(stdout: Buffer): number | undefined {
  try {
    const doc: unknown = JSON.parse(stdout.toString("utf8"));
    const code = (doc as { code?: unknown } | null)?.code;
    return typeof code === "number" ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `work` in the call's queue (when it has one). */
function queued<T>(ctx: CallContext, work: () => Promise<T>): Promise<T> {
  const key = queueKey(ctx.req.env);
  return key === undefined ? work() : ctx.queue.run(key, work);
}

/** Runs a call as a child process of the program in the caller's directory, relaying its output as it comes. */
export function runAsChild(ctx: CallContext, self: string): Promise<CallOutcome> {
  const { req, write } = ctx;
  const stdout: Buffer[] = [];
  const ended = (status: number): CallOutcome => ({ status, errorCode: status !== 0 ? errorCodeOf(Buffer.concat(stdout)) : undefined });
  return queued(
    ctx,
    () =>
      new Promise<CallOutcome>((resolve) => {
        // `tscni <program> args...` (main.ts), kept from the server so the call is not sent back here. The child
        // takes the umask at its fork, within spawn: the server's is the caller's only for that moment.
        const serverUmask = req.umask !== undefined ? process.umask(req.umask) : undefined;
        let child;
        try {
          child = spawn(self, [req.program, ...req.args], {
            argv0: "tscni",
            cwd: req.cwd,
            env: { ...req.env, TSCNI_RESIDENT: "exec" },
            stdio: ["pipe", "pipe", "pipe"],
            timeout: ctx.timeoutMs,
            killSignal: "SIGKILL",
          });
        } finally {
          if (serverUmask !== undefined) process.umask(serverUmask);
        }
        child.stdout.on("data", (b: Buffer) => {
          stdout.push(b);
          write(frame(TAG_STDOUT, b));
        });
        child.stderr.on("data", (b: Buffer) => write(frame(TAG_STDERR, b)));
        child.stdin.on("error", () => undefined);
        child.on("error", (e) => {
          write(frame(TAG_STDOUT, Buffer.from(failure(`tscni resident server: cannot run ${req.program} in ${req.cwd}: ${e.message}`).print())));
          resolve({ status: 1, errorCode: ErrorCode.Internal });
        });
        child.on("close", (code, signal) => resolve(ended(code ?? (signal ? 128 + 9 : 1))));
        child.stdin.end(req.stdin);
      }),
  );
}

/** Runs a call in this process; resolves to how it ended once its reply is written (or it was handed back). */
export async function runInProcess(ctx: CallContext, plugins: PluginModules): Promise<CallOutcome> {
  const { req, write, timeoutMs } = ctx;
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const abandoned = new AbortController();
  const timedOut = new Promise<CniError>((resolve) => {
    timer = setTimeout(() => {
      expired = true;
      const answer = `tscni resident server: ${req.program} ran longer than ${timeoutMs} ms`;
      resolve(failure(answer));
      abandoned.abort(new CallAbandonedError(`${answer}: its caller has been answered`));
    }, timeoutMs);
  });
  const stdout: string[] = [];
  let answered = false;
  const run = async () => {
    const plugin = await plugins.get(req.program);
    if (!plugin) return failure(`tscni resident server: unknown plugin "${req.program}"`);
    return runPlugin(plugin.funcs, plugin.versionInfo, plugin.about, {
      env: req.env,
      readStdin: async () => req.stdin,
      writeStdout: (s) => stdout.push(s),
      // A call that timed out may still write: its caller has its answer, the rest goes nowhere.
      writeStderr: (s) => {
        if (!answered) write(frame(TAG_STDERR, Buffer.from(s)));
      },
    });
  };
  const nested = !!req.env[NESTED_MARK];
  const handedBack = Symbol("handed back");
  // In its container's queue, then in a place (a nested call's parent holds one already and waits for it: it must
  // not wait for one itself); both are held until the work settles or the time limit, whichever comes first.
  const asked = phaseClock();
  const inQueue = queued(ctx, async () => {
    if (expired) return undefined;
    const place = nested ? undefined : await ctx.places.take();
    endPhase("wait", "the container's queue and a place", asked);
    if (!nested && !place) return handedBack;
    if (expired) {
      place?.release();
      return undefined;
    }
    let settled = false;
    // While it waits on the kernel's work for other calls too, its place goes to a waiting call (places.ts).
    const work = withCallSignal(abandoned.signal, run, place ? (wait) => place.stepAside(wait) : undefined);
    void work.finally(() => (settled = true)).catch(() => undefined);
    try {
      return await Promise.race([work, timedOut]);
    } finally {
      place?.release();
      if (!settled) {
        ctx.overdue?.(1);
        void work.finally(() => ctx.overdue?.(-1)).catch(() => undefined);
      }
    }
  });
  try {
    const ran = await Promise.race([inQueue, timedOut]);
    if (ran === handedBack) return { status: 0, handedBack: true };
    answered = true;
    // Like a plugin process: its output, then the error (if any) as the last document on stdout.
    if (ran) stdout.push(ran.print());
    if (stdout.length) write(frame(TAG_STDOUT, Buffer.from(stdout.join(""))));
    return ran ? { status: 1, errorCode: ran.code } : { status: 0 };
  } finally {
    answered = true;
    clearTimeout(timer);
  }
}
