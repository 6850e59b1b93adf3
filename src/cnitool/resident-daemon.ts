/**
 * `cnitool daemon`: runs the resident server (src/resident) until it leaves (idle, stepped aside for a new build,
 * `daemon stop`) or SIGTERM/SIGINT, on `--socket` or on the listening socket systemd hands over (LISTEN_FDS), and
 * with it the self-repair of the cached attachments' firewall rules (resident/repair.ts) while it runs, and its
 * metrics also over HTTP when `--metrics-address` names where; `cnitool daemon status` asks a running server for
 * its state, `cnitool daemon metrics` for its metrics (Prometheus' text format), `cnitool daemon stop` asks it to
 * leave. With `--gc-cri-endpoint` it also runs node GC every `--gc-interval` seconds
 * (src/resident/node-gc-schedule.ts); off by default.
 * @module
 */
import { type Command, CommanderError } from "commander";
import { readBuildId } from "#invoke/build-id.js";
import { splitPathList } from "#invoke/find.js";
import { callResident } from "#invoke/resident-client.js";
import { parseSize } from "#invoke/resident-mode.js";
import { DEFAULT_CACHE_DIR } from "#libcni/cache.js";
import { type NodeGcSchedule, startNodeGc } from "#resident/node-gc-schedule.js";
import { DEFAULT_REPAIR_INTERVAL_S, startRepair } from "#resident/repair.js";
import { METRICS_PROGRAM, STOP_PROGRAM } from "#resident/routing.js";
import { DEFAULT_SOCKET, ResidentServer } from "#resident/server.js";
import { serverLog } from "#resident/server-log.js";
import { WARM_UP_ROUNDS } from "#resident/warm-up.js";
import { criSocketPath } from "#runtime/cri/runtime-service.js";
import { DEFAULT_MIN_AGE_MS } from "#runtime/node-gc.js";
import { messageOf } from "#spec/errors.js";
import { takeListenFd } from "#sys/socket-activation.js";
import { DEFAULT_NETCONFPATH, type Io } from "./command-io.js";

/** A non-negative whole number of a flag, or an error naming the flag. */
function count(flag: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new Error(`${flag} wants a whole number of at least 0, not ${JSON.stringify(value)}`);
  return n;
}

/** The daemon's node GC flags. */
interface GcFlags {
  gcCriEndpoint?: string;
  gcInterval: string;
  gcMinAge: string;
  gcConfDir: string;
  gcCacheDir: string;
  gcCniPath: string;
  gcDeleteOccupied?: boolean;
}

/** Checks the node GC flags before the server starts; the schedule's start, or undefined when node GC is off. */
function nodeGcStarter(o: GcFlags, log: (line: string) => void, onRun: () => void): (() => NodeGcSchedule) | undefined {
  if (o.gcCriEndpoint === undefined) return undefined;
  const criEndpoint = o.gcCriEndpoint;
  criSocketPath(criEndpoint);
  const intervalMs = count("--gc-interval", o.gcInterval) * 1000;
  if (intervalMs === 0) throw new Error("--gc-interval wants at least 1 second");
  const minAgeMs = count("--gc-min-age", o.gcMinAge) * 1000;
  const pluginDirs = splitPathList(o.gcCniPath);
  if (pluginDirs.length === 0) throw new Error("--gc-cni-path names no directory");
  const deleteOccupied = o.gcDeleteOccupied ?? false;
  return () =>
    startNodeGc({ criEndpoint, cacheDir: o.gcCacheDir, confDir: o.gcConfDir, pluginDirs, intervalMs, minAgeMs, deleteOccupied, log, onRun });
}

