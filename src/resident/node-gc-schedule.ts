/**
 * Node GC on a schedule, for a resident server on a node whose runtime never sends GC (containerd): every
 * `intervalMs`, one run of src/runtime/node-gc.ts against the CRI endpoint, logged. Runs never overlap (the next is
 * timed from the end of the last), the first comes one interval after the start, and the timer never keeps a
 * process alive by itself. Off unless started (`cnitool daemon --gc-cri-endpoint`).
 * @module
 */
import { CriRuntimeClient } from "#runtime/cri/runtime-service.js";
import { describeNodeGc, type NodeGcOptions, type NodeGcReport, runNodeGc, type SandboxSource } from "#runtime/node-gc.js";
import { messageOf } from "#spec/errors.js";

/** What the schedule needs: where to ask, what to collect, how often, and where to say what it did. */
export interface NodeGcScheduleOptions {
  criEndpoint: string;
  cacheDir: string;
  confDir: string;
  /** Where the plugins are (CNI_PATH). */
  pluginDirs: string[];
  intervalMs: number;
  /** Attachments cached less than this long ago are kept (default: node GC's). */
  minAgeMs?: number;
  /** DEL stale attachments even when their network namespace still has processes in it (default: kept). */
  deleteOccupied?: boolean;
  log: (line: string) => void;
  /** The runtime to ask (default: a CRI client for `criEndpoint`). */
  runtime?: SandboxSource;
  /** One run (default runNodeGc). */
  run?: (options: NodeGcOptions) => Promise<NodeGcReport>;
  /** Called at every run (the server counts them). */
  onRun?: () => void;
}

/** A running schedule. */
export interface NodeGcSchedule {
  /** No run starts after this; resolves once a run under way has finished. */
  stop(): Promise<void>;
}

/**
 * Starts the schedule. Throws at once when the endpoint is not a unix socket endpoint or the interval is not
 * positive; a run that fails (the runtime cannot be asked) is logged, removes nothing, and the schedule goes on.
 */
export function startNodeGc(o: NodeGcScheduleOptions): NodeGcSchedule {
  if (!(o.intervalMs > 0)) throw new Error(`node GC interval must be positive, not ${o.intervalMs} ms`);
  const runtime = o.runtime ?? new CriRuntimeClient(o.criEndpoint);
  const run = o.run ?? runNodeGc;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  const once = async () => {
    o.onRun?.();
    try {
      const report = await run({
        runtime,
        cacheDir: o.cacheDir,
        confDir: o.confDir,
        pluginDirs: o.pluginDirs,
        ...(o.minAgeMs !== undefined ? { minAgeMs: o.minAgeMs } : {}),
        ...(o.deleteOccupied ? { deleteOccupied: true } : {}),
      });
      for (const line of describeNodeGc(report)) o.log(`node GC: ${line}`);
    } catch (e) {
      o.log(`node GC: removed nothing: ${messageOf(e)}`);
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = once().finally(() => {
        current = undefined;
        schedule();
      });
    }, o.intervalMs);
    timer.unref();
  };

  o.log(
    `node GC: every ${o.intervalMs / 1000} s, asking ${o.criEndpoint}, cache ${o.cacheDir}, networks in ${o.confDir}` +
      (o.deleteOccupied ? ", removing attachments whose network namespace has processes" : ""),
  );
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}
