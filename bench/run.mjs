#!/usr/bin/env node
// The tscni benchmark: our plugins as a plain install runs them (the default: the launcher starts a resident
// server on the first call and hands calls to it) and in exec mode (TSCNI_RESIDENT=exec: every call starts the
// program), and Debian's Go plugins, side by side, interleaved in one run, medians and ratios against Go. Writes
// docs/benchmarks.md from the run (all but its Reliability section, which bench/kill.mjs writes). Not part of the
// test suite.
//
//   node bench/run.mjs [--rounds 15] [--out docs/benchmarks.md] [--only <substring>] [--pods 100]   (as root; `npm run build` first)
//
// --only runs just the scenarios whose name contains the substring, or one of several separated by "|" (and skips
// peak RSS unless it matches). --pods sets the pods scenarios' burst (100; their largest is twice that).
//
// Everything runs inside namespaces the benchmark creates (a "host" namespace holds the bridges and
// firewall rules; each container is a fresh namespace), so the real host is not touched.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { clusterTable, runClusterBench } from "./cluster.mjs";
import { CONTAINERD_CHAIN, containerdSkipReason, setupContainerd } from "./containerd.mjs";
import { podmanAvailable, setupPodman } from "./podman.mjs";
import { runFloor, runPods } from "./pods.mjs";
import { runThirdParty, thirdPartyTable } from "./third-party.mjs";
import { tracePodman, traceTable } from "./trace.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OURS = path.join(ROOT, "dist/bin");
const GO = "/usr/lib/cni";
// Resident mode needs the C launcher (it is what forwards calls and starts the server); without it only exec mode
// is measured. "resident" is the default install's behaviour: nobody starts a server by hand, the first call does.
const RESIDENT = existsSync(path.join(ROOT, "dist/tscni"));
const IMPLS = RESIDENT ? ["ours", "resident", "go"] : ["ours", "go"];
const BIN_DIRS = { ours: OURS, resident: OURS, go: GO, none: OURS };
const IMPL_INDEX = { ours: 1, go: 2, resident: 3 }; // picks each implementation's subnet
// The benchmark runs in namespaces of its own, so it names its socket (a server is then started in the caller's
// namespaces, as on the node's own socket for the node's runtimes); its directory is made at start.
let residentSocket = "";
/** Each implementation's switches: exec mode for "ours", the default (auto) on the benchmark's socket for "resident". */
const implEnv = (impl) =>
  impl === "resident"
    ? { TSCNI_RESIDENT: "auto", TSCNI_RESIDENT_SOCKET: residentSocket }
    : impl === "ours"
      ? { TSCNI_RESIDENT: "exec", TSCNI_RESIDENT_SOCKET: "" }
      : {};
const HOST_NS = "tscni-bench-host";
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const ROUNDS = Number(opt("--rounds", "15"));
const OUT = path.resolve(ROOT, opt("--out", "docs/benchmarks.md"));
const ONLY = opt("--only", "");
const PODS = Number(opt("--pods", "100")); // the pods scenarios' burst (and twice as many in the largest)
const selected = (name) => ONLY.split("|").some((part) => name.includes(part));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

let timerPath; // bench/spawn-timer.c compiled into the scratch directory ("" when there is no C compiler)

/**
 * Runs `file` once as a runtime written in Go does (bench/spawn-timer.c: fork/exec, the config on a pipe, stdout
 * read, wait) and times exactly that. Without a C compiler Node's spawnSync is timed instead, which adds its own
 * ~1.4 ms per call (the report says which).
 */
