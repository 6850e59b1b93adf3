// Kill -9 under load (issue 32, point 5): a runtime (our libcni, in this process) keeps `--width` containers busy
// on bridge + host-local, each round flipping every container (ADD the detached ones, DEL the attached ones, all at
// once) with GCs among them, while SIGKILLs land at random moments: in exec mode on a random plugin process
// (bridge, or the host-local it runs), in the default mode on the resident server the first call started. After
// each round the runtime recovers as a node does (DEL of every attachment whose call failed, DEL again of every DEL
// that failed, GC with the attachments it holds) and the invariants of the crash simulator are checked on the real
// node: every error a CNI error; every recovery DEL and GC succeeds; no address held twice; host-local holds
// exactly the live attachments' addresses; the cache holds exactly the live attachments; the kernel holds exactly
// the live attachments' links (a veth on the bridge each, eth0 with its address in its namespace) and nothing in
// the namespaces of the others. Writes the "Reliability" section of docs/benchmarks.md (other sections are left).
//
//   node bench/kill.mjs [--kills 1000] [--width 100] [--per-round 10] [--out docs/benchmarks.md]   (as root; `npm run build` first)
//
// --kills is the total over both modes (half each).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(ROOT, "dist/bin");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const KILLS = Number(opt("--kills", "1000"));
const WIDTH = Number(opt("--width", "100"));
const PER_ROUND = Number(opt("--per-round", "10"));
const MODES = opt("--modes", "exec,default").split(",");
const OUT = path.resolve(ROOT, opt("--out", "docs/benchmarks.md"));
// (The inner process gets the outer one's tag: the namespaces are made outside.)
const TAG = process.env.TSCNI_KILL_TAG ?? Math.random().toString(16).slice(2, 6);
const HOST_NS = `tscni-kill-${TAG}`;
const ctrNs = (i) => `tscni-kill-${TAG}-c${i}`;
const BRIDGE = `tkill${TAG}`;
const NETWORK = "killnet";
const SECTION = "## Reliability: kill -9 under load";

const ip = (...a) => spawnSync("ip", a, { encoding: "utf8" });
const ipJson = (ns, ...a) => JSON.parse(ip("-n", ns, "-json", ...a).stdout || "[]");

/** Descendants of `root` (pids), from /proc. */
function descendants(root) {
  const parent = new Map();
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      parent.set(Number(p), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      /* gone */
    }
  }
  const out = [];
  const walk = (pid) => {
    for (const [child, pp] of parent)
      if (pp === pid) {
        out.push(child);
        walk(child);
      }
  };
  walk(root);
  return out;
}

/** Pids of servers whose command line names `socket`. */
function serverPids(socket) {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .flatMap((p) => {
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
        return argv.includes("daemon") && argv.includes(socket) ? [Number(p)] : [];
      } catch {
        return [];
      }
    });
}

