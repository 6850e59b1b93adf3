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

/** How many containers are traced each way; the table gives each figure's median over them. */
const TRACED = 5;

/** The calls of the last `count` containers in a trace file: per container, its calls in order, with their phases' own times. */
function lastContainers(file, count) {
  if (!existsSync(file)) return [];
  const calls = readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((c) => c.containerID && !c.containerID.startsWith("tscni-warm-up"));
  const ids = [...new Set(calls.map((c) => c.containerID))].slice(-count);
  return ids.map((id) => calls.filter((c) => c.containerID === id).map((c) => ({ ...c, phases: selfTimes(c.phases) })));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : 0;
};

/** Traces TRACED podman containers (after warm-up runs) both ways; resolves to { default: containers, exec: containers }. */
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
    for (let i = 0; i < 4 + TRACED; i++) {
      setup.runners.resident();
      setup.runners.ours();
    }
    return { default: lastContainers(serverFile, TRACED), exec: lastContainers(execFile, TRACED) };
  } finally {
    setup?.cleanup();
    spawnSync(cnitool, ["daemon", "stop", "--socket", socket]);
    for (let i = 0; i < 50 && server.exitCode === null; i++) await sleep(100);
    if (server.exitCode === null) server.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

const KINDS = ["netlink", "spawn", "sysctl", "netns", "ipam store", "lock wait", "delegate", "load", "wait"];

/**
 * The traced containers as rows: per call (the same calls in the same order in every container), the median of its
 * time, of each kind of phase's time and count, and of the rest.
 */
function medianRows(containers) {
  const shape = (c) => c.map((x) => `${x.program} ${x.command}`).join(",");
  const alike = containers.filter((c) => shape(c) === shape(containers.at(-1)));
  return alike.at(-1).map((call, i) => {
    const same = alike.map((c) => c[i]);
    const kinds = Object.fromEntries(
      KINDS.map((k) => {
        const per = same.map((c) => c.phases.filter((p) => p.kind === k));
        return [k, { ms: median(per.map((ps) => ps.reduce((n, p) => n + p.self, 0))), n: median(per.map((ps) => ps.length)) }];
      }),
    );
    return {
      name: `${call.program} ${call.command}`,
      ms: median(same.map((c) => c.ms)),
      kinds,
      rest: median(same.map((c) => c.ms - c.phases.reduce((n, p) => n + p.self, 0))),
    };
  });
}

/** The trace as markdown: one row per call, the time by kind of phase (medians over the traced containers), and the slowest phases by name. */
export function traceTable(trace, shares) {
  const lines = [];
  for (const [mode, label] of [
    ["default", "ours, default (the resident server)"],
    ["exec", "ours, exec mode (a process per call)"],
  ]) {
    const containers = trace[mode];
    if (!containers?.length) continue;
    const rows = medianRows(containers);
    const total = median(containers.map((c) => c.reduce((n, x) => n + x.ms, 0)));
    const share = shares?.[mode === "default" ? "resident" : "ours"];
    lines.push(
      `**${label}**, medians over ${containers.length} traced containers: the plugin calls of one container took ${total.toFixed(1)} ms in all` +
        (share !== undefined
          ? `, of a network share of ${share.toFixed(1)} ms: the other ${(share - total).toFixed(1)} ms are podman's own` +
            " (its network namespace, its libcni: VERSION probes, the result cache, locks) and the launch of each call" +
            (mode === "default" ? " (the launcher, the socket)" : " (a process per call: its start is not in these figures)")
          : "") +
        ".",
      "",
    );
    lines.push(`| call | ms | ${KINDS.join(" | ")} | the rest (plugin code) |`, `|---|---:|${KINDS.map(() => "---:").join("|")}|---:|`);
    const cell = (k) => (k.n ? `${k.ms.toFixed(1)} (${k.n})` : "-");
    for (const r of rows) lines.push(`| ${r.name} | ${r.ms.toFixed(1)} | ${KINDS.map((k) => cell(r.kinds[k])).join(" | ")} | ${r.rest.toFixed(1)} |`);
    // The slowest phases of the container whose calls took the median time.
    const byTotal = [...containers].sort((a, b) => a.reduce((n, x) => n + x.ms, 0) - b.reduce((n, x) => n + x.ms, 0));
    const middle = byTotal[Math.floor((byTotal.length - 1) / 2)];
    const slowest = middle
      .flatMap((c) => c.phases.map((p) => ({ ...p, call: `${c.program} ${c.command}` })))
      .sort((a, b) => b.self - a.self)
      .slice(0, 5);
    lines.push(
      "",
      `Slowest phases (of the median container): ${slowest.map((p) => `${p.call}: ${p.kind} "${p.label.replace(/\/run\/netns\/\S+/g, "<netns>").replace(/\|/g, "/")}" ${p.self.toFixed(1)} ms`).join("; ")}.`,
      "",
    );
  }
  return lines;
}