function timedRun(file, stdin, env, argv0) {
  if (timerPath === undefined) {
    const cc = ["cc", "gcc", "clang"].find((c) => spawnSync(c, ["--version"]).status === 0);
    const out = path.join(scratch, "spawn-timer");
    timerPath = cc && spawnSync(cc, ["-O2", "-o", out, path.join(ROOT, "bench/spawn-timer.c")]).status === 0 ? out : "";
  }
  if (!timerPath) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(file, [], { input: stdin, env, argv0, encoding: "utf8" });
    return { ms: Number(process.hrtime.bigint() - t0) / 1e6, status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
  const r = spawnSync(timerPath, [file, ...(argv0 ? [argv0] : [])], { input: stdin, env, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`spawn-timer failed on ${file}: ${r.stderr}`);
  const nl = r.stdout.indexOf("\n");
  const [ms, status] = r.stdout.slice(0, nl).split(" ").map(Number);
  return { ms, status, stdout: r.stdout.slice(nl + 1), stderr: r.stderr };
}

/** The timing harness's own cost: /bin/true through it and through Node's spawnSync (medians of 60, interleaved). */
function harnessFloor() {
  const viaTimer = [];
  const viaNode = [];
  for (let i = 0; i < 60; i++) {
    viaTimer.push(timedRun("/bin/true", "", {}).ms);
    const t0 = process.hrtime.bigint();
    spawnSync("/bin/true", [], { input: "" });
    viaNode.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { timer: timerPath ? median(viaTimer) : undefined, node: median(viaNode) };
}

/** Runs a plugin like a runtime does; returns milliseconds (throws on failure). */
function execPlugin(binDir, type, command, stdin, extraEnv = {}) {
  const env = {
    PATH: process.env.PATH,
    TSCNI_RESIDENT: process.env.TSCNI_RESIDENT ?? "exec",
    TSCNI_RESIDENT_SOCKET: process.env.TSCNI_RESIDENT_SOCKET ?? "",
    CNI_COMMAND: command,
    CNI_PATH: binDir,
    CNI_CONTAINERID: "",
    CNI_NETNS: "",
    CNI_IFNAME: "eth0",
    CNI_ARGS: "",
    ...extraEnv,
  };
  const r = timedRun(path.join(binDir, type), stdin, env);
  if (r.status !== 0) throw new Error(`${binDir}/${type} ${command} failed: ${r.stdout}${r.stderr}`);
  return r.ms;
}

function netns(name) {
  execFileSync("ip", ["netns", "add", name]);
  return `/run/netns/${name}`;
}
const delNetns = (name) => spawnSync("ip", ["netns", "delete", name]);

/**
 * A scenario measured for every implementation. setup(binDir, impl) returns (or resolves to) a runner giving
 * milliseconds; a runner may carry a teardown() run after the scenario. While an implementation's runner runs,
 * process.env has its switches (implEnv), so libcni's execs inherit them. `execOnly` scenarios skip resident mode.
 */
const scenarios = [];
function scenario(name, setup, { execOnly = false, floor = false } = {}) {
  if (selected(name)) scenarios.push({ name, setup, impls: [...IMPLS.filter((i) => !(execOnly && i === "resident")), ...(floor ? ["none"] : [])] });
}

let counter = 0;
const scratch = mkdtempSync(path.join(os.tmpdir(), "tscni-bench-"));

scenario("VERSION exec (bridge)", (binDir) => () => execPlugin(binDir, "bridge", "VERSION", '{"cniVersion":"1.0.0"}'));

scenario("host-local ADD+DEL", (binDir, impl) => {
  const dataDir = path.join(scratch, `hl-${impl}`);
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: `bench-hl-${impl}`,
    type: "host-local",
    ipam: { type: "host-local", subnet: "10.250.0.0/16", dataDir },
  });
  return () => {
    const env = { CNI_CONTAINERID: `bench${++counter}`, CNI_NETNS: "/run/netns/none" };
    return execPlugin(binDir, "host-local", "ADD", conf, env) + execPlugin(binDir, "host-local", "DEL", conf, env);
  };
});

function bridgeScenario(label, bridgeName, subnet, extra) {
  scenario(label, (binDir, impl) => {
    const dataDir = path.join(scratch, `br-${impl}-${bridgeName}`);
    const conf = JSON.stringify({
      cniVersion: "1.0.0",
      name: `bench-${bridgeName}-${impl}`,
      type: "bridge",
      bridge: `${bridgeName}${impl[0]}`,
      isGateway: true,
      ...extra,
      ipam: { type: "host-local", subnet: subnet[impl], dataDir, routes: [{ dst: "0.0.0.0/0" }] },
    });
    return () => {
      const name = `tscni-bench-c${++counter}`;
      const ns = netns(name);
      try {
        const env = { CNI_CONTAINERID: `bench${counter}`, CNI_NETNS: ns };
        return execPlugin(binDir, "bridge", "ADD", conf, env) + execPlugin(binDir, "bridge", "DEL", conf, env);
      } finally {
        delNetns(name);
      }
    };
  });
}
bridgeScenario("bridge+host-local ADD+DEL (fresh netns)", "bbr", { ours: "10.251.0.0/16", go: "10.252.0.0/16", resident: "10.245.0.0/16" }, {});
// The demo's embedded default network, run as a runtime would (our libcni), at 1.0.0 (the Go plugins' newest).
const { CNIConfig } = await import(path.join(ROOT, "dist/libcni/index.js"));
const { parseConfList } = await import(path.join(ROOT, "dist/spec/index.js"));
const { defaultNetworkConfList } = await import(path.join(ROOT, "dist/runtime/default-network.js"));
const defaultChain = defaultNetworkConfList().plugins.map((p) => p.type);
scenario(`default chain ADD+DEL (fresh netns): ${defaultChain.join(" + ")}`, (binDir, impl) => {
  const conf = defaultNetworkConfList({ stateDir: path.join(scratch, `dc-${impl}`) });
  // Go 1.1.1's portmap, firewall and tuning do not know dataDir; ours would use it. Same keys for both.
  for (const p of conf.plugins.slice(1)) delete p.dataDir;
  conf.cniVersion = "1.0.0";
  conf.name = `bench-dc-${impl}`;
  conf.plugins[0].bridge = `bdc${impl[0]}0`;
  conf.plugins[0].ipam.ranges = [[{ subnet: { ours: "10.253.0.0/16", go: "10.254.0.0/16", resident: "10.244.0.0/16" }[impl] }]];
  const list = parseConfList(JSON.stringify(conf));
  const cni = new CNIConfig({ path: [binDir], cacheDir: path.join(scratch, `dc-cache-${impl}`) });
  const capabilityArgs = { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: "tcp" }] };
  return () => {
    const name = `tscni-bench-c${++counter}`;
    const netNS = netns(name);
    const rt = { containerID: `bench${counter}`, netNS, ifName: "eth0", capabilityArgs };
    const t0 = process.hrtime.bigint();
    return cni
      .addNetworkList(list, rt)
      .then(() => cni.delNetworkList(list, rt))
      .then(() => Number(process.hrtime.bigint() - t0) / 1e6)
      .finally(() => delNetns(name));
  };
});

// kubelet's path: a private containerd per plugin dir, one pod sandbox per round (the chain gets no capability
// arguments, so both implementations run it today).
const CONTAINERD_ROW = `containerd sandbox run+stop+remove (CRI; chain: bridge + ${CONTAINERD_CHAIN.join(" + ")}, host-local)`;
const containerdSkip = containerdSkipReason();
// In the default install containerd shares the benchmark's mount namespace (as a node's containerd shares the host's)
// and its environment names the benchmark's socket; the others get a private mount namespace.
if (!containerdSkip) {
  scenario(
    CONTAINERD_ROW,
    (binDir, impl) => setupContainerd(binDir, impl, impl === "resident" ? { mountNs: `/proc/${process.pid}/ns/mnt`, env: implEnv(impl) } : undefined),
    { floor: true },
  );
}

// STATUS polling: CRI-O asks STATUS of the default network every 5 s (containerd 2 polls too), all day long.
const STATUS_POLL = "STATUS poll of the default chain";
const POLLS_PER_DAY = 86400 / 5;

/** CPU ms from /proc stat fields after the command name: utime, stime (own) and cutime, cstime (waited-for children). */
function cpuTicks(pid, { own = true } = {}) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (own ? Number(f[11]) + Number(f[12]) : 0) + Number(f[13]) + Number(f[14]);
}

/**
 * The CPU a node spends on STATUS polls of the default chain (at 1.1.0, as runtimes send it): every plugin of the
 * list asked in order, as libcni's getStatusNetworkList does, `polls` times per implementation; user+sys of every
 * process involved: the plugin processes (our children, waited for, with theirs: delegated IPAM, tools) and, in the
 * default install, the server's own (and its children's) CPU in the same span. Go's Debian 1.1.1 plugins predate
 * STATUS (each answers an error: the cost of starting and answering); Go's current bridge also execs its IPAM for
 * STATUS, so one host-local call is added to Go's poll.
 */