async function inside() {
  const { CNIConfig } = await import(path.join(ROOT, "dist/libcni/api.js"));
  const { parseConfList } = await import(path.join(ROOT, "dist/spec/config.js"));
  const { unwrapCniError } = await import(path.join(ROOT, "dist/spec/errors.js"));
  // A CNI error, or (GC: libcni joins the failures of several plugins, as Go's errors.Join) only CNI errors.
  const isCniFailure = (e) => unwrapCniError(e) !== undefined || (Array.isArray(e?.errors) && e.errors.length > 0 && e.errors.every(isCniFailure));
  const scratch = process.env.TSCNI_KILL_SCRATCH;
  const socket = path.join(scratch, "run", "plugins.sock");
  mkdirSync(path.dirname(socket), { recursive: true });
  const results = [];
  for (const mode of MODES) {
    const cacheDir = path.join(scratch, mode, "cache");
    const dataDir = path.join(scratch, mode, "ipam");
    mkdirSync(cacheDir, { recursive: true });
    const list = parseConfList(
      JSON.stringify({
        cniVersion: "1.1.0",
        name: NETWORK,
        plugins: [
          { type: "bridge", bridge: BRIDGE, isGateway: true, ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.243.0.0/16" }]] } },
        ],
      }),
    );
    // The plugins get this process's environment (libcni's exec passes it on).
    process.env.TSCNI_RESIDENT = mode === "exec" ? "exec" : "auto";
    process.env.TSCNI_RESIDENT_SOCKET = socket;
    const cni = new CNIConfig({ path: [BIN], cacheDir });
    const live = new Map(); // container index -> { id, ip }
    const stats = {
      mode,
      kills: 0,
      serverKills: 0,
      rounds: 0,
      calls: 0,
      failedCalls: 0,
      failedWithoutKill: 0,
      nonCniErrors: 0,
      violations: [],
      seconds: 0,
    };
    const violation = (round, what) => {
      stats.violations.push(`round ${round}: ${what}`);
      if (stats.violations.length <= 5) console.log(`  violation: round ${round}: ${what}`);
    };
    const target = Math.ceil(KILLS / MODES.length);
    let estimateMs = 3000;
    const t0 = Date.now();
    let serial = 0;
    while (stats.kills < target) {
      const round = ++stats.rounds;
      // The launcher backs off from starting a server that keeps dying (1, 2, 4 ... 300 s, recorded in the lock
      // file): each round starts as if that time had passed, so every round has a server to kill.
      if (existsSync(`${socket}.lock`)) truncateSync(`${socket}.lock`, 0);
      const inFlight = new Map(); // index -> { op, id }
      const killTimes = [];
      const failed = [];
      const call = async (label, fn, during) => {
        stats.calls++;
        const started = Date.now();
        try {
          return { ok: true, value: await fn() };
        } catch (e) {
          stats.failedCalls++;
          if (!isCniFailure(e)) {
            stats.nonCniErrors++;
            violation(round, `${label}: not a CNI error: ${e?.stack ?? e}`);
          }
          const ended = Date.now();
          if (during && !killTimes.some((k) => k >= started && k <= ended + 50)) {
            stats.failedWithoutKill++;
            violation(round, `${label} failed with no kill during it: ${e?.message ?? e}`);
          }
          return { ok: false, error: e };
        }
      };
      const rt = (i, id) => ({ containerID: id, netNS: `/run/netns/${ctrNs(i)}`, ifName: "eth0", args: [] });
      const gcOnce = async () => {
        const valid = [...live.values(), ...inFlight.values()].map((a) => ({ containerID: a.id, ifname: "eth0" }));
        await call("GC", () => cni.gcNetworkList(list, { validAttachments: valid }), true);
      };
      const ops = Array.from({ length: WIDTH }, async (_, i) => {
        await sleep(Math.random() * 20);
        const was = live.get(i);
        if (was) {
          inFlight.set(i, { op: "DEL", id: was.id });
          const r = await call(`DEL ${was.id}`, () => cni.delNetworkList(list, rt(i, was.id)), true);
          inFlight.delete(i);
          if (r.ok) live.delete(i);
          else failed.push({ i, id: was.id });
        } else {
          const id = `k${mode[0]}${TAG}${++serial}`;
          inFlight.set(i, { op: "ADD", id });
          const r = await call(`ADD ${id}`, () => cni.addNetworkList(list, rt(i, id)), true);
          inFlight.delete(i);
          if (r.ok) live.set(i, { id, ip: r.value.ips?.[0]?.address.split("/")[0] ?? "" });
          else failed.push({ i, id });
        }
      });
      const gcs = [sleep(estimateMs * 0.3).then(gcOnce), sleep(estimateMs * 0.7).then(gcOnce)];
      let settled = false;
      const roundStart = Date.now();
      const all = Promise.all([...ops, ...gcs]).then(() => (settled = true));
      const killer = (async () => {
        const times = Array.from({ length: PER_ROUND }, () => Math.random() * estimateMs).sort((a, b) => a - b);
        for (const at of times) {
          await sleep(Math.max(0, roundStart + at - Date.now()));
          if (settled || stats.kills >= target) return;
          // Exec mode: a plugin process. The default: the server half the time it is there, else a plugin
          // process (the launcher waiting on the server, or a call run by itself while no server is up).
          const servers = mode === "exec" ? [] : serverPids(socket);
          const server = servers.length > 0 && Math.random() < 0.5;
          const victims = server ? servers : descendants(process.pid);
          if (victims.length === 0) continue;
          const pid = victims[Math.floor(Math.random() * victims.length)];
          try {
            process.kill(pid, "SIGKILL");
            killTimes.push(Date.now());
            stats.kills++;
            if (server) stats.serverKills++;
          } catch {
            /* gone */
          }
        }
      })();
      await all;
      await killer;
      estimateMs = Math.max(500, Date.now() - roundStart);
      const recoveryStart = Date.now();

      // Recovery, as a node's runtime does it: DEL what failed, then GC with what it holds.
      for (const f of failed) {
        const holder = live.get(f.i);
        if (holder && holder.id !== f.id) continue;
        const r = await call(`recovery DEL ${f.id}`, () => cni.delNetworkList(list, rt(f.i, f.id)), false);
        if (!r.ok) violation(round, `the recovery DEL of ${f.id} failed: ${r.error?.message}`);
        else live.delete(f.i);
      }
      const valid = [...live.values()].map((a) => ({ containerID: a.id, ifname: "eth0" }));
      const gc = await call("recovery GC", () => cni.gcNetworkList(list, { validAttachments: valid }), false);
      if (!gc.ok) violation(round, `the recovery GC failed: ${gc.error?.message}`);

      // The invariants, on the node.
      const liveIds = new Map([...live.values()].map((a) => [a.id, a.ip]));
      const ips = [...live.values()].map((a) => a.ip);
      if (new Set(ips).size !== ips.length) violation(round, `an address held by two live attachments: ${ips.sort().join(" ")}`);
      const store = path.join(dataDir, NETWORK);
      const reserved = new Map();
      for (const f of existsSync(store) ? readdirSync(store) : []) {
        if (!/^\d+\.\d+\.\d+\.\d+$/.test(f)) continue;
        reserved.set(f, readFileSync(path.join(store, f), "utf8").split(/\r?\n/)[0]);
      }
      for (const [addr, owner] of reserved)
        if (liveIds.get(owner) !== addr) violation(round, `${addr} held for ${owner || "(no readable owner)"}, not a live attachment's`);
      for (const [id, addr] of liveIds) if (reserved.get(addr) !== id) violation(round, `live ${id}: its address ${addr} is not reserved for it`);
      const cached = (existsSync(path.join(cacheDir, "results")) ? readdirSync(path.join(cacheDir, "results")) : []).filter(
        (f) => !f.startsWith("."),
      );
      const expected = [...liveIds.keys()].map((id) => `${NETWORK}-${id}-eth0`).sort();
      if (JSON.stringify(cached.sort()) !== JSON.stringify(expected))
        violation(round, `the cache holds ${cached.length} entries for ${expected.length} live attachments`);
      const veths = ipJson(HOST_NS, "link", "show", "master", BRIDGE).length;
      if (veths !== live.size) violation(round, `${veths} veths on the bridge for ${live.size} live attachments`);
      for (let i = 0; i < WIDTH; i++) {
        const addrs = ipJson(ctrNs(i), "addr", "show").filter((l) => l.ifname !== "lo");
        const a = live.get(i);
        if (!a && addrs.length) violation(round, `container ${i} has no attachment but links ${addrs.map((l) => l.ifname).join(",")}`);
        if (a && !(addrs.length === 1 && addrs[0].addr_info?.some((x) => x.local === a.ip)))
          violation(round, `container ${i} (${a.id}) lacks eth0 with ${a.ip}`);
      }
      process.stdout.write(
        `${mode}: round ${round} (${estimateMs} ms, recovery and checks ${Date.now() - recoveryStart} ms), ${stats.kills}/${target} kills, ${stats.calls} calls, ${stats.failedCalls} failed, ${stats.violations.length} violations\n`,
      );
    }
    // Take everything down, and check the node is clean.
    for (const [i, a] of live) {
      const r = await failureOf(() => cni.delNetworkList(list, { containerID: a.id, netNS: `/run/netns/${ctrNs(i)}`, ifName: "eth0", args: [] }));
      if (r) stats.violations.push(`final DEL of ${a.id}: ${r}`);
    }
    live.clear();
    const left = existsSync(path.join(dataDir, NETWORK)) ? readdirSync(path.join(dataDir, NETWORK)).filter((f) => /^\d/.test(f)).length : 0;
    if (left) stats.violations.push(`${left} reservations left after the final DELs`);
    for (const pid of serverPids(socket)) process.kill(pid, "SIGKILL");
    stats.seconds = (Date.now() - t0) / 1000;
    console.log(
      `\n${mode}: ${stats.kills} kills (${stats.serverKills} of the server) in ${stats.rounds} rounds, ${stats.calls} calls (${stats.failedCalls} failed: ${stats.nonCniErrors} not CNI errors, ` +
        `${stats.failedWithoutKill} with no kill), ${stats.violations.length} violations, ${stats.seconds.toFixed(0)} s`,
    );
    results.push(stats);
  }
  return results;
}

/** The message of `fn`'s failure, or undefined when it succeeds. */
async function failureOf(fn) {
  try {
    await fn();
    return undefined;
  } catch (e) {
    return e?.message ?? String(e);
  }
}

function section(results) {
  const row = (s) =>
    `| ${s.mode === "exec" ? "exec mode: a random plugin process" : `default: the resident server (${s.serverKills}) or a plugin process`} | ${s.kills} | ${s.rounds} | ${s.calls} | ` +
    `${s.failedCalls} | ${s.nonCniErrors} | ${s.failedWithoutKill} | ${s.violations.length} | ${s.seconds.toFixed(0)} |`;
  return [
    SECTION,
    "",
    `Written by \`node bench/kill.mjs\` (${new Date().toISOString()}): ${WIDTH} containers on bridge + host-local, each round every`,
    "container flipped at once (ADD the detached, DEL the attached) with two GCs among them, while SIGKILLs land at random",
    `moments (${PER_ROUND} per round planned; in the default mode half of them on the server while there is one, its start`,
    "back-off cleared between rounds); then the runtime recovers (DEL of every attachment whose call failed, GC with what",
    "it holds) and the crash simulator's invariants are checked on the node: every error a CNI error, every recovery DEL and GC",
    "succeeds, no address held twice, host-local holds exactly the live attachments' addresses, the cache exactly the live",
    "attachments, the kernel exactly their links (a veth each on the bridge, eth0 with its address) and nothing in the others'",
    "namespaces. A call that failed with no kill during it counts as a violation.",
    "",
    "| SIGKILL of | kills | rounds | calls | failed calls | not CNI errors | failed with no kill | violations | seconds |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...results.map(row),
    "",
    ...results.flatMap((s) => s.violations.slice(0, 5).map((v) => `- ${s.mode}: ${v}`)),
    "",
  ].join("\n");
}

/** Replaces (or appends) the Reliability section of `file`, leaving the rest as it is. */
function writeSection(file, text) {
  const old = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n";
  const start = old.indexOf(SECTION);
  let out;
  if (start < 0) out = `${old.trimEnd()}\n\n${text}`;
  else {
    const next = old.indexOf("\n## ", start + SECTION.length);
    out = `${old.slice(0, start)}${text}${next < 0 ? "" : old.slice(next + 1)}`;
  }
  writeFileSync(file, out);
}

if (args.includes("--inside")) {
  writeFileSync(path.join(process.env.TSCNI_KILL_SCRATCH, "result.json"), JSON.stringify(await inside()));
  if (process.env.TSCNI_KILL_KEEP) spawnSync("sh", ["-c", `cat ${process.env.TSCNI_KILL_SCRATCH}/run/*.log | tail -30`], { stdio: "inherit" });
} else {
  if (process.getuid() !== 0) throw new Error("kill -9 under load needs root (network namespaces)");
  if (!existsSync(path.join(BIN, "bridge"))) throw new Error("run `npm run build` first");
  const scratch = mkdtempSync(path.join(os.tmpdir(), "tscni-kill-"));
  const namespaces = [HOST_NS, ...Array.from({ length: WIDTH }, (_, i) => ctrNs(i))];
  try {
    for (const ns of namespaces) {
      ip("netns", "add", ns);
      ip("-n", ns, "link", "set", "lo", "up");
    }
    const cg = path.join(scratch, "cgroup");
    mkdirSync(cg);
    // As `ip netns exec`, with sysfs remounted for the namespace, keeping the cgroup mounts (the server moves itself).
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
        env: { ...process.env, TSCNI_KILL_SCRATCH: scratch, TSCNI_KILL_TAG: TAG },
      },
    );
    if (r.status !== 0) throw new Error("kill -9 under load failed");
    const results = JSON.parse(readFileSync(path.join(scratch, "result.json"), "utf8"));
    writeSection(OUT, section(results));
    console.log(`wrote the Reliability section of ${path.relative(ROOT, OUT)}`);
    if (results.some((s) => s.violations.length > 0)) process.exitCode = 1;
  } finally {
    for (const ns of namespaces) ip("netns", "del", ns);
    rmSync(scratch, { recursive: true, force: true });
  }
}
