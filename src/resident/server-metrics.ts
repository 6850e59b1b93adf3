/**
 * The resident server's metrics (metrics.ts renders them): calls per program and command, errors per CNI code,
 * call latency, calls in flight, callers refused (each ran its call itself), and the runs of the server's own
 * repairs (firewall reloads, GC). Label values come from a fixed set, whatever callers send.
 * @module
 */
import { PLUGINS } from "#plugins/registry.js";
import type { AdmissionRefusalKind } from "./admission.js";
import { type Counter, type Histogram, MetricsRegistry } from "./metrics.js";
import type { CallOutcome } from "./routing.js";

/**
 * Why a caller was not served, as `tscni_refusals_total` counts it: a rule of admission (admission.ts), the
 * server's bounds (`busy`: connections or request bytes; `too_large`: the request), a server `leaving`, a
 * connection `dropped` before the server answered (no hello in time, a broken hello, an admission that failed), or
 * a call handed back for want of a place (`no_place`: places.ts).
 */
export type RefusalReason = AdmissionRefusalKind | "busy" | "too_large" | "leaving" | "dropped" | "no_place";

const REFUSAL_REASONS: readonly RefusalReason[] = [
  "not_root",
  "capabilities",
  "namespace",
  "confinement",
  "lock",
  "identity",
  "build",
  "busy",
  "too_large",
  "leaving",
  "dropped",
  "no_place",
];
const COMMANDS = new Set(["ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION"]);

/** Upper bounds of the latency buckets, in seconds: 0.5 ms to 10 s. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** What the metrics read from the server when they are rendered. */
export interface ServerGauges {
  build: string;
  inFlight: () => number;
  connections: () => number;
  /** Calls past their time limit whose work has not settled (stuck: their callers had an error). */
  overdue: () => number;
  /** Calls running past the first seconds, outside the places. */
  longRunning: () => number;
  /** Calls waiting for a place. */
  waitingForPlace: () => number;
}

/** A served call as the metrics see it. */
export interface ServedCall {
  /** A plugin of the registry; any other name is counted as "other". */
  program: string;
  /** The call's CNI_COMMAND. */
  command: string | undefined;
  /** From the call's start to its reply, in seconds. */
  seconds: number;
  /** How it ended; undefined when it failed outside its plugin (counted as an error of code "unknown"). */
  outcome: CallOutcome | undefined;
}

/** The metrics of one server. */
export class ServerMetrics {
  private readonly registry = new MetricsRegistry();
  private readonly calls: Counter;
  private readonly errors: Counter;
  private readonly latency: Histogram;
  private readonly refusals: Counter;
  private readonly reloads: Counter;
  private readonly gcRuns: Counter;

  constructor(gauges: ServerGauges) {
    const r = this.registry;
    this.calls = r.counter({
      name: "tscni_calls_total",
      help: "Plugin calls served, by program and CNI command.",
      labelNames: ["program", "command"],
    });
    this.errors = r.counter({
      name: "tscni_call_errors_total",
      help: "Served plugin calls that failed, by program, CNI command and CNI error code.",
      labelNames: ["program", "command", "code"],
    });
    this.latency = r.histogram({
      name: "tscni_call_duration_seconds",
      help: "Time from accepting a served call's connection to its reply, by program and CNI command.",
      labelNames: ["program", "command"],
      buckets: LATENCY_BUCKETS,
    });
    r.gauge({ name: "tscni_calls_in_flight", help: "Plugin calls being served now.", collect: gauges.inFlight });
    r.gauge({ name: "tscni_connections", help: "Connections open now.", collect: gauges.connections });
    r.gauge({
      name: "tscni_calls_overdue",
      help: "Calls past their time limit whose work is still under way (hung: their callers had an error).",
      collect: gauges.overdue,
    });
    r.gauge({
      name: "tscni_calls_long_running",
      help: "Calls running past their first seconds, outside the server's places.",
      collect: gauges.longRunning,
    });
    r.gauge({ name: "tscni_calls_waiting_for_place", help: "Calls waiting for a place to run in.", collect: gauges.waitingForPlace });
    this.refusals = r.counter({
      name: "tscni_refusals_total",
      help: "Callers not served (each ran its call itself), by reason.",
      labelNames: ["reason"],
    });
    for (const reason of REFUSAL_REASONS) this.refusals.inc({ reason }, 0);
    this.reloads = r.counter({ name: "tscni_reloads_total", help: "Runs of the server's firewall state repair (reload)." });
    this.gcRuns = r.counter({ name: "tscni_gc_runs_total", help: "Runs of the server's periodic garbage collection." });
    r.gauge({ name: "tscni_build_info", help: "The server's build.", labelNames: ["build"] }).set(1, { build: gauges.build });
    const started = performance.timeOrigin / 1000;
    r.gauge({ name: "process_start_time_seconds", help: "Start time of the process since the Unix epoch, in seconds.", collect: () => started });
    r.gauge({ name: "process_resident_memory_bytes", help: "Resident memory size in bytes.", collect: () => process.memoryUsage.rss() });
  }

  /** Counts a served call (its latency; an error by its code). */
  callServed(call: ServedCall): void {
    const labels = {
      program: Object.hasOwn(PLUGINS, call.program) ? call.program : "other",
      command: call.command !== undefined && COMMANDS.has(call.command) ? call.command : "other",
    };
    this.calls.inc(labels);
    this.latency.observe(call.seconds, labels);
    if (call.outcome?.status !== 0) {
      const code = call.outcome?.errorCode;
      this.errors.inc({ ...labels, code: code !== undefined && Number.isSafeInteger(code) ? String(code) : "unknown" });
    }
  }

  /** Counts a caller told to run its call itself. */
  refused(reason: RefusalReason): void {
    this.refusals.inc({ reason });
  }

  /** Counts one run of the firewall state repair (`tscni_reloads_total`). */
  countReload(): void {
    this.reloads.inc();
  }

  /** Counts one run of garbage collection (`tscni_gc_runs_total`). */
  countGcRun(): void {
    this.gcRuns.inc();
  }

  /** Every metric in the Prometheus text format. */
  render(): string {
    return this.registry.render();
  }
}
