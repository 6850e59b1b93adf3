/**
 * The crash simulator (`npm run test:crash`; issue 32, docs/state.md): for every store of stores.ts, the
 * scenario's file operations are recorded, every state a process kill or a power loss at any point can leave is
 * written out (model.ts), the node's recovery runs on it, and the invariants are checked. Prints, per store, the
 * states explored and the invariants broken (the first few in full), and last `crash states: N, violations: V`.
 * Exits non-zero on any violation, or when fewer than --min states were explored (default 10,000).
 *
 *   bun dist-test/testing/crash/run.js [--power-per-point 48] [--min 10000] [--only <store>]
 *
 * (--power-per-point is for the stores that do not set their own: the cheap ones explore more.)
 *
 * Run by Bun (the plugins' locks are flock(2) through its FFI; under Node each would start flock(1)).
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { existsSync } from "node:fs";
import { recordStateOps, type StateOp } from "#sys/state.js";
import { killedAfter, powerLossAfter, readTree, relativeOp, seeded, treeKey, writeTree, type Tree } from "./model.js";
import { STORES, type CrashContext, type Pod, type Store } from "./stores.js";

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1]! : dflt;
};
const POWER_PER_POINT = Number(opt("--power-per-point", "48"));
const MIN_STATES = Number(opt("--min", "10000"));
const ONLY = opt("--only", "");

/** Scratch space: memory-backed where there is some (thousands of small directories). */
const scratchBase = existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir();

interface Report {
  store: string;
  kill: number;
  power: number;
  violations: string[];
}

/** Runs `store`'s scenario once, recording its operations and where each step ended. */
async function record(store: Store): Promise<{ base: Tree; ops: StateOp[]; ends: number[]; steps: ReturnType<Store["steps"]> }> {
  const root = mkdtempSync(path.join(scratchBase, "tscni-crash-rec-"));
  try {
    await store.setup?.(root);
    const base = readTree(root);
    const ops: StateOp[] = [];
    const ends: number[] = [];
    const steps = store.steps(root);
    recordStateOps((op) => {
      const rel = relativeOp(op, root);
      if (rel) ops.push(rel);
    });
    try {
      for (const step of steps) {
        await step.run(root);
        ends.push(ops.length);
      }
    } finally {
      recordStateOps(undefined);
    }
    return { base, ops, ends, steps };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Runs one store through every crash point. */
async function simulate(store: Store): Promise<Report> {
  const { base, ops, ends, steps } = await record(store);
  const all = [...new Map(steps.flatMap((s) => (s.pod ? [[`${s.pod.id}/${s.pod.ifname}`, s.pod] as const] : []))).values()];
  const seen = new Set<string>();
  const report: Report = { store: store.name, kill: 0, power: 0, violations: [] };
  const random = seeded(0x5eed);
  const run = async (tree: Tree, ctx: Omit<CrashContext, "root">, label: string) => {
    // (A store with state outside the files, cluster-ipam's etcd, sees the step too: the same files are another state.)
    const key =
      `${ctx.mode}:${treeKey(tree)}:${ctx.interrupted ? name(ctx.interrupted) : ""}:${ctx.live.map(name).join(",")}` +
      (store.outsideState ? `:${ctx.stepsDone}:${ctx.opsOfInterrupted > 0}` : "");
    if (seen.has(key)) return;
    seen.add(key);
    if (ctx.mode === "kill") report.kill++;
    else report.power++;
    const root = mkdtempSync(path.join(scratchBase, "tscni-crash-"));
    try {
      mkdirSync(root, { recursive: true });
      writeTree(root, tree);
      for (const v of await store.recover({ ...ctx, root })) report.violations.push(`${label}: ${v}`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
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
      for (const s of complete) {
        if (s.kind === "add" && s.pod) live.push(s.pod);
        if (s.kind === "del" && s.pod) drop(live, s.pod);
      }
      const interrupted = steps[done]?.pod;
      // A DEL cut short is retried by the runtime: its pod is not live any more.
      if (interrupted && steps[done]!.kind === "del") drop(live, interrupted);
      const at =
        (k === 0 ? "before any operation" : `after operation ${k} (${describe(ops[k - 1]!)})`) + (least < most ? `, ${done} steps done` : "");
      const progress = { stepsDone: done, opsOfInterrupted: k - (done > 0 ? ends[done - 1]! : 0) };
      await run(killedAfter(base, ops, k), { mode: "kill", live, all, ...progress, ...(interrupted ? { interrupted } : {}) }, `kill ${at}`);
      const states = powerLossAfter(base, ops, k, store.powerPerPoint ?? POWER_PER_POINT, random);
      for (const [i, tree] of states.entries()) await run(tree, { mode: "power", live: [], all, ...progress }, `power loss ${at}, variant ${i}`);
    }
  }
  return report;
}

const name = (p: Pod): string => `${p.id}/${p.ifname}`;
/** Removes `pod` from `pods`. */
function drop(pods: Pod[], pod: Pod): void {
  const i = pods.findIndex((p) => name(p) === name(pod));
  if (i >= 0) pods.splice(i, 1);
}

const describe = (op: StateOp): string => (op.op === "rename" ? `rename ${op.from} -> ${op.to}` : `${op.op} ${op.path}`);

const reports: Report[] = [];
for (const store of STORES.filter((s) => !ONLY || s.name.includes(ONLY))) {
  const t0 = performance.now();
  const r = await simulate(store);
  await store.teardown?.();
  reports.push(r);
  console.log(
    `${r.store}: ${r.kill + r.power} states (${r.kill} after a kill, ${r.power} after a power loss), ${r.violations.length} violations, ${Math.round(performance.now() - t0)} ms`,
  );
  for (const v of r.violations.slice(0, 5)) console.log(`  ${v}`);
}
const total = reports.reduce((n, r) => n + r.kill + r.power, 0);
const violations = reports.reduce((n, r) => n + r.violations.length, 0);
console.log(`crash states: ${total}, violations: ${violations}`);
if (violations > 0 || (!ONLY && total < MIN_STATES)) {
  if (total < MIN_STATES) console.log(`(fewer than ${MIN_STATES} states)`);
  process.exitCode = 1;
}