function statusPoll(polls, serverPid) {
  const hz = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;
  const conf = defaultNetworkConfList({ stateDir: path.join(scratch, "status-poll") });
  const confs = conf.plugins.map((p) => JSON.stringify({ ...p, name: "bench-status", cniVersion: "1.1.0" }));
  const types = conf.plugins.map((p) => p.type);
  const out = {};
  for (const impl of IMPLS) {
    // (Go's bridge hands IPAM its own config, as ipam.ExecStatus does.)
    const calls = [...types.map((t, i) => [t, confs[i]]), ...(impl === "go" ? [["host-local", confs[0]]] : [])];
    const env = { PATH: process.env.PATH, ...implEnv(impl), CNI_COMMAND: "STATUS", CNI_PATH: BIN_DIRS[impl] };
    const ask = () => {
      for (const [type, stdin] of calls) {
        const r = spawnSync(path.join(BIN_DIRS[impl], type), [], { input: stdin, env, encoding: "utf8" });
        if (impl !== "go" && r.status !== 0) throw new Error(`${type} STATUS failed: ${r.stdout}${r.stderr}`);
      }
    };
    ask(); // warm-up
    const server = impl === "resident" ? serverPid : undefined;
    const before = cpuTicks("self", { own: false }) + (server ? cpuTicks(server) : 0);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < polls; i++) ask();
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6 / polls;
    const after = cpuTicks("self", { own: false }) + (server ? cpuTicks(server) : 0);
    const cpuMs = ((after - before) * 1000) / hz / polls;
    out[impl] = { cpuMs, wallMs, cpuSecondsPerDay: (cpuMs * POLLS_PER_DAY) / 1000 };
  }
  return { polls, chain: types, calls: out, loadavg: os.loadavg() };
}

/** Peak RSS (KiB) of one bridge ADD with host-local: the process the caller starts (GNU time %M). */
function peakRss(impl) {
  const binDir = BIN_DIRS[impl];
  const dataDir = path.join(scratch, `rss-${impl}`);
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: `bench-rss-${impl}`,
    type: "bridge",
    bridge: `brss${impl[0]}`,
    ipam: { type: "host-local", subnet: `10.249.${IMPL_INDEX[impl]}.0/24`, dataDir },
  });
  const name = `tscni-bench-rss${++counter}`;
  const ns = netns(name);
  try {
    const env = {
      PATH: process.env.PATH,
      ...implEnv(impl),
      CNI_COMMAND: "ADD",
      CNI_PATH: binDir,
      CNI_CONTAINERID: `rss${counter}`,
      CNI_NETNS: ns,
      CNI_IFNAME: "eth0",
    };
    const r = spawnSync("/usr/bin/time", ["-f", "RSS=%M", path.join(binDir, "bridge")], { input: conf, env, encoding: "utf8" });
    const kib = Number(/RSS=(\d+)/.exec(r.stderr)?.[1] ?? NaN);
    execPlugin(binDir, "bridge", "DEL", conf, { ...implEnv(impl), CNI_CONTAINERID: `rss${counter}`, CNI_NETNS: ns });
    return kib;
  } finally {
    delNetns(name);
  }
}

/**
 * Cold start: a plugin call that fails at config parsing (start-up and the parse, nothing else), next to an
 * empty program compiled the way ours is (scripts/link-bins.mjs): Bun's own floor. Wall time and peak RSS.
 */
function coldStart() {
  const bun = path.join(ROOT, "node_modules/.bin/bun");
  const emptySource = path.join(scratch, "empty.js");
  const empty = path.join(scratch, "empty-bun");
  writeFileSync(emptySource, "process.exitCode = 0;\n");
  const built = spawnSync(
    bun,
    ["build", "--compile", "--minify", "--bytecode", "--no-compile-autoload-dotenv", "--no-compile-autoload-bunfig", emptySource, "--outfile", empty],
    { encoding: "utf8" },
  );
  const env = (impl) => ({
    PATH: process.env.PATH,
    ...implEnv(impl),
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "cold",
    CNI_NETNS: "/run/netns/none",
    CNI_IFNAME: "eth0",
    CNI_PATH: OURS,
  });
  const programs = [
    ...(built.status === 0 ? [{ name: "empty program, `bun build --compile --minify --bytecode` (Bun's floor)", file: empty, env: {}, ok: 0 }] : []),
    { name: "ours, exec mode: launcher + program (dist/bin/bridge)", file: path.join(OURS, "bridge"), env: env("ours"), ok: 1 },
    ...(existsSync(path.join(ROOT, "dist/tscni-js"))
      ? [
          {
            name: "ours, the program alone (dist/tscni-js as bridge)",
            file: path.join(ROOT, "dist/tscni-js"),
            argv0: "bridge",
            env: env("ours"),
            ok: 1,
          },
        ]
      : []),
    ...(RESIDENT ? [{ name: "ours, default: launcher -> server", file: path.join(OURS, "bridge"), env: env("resident"), ok: 1 }] : []),
    { name: "Go (bridge)", file: path.join(GO, "bridge"), env: env("go"), ok: 1 },
  ];
  const times = programs.map(() => []);
  for (let round = 0; round < ROUNDS * 10; round++) {
    const order = programs.map((_p, i) => i);
    if (round % 2) order.reverse();
    for (const i of order) {
      const p = programs[i];
      const r = timedRun(p.file, "{", p.env, p.argv0);
      times[i].push(r.ms);
      if (r.status !== p.ok) throw new Error(`cold start: ${p.name} exited ${r.status}: ${r.stdout}${r.stderr}`);
    }
  }
  return programs.map((p, i) => {
    // GNU time cannot set argv0; the program alone is then run through a link named like the plugin.
    let file = p.file;
    if (p.argv0) {
      file = path.join(scratch, p.argv0);
      if (!existsSync(file)) symlinkSync(p.file, file);
    }
    const rss = [];
    for (let k = 0; k < 5; k++) {
      const r = spawnSync("/usr/bin/time", ["-f", "RSS=%M", file], { input: "{", env: p.env, encoding: "utf8" });
      rss.push(Number(/RSS=(\d+)/.exec(r.stderr)?.[1] ?? NaN));
    }
    return { name: p.name, ms: median(times[i]), rssKiB: median(rss) };
  });
}

