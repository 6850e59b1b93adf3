/**
 * The crash simulator (`npm run test:crash`; issues 32 and 49, docs/state.md): for every store of stores.ts, the
 * scenario's file operations are recorded, every state a process kill or a power loss at any point can leave is
 * written out (model.ts), the node's recovery runs on it — in each way a runtime recovers (stores.ts RECOVERIES),
 * each on its own copy — and the invariants are checked. Recovery is itself killed after each of its file
 * operations, and run again on what it left; some recoveries also lose the power after each (the node reboots
 * again, and recovers once more). Prints, per store, the states explored by class and the invariants
 * broken (the first few in full), and last `crash states: N, violations: V`. Exits non-zero on any violation, or
 * when fewer than --min states were explored (default 10,000).
 *
 *   bun dist-test/testing/crash/run.js [--power-per-point 48] [--min 10000] [--only <store>] [--nested-power 64]
 *     [--recovery-power 4] [--first]
 *
 * (--power-per-point is for the stores that do not set their own: the cheap ones explore more; --nested-power N
 * kills the recovery of one power-loss state in N; --recovery-power N: of those killed recoveries, one in N also
 * loses the power after each of its operations (two sampled states each); --first stops a store at its first violation, for the mutants.)
 * "Known limitations met" are what stores.ts marks NOTE: not violations (docs/state.md says which and why).
 *
 * Every file operation of a call must go through sys/state.ts, where it is recorded: after each step of a scenario
 * and each recovery, the directory on disk is compared with what the recorded operations make of it, and a
 * difference (a write around sys/state.ts) is a violation.
 *
 * Run by Bun (the plugins' locks are flock(2) through its FFI; under Node each would start flock(1)).
 * @module
 */
import { existsSync, mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { recordStateOps, type StateOp } from "#sys/state.js";
import { killedAfter, powerLossAfter, powerLossStates, readTree, relativeOp, seeded, type Tree, treeKey, writeTree } from "./model.js";
import { type CrashContext, NOTE, type Pod, podName, RECOVERIES, STORES, type Store } from "./stores.js";

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1]! : dflt;
};
const POWER_PER_POINT = Number(opt("--power-per-point", "48"));
const MIN_STATES = Number(opt("--min", "10000"));
const ONLY = opt("--only", "");
/** The recovery of one power-loss state in this many is killed after each of its operations. */
const NESTED_POWER = Number(opt("--nested-power", "64"));
/** Of the recoveries killed after each operation, one in this many also loses the power after each (then reboots). */
const RECOVERY_POWER = Number(opt("--recovery-power", "4"));
/** Stop a store at its first violation (the mutants' runs: scripts/crash-mutants.mjs). */
const FIRST = args.includes("--first");
class Enough extends Error {}

/** Scratch space: memory-backed where there is some (thousands of small directories). */
const scratchBase = existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir();
/**
 * Where the scenario runs and each state is recovered, one after the other: always the same directory, made empty,
 * so the paths a store writes into its files (flannel's saved config names its delegate's dataDir) mean the same
 * directory in every state.
 */
// (The pid padded: paths written into files, as flannel's, are as long in every run, so torn cuts fall alike.)
const workDir = path.join(scratchBase, `tscni-crash-${String(process.pid).padStart(8, "0")}`);
const freshWorkDir = (): string => {
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  return workDir;
};

type StateClass = "kill" | "power, last operations" | "power, sampled" | "recovery killed" | "recovery power loss";
const CLASSES: readonly StateClass[] = ["kill", "power, last operations", "power, sampled", "recovery killed", "recovery power loss"];

interface Report {
  store: string;
  counts: Map<StateClass, number>;
  /** States times the recoveries each was recovered by. */
  recoveries: number;
  violations: string[];
  /** Known limitations met (stores.ts NOTE): not violations. */
  notes: string[];
}

/** Lock files (flock(2) on an empty file, sys/flock.ts) are not state: made outside sys/state.ts, holding nothing. */
const isLockFile = (rel: string, v: "dir" | Buffer | undefined): boolean =>
  v !== undefined && v !== "dir" && v.length === 0 && /(^|\/)(lock|[^/]*\.lock)$/.test(rel);

