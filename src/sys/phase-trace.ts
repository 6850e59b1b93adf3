/**
 * Where a plugin call's time goes, phase by phase: an instrument for the benchmark and for an operator chasing a
 * slow node (docs/benchmarks.md, docs/resident.md). Off unless a program turns it on (`cnitool daemon
 * --trace-phases FILE`, or TSCNI_TRACE_PHASES=FILE read by an exec-mode program's entry); while off, a phase costs
 * one comparison and the work runs as it would.
 *
 * On, every call (tracedCall) becomes one JSON line appended to the file: the program, the CNI command, the
 * container, when it started (ms since the epoch, comparable across processes) and how long it took, and its
 * phases in the order they ended: the kernel requests (netlink, by operation), the tools spawned, sysctl writes,
 * namespace entries, lock waits, the IPAM store's critical sections, delegations, each with its start and length.
 * Phases of concurrent calls are told apart by the async context they run in (node:async_hooks, loaded only when
 * on). Phases can nest (a delegation holds its delegate's netlink requests); readers that add them up take the
 * innermost ones.
 * @module
 */
import type { AsyncLocalStorage } from "node:async_hooks";

/** One timed step of a call. `start` is ms since the epoch; `depth` counts the phases around it. */
export interface PhaseRecord {
  kind: string;
  label: string;
  start: number;
  ms: number;
  depth: number;
}

/** One call as the trace file holds it (a JSON line). */
export interface CallTraceRecord {
  program: string;
  command: string;
  containerID: string;
  ifName: string;
  /** Where the call ran: "server" (the resident server's process) or "exec" (a process of its own). */
  where: string;
  start: number;
  ms: number;
  phases: PhaseRecord[];
}

interface CallState {
  phases: PhaseRecord[];
  depth: number;
}

let fd = -1;
let storage: AsyncLocalStorage<CallState> | undefined;

const nowMs = (): number => performance.timeOrigin + performance.now();

/**
 * Starts recording into `file` (appended to, created 0600; a symlink there is refused: the file is the caller's
 * to name, not to be redirected; node opens it close-on-exec, so no tool inherits it). Throws node:fs's error
 * when it cannot be opened.
 */
export function enablePhaseTrace(file: string): void {
  if (fd >= 0) return;
  // Loaded when asked for: every call's start path imports this module (docs/startup.md).
  const { openSync, constants } = process.getBuiltinModule("node:fs");
  fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  const { AsyncLocalStorage: Storage } = process.getBuiltinModule("node:async_hooks");
  storage = new Storage<CallState>();
}

/** Stops recording (the file is closed). */
export function disablePhaseTrace(): void {
  if (fd >= 0) process.getBuiltinModule("node:fs").closeSync(fd);
  fd = -1;
  storage = undefined;
}

/** Whether calls are being recorded. */
export const phaseTraceOn = (): boolean => fd >= 0;

/** Runs one call, recording it and its phases as one line when the trace is on. */
export async function tracedCall<T>(call: Omit<CallTraceRecord, "start" | "ms" | "phases">, work: () => Promise<T>): Promise<T> {
  if (!storage) return work();
  const state: CallState = { phases: [], depth: 0 };
  const start = nowMs();
  try {
    return await storage.run(state, work);
  } finally {
    const record: CallTraceRecord = { ...call, start, ms: nowMs() - start, phases: state.phases };
    if (fd >= 0) {
      try {
        process.getBuiltinModule("node:fs").writeSync(fd, `${JSON.stringify(record)}\n`);
      } catch {
        // a full disk loses a trace line, never a call
      }
    }
  }
}

/** Times `work` (synchronous) as a phase of the current call, when recording. */
export function phaseSync<T>(kind: string, label: string, work: () => T): T {
  const state = storage?.getStore();
  if (!state) return work();
  const start = nowMs();
  try {
    return storage!.run({ phases: state.phases, depth: state.depth + 1 }, work);
  } finally {
    state.phases.push({ kind, label, start, ms: nowMs() - start, depth: state.depth });
  }
}

/** Times `work` (asynchronous) as a phase of the current call, when recording. */
export async function phase<T>(kind: string, label: string, work: () => Promise<T>): Promise<T> {
  const state = storage?.getStore();
  if (!state) return work();
  const start = nowMs();
  try {
    return await storage!.run({ phases: state.phases, depth: state.depth + 1 }, work);
  } finally {
    state.phases.push({ kind, label, start, ms: nowMs() - start, depth: state.depth });
  }
}

/** Now, on the trace's clock (ms since the epoch), for a phase timed by hand (endPhase). */
export const phaseClock = (): number => (storage ? nowMs() : 0);

/** Records a phase of the current call that began at `start` (phaseClock) and ends now, when recording. */
export function endPhase(kind: string, label: string, start: number): void {
  const state = storage?.getStore();
  if (state) state.phases.push({ kind, label, start, ms: nowMs() - start, depth: state.depth });
}