/** A server's resident set (KiB), from /proc. */
const vmRss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);

/**
 * The server's memory over many calls: host-local ADD and DEL alternating through the launcher. Its RSS swings by
 * several MB with the garbage collector's timing, so it is sampled every 250 calls, and "before" and "after" are
 * the medians of the first and the last four samples (a leak shows as after > before; one sample each showed noise).
 */
function serverGrowth(calls) {
  const dataDir = path.join(scratch, "growth");
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "bench-growth",
    type: "host-local",
    ipam: { type: "host-local", subnet: "10.250.0.0/16", dataDir },
  });
  const call = (i) => {
    const env = { ...implEnv("resident"), CNI_CONTAINERID: `growth${i >> 1}`, CNI_NETNS: "/run/netns/none" };
    execPlugin(OURS, "host-local", i % 2 ? "DEL" : "ADD", conf, env);
  };
  for (let i = 0; i < 1000; i++) call(i); // warm-up: the heap settles
  const server = { pid: serverStatus().pid };
  const samples = [];
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    if (i % 250 === 0) samples.push(vmRss(server.pid));
    call(i);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  samples.push(vmRss(server.pid));
  return {
    calls,
    beforeKiB: median(samples.slice(0, 4)),
    afterKiB: median(samples.slice(-4)),
    seconds,
    minKiB: Math.min(...samples),
    maxKiB: Math.max(...samples),
    sampleCount: samples.length,
  };
}

/** The server on the benchmark's socket: its status, or undefined when none answers. */
function serverStatus() {
  const r = spawnSync(path.join(OURS, "cnitool"), ["daemon", "status", "--socket", residentSocket], { encoding: "utf8" });
  return r.status === 0 ? JSON.parse(r.stdout) : undefined;
}

/** A server's memory from /proc (KiB): resident set, and its anonymous and file-backed parts. */
function serverMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssKiB: field("VmRSS"), anonKiB: field("RssAnon"), fileKiB: field("RssFile") };
}

/**
 * Brings up the default install's server the way a node gets it: the first plugin call (a host-local ADD and DEL)
 * starts it; resolves to it once its start-up warm-up is done (docs/resident.md), with its memory then.
 */
async function startServerByFirstCall() {
  const dir = mkdtempSync(path.join("/run", "tscni-bench-resident-"));
  residentSocket = path.join(dir, "plugins.sock");
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "bench-first",
    type: "host-local",
    ipam: { type: "host-local", subnet: "10.250.0.0/16", dataDir: path.join(scratch, "first") },
  });
  const env = { ...implEnv("resident"), CNI_CONTAINERID: "first", CNI_NETNS: "/run/netns/none" };
  execPlugin(OURS, "host-local", "ADD", conf, env);
  execPlugin(OURS, "host-local", "DEL", conf, env);
  for (let i = 0; i < 600 && !serverStatus()?.warmedUp; i++) await sleep(50);
  const status = serverStatus();
  if (!status) throw new Error(`no server was started on ${residentSocket}: ${readFileSync(`${residentSocket}.log`, "utf8")}`);
  return { dir, pid: status.pid, warmedUp: serverMemory(status.pid) };
}

/** Asks the server on the benchmark's socket to leave, and waits until it has. */
async function stopServer() {
  const pid = serverStatus()?.pid;
  spawnSync(path.join(OURS, "cnitool"), ["daemon", "stop", "--socket", residentSocket]);
  for (let i = 0; pid && i < 600; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(50);
  }
}

function machine() {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format, not a template
  const go = spawnSync("dpkg-query", ["-W", "-f", "${Version}", "containernetworking-plugins"], { encoding: "utf8" }).stdout || "unknown";
  const bun = existsSync(path.join(ROOT, "dist/tscni-js"))
    ? `standalone binary (bun --compile)${existsSync(path.join(ROOT, "dist/tscni")) ? " behind the C launcher" : ""}`
    : `node ${process.version} (fallback)`;
  return { cpu, cores: os.cpus().length, mem: `${Math.round(os.totalmem() / 2 ** 30)} GiB`, kernel: os.release(), go, bun };
}

const fmtRow = (row) =>
  [...IMPLS, "none"]
    .filter((i) => row[i] !== undefined)
    .map((i) => `${i} ${row[i].toFixed(1)} ms`)
    .join(", ");

async function inside() {
  execFileSync("ip", ["link", "set", "lo", "up"]);
  const server = RESIDENT ? await startServerByFirstCall() : undefined;
  try {
    return await measure(server);
  } finally {
    if (server) {
      await stopServer();
      rmSync(server.dir, { recursive: true, force: true });
    }
  }
}

