// Where one container's network time goes: podman runs a container with our plugins, once through a resident
// server started with --trace-phases and once in exec mode with TSCNI_TRACE_PHASES (src/sys/phase-trace.ts), and
// the last container's calls are read back phase by phase. The caller runs this inside the benchmark's own host
// namespace, with no other server on `socket`.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setupPodman } from "./podman.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Each phase's own time: its length minus the phases directly inside it. */
function selfTimes(phases) {
  return phases.map((p) => {
    const inner = phases.filter((q) => q.depth === p.depth + 1 && q.start >= p.start && q.start + q.ms <= p.start + p.ms + 0.001);
    return { ...p, self: Math.max(0, p.ms - inner.reduce((n, q) => n + q.ms, 0)) };
  });
}

/** The calls of the last container in a trace file, in order, each with its phases' own times. */
function lastContainer(file) {
  if (!existsSync(file)) return [];
  const calls = readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((c) => c.containerID && !c.containerID.startsWith("tscni-warm-up"));
  const last = calls.at(-1)?.containerID;
  return calls.filter((c) => c.containerID === last).map((c) => ({ ...c, phases: selfTimes(c.phases) }));
}

/** Traces one podman container (after warm-up runs) both ways; resolves to { default: calls, exec: calls }. */
export async function tracePodman({ ours, cnitool, socket, types, residentEnv, execEnv }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-bench-trace-"));
  const serverFile = path.join(dir, "server.jsonl");
  const execFile = path.join(dir, "exec.jsonl");
  const server = spawn(cnitool, ["daemon", "--socket", socket, "--trace-phases", serverFile], { stdio: "ignore", detached: true });
  let setup;
  try {
    for (let i = 0; i < 100 && spawnSync(cnitool, ["daemon", "status", "--socket", socket]).status !== 0; i++) await sleep(100);
    await sleep(3000); // its warm-up
    setup = setupPodman({ resident: ours, ours }, types, { resident: residentEnv, ours: { ...execEnv, TSCNI_TRACE_PHASES: execFile } });
    for (let i = 0; i < 4; i++) {
      setup.runners.resident();
      setup.runners.ours();
    }
    return { default: lastContainer(serverFile), exec: lastContainer(execFile) };
  } finally {
    setup?.cleanup();
    spawnSync(cnitool, ["daemon", "stop", "--socket", socket]);
    for (let i = 0; i < 50 && server.exitCode === null; i++) await sleep(100);
    if (server.exitCode === null) server.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

const KINDS = ["netlink", "spawn", "sysctl", "netns", "ipam store", "lock wait", "delegate", "load", "wait"];

/** The trace as markdown: one row per call, the time by kind of phase, and the slowest phases by name. */
export function traceTable(trace, shares) {
  const lines = [];
  for (const [mode, label] of [
    ["default", "ours, default (the resident server)"],
    ["exec", "ours, exec mode (a process per call)"],
  ]) {
    const calls = trace[mode];
    if (!calls?.length) continue;
    const total = calls.reduce((n, c) => n + c.ms, 0);
    const share = shares?.[mode === "default" ? "resident" : "ours"];
    lines.push(
      `**${label}**: the plugin calls of one container took ${total.toFixed(1)} ms in all` +
        (share !== undefined
          ? `, of a network share of ${share.toFixed(1)} ms: the other ${(share - total).toFixed(1)} ms are podman's own` +
            " (its network namespace, its libcni: VERSION probes, the result cache, locks) and the launch of each call" +
            (mode === "default" ? " (the launcher, the socket)" : " (a process per call: its start is not in these figures)")
          : "") +
        ".",
      "",
    );
    lines.push(`| call | ms | ${KINDS.join(" | ")} | the rest (plugin code) |`, `|---|---:|${KINDS.map(() => "---:").join("|")}|---:|`);
    const cell = (phases) => (phases.length ? `${phases.reduce((n, p) => n + p.self, 0).toFixed(1)} (${phases.length})` : "-");
    for (const c of calls) {
      const phases = c.phases;
      const rest = c.ms - phases.reduce((n, p) => n + p.self, 0);
      lines.push(
        `| ${c.program} ${c.command} | ${c.ms.toFixed(1)} | ${KINDS.map((k) => cell(phases.filter((p) => p.kind === k))).join(" | ")} | ${rest.toFixed(1)} |`,
      );
    }
    const slowest = calls
      .flatMap((c) => c.phases.map((p) => ({ ...p, call: `${c.program} ${c.command}` })))
      .sort((a, b) => b.self - a.self)
      .slice(0, 5);
    lines.push(
      "",
      `Slowest phases: ${slowest.map((p) => `${p.call}: ${p.kind} "${p.label.replace(/\/run\/netns\/\S+/g, "<netns>").replace(/\|/g, "/")}" ${p.self.toFixed(1)} ms`).join("; ")}.`,
      "",
    );
  }
  return lines;
}
