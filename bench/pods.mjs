// The seed's iSulad scenario: N pods set up at once through PodNetworkManager on the default chain (bridge +
// host-local, portmap, firewall, tuning), then torn down at once, through the same manager under the same runtime
// (Bun) with: our plugins in the manager's process (inprocess), ours exec'd (exec), ours exec'd through the launcher
// to a resident server (resident), Debian's Go plugins exec'd (go). Measures each phase's wall time, failures, what
// is left behind, and the peak memory of every process of the run together (the manager, all plugin and tool
// processes it starts, and the resident server when one serves; sampled from /proc). The caller runs this inside
// the benchmark's own host namespace.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BUN = path.join(ROOT, "node_modules/.bin/bun");

/**
 * RSS in KiB of `root` and every process whose ancestry includes it, and of every process whose command line names
 * `socket` (a resident server) with its children, summed; and the servers' own RSS alone. A child caught between
 * its fork and its exec (its command line still its parent's) counts nothing: its pages are its parent's (shared,
 * or copy-on-write), and counting them again would add a whole second server (or Go plugin) to a sample.
 */
function treeRss(root, socket) {
  const parent = new Map();
  const rss = new Map();
  const cmdline = new Map();
  const cpuTicks = new Map();
  const servers = new Set();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(name), Number(fields[1]));
      cpuTicks.set(Number(name), Number(fields[11]) + Number(fields[12])); // utime + stime, in USER_HZ (100/s)
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${name}/status`, "utf8"));
      rss.set(Number(name), m ? Number(m[1]) : 0);
      cmdline.set(Number(name), readFileSync(`/proc/${name}/cmdline`, "utf8"));
    } catch {
      /* gone meanwhile */
    }
  }
  for (const [pid, line] of cmdline) {
    const unexeced = line !== "" && cmdline.get(parent.get(pid)) === line;
    if (unexeced) rss.set(pid, 0);
    else if (socket && line.split("\0").includes(socket)) servers.add(pid);
  }
  let total = 0;
  let server = 0;
  let serverCpuMs = 0;
  for (const pid of servers) {
    server += rss.get(pid) ?? 0;
    serverCpuMs += (cpuTicks.get(pid) ?? 0) * 10;
  }
  for (const pid of rss.keys()) {
    for (let p = pid, hops = 0; p && hops < 64; p = parent.get(p), hops++) {
      if (p === root || servers.has(p)) {
        total += rss.get(pid);
        break;
      }
    }
  }
  return { total, server, serverCpuMs };
}

/** What a run left in the host namespace and its state dirs. */
function leftovers(state, subnetPrefix) {
  const mine = (l) => /bench-/.test(l) || l.includes(subnetPrefix);
  const veths = execFileSync("ip", ["-json", "link", "show", "type", "veth"], { encoding: "utf8" });
  const nat = execFileSync("iptables-save", ["-t", "nat"], { encoding: "utf8" }).split("\n").filter(mine);
  const filter = execFileSync("iptables-save", ["-t", "filter"], { encoding: "utf8" }).split("\n").filter(mine);
  const ipam = existsSync(state.ipam) ? readdirSync(state.ipam, { recursive: true }).filter((f) => /\d+\.\d+\.\d+\.\d+$/.test(String(f))) : [];
  const cache = existsSync(path.join(state.cache, "results")) ? readdirSync(path.join(state.cache, "results")) : [];
  const netns = readdirSync("/run/netns").filter((n) => n.startsWith("tbp-"));
  return JSON.parse(veths || "[]").length + nat.length + filter.length + ipam.length + cache.length + netns.length;
}

const SUBNETS = { inprocess: "10.246.", go: "10.247.", exec: "10.243.", resident: "10.242." };

/**
 * Runs the scenario once for one plugin dir; resolves to { setupMs, teardownMs, failures, leftovers, peakRssKiB,
 * and with a server serverPeakRssKiB and ranThemselves: the calls the server did not serve, run by their callers in
 * exec mode (each writes a line to TSCNI_TRACE_PHASES, which the server, started with an environment of its own,
 * does not get) }.
 * env: extra environment of the manager (the launcher's socket and mode); serverSocket: the socket of a resident
 * server whose memory counts (whoever started it: it is found by its command line at every sample).
 */
export async function runPods({ binDir, impl, pods, scratch, env = {}, serverSocket, chain = "default", driver = "bun" }) {
  const base = path.join(scratch, `pods-${impl}-${pods}-${chain}-${driver}`);
  const state = { conf: path.join(base, "net.d"), cache: path.join(base, "cache"), ipam: path.join(base, "ipam") };
  mkdirSync(state.conf, { recursive: true });
  const bridge = {
    type: "bridge",
    bridge: `bpod${impl[0]}0`,
    isGateway: true,
    ipMasq: chain !== "bare",
    hairpinMode: true,
    ipam: { type: "host-local", ranges: [[{ subnet: `${SUBNETS[impl]}0.0/16` }]], routes: [{ dst: "0.0.0.0/0" }], dataDir: state.ipam },
  };
  const conflist = {
    cniVersion: "1.0.0",
    name: `bench-pods-${impl}`,
    // "bare": no firewall rules at all (issue 36's core path): bridge without ipMasq, host-local, tuning.
    plugins:
      chain === "bare"
        ? [bridge, { type: "tuning" }]
        : [bridge, { type: "portmap", capabilities: { portMappings: true } }, { type: "firewall" }, { type: "tuning" }],
  };
  writeFileSync(path.join(state.conf, "10-bench.conflist"), JSON.stringify(conflist));
  const tag = `${impl[0]}${pods}`;
  const selfRuns = path.join(base, "self-run.jsonl");
  if (serverSocket) env = { ...env, TSCNI_TRACE_PHASES: selfRuns };
  let child;
  if (driver === "spawn") {
    // bench/chain-driver.c: fork/exec per plugin, the config on a pipe, as a Go runtime; the namespaces made here
    for (let i = 0; i < pods; i++) execFileSync("ip", ["netns", "add", `tbp-${tag}-${i}`]);
    const lines = conflist.plugins.map((p) => `${p.type}\t${JSON.stringify({ cniVersion: conflist.cniVersion, name: conflist.name, ...p })}\n`);
    child = spawn(compiled(scratch, "chain-driver"), [String(pods), binDir, `tbp-${tag}-`, tag], {
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, ...env },
    });
    child.stdin.end(lines.join(""));
  } else {
    const args = JSON.stringify({ binDir, pods, confDir: state.conf, cacheDir: state.cache, inProcess: impl === "inprocess", tag });
    child = spawn(BUN, [path.join(ROOT, "bench/pod-driver.mjs"), args], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, ...env },
    });
  }
  let peak = 0;
  let serverPeak = 0;
  // The server's CPU time at the run's start (a server already up) and at its last sample: what the run cost it.
  const serverCpuAtStart = serverSocket ? treeRss(process.pid, serverSocket).serverCpuMs : 0;
  let serverCpuMs = 0;
  const sampler = setInterval(() => {
    const { total, server, serverCpuMs: cpu } = treeRss(child.pid, serverSocket);
    peak = Math.max(peak, total);
    serverPeak = Math.max(serverPeak, server);
    serverCpuMs = Math.max(serverCpuMs, cpu - serverCpuAtStart);
  }, 20);
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  const code = await new Promise((resolve) => child.on("close", resolve));
  clearInterval(sampler);
  if (driver === "spawn") for (let i = 0; i < pods; i++) execFileSync("ip", ["netns", "delete", `tbp-${tag}-${i}`]);
  if (code !== 0) throw new Error(`pod driver (${impl}) exited with ${code}: ${out}`);
  const r = JSON.parse(out.trim().split("\n").pop());
  const row = {
    ...r,
    chain,
    driver,
    failures: r.setupFailures + r.teardownFailures,
    leftovers: leftovers(state, SUBNETS[impl]),
    peakRssKiB: peak,
    ...(serverSocket
      ? {
          serverPeakRssKiB: serverPeak,
          serverCpuMs,
          ranThemselves: existsSync(selfRuns) ? readFileSync(selfRuns, "utf8").trim().split("\n").length : 0,
        }
      : {}),
  };
  try {
    execFileSync("ip", ["link", "delete", `bpod${impl[0]}0`], { stdio: "ignore" });
  } catch {
    /* no bridge */
  }
  rmSync(base, { recursive: true, force: true });
  return row;
}

/** bench/<name>.c compiled once into `scratch`; its path. */
function compiled(scratch, name) {
  const out = path.join(scratch, name);
  if (!existsSync(out)) execFileSync("cc", ["-O2", "-o", out, path.join(ROOT, `bench/${name}.c`), "-lpthread"]);
  return out;
}

/**
 * The kernel's floor of the bare chain's burst for `pods` pods (bench/floor.c: the same links, addresses, routes and
 * sysctls made by one process over netlink, no plugin; deleted by one request for all): { setupMs, teardownMs }.
 */
export function runFloor({ pods, scratch }) {
  const tag = `f${pods}`;
  for (let i = 0; i < pods; i++) execFileSync("ip", ["netns", "add", `tbp-${tag}-${i}`]);
  try {
    const out = execFileSync(compiled(scratch, "floor"), [String(pods), `tbp-${tag}-`, "bpodf0", "10.241."], { encoding: "utf8" });
    return JSON.parse(out.trim().split("\n").pop());
  } finally {
    for (let i = 0; i < pods; i++) execFileSync("ip", ["netns", "delete", `tbp-${tag}-${i}`]);
    try {
      execFileSync("ip", ["link", "delete", "bpodf0"], { stdio: "ignore" });
    } catch {
      /* no bridge */
    }
  }
}