/** Adds `daemon`, `daemon status` and `daemon stop` to cnitool. */
export function addDaemonCommand(program: Command, io: Io): void {
  const daemon = program
    .command("daemon")
    .description("Serve plugin calls from a resident process (the launcher forwards to it; exec is the fallback)")
    .option(
      "--socket <path>",
      "unix socket to listen on (default: TSCNI_RESIDENT_SOCKET, else /run/tscni/plugins.sock)",
      io.env["TSCNI_RESIDENT_SOCKET"] || DEFAULT_SOCKET,
    )
    .option("--call-timeout <seconds>", "fail a call that runs longer than this", "300")
    .option("--warm-up <rounds>", "dry host-local rounds run at start so the first calls find compiled code (0: none)", String(WARM_UP_ROUNDS))
    .option("--idle <seconds>", "leave after this long without a call (0: never)", "0")
    .option("--lock-fd <fd>", "the socket's lock, already taken (the launcher starting a server passes it)")
    .option("--auto-started <call>", "started by a launcher for this call (logged, and reported by status)")
    .option("--metrics-address <ip:port>", "also serve the metrics as GET /metrics over HTTP on this TCP address (off unless given)")
    .option(
      "--repair-interval <seconds>",
      "look this often for cached attachments' firewall rules gone, and put them back (0: only on firewalld's reloads)",
      String(DEFAULT_REPAIR_INTERVAL_S),
    )
    .option("--no-repair", "never put firewall rules back by itself (cnitool reload still does)")
    .option("--memory-max <size>", "cap this server's memory: its own cgroup's limit (bytes, or with K, M or G; a server a launcher starts only)")
    .option(
      "--gc-cri-endpoint <endpoint>",
      "run node GC periodically against this CRI runtime, e.g. unix:///run/containerd/containerd.sock (off without it)",
    )
    .option("--gc-interval <seconds>", "node GC: time between runs", "3600")
    .option("--gc-min-age <seconds>", "node GC: keep attachments cached less than this long ago", String(DEFAULT_MIN_AGE_MS / 1000))
    .option("--gc-conf-dir <dir>", "node GC: the networks that get the GC verb", DEFAULT_NETCONFPATH)
    .option("--gc-cache-dir <dir>", "node GC: the runtime's result cache", DEFAULT_CACHE_DIR)
    .option("--gc-cni-path <dirs>", "node GC: the runtime's plugin directories (':'-separated)", "/opt/cni/bin")
    .option("--gc-delete-occupied", "node GC: also remove stale attachments whose network namespace still has processes in it")
    .option("--trace-phases <file>", "append each call's phases (netlink requests, tools, locks, IPAM store...) to this file as a JSON line")
    .action(
      async (
        o: {
          socket: string;
          callTimeout: string;
          warmUp: string;
          idle: string;
          lockFd?: string;
          autoStarted?: string;
          metricsAddress?: string;
          repairInterval: string;
          repair: boolean;
          memoryMax?: string;
          tracePhases?: string;
        } & GcFlags,
      ) => {
        // One escaped line each; an auto-started server keeps its log (<socket>.log) under a bound (server-log.ts).
        const log = serverLog(
          () => `${new Date().toISOString()} tscni daemon[${process.pid}]: `,
          (text) => io.stderr(text),
          o.autoStarted !== undefined ? `${o.socket}.log` : undefined,
        );
        // Out of the starting caller's cgroup before anything else (resident/own-cgroup.ts).
        // A cap the operator set (invoke/resident-mode.ts) that is not a size is said, and not applied: the server still runs.
        const memoryMax = o.memoryMax !== undefined ? parseSize(o.memoryMax) : undefined;
        if (o.memoryMax !== undefined && memoryMax === undefined)
          log(`--memory-max "${o.memoryMax}" is not a size (bytes, or with K, M or G): no cap`);
        const ownCgroup =
          o.autoStarted !== undefined ? await (await import("#resident/own-cgroup.js")).moveToOwnCgroup(o.socket, memoryMax) : undefined;
        if (ownCgroup) log(`running in ${ownCgroup.description}`);
        if (!o.repair) log("self-repair of firewall rules is off (--no-repair): cnitool reload puts them back");
        let server: ResidentServer | undefined;
        const startGc = nodeGcStarter(o, log, () => server?.metrics.countGcRun());
        // One bad call must never take the server down.
        process.on("uncaughtException", (e) => log(`uncaught: ${e.stack ?? e.message}`));
        process.on("unhandledRejection", (e) => log(`unhandled rejection: ${(e instanceof Error && e.stack) || messageOf(e)}`));
        // A bad address fails before the server takes its socket; the HTTP code is loaded only when asked for.
        const metricsHttp = o.metricsAddress !== undefined ? await import("#resident/metrics-http.js") : undefined;
        const metricsAddress = metricsHttp?.parseListenAddress(o.metricsAddress!);
        const repairIntervalMs = count("--repair-interval", o.repairInterval) * 1000;
        const cacheDir = program.opts<{ cacheDir?: string }>().cacheDir || DEFAULT_CACHE_DIR;
        const listenFd = takeListenFd(io.env);
        if (o.tracePhases !== undefined) {
          const { enablePhaseTrace } = await import("#sys/phase-trace.js");
          enablePhaseTrace(o.tracePhases);
          log(`tracing each call's phases into ${o.tracePhases}`);
        }
        server = await ResidentServer.start({
          socketPath: o.socket,
          requestTimeoutMs: count("--call-timeout", o.callTimeout) * 1000,
          log,
          warmUpRounds: count("--warm-up", o.warmUp),
          idleMs: count("--idle", o.idle) * 1000,
          autoStarted: o.autoStarted !== undefined,
          describe: () => ({
            cgroup: ownCgroup?.description ?? "the cgroup of whoever started it (not auto-started)",
            selfRepair: o.repair ? `on, every ${repairIntervalMs / 1000} s and on firewalld's reloads` : "off (--no-repair)",
            ...(memoryMax !== undefined && ownCgroup ? { memoryMax } : {}),
          }),
          ...(o.lockFd !== undefined ? { lockFd: count("--lock-fd", o.lockFd) } : {}),
          ...(listenFd !== undefined ? { listenFd } : {}),
        });
        log(
          `serving plugin calls on ${listenFd !== undefined ? "the socket systemd passed" : server.socketPath}` +
            (o.autoStarted !== undefined ? `, started by the call ${o.autoStarted}` : ""),
        );
        if (metricsHttp && metricsAddress) {
          const endpoint = await metricsHttp
            .serveMetrics(metricsAddress, () => server.metrics.render())
            .catch(async (e: Error) => {
              await server.close();
              throw new Error(`cannot serve metrics on ${o.metricsAddress}: ${e.message}`);
            });
          log(`metrics on ${endpoint.url}`);
        }
        const repair = o.repair
          ? startRepair({ cacheDir, intervalMs: repairIntervalMs, log, onReload: () => server.metrics.countReload() })
          : undefined;
        const stop = (signal: string) => {
          log(`${signal}: finishing ${server.inFlight} call(s) under way`);
          void server.close();
        };
        process.once("SIGTERM", () => stop("SIGTERM"));
        process.once("SIGINT", () => stop("SIGINT"));
        const nodeGc = startGc?.();
        log(`left: ${await server.left}`);
        repair?.stop();
        // A node GC under way finishes its DELs first (none starts any more).
        await nodeGc?.stop();
        ownCgroup?.leave();
        // Timers and handles of plugins (an in-process delegation's leftovers) must not keep a server that left.
        process.exit(0);
      },
    );

  const ask = async (what: string) => {
    const o = daemon.opts<{ socket: string }>();
    const outcome = await callResident(o.socket, readBuildId(), { program: what, args: [], env: {}, stdin: Buffer.alloc(0) }).catch((e: Error) => ({
      kind: "down" as const,
      reason: e.message,
    }));
    if (outcome.kind === "served") io.stdout(outcome.stdout);
    else throw new Error(`no server serves this caller on ${o.socket}: ${"reason" in outcome ? outcome.reason : "it died"}`);
  };
  daemon
    .command("status")
    .description(
      "The node's resident mode for this process, with or without a server: the mode and which setting made it, the socket, the server's build, load, cgroup and memory, and whether this process's calls are served (exit 3 when no server answers it)",
    )
    .action(async () => {
      const o = daemon.opts<{ socket: string }>();
      const { nodeStatus } = await import("#resident/node-status.js");
      const report = await nodeStatus(o.socket, io.env, readBuildId());
      io.stdout(`${JSON.stringify(report)}\n`);
      // Exit 3 when no server answered this process (its report is still printed); a server that answered while
      // this process's calls are not served (mode exec) is 0, as `systemctl status` of a unit that runs.
      if (report.build === undefined) {
        io.stderr(`${report.thisCaller.why}\n`);
        throw new CommanderError(3, "tscni.not-served", "");
      }
    });
  daemon
    .command("metrics")
    .description("Print the metrics of the server on --socket (Prometheus text format)")
    .action(() => ask(METRICS_PROGRAM));
  daemon
    .command("stop")
    .description("Ask the server on --socket to leave once the calls under way are done")
    .action(() => ask(STOP_PROGRAM));
}