/** Where the directory on disk differs from what the recorded operations make of it (empty: nowhere). */
function unrecorded(actual: Tree, modelled: Tree): string[] {
  const out: string[] = [];
  for (const [rel, v] of actual) {
    const m = modelled.get(rel);
    if (m === undefined) {
      if (!isLockFile(rel, v) && !(v === "dir" && [...actual.keys()].some((k) => k.startsWith(`${rel}/`) && isLockFile(k, actual.get(k)))))
        out.push(`${rel} exists`);
    } else if (m === "dir" ? v !== "dir" : v === "dir" || !m.equals(v)) out.push(`${rel} differs`);
  }
  for (const rel of modelled.keys()) if (!actual.has(rel)) out.push(`${rel} is gone`);
  return out;
}
const bypass = (where: string, diff: string[]) =>
  `${where}: a file operation not made through sys/state.ts (the directory differs from the recorded operations: ${diff.slice(0, 3).join(", ")})`;

/** Runs `store`'s scenario once, recording its operations, where each step ended and what each ADD answered. */
async function record(store: Store) {
  const root = freshWorkDir();
  try {
    await store.setup?.(root);
    const base = readTree(root);
    const ops: StateOp[] = [];
    const ends: number[] = [];
    const answers: Array<string[] | undefined> = [];
    const problems: string[] = [];
    const steps = store.steps(root);
    recordStateOps((op) => {
      const rel = relativeOp(op, root);
      if (rel) ops.push(rel);
    });
    try {
      for (const [i, step] of steps.entries()) {
        try {
          answers.push((await step.run(root, () => ops.length - (ends.at(-1) ?? 0))) ?? undefined);
        } catch (e) {
          // The scenario itself fails (a DEL that released nothing leaves no room): a violation; the steps before it
          // are explored.
          problems.push(`step ${i + 1} of the scenario failed: ${e instanceof Error ? e.message : String(e)}`);
          steps.splice(i);
          ops.splice(ends.at(-1) ?? 0);
          break;
        }
        ends.push(ops.length);
        const diff = unrecorded(readTree(root), killedAfter(base, ops, ops.length));
        if (diff.length) problems.push(bypass(`step ${i + 1} of the scenario`, diff));
      }
    } finally {
      recordStateOps(undefined);
    }
    return { base, ops, ends, steps, answers, problems };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Runs one store through every crash point, every recovery, and every kill of a recovery. */
async function simulate(store: Store): Promise<Report> {
  const { base, ops, ends, steps, answers, problems } = await record(store);
  const report: Report = { store: store.name, counts: new Map(CLASSES.map((c) => [c, 0])), recoveries: 0, violations: [...problems], notes: [] };
  try {
    await explore(store, report, base, ops, ends, steps, answers);
  } catch (e) {
    if (!(e instanceof Enough)) throw e;
  }
  const inner = store.innerStates?.();
  if (inner) {
    report.counts.set("kill", report.counts.get("kill")! + inner.kill);
    report.counts.set("power, last operations", report.counts.get("power, last operations")! + inner.power);
    report.counts.set("recovery killed", report.counts.get("recovery killed")! + inner.recoveryKilled);
  }
  return report;
}

/** Explores every state of `store`'s recorded scenario, into `report`. */
async function explore(
  store: Store,
  report: Report,
  base: Tree,
  ops: StateOp[],
  ends: number[],
  steps: ReturnType<Store["steps"]>,
  answers: Array<string[] | undefined>,
): Promise<void> {
  const all = [...new Map(steps.flatMap((s) => (s.pod ? [[podName(s.pod), s.pod] as const] : []))).values()];
  const seen = new Set<string>();
  const random = seeded(0x5eed);
  let powerSeen = 0;
  let nestedSeen = 0;
  // (Its own generator: the power losses of recoveries leave the main states' samples as they are.)
  const nestedRandom = seeded(0x5eed + 1);
  // A reboot: /run is empty (a volatile store's files with it) and the kernel's state (a store's kernel model) is
  // gone, or as it is at boot.
  const reboot = (tree: Tree): Tree =>
    store.volatile
      ? new Map()
      : store.kernel
        ? new Map([
            ...[...tree].filter(([rel]) => !store.kernel!.some((k) => rel === k || rel.startsWith(`${k}/`))),
            ...(store.kernelAtBoot?.() ?? []),
          ])
        : tree;

  /** Recovers `tree` by ctx.recovery and checks; unless `nested`, then kills that recovery after each of its operations. */
  const run = async (tree: Tree, ctx: Omit<CrashContext, "root">, label: string, nested = false): Promise<boolean> => {
    // (A store with state outside the files, cluster-ipam's etcd, sees the step too: the same files are another state.)
    const key =
      `${ctx.mode}:${ctx.recovery}:${treeKey(tree)}:${ctx.interrupted ? podName(ctx.interrupted) : ""}:${ctx.live.map(podName).join(",")}:` +
      ctx.remembered.map(podName).join(",") +
      (store.outsideState ? `:${ctx.stepsDone}:${ctx.opsOfInterrupted}` : "");
    if (seen.has(key)) return false;
    seen.add(key);
    report.recoveries++;
    const root = freshWorkDir();
    const recOps: StateOp[] = [];
    try {
      mkdirSync(root, { recursive: true });
      writeTree(root, tree);
      const full = { ...ctx, root };
      recordStateOps((op) => {
        const rel = relativeOp(op, root);
        if (rel) recOps.push(rel);
      });
      let found: string[];
      try {
        found = await store.recover(full);
      } finally {
        recordStateOps(undefined);
      }
      const diff = unrecorded(readTree(root), killedAfter(tree, recOps, recOps.length));
      if (diff.length) found.push(bypass("the recovery", diff));
      if (!found.length && store.check) found = await store.check(full);
      for (const v of found) (v.startsWith(NOTE) ? report.notes : report.violations).push(`${label} [${ctx.recovery}]: ${v.replace(NOTE, "")}`);
      if (FIRST && report.violations.length) throw new Enough();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    // A kill of the recovery itself (during a GC, a DEL): the runtime runs it again on what it left. After every
    // kill, and after one power loss in NESTED_POWER (a reboot's recovery DELs every old attachment: long).
    // One such recovery in RECOVERY_POWER also loses the power after each of its operations: the node reboots
    // again, and the runtime DELs every attachment it remembers once more (two sampled states per point).
    if (!nested && !store.outsideState && (ctx.mode === "kill" || powerSeen++ % NESTED_POWER === 0)) {
      const power = nestedSeen++ % RECOVERY_POWER === 0;
      const { interrupted: _, ...rest } = ctx;
      const rebooted = { ...rest, mode: "power" as const, live: [] };
      for (let k = 1; k < recOps.length; k++) {
        const what = recOps[k - 1]!;
        if (what.op === "fsync" || what.op === "fsyncDir") continue;
        if (await run(killedAfter(tree, recOps, k), ctx, `${label}, its recovery killed after ${describe(what)}`, true)) bump("recovery killed");
        if (!power) continue;
        for (const [i, t] of powerLossAfter(tree, recOps, k, 2, nestedRandom).entries())
          if (await run(reboot(t), rebooted, `${label}, power lost in its recovery after ${describe(what)} (variant ${i})`, true))
            bump("recovery power loss");
      }
    }
    return true;
  };
  const bump = (cls: StateClass) => report.counts.set(cls, report.counts.get(cls)! + 1);
  const recoveries = store.recoveries ?? RECOVERIES;
  const recoverAll = async (tree: Tree, ctx: Omit<CrashContext, "root" | "recovery">, cls: StateClass, label: string) => {
    let fresh = false;
    for (const recovery of recoveries) if (await run(tree, { ...ctx, recovery }, label)) fresh = true;
    if (fresh) bump(cls);
  };

  for (let k = 0; k <= ops.length; k++) {
    // Steps complete at the crash. A step with no file operation of its own ends where the one before it ends: for a
    // store with state outside the files (etcd), the crash may come before or after it, so every such count is a
    // point of its own; for the others the files say the same, and the last count stands for them all.
    const most = steps.filter((_, i) => ends[i]! <= k).length;
    let least = most;
    while (store.outsideState && least > 0 && ends[least - 1]! === k) least--;
    for (let done = least; done <= most; done++) {
      const complete = steps.slice(0, done);
      const live: Pod[] = [];
      const answered = new Map<string, readonly string[]>();
      complete.forEach((s, i) => {
        if (s.kind === "add" && s.pod) {
          live.push(s.pod);
          if (answers[i]) answered.set(podName(s.pod), answers[i]!);
        }
        if (s.kind === "del" && s.pod) {
          drop(live, s.pod);
          answered.delete(podName(s.pod));
        }
      });
      const interrupted = steps[done]?.pod;
      // A DEL cut short is retried by the runtime: its pod is not live any more.
      if (interrupted && steps[done]!.kind === "del") drop(live, interrupted);
      const remembered = interrupted ? [...live, interrupted] : [...live];
      const at =
        (k === 0 ? "before any operation" : `after operation ${k} (${describe(ops[k - 1]!)})`) + (least < most ? `, ${done} steps done` : "");
      const progress = { stepsDone: done, opsOfInterrupted: k - (done > 0 ? ends[done - 1]! : 0) };
      await recoverAll(
        killedAfter(base, ops, k),
        { mode: "kill", live, all, remembered, answered, ...progress, ...(interrupted ? { interrupted } : {}) },
        "kill",
        `kill ${at}`,
      );
      // A reboot: no container survives, /run is empty (a volatile store's files with it).
      const power = { mode: "power" as const, live: [], all, remembered, answered, ...progress };
      if (store.volatile) {
        await recoverAll(reboot(new Map()), power, "power, last operations", `power loss ${at} (/run emptied)`);
        continue;
      }
      // The last operations: those of the call the crash cut, or else of the call that ended last.
      const recentFrom = k === 0 ? 0 : Math.max(0, ...[0, ...ends].filter((e) => e <= k - 1));
      const { recent, sampled } = powerLossStates(base, ops, k, store.powerPerPoint ?? POWER_PER_POINT, random, recentFrom);
      for (const [i, tree] of recent.map(reboot).entries())
        await recoverAll(tree, power, "power, last operations", `power loss ${at}, last-operations variant ${i}`);
      for (const [i, tree] of sampled.map(reboot).entries())
        await recoverAll(tree, power, "power, sampled", `power loss ${at}, sampled variant ${i}`);
    }
  }
}

/** Removes `pod` from `pods`. */
function drop(pods: Pod[], pod: Pod): void {
  const i = pods.findIndex((p) => podName(p) === podName(pod));
  if (i >= 0) pods.splice(i, 1);
}

const describe = (op: StateOp): string => (op.op === "rename" ? `rename ${op.from} -> ${op.to}` : `${op.op} ${op.path}`);

const reports: Report[] = [];
const started = performance.now();
for (const store of STORES.filter((s) => !ONLY || s.name.includes(ONLY))) {
  const t0 = performance.now();
  const r = await simulate(store);
  await store.teardown?.();
  reports.push(r);
  const states = [...r.counts.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${r.store}: ${states} states (${CLASSES.map((c) => `${r.counts.get(c)} ${c}`).join(", ")}), ${r.recoveries} recoveries ` +
      `(${(store.recoveries ?? RECOVERIES).join(", ")}), ${r.violations.length} violations, ${Math.round(performance.now() - t0)} ms`,
  );
  if (r.notes.length) console.log(`  (${r.notes.length} known limitations met, e.g. ${r.notes[0]})`);
  for (const v of r.violations.slice(0, 5)) console.log(`  ${v}`);
}
const total = reports.reduce((n, r) => n + [...r.counts.values()].reduce((a, b) => a + b, 0), 0);
const violations = reports.reduce((n, r) => n + r.violations.length, 0);
console.log(`crash states: ${total}, violations: ${violations}, ${Math.round((performance.now() - started) / 1000)} s`);
if (violations > 0 || (!ONLY && total < MIN_STATES)) {
  if (total < MIN_STATES) console.log(`(fewer than ${MIN_STATES} states)`);
  process.exitCode = 1;
}