async function measure(server) {
  const rows = [];
  const harness = harnessFloor();
  console.log(
    `harness: /bin/true ${harness.timer?.toFixed(2) ?? "-"} ms through spawn-timer, ${harness.node.toFixed(2)} ms through Node's spawnSync`,
  );
  // Each implementation's runner runs with its switches in the environment (libcni's execs inherit them).
  const as = async (impl, fn) => {
    const saved = { TSCNI_RESIDENT: process.env.TSCNI_RESIDENT, TSCNI_RESIDENT_SOCKET: process.env.TSCNI_RESIDENT_SOCKET };
    Object.assign(process.env, implEnv(impl));
    try {
      return await fn();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  };
  for (const s of scenarios) {
    const runners = {};
    const times = Object.fromEntries(s.impls.map((i) => [i, []]));
    try {
      for (const impl of s.impls) runners[impl] = await as(impl, () => s.setup(BIN_DIRS[impl], impl));
      for (const impl of s.impls) await as(impl, () => runners[impl]()); // warm-up (page cache, first bridge creation)
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 ? [...s.impls].reverse() : s.impls;
        for (const impl of order) times[impl].push(await as(impl, () => runners[impl]()));
      }
    } finally {
      for (const runner of Object.values(runners)) await runner.teardown?.();
    }
    const row = { name: s.name, ...Object.fromEntries(s.impls.map((i) => [i, median(times[i])])) };
    rows.push(row);
    console.log(`${row.name}: ${fmtRow(row)}`);
  }
  let podman =
    "podman `run --rm`: not measured (podman, runc and busybox-static are not installed; `apt-get install podman runc conmon golang-github-containers-common busybox-static` enables it).";
  /** The same chain for all: bridge plus whichever meta plugins both directories have. */
  const podmanTypes = () => ["bridge", "portmap", "firewall", "tuning"].filter((t) => existsSync(path.join(OURS, t)) && existsSync(path.join(GO, t)));
  /** `podman run --rm` (with `publish`: a published port), the floor and netavark interleaved in every round; its medians. */
  const podmanRounds = (types, publish) => {
    const { runners, cleanup } = setupPodman(
      Object.fromEntries(IMPLS.map((i) => [i, BIN_DIRS[i]])),
      types,
      Object.fromEntries(IMPLS.map((i) => [i, implEnv(i)])),
      { publish },
    );
    try {
      const all = Object.keys(runners);
      for (const impl of all) runners[impl]();
      const times = Object.fromEntries(all.map((i) => [i, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const impl of round % 2 ? [...all].reverse() : all) times[impl].push(runners[impl]());
      }
      return Object.fromEntries(all.map((i) => [i, median(times[i])]));
    } finally {
      cleanup();
    }
  };
  const PUBLISHED = "podman run --rm -p";
  if (!selected("podman run --rm")) podman = "";
  else if (podmanAvailable()) {
    const types = podmanTypes();
    const medians = podmanRounds(types);
    const row = {
      name: `podman run --rm (CNI backend; chain: ${types.join(" + ")}, host-local)`,
      ...Object.fromEntries(IMPLS.map((i) => [i, medians[i]])),
    };
    rows.push(row);
    podman = { types, medians };
    console.log(
      `${row.name}: ${fmtRow(row)}; none ${medians.none.toFixed(1)} ms${medians.netavark !== undefined ? `, netavark ${medians.netavark.toFixed(1)} ms` : ""}`,
    );
  }
  if (typeof podman === "object" && selected(PUBLISHED)) {
    const medians = podmanRounds(podman.types, "18080:80");
    const row = { name: `${PUBLISHED} 18080:80 (one published port; same chain)`, ...Object.fromEntries(IMPLS.map((i) => [i, medians[i]])) };
    rows.push(row);
    podman.published = medians;
    console.log(
      `${row.name}: ${fmtRow(row)}; none ${medians.none.toFixed(1)} ms${medians.netavark !== undefined ? `, netavark ${medians.netavark.toFixed(1)} ms` : ""}`,
    );
  }
  let thirdParty;
  if (selected("third-party plugin")) {
    thirdParty = await runThirdParty({ root: ROOT, scratch, rounds: ROUNDS, timedRun, median, netns, delNetns });
    for (const [way, m] of Object.entries(thirdParty.medians)) {
      console.log(
        `third-party plugin (${way}): VERSION ${m.version?.toFixed(2) ?? "-"} ms, chain ADD ${m.add.toFixed(1)} ms, DEL ${m.del.toFixed(1)} ms`,
      );
    }
  }
  let rss;
  if (selected("peak RSS")) {
    rss = Object.fromEntries(IMPLS.map((i) => [i, peakRss(i)]));
    console.log(`peak RSS bridge ADD: ${IMPLS.map((i) => `${i} ${rss[i]} KiB`).join(", ")}`);
  }
  let statusPolls;
  if (selected(STATUS_POLL)) {
    statusPolls = statusPoll(ROUNDS * 10, server?.pid);
    for (const [impl, c] of Object.entries(statusPolls.calls))
      console.log(
        `${STATUS_POLL} (${impl}): ${c.cpuMs.toFixed(1)} ms CPU and ${c.wallMs.toFixed(1)} ms wall per poll, ${c.cpuSecondsPerDay.toFixed(0)} CPU s per day at one poll every 5 s`,
      );
  }
  let cold;
  if (selected("cold start")) {
    cold = coldStart();
    for (const c of cold) console.log(`cold start: ${c.name}: ${c.ms.toFixed(2)} ms, ${c.rssKiB} KiB`);
  }
  let growth;
  if (server && selected("server memory")) {
    growth = serverGrowth(10000);
    console.log(`server memory: ${growth.beforeKiB} KiB -> ${growth.afterKiB} KiB after ${growth.calls} calls (${growth.seconds.toFixed(0)} s)`);
  }
  const pods = [];
  let idle;
  const floors = [];
  if (selected("pods at once") || selected("bare chain pods at once")) {
    // inprocess: our plugins inside the manager's process; exec: each call starts our program; resident: the
    // default install from cold (no server when the burst begins: its first calls start one), the server's
    // memory counted; go: Go's plugins exec'd.
    // Then the bare chain (bridge without ipMasq, host-local, tuning: no firewall rules), the core path alone, by
    // both drivers: the pod manager under Bun, and bench/chain-driver.c spawning as a Go runtime does.
    // Every pod count is measured once more with no plugin at all: its kernel floor (bench/floor.c).
    const plan = [
      ...(selected("pods at once")
        ? [
            [PODS, ["go", "inprocess", "exec", ...(server ? ["resident"] : [])]],
            [2 * PODS, ["inprocess", ...(server ? ["resident"] : []), "go"]],
          ]
        : []),
    ].map(([n, impls]) => [n, impls, "default", "bun"]);
    if (selected("bare chain pods at once"))
      for (const driver of ["bun", "spawn"]) plan.push([PODS, ["go", "exec", ...(server ? ["resident"] : [])], "bare", driver]);
    for (const [n, impls, chain, driver] of plan) {
      if (!floors.some((f) => f.n === n)) {
        const floor = { n, ...runFloor({ pods: n, scratch }) };
        floors.push(floor);
        console.log(
          `${n} pods, the kernel's floor (one process over netlink, no plugin): setup ${floor.setupMs.toFixed(0)} ms, teardown ${floor.teardownMs.toFixed(0)} ms`,
        );
      }
      const floor = floors.find((f) => f.n === n);
      for (const impl of impls) {
        if (impl === "resident") await stopServer();
        const r = await runPods({
          binDir: impl === "go" ? GO : OURS,
          impl,
          pods: n,
          scratch,
          env: implEnv(impl === "resident" ? "resident" : "ours"),
          serverSocket: impl === "resident" ? residentSocket : undefined,
          chain,
          driver,
        });
        pods.push({ n, impl, ...r });
        console.log(
          `${n} pods at once (${impl}, ${chain} chain, ${driver} driver): setup ${r.setupMs.toFixed(0)} ms (${(r.setupMs / floor.setupMs).toFixed(1)}x the floor), ` +
            `teardown ${r.teardownMs.toFixed(0)} ms (${(r.teardownMs / floor.teardownMs).toFixed(1)}x), failures ${r.failures}, leftovers ${r.leftovers}, peak ${Math.round(r.peakRssKiB / 1024)} MiB` +
            (r.serverPeakRssKiB !== undefined
              ? ` (the server alone: ${Math.round(r.serverPeakRssKiB / 1024)} MiB; calls run by their callers: ${r.ranThemselves})`
              : ""),
        );
        if (impl === "resident" && n === PODS && chain === "default") {
          // The server the burst started, once the burst is over and it has been idle for a while.
          await sleep(10_000);
          const pid = serverStatus()?.pid;
          idle = pid ? { afterBurst: serverMemory(pid), warmedUp: server.warmedUp } : undefined;
          if (idle)
            console.log(
              `idle server: ${idle.afterBurst.rssKiB} KiB (anonymous ${idle.afterBurst.anonKiB}, file ${idle.afterBurst.fileKiB}) after the burst; ${server.warmedUp.rssKiB} KiB after its start and warm-up`,
            );
        }
      }
    }
  }
  const containerd =
    containerdSkip && selected(CONTAINERD_ROW)
      ? `containerd sandbox run+stop+remove: not measured (${containerdSkip}; \`apt-get install containerd runc gcc libc6-dev\` enables it).`
      : "";
  const etcdThere = spawnSync("etcd", ["--version"]).status === 0;
  if (selected("cluster-ipam 1000 allocations across 10 nodes") && !etcdThere)
    console.log("cluster-ipam: not measured (etcd is not installed: apt-get install etcd-server)");
  const cluster = selected("cluster-ipam 1000 allocations across 10 nodes") && etcdThere ? await runClusterBench() : [];
  // Last (it replaces the auto-started server by one started with --trace-phases): one container's calls, phase by phase.
  let trace;
  if (typeof podman === "object" && server && selected("podman run --rm")) {
    await stopServer();
    trace = await tracePodman({
      ours: OURS,
      cnitool: path.join(OURS, "cnitool"),
      socket: residentSocket,
      types: podman.types,
      residentEnv: implEnv("resident"),
      execEnv: implEnv("ours"),
    });
    console.log(`traced podman containers: ${trace.default.length} through the server, ${trace.exec.length} in exec mode`);
  }
  return { rows, rss, cold, growth, podman, containerd, pods, floors, cluster, harness, idle, trace, thirdParty, statusPolls };
}

/**
 * The network's share of a container start: each stack's median minus the floor's (the same container without a
 * network: podman's `--network none`, a hostNetwork CRI sandbox), measured in the same interleaved rounds.
 */
function shareTable(title, floorLabel, medians) {
  const floor = medians.none;
  if (floor === undefined) return [];
  const share = (impl) => medians[impl] - floor;
  const labels = { resident: "ours, default", ours: "ours, exec mode", go: "Go's plugins", netavark: "netavark (podman's own backend)" };
  const present = Object.keys(labels).filter((impl) => medians[impl] !== undefined);
  return [
    `| ${title} | start (ms) | network share (ms) | share / Go's share | start / ${floorLabel} |`,
    "|---|---:|---:|---:|---:|",
    `| ${floorLabel} (the floor) | ${floor.toFixed(1)} | - | - | 1.00 |`,
    ...present.map(
      (impl) =>
        `| ${labels[impl]} | ${medians[impl].toFixed(1)} | ${share(impl).toFixed(1)} | ${medians.go !== undefined ? (share(impl) / share("go")).toFixed(2) : "-"} | ${(medians[impl] / floor).toFixed(2)} |`,
    ),
    "",
  ];
}

const PODS_LABEL = {
  go: "Go (exec'd)",
  inprocess: "ours, in the manager's process",
  exec: "ours, exec mode",
  resident: "ours, default install from cold (server counted)",
};

const PODS_DRIVER = { bun: "pod manager (Bun)", spawn: "fork/exec per plugin (C)" };

/**
 * The pods table: one row per (pod count, chain, driver, implementation), ratios against Go at the same count, chain
 * and driver, and against the kernel's floor at the same count.
 */
function podsTable(pods, floors) {
  if (!pods.length) return [];
  const go = (p) => pods.find((q) => q.n === p.n && q.impl === "go" && q.chain === p.chain && q.driver === p.driver);
  const floor = (p) => floors.find((f) => f.n === p.n);
  const ratio = (a, b) => (a !== undefined && b ? (a / b).toFixed(2) : "-");
  return [
    "## Pods at once through PodNetworkManager (the seed's iSulad scenario)",
    "",
    "N pods set up at once, then torn down at once, by one tscni/runtime PodNetworkManager (under Bun) on the chain bridge + host-local,",
    "portmap (a published port per pod), firewall, tuning. Plugins: ours in the manager's process; ours exec'd per call (exec mode);",
    "ours as installed, from cold: no server when the burst begins, the burst's first calls start one and the rest go to it (the pod",
    "manager sends tscni's calls to the server itself once it listens, docs/resident.md; the fork/exec driver starts a launcher per",
    "call); Go's exec'd per call. Peak memory: every process of the run together (the manager, all plugin and tool processes, and the resident server",
    "with its own children where one serves), sampled from /proc every 20 ms, a child caught between its fork and its exec counted",
    "as nothing (its pages are its parent's); the server's peak: its own resident set alone; the calls it did not serve: those its",
    "launchers ran themselves in exec mode (at least the one that started it).",
    "",
    "The bare chain rows: bridge without ipMasq, host-local and tuning, no firewall rules at all (the core path; no published port),",
    "driven twice: by the pod manager under Bun, and by bench/chain-driver.c as a runtime written in Go drives a chain (a thread per",
    "pod, each plugin a fork/exec with its config on a pipe, the previous result passed on). The floor: the bare chain's kernel work",
    "for the same N pods done by one process over rtnetlink with no plugin (bench/floor.c: the bridge, then per pod the veth pair, its",
    "port's hairpin, eth0 up, its address, the default route and arp_notify; teardown: one request deleting every pair by its group).",
    "",
    "The CPU columns: the driver's own CPU time over the run (its children's not included); the plugin programs' it ran (fork/exec",
    "driver only: Go's plugins, or our launchers and any program run in exec mode); the resident server's (sampled with the memory).",
    "They say why our figure depended on the driver and Go's hardly does: a Bun process that spawns a program per call spends CPU",
    "on each spawn, which the server (one thread) had to share the two cores with; the pod manager now spawns nothing for tscni's",
    "plugins (its calls go to the server), and Go's plugins spend more CPU than the server whichever driver runs them.",
    "",
    ...floors.map((f) => `- the floor for ${f.n} pods: setup ${f.setupMs.toFixed(0)} ms, teardown ${f.teardownMs.toFixed(0)} ms`),
    "",
    "| pods | plugins | driver | setup (ms) | teardown (ms) | setup / Go | teardown / Go | setup / floor | teardown / floor | failures | leftovers | peak memory (MiB) | memory / Go | the server's peak (MiB) | calls the server did not serve | the driver's CPU (ms) | the plugins' CPU (ms) | the server's CPU (ms) |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...pods.map(
      (p) =>
        `| ${p.n} | ${PODS_LABEL[p.impl] ?? p.impl}${p.chain === "bare" ? ", bare chain" : ""} | ${PODS_DRIVER[p.driver] ?? p.driver} | ${p.setupMs.toFixed(0)} | ${p.teardownMs.toFixed(0)} | ` +
        `${ratio(p.setupMs, go(p)?.setupMs)} | ${ratio(p.teardownMs, go(p)?.teardownMs)} | ${ratio(p.setupMs, floor(p)?.setupMs)} | ${ratio(p.teardownMs, floor(p)?.teardownMs)} | ` +
        `${p.failures} | ${p.leftovers} | ${Math.round(p.peakRssKiB / 1024)} | ${ratio(p.peakRssKiB, go(p)?.peakRssKiB)} | ${p.serverPeakRssKiB !== undefined ? Math.round(p.serverPeakRssKiB / 1024) : "-"} | ${p.ranThemselves ?? "-"} | ` +
        `${p.driverCpuMs !== undefined ? p.driverCpuMs.toFixed(0) : "-"} | ${p.pluginsCpuMs !== undefined ? p.pluginsCpuMs.toFixed(0) : "-"} | ${p.serverCpuMs !== undefined ? p.serverCpuMs.toFixed(0) : "-"} |`,
    ),
    "",
  ];
}

