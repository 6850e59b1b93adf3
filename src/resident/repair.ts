/**
 * The resident server's self-repair: the runtime's firewall reload (runtime/firewall-reload.ts, what `cnitool
 * reload` runs), by itself, when the host firewall lost the cached attachments' rules. Two triggers: firewalld's `Reloaded` signal on the system bus (when there is a bus; watched
 * again after it goes away), and a cheap periodic look for the attachments' marks (chains, jumps, tables; one
 * listing per firewall table). A loss that a reload could not repair is logged once and not retried until what is
 * missing changes; a firewalld reload is always followed by a reload.
 * @module
 */

import { type BusWatch, watchReloaded } from "#net/firewall/firewalld.js";
import { type AttachmentReload, formatReload, type LostState, lostFirewallState, reloadFirewall } from "#runtime/firewall-reload.js";
import { messageOf } from "#spec/errors.js";

/** The default interval of the periodic look. */
export const DEFAULT_REPAIR_INTERVAL_S = 30;
/** How long to wait before watching the bus again when there was none, or the watch ended. */
const BUS_RETRY_MS = 30_000;

/** What the repair does, replaceable in tests. */
export interface RepairHooks {
  lost(): Promise<LostState[]>;
  /** Reloads the attachments named (all when none are). */
  reload(only?: ReadonlySet<string>): Promise<AttachmentReload[]>;
  /** Waits between a look that found a loss and the look that confirms it. */
  pause(ms: number): Promise<void>;
  /** Watches for firewalld's reloads; undefined when there is no bus. */
  watch(onReloaded: () => void, onEnd: (reason: string) => void): BusWatch | undefined;
}

export interface RepairOptions {
  /** The result cache whose attachments are repaired. */
  cacheDir: string;
  /** How often to look for lost state, in milliseconds; 0: never (firewalld's signal is still followed). */
  intervalMs: number;
  log: (line: string) => void;
  /** Where plugins' host-side settings come from (DBUS_SYSTEM_BUS_ADDRESS, XDG_RUNTIME_DIR); default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  hooks?: Partial<RepairHooks>;
  /** How long to wait before watching the bus again (default 30 s). */
  busRetryMs?: number;
  /** Called at every reload it runs (the server counts them). */
  onReload?: () => void;
  /**
   * How long a loss the periodic look finds must last before it is repaired (default 2 s): an attachment being
   * deleted has its rules gone before its cache entry (libcni removes that last), and must not get them back.
   */
  confirmMs?: number;
}

const fingerprint = (lost: readonly LostState[]) =>
  lost
    .map((l) => `${l.attachment}: ${l.missing.join(", ")}`)
    .sort()
    .join("\n");

/** A loss in one line for the log: how many attachments, and the first one's first missing object. */
function summary(lost: readonly LostState[]): string {
  const first = lost[0]!;
  const more = first.missing.length > 1 ? ` and ${first.missing.length - 1} more` : "";
  return `${lost.length} attachment(s), first ${first.attachment} (${first.missing[0]}${more})`;
}

/** Starts repairing; `stop` ends it (timers, the bus watch) without waiting for a reload under way. */
export function startRepair(o: RepairOptions): { stop(): void } {
  const env = o.env ?? process.env;
  const hooks: RepairHooks = {
    lost: () => lostFirewallState({ cacheDir: o.cacheDir, env }),
    reload: (only) => reloadFirewall({ cacheDir: o.cacheDir, env, ...(only ? { only } : {}) }),
    pause: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()),
    watch: (onReloaded, onEnd) => watchReloaded(env, onReloaded, onEnd),
    ...o.hooks,
  };
  let stopped = false;
  let busy = false;
  let reloadAsked = false;
  /** What was still missing after the last repair (not retried until it changes). */
  let unrepaired = "";
  let lastError = "";
  let timer: NodeJS.Timeout | undefined;
  let bus: BusWatch | undefined;
  let busTimer: NodeJS.Timeout | undefined;
  let busEnded = "";

  const fail = (what: string, e: unknown) => {
    const line = `${what}: ${messageOf(e)}`;
    if (line !== lastError) o.log(line);
    lastError = line;
  };

  const reload = async (why: string, only?: ReadonlySet<string>) => {
    o.log(`self-repair (${why}): reloading the firewall rules of ${only ? `${only.size} attachment(s)` : "the attachments"} in ${o.cacheDir}`);
    o.onReload?.();
    const results = await hooks.reload(only);
    for (const r of results) if (r.status === "restored" || r.status === "failed") o.log(formatReload(r));
    const count = (s: string) => results.filter((r) => r.status === s).length;
    o.log(`self-repair: ${count("restored")} restored, ${count("complete")} complete, ${count("failed")} failed, ${count("skipped")} skipped`);
  };

  /** A look for lost state, and a reload when something new is missing. */
  const look = async () => {
    const first = await hooks.lost();
    if (first.length === 0 || fingerprint(first) === unrepaired) {
      if (first.length === 0) unrepaired = "";
      return;
    }
    // Only what is still lost, the same way, after a pause: not an attachment whose DEL was under way.
    await hooks.pause(o.confirmMs ?? 2_000);
    const before = new Map(first.map((l) => [l.attachment, l.missing.join("\n")]));
    const lost = (await hooks.lost()).filter((l) => before.get(l.attachment) === l.missing.join("\n"));
    if (lost.length === 0) return;
    await reload(`firewall state lost: ${summary(lost)}`, new Set(lost.map((l) => l.attachment)));
    const still = await hooks.lost();
    unrepaired = fingerprint(still);
    if (still.length) o.log(`self-repair: still missing after the reload, not retried until what is missing changes: ${summary(still)}`);
  };

  /** Runs one piece of work at a time; a firewalld reload arriving meanwhile is done right after. */
  const run = async (work: () => Promise<void>) => {
    if (busy || stopped) return;
    busy = true;
    try {
      await work();
      lastError = "";
    } catch (e) {
      fail("self-repair failed", e);
    } finally {
      busy = false;
    }
    if (reloadAsked && !stopped) {
      reloadAsked = false;
      await run(() => reload("firewalld reloaded"));
    }
  };

  const onReloaded = () => {
    unrepaired = "";
    if (busy) reloadAsked = true;
    else void run(() => reload("firewalld reloaded"));
  };

  const schedule = () => {
    if (stopped || o.intervalMs <= 0) return;
    timer = setTimeout(() => void run(look).finally(schedule), o.intervalMs);
    timer.unref();
  };

  const watchBus = () => {
    if (stopped) return;
    try {
      bus = hooks.watch(onReloaded, (reason) => {
        bus = undefined;
        if (reason !== busEnded)
          o.log(`self-repair: stopped watching firewalld's reloads (${reason}); watching again in ${(o.busRetryMs ?? BUS_RETRY_MS) / 1000} s`);
        busEnded = reason;
        retryBus();
      });
    } catch (e) {
      fail("self-repair: cannot watch firewalld's reloads", e);
    }
    if (!bus) retryBus();
  };
  const retryBus = () => {
    if (stopped) return;
    busTimer = setTimeout(watchBus, o.busRetryMs ?? BUS_RETRY_MS);
    busTimer.unref();
  };

  watchBus();
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(busTimer);
      bus?.stop();
    },
  };
}
