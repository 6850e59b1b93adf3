#!/usr/bin/env node
// The tscni benchmark: our plugins and Debian's Go plugins side by side, interleaved in one run, medians and
// ratios ours/Go. Writes docs/benchmarks.md from the run. Not part of the test suite.
//
//   node bench/run.mjs [--rounds 15] [--out docs/benchmarks.md] [--only <substring>]   (as root; `npm run build` first)
//
// --only runs just the scenarios whose name contains the substring (and skips peak RSS unless it matches).
//
// Everything runs inside namespaces the benchmark creates (a "host" namespace holds the bridges and
// firewall rules; each container is a fresh namespace), so the real host is not touched.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { podmanAvailable, setupPodman } from "./podman.mjs";
import { CONTAINERD_CHAIN, containerdSkipReason, setupContainerd } from "./containerd.mjs";
import { runPods } from "./pods.mjs";
import { clusterTable, runClusterBench } from "./cluster.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OURS = path.join(ROOT, "dist/bin");
const GO = "/usr/lib/cni";
const HOST_NS = "tscni-bench-host";
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const ROUNDS = Number(opt("--rounds", "15"));
const OUT = path.resolve(ROOT, opt("--out", "docs/benchmarks.md"));
const ONLY = opt("--only", "");
const selected = (name) => name.includes(ONLY);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Runs a plugin like a runtime does; returns milliseconds (throws on failure). */
function execPlugin(binDir, type, command, stdin, extraEnv = {}) {
  const env = {
    PATH: process.env.PATH, CNI_COMMAND: command, CNI_PATH: binDir, CNI_CONTAINERID: "", CNI_NETNS: "", CNI_IFNAME: "eth0",
    CNI_ARGS: "", ...extraEnv,
  };
  const t0 = process.hrtime.bigint();
  const r = spawnSync(path.join(binDir, type), [], { input: stdin, env, encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${binDir}/${type} ${command} failed: ${r.stdout}${r.stderr}`);
  return ms;
}

function netns(name) {
  execFileSync("ip", ["netns", "add", name]);
  return `/run/netns/${name}`;
}
const delNetns = (name) => spawnSync("ip", ["netns", "delete", name]);

/**
 * A scenario measured for both implementations. setup(binDir, impl) returns (or resolves to) a runner giving
 * milliseconds; a runner may carry a teardown() run after the scenario.
 */
const scenarios = [];
function scenario(name, setup) {
  if (selected(name)) scenarios.push({ name, setup });
}

let counter = 0;
const scratch = mkdtempSync(path.join(os.tmpdir(), "tscni-bench-"));

scenario("VERSION exec (bridge)", (binDir) => () => execPlugin(binDir, "bridge", "VERSION", '{"cniVersion":"1.0.0"}'));

scenario("host-local ADD+DEL", (binDir, impl) => {
  const dataDir = path.join(scratch, `hl-${impl}`);
  const conf = JSON.stringify({ cniVersion: "1.0.0", name: `bench-hl-${impl}`, type: "host-local", ipam: { type: "host-local", subnet: "10.250.0.0/16", dataDir } });
  return () => {
    const env = { CNI_CONTAINERID: `bench${++counter}`, CNI_NETNS: "/run/netns/none" };
    return execPlugin(binDir, "host-local", "ADD", conf, env) + execPlugin(binDir, "host-local", "DEL", conf, env);
  };
});

function bridgeScenario(label, bridgeName, subnet, extra) {
  scenario(label, (binDir, impl) => {
    const dataDir = path.join(scratch, `br-${impl}-${bridgeName}`);
    const conf = JSON.stringify({
      cniVersion: "1.0.0", name: `bench-${bridgeName}-${impl}`, type: "bridge", bridge: `${bridgeName}${impl === "ours" ? "o" : "g"}`,
      isGateway: true, ...extra, ipam: { type: "host-local", subnet: subnet[impl], dataDir, routes: [{ dst: "0.0.0.0/0" }] },
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
bridgeScenario("bridge+host-local ADD+DEL (fresh netns)", "bbr", { ours: "10.251.0.0/16", go: "10.252.0.0/16" }, {});
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
  conf.plugins[0].ipam.ranges = [[{ subnet: impl === "ours" ? "10.253.0.0/16" : "10.254.0.0/16" }]];
  const list = parseConfList(JSON.stringify(conf));
  const cni = new CNIConfig({ path: [binDir], cacheDir: path.join(scratch, `dc-cache-${impl}`) });
  const capabilityArgs = { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: "tcp" }] };
  return () => {
    const name = `tscni-bench-c${++counter}`;
    const netNS = netns(name);
    const rt = { containerID: `bench${counter}`, netNS, ifName: "eth0", capabilityArgs };
    const t0 = process.hrtime.bigint();
    return cni.addNetworkList(list, rt)
      .then(() => cni.delNetworkList(list, rt))
      .then(() => Number(process.hrtime.bigint() - t0) / 1e6)
      .finally(() => delNetns(name));
  };
});

// kubelet's path: a private containerd per plugin dir, one pod sandbox per round (the chain gets no capability
// arguments, so both implementations run it today).
const CONTAINERD_ROW = `containerd sandbox run+stop+remove (CRI; chain: bridge + ${CONTAINERD_CHAIN.join(" + ")}, host-local)`;
const containerdSkip = containerdSkipReason();
if (!containerdSkip) scenario(CONTAINERD_ROW, (binDir, impl) => setupContainerd(binDir, impl));

/** Peak RSS (KiB) of one bridge ADD with host-local, the largest process of the call (GNU time %M). */
function peakRss(binDir, impl) {
  const dataDir = path.join(scratch, `rss-${impl}`);
  const conf = JSON.stringify({ cniVersion: "1.0.0", name: `bench-rss-${impl}`, type: "bridge", bridge: `brss${impl[0]}`, ipam: { type: "host-local", subnet: impl === "ours" ? "10.249.0.0/24" : "10.248.0.0/24", dataDir } });
  const name = `tscni-bench-rss${++counter}`;
  const ns = netns(name);
  try {
    const env = { PATH: process.env.PATH, CNI_COMMAND: "ADD", CNI_PATH: binDir, CNI_CONTAINERID: `rss${counter}`, CNI_NETNS: ns, CNI_IFNAME: "eth0" };
    const r = spawnSync("/usr/bin/time", ["-f", "RSS=%M", path.join(binDir, "bridge")], { input: conf, env, encoding: "utf8" });
    const kib = Number(/RSS=(\d+)/.exec(r.stderr)?.[1] ?? NaN);
    execPlugin(binDir, "bridge", "DEL", conf, { CNI_CONTAINERID: `rss${counter}`, CNI_NETNS: ns });
    return kib;
  } finally {
    delNetns(name);
  }
}

function machine() {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
  const go = spawnSync("dpkg-query", ["-W", "-f", "${Version}", "containernetworking-plugins"], { encoding: "utf8" }).stdout || "unknown";
  const bun = existsSync(path.join(ROOT, "dist/tscni-js"))
    ? `standalone binary (bun --compile)${existsSync(path.join(ROOT, "dist/tscni")) ? " behind the C launcher" : ""}`
    : `node ${process.version} (fallback)`;
  return { cpu, cores: os.cpus().length, mem: `${Math.round(os.totalmem() / 2 ** 30)} GiB`, kernel: os.release(), go, bun };
}

async function inside() {
  execFileSync("ip", ["link", "set", "lo", "up"]);
  const rows = [];
  for (const s of scenarios) {
    const runners = {};
    const times = { ours: [], go: [] };
    try {
      runners.ours = await s.setup(OURS, "ours");
      runners.go = await s.setup(GO, "go");
      await runners.ours();
      await runners.go(); // warm-up (page cache, first bridge creation)
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 ? ["go", "ours"] : ["ours", "go"];
        for (const impl of order) times[impl].push(await runners[impl]());
      }
    } finally {
      for (const runner of Object.values(runners)) await runner.teardown?.();
    }
    const row = { name: s.name, ours: median(times.ours), go: median(times.go) };
    rows.push(row);
    console.log(`${row.name}: ours ${row.ours.toFixed(1)} ms, Go ${row.go.toFixed(1)} ms, ratio ${(row.ours / row.go).toFixed(2)}`);
  }
  let podman = "podman `run --rm`: not measured (podman, runc and busybox-static are not installed; `apt-get install podman runc conmon golang-github-containers-common busybox-static` enables it).";
  if (!selected("podman run --rm")) podman = "";
  else if (podmanAvailable()) {
    // The same chain for both: bridge plus whichever meta plugins both directories have.
    const types = ["bridge", "portmap", "firewall", "tuning"].filter((t) => existsSync(path.join(OURS, t)) && existsSync(path.join(GO, t)));
    const { runners, cleanup } = setupPodman({ ours: OURS, go: GO }, types);
    try {
      runners.ours();
      runners.go();
      const times = { ours: [], go: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const impl of round % 2 ? ["go", "ours"] : ["ours", "go"]) times[impl].push(runners[impl]());
      }
      const row = { name: `podman run --rm (CNI backend; chain: ${types.join(" + ")}, host-local)`, ours: median(times.ours), go: median(times.go) };
      rows.push(row);
      podman = "";
      console.log(`${row.name}: ours ${row.ours.toFixed(1)} ms, Go ${row.go.toFixed(1)} ms, ratio ${(row.ours / row.go).toFixed(2)}`);
    } finally {
      cleanup();
    }
  }
  let rss;
  if (selected("peak RSS")) {
    rss = { ours: peakRss(OURS, "ours"), go: peakRss(GO, "go") };
    console.log(`peak RSS bridge ADD: ours ${rss.ours} KiB, Go ${rss.go} KiB`);
  }
  const pods = [];
  if (selected("pods at once")) {
    for (const n of [100, 200]) {
      for (const [impl, binDir] of n % 200 ? [["go", GO], ["ours", OURS]] : [["ours", OURS], ["go", GO]]) {
        const r = await runPods({ binDir, impl, pods: n, scratch });
        pods.push({ n, impl, ...r });
        console.log(`${n} pods at once (${impl}): setup ${r.setupMs.toFixed(0)} ms, teardown ${r.teardownMs.toFixed(0)} ms, failures ${r.failures}, leftovers ${r.leftovers}, peak ${Math.round(r.peakRssKiB / 1024)} MiB`);
      }
    }
  }
  const containerd = containerdSkip && selected(CONTAINERD_ROW)
    ? `containerd sandbox run+stop+remove: not measured (${containerdSkip}; \`apt-get install containerd runc gcc libc6-dev\` enables it).`
    : "";
  const etcdThere = spawnSync("etcd", ["--version"]).status === 0;
  if (selected("cluster-ipam 1000 allocations across 10 nodes") && !etcdThere) console.log("cluster-ipam: not measured (etcd is not installed: apt-get install etcd-server)");
  const cluster = selected("cluster-ipam 1000 allocations across 10 nodes") && etcdThere ? await runClusterBench() : [];
  return { rows, rss, podman, containerd, pods, cluster };
}

/** The pods table: one row per (pod count, implementation), ratios against Go at the same count. */
function podsTable(pods) {
  if (!pods.length) return [];
  const go = (n) => pods.find((p) => p.n === n && p.impl === "go");
  const ratio = (a, b) => (b ? (a / b).toFixed(2) : "-");
  return [
    "## Pods at once through PodNetworkManager (the seed's iSulad scenario)",
    "",
    "N pods set up at once, then torn down at once, by one tscni/runtime PodNetworkManager (under Bun) on the chain bridge + host-local,",
    "portmap (a published port per pod), firewall, tuning: ours run in the manager's process, Go's exec'd per call. Peak memory: every",
    "process of the run together (the manager and all plugin and tool processes), sampled from /proc every 20 ms.",
    "",
    "| pods | plugins | setup (ms) | teardown (ms) | setup / Go | teardown / Go | failures | leftovers | peak memory (MiB) | memory / Go |",
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...pods.map((p) => `| ${p.n} | ${p.impl} | ${p.setupMs.toFixed(0)} | ${p.teardownMs.toFixed(0)} | ${ratio(p.setupMs, go(p.n)?.setupMs)} | ` +
      `${ratio(p.teardownMs, go(p.n)?.teardownMs)} | ${p.failures} | ${p.leftovers} | ${Math.round(p.peakRssKiB / 1024)} | ${ratio(p.peakRssKiB, go(p.n)?.peakRssKiB)} |`),
    "",
  ];
}

function report({ rows, rss, podman, containerd, pods = [], cluster = [] }) {
  const m = machine();
  const lines = [
    "# Benchmarks",
    "",
    "Written by `npm run bench` (bench/run.mjs) from its own run; do not edit the numbers by hand.",
    "",
    `- date: ${new Date().toISOString()}`,
    `- machine: ${m.cpu}, ${m.cores} cores, ${m.mem}, kernel ${m.kernel}`,
    `- ours: dist/bin as built (${m.bun}); Go: Debian containernetworking-plugins ${m.go} (/usr/lib/cni)`,
    `- ${ROUNDS} rounds per scenario, ours and Go interleaved (alternating order); medians of wall time per round`,
    ...(ONLY ? [`- only the scenarios matching \`--only ${ONLY}\``] : []),
    "",
    "| scenario | ours (ms) | Go (ms) | ours/Go |",
    "|---|---:|---:|---:|",
    ...rows.map((r) => `| ${r.name} | ${r.ours.toFixed(1)} | ${r.go.toFixed(1)} | ${(r.ours / r.go).toFixed(2)} |`),
    "",
    ...(rss ? [
      "| peak RSS of one bridge ADD with host-local (largest process) | ours | Go |",
      "|---|---:|---:|",
      `| KiB | ${rss.ours} | ${rss.go} |`,
      "",
    ] : []),
    podman,
    "",
    containerd,
    "",
    ...podsTable(pods),
    ...clusterTable(cluster),
  ];
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
    const r = spawnSync("nsenter", [`--net=/run/netns/${HOST_NS}`, "unshare", "--mount", "--propagation", "private",
      "sh", "-c", script, "sh", cg, process.execPath, fileURLToPath(import.meta.url), "--inside", ...args], {
      stdio: "inherit", env: { ...process.env, TSCNI_BENCH_STATE: state },
    });
    if (r.status !== 0) throw new Error("benchmark failed");
    report(JSON.parse(readFileSync(path.join(state, "result.json"), "utf8")));
  } finally {
    delNetns(HOST_NS);
    rmSync(state, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
}