function report({
  rows,
  rss,
  cold,
  growth,
  podman,
  containerd,
  pods = [],
  floors = [],
  cluster = [],
  harness,
  idle,
  trace,
  thirdParty,
  statusPolls,
}) {
  const m = machine();
  const cell = (v) => (v === undefined ? "-" : v.toFixed(1));
  const ratio = (a, b) => (a === undefined || !b ? "-" : (a / b).toFixed(2));
  const lines = [
    "# Benchmarks",
    "",
    "Written by `npm run bench` (bench/run.mjs) from its own run; do not edit the numbers by hand.",
    "",
    `- date: ${new Date().toISOString()}`,
    `- machine: ${m.cpu}, ${m.cores} cores, ${m.mem}, kernel ${m.kernel}`,
    `- ours: dist/bin as built (${m.bun}); Go: Debian containernetworking-plugins ${m.go} (/usr/lib/cni)`,
    "- ours, default: as a plain install runs (docs/resident.md): the benchmark's first call started a server (nobody started",
    "  one by hand), measured once its start-up warm-up was done; the launcher hands each call to it. Ours, exec mode",
    "  (`TSCNI_RESIDENT=exec`): every call starts the program. The pods table also measures the default from cold.",
    `- ${ROUNDS} rounds per scenario, the implementations interleaved (alternating order); medians of wall time per round`,
    ...(harness?.timer !== undefined
      ? [
          "- plugin calls are started and timed as a runtime written in Go starts them (bench/spawn-timer.c: fork/exec, config on a",
          `  pipe, stdout read, wait): /bin/true costs ${harness.timer.toFixed(2)} ms that way here, ${harness.node.toFixed(2)} ms through Node's spawnSync`,
          "  (which is not counted); the chains (default chain, podman, containerd, pods) are run by their runtimes",
        ]
      : harness
        ? [
            `- plugin calls are timed around Node's spawnSync (no C compiler for bench/spawn-timer.c): /bin/true costs ${harness.node.toFixed(2)} ms that way`,
          ]
        : []),
    ...(ONLY ? [`- only the scenarios matching \`--only ${ONLY}\``] : []),
    "",
    "| scenario | ours default (ms) | ours exec mode (ms) | Go (ms) | default/Go | exec/Go |",
    "|---|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.name} | ${cell(r.resident)} | ${cell(r.ours)} | ${cell(r.go)} | ${ratio(r.resident, r.go)} | ${ratio(r.ours, r.go)} |`),
    "",
    ...(rss
      ? [
          "| peak RSS of one bridge ADD with host-local (the process the caller starts) | ours default | ours exec mode | Go |",
          "|---|---:|---:|---:|",
          `| KiB | ${rss.resident ?? "-"} | ${rss.ours} | ${rss.go} |`,
          "",
          "By default the caller's process is the C launcher; the plugin runs in the server (its memory: below and in the pods table).",
          "",
        ]
      : []),
    ...(statusPolls
      ? [
          "## STATUS polling",
          "",
          `CRI-O asks STATUS of the default network every 5 s (containerd 2 polls too): ${statusPolls.polls} polls of the default chain`,
          `(${statusPolls.chain.join(" + ")}, cniVersion 1.1.0, each plugin asked in order as libcni does); CPU is user+sys of every`,
          "process involved (the plugin processes with what they start, and in the default install the server in the same span),",
          `per poll and over a day (${POLLS_PER_DAY} polls); the runtime's own work (libcni) is not counted. Load average at the end of the run: ${statusPolls.loadavg.map((l) => l.toFixed(2)).join(", ")}.`,
          "Go's Debian 1.1.1 plugins predate STATUS (each answers an error); Go's current bridge also asks its IPAM, so Go's",
          "poll has one host-local call more.",
          "",
          "| STATUS poll | CPU per poll (ms) | wall per poll (ms) | CPU per day (s) |",
          "|---|---:|---:|---:|",
          ...[
            ["ours default", "resident"],
            ["ours exec mode", "ours"],
            ["Go", "go"],
          ]
            .filter(([, k]) => statusPolls.calls[k])
            .map(([label, k]) => {
              const c = statusPolls.calls[k];
              return `| ${label} | ${c.cpuMs.toFixed(1)} | ${c.wallMs.toFixed(1)} | ${c.cpuSecondsPerDay.toFixed(0)} |`;
            }),
          "",
        ]
      : []),
    ...(cold
      ? [
          "## Cold start",
          "",
          "A plugin call that fails at config parsing (stdin `{`): start-up and the parse, nothing else. Medians of",
          `${ROUNDS * 10} interleaved runs; peak RSS by GNU time (median of 5).`,
          "",
          "| program | wall (ms) | peak RSS (KiB) |",
          "|---|---:|---:|",
          ...cold.map((c) => `| ${c.name} | ${c.ms.toFixed(2)} | ${c.rssKiB} |`),
          "",
        ]
      : []),
    ...(thirdParty ? thirdPartyTable(thirdParty) : []),
    ...(growth
      ? [
          "## Resident server memory",
          "",
          ...(idle
            ? [
                `Idle: ${idle.warmedUp.rssKiB} KiB resident once started by the first call and warmed up (anonymous ${idle.warmedUp.anonKiB}, file-backed`,
                `${idle.warmedUp.fileKiB}: the program's pages, shared with the page cache); ${idle.afterBurst.rssKiB} KiB (anonymous ${idle.afterBurst.anonKiB},`,
                `file-backed ${idle.afterBurst.fileKiB}) 10 s after the ${PODS}-pod burst that started it. It leaves after 600 s without a call.`,
                "",
              ]
            : []),
          `${growth.calls} host-local calls (ADD and DEL alternating) through the launcher after 1000 warm-up calls: server RSS`,
          `${growth.beforeKiB} KiB before, ${growth.afterKiB} KiB after (growth ${growth.afterKiB - growth.beforeKiB} KiB; medians of the first and`,
          `last 4 of ${growth.sampleCount} samples taken every 250 calls, which ranged from ${growth.minKiB} to ${growth.maxKiB} KiB with the`,
          `garbage collector's timing; ${growth.seconds.toFixed(0)} s, ${((growth.seconds * 1000) / growth.calls).toFixed(2)} ms per call).`,
          "",
        ]
      : []),
    ...(typeof podman === "string" ? [podman, ""] : []),
    containerd,
    "",
    ...(typeof podman === "object" || rows.some((r) => r.none !== undefined)
      ? [
          "## The network's share of a container start",
          "",
          "Stack minus floor: the same container started without a network, in the same interleaved rounds (medians).",
          "",
          ...(typeof podman === "object" ? shareTable(`podman run --rm (${podman.types.join(" + ")})`, "`--network none`", podman.medians) : []),
          ...(typeof podman === "object" && podman.published
            ? shareTable("podman run --rm -p 18080:80 (the same chain, one published port)", "`--network none`", podman.published)
            : []),
          ...rows.filter((r) => r.none !== undefined).flatMap((r) => shareTable(r.name.replace(/ \(CRI;.*$/, " (CRI)"), "hostNetwork sandbox", r)),
        ]
      : []),
    ...(trace
      ? [
          "## Where one container's network time goes",
          "",
          "Five `podman run --rm` containers traced after warm-up runs (`cnitool daemon --trace-phases`, `TSCNI_TRACE_PHASES` in",
          "exec mode; docs/resident.md), each figure the median over them: each plugin call and, inside it, the time of each kind of phase in ms (and how many): netlink",
          "requests, tools spawned, sysctl writes, namespace entries, the IPAM store's critical section, lock waits, delegations",
          "(their own time, without their phases), loading a plugin's code, the wait for the container's queue; the rest is the",
          "plugin's own code (decoding, logic, the result).",
          "",
          ...traceTable(
            trace,
            typeof podman === "object"
              ? Object.fromEntries(["resident", "ours"].map((i) => [i, podman.medians[i] - podman.medians.none]))
              : undefined,
          ),
        ]
      : []),
    ...podsTable(pods, floors),
    ...clusterTable(cluster),
  ];
  // The Reliability section is bench/kill.mjs's (a run of its own): kept as it is.
  const previous = existsSync(OUT) ? readFileSync(OUT, "utf8") : "";
  const kept = previous.indexOf("\n## Reliability: kill -9 under load");
  if (kept >= 0) lines.push(previous.slice(kept + 1).trimEnd(), "");
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, lines.join("\n"));
  console.log(`wrote ${path.relative(ROOT, OUT)}`);
}

if (args.includes("--inside")) {
  try {
    writeFileSync(path.join(process.env.TSCNI_BENCH_STATE, "result.json"), JSON.stringify(await inside()));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
} else {
  if (process.getuid() !== 0) throw new Error("the benchmark needs root (network namespaces)");
  if (!existsSync(path.join(OURS, "bridge"))) throw new Error("run `npm run build` first");
  if (!existsSync(path.join(GO, "bridge"))) throw new Error("Debian's containernetworking-plugins is not installed");
  const state = mkdtempSync(path.join(os.tmpdir(), "tscni-bench-state-"));
  delNetns(HOST_NS);
  netns(HOST_NS);
  try {
    // Like `ip netns exec`, with sysfs remounted for the namespace, but keeping the cgroup mounts podman needs.
    const cg = path.join(state, "cgroup");
    mkdirSync(cg);
    const script = `mount --rbind /sys/fs/cgroup "$1" && mount -t sysfs sysfs /sys && mount --move "$1" /sys/fs/cgroup && shift && exec "$@"`;
    const r = spawnSync(
      "nsenter",
      [
        `--net=/run/netns/${HOST_NS}`,
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        cg,
        process.execPath,
        fileURLToPath(import.meta.url),
        "--inside",
        ...args,
      ],
      {
        stdio: "inherit",
        env: { ...process.env, TSCNI_BENCH_STATE: state },
      },
    );
    if (r.status !== 0) throw new Error("benchmark failed");
    report(JSON.parse(readFileSync(path.join(state, "result.json"), "utf8")));
  } finally {
    delNetns(HOST_NS);
    rmSync(state, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
}
