// cluster-ipam where other cluster IPAMs break (`npm run bench:cluster`, as root, after `npm run build`): a local
// 3-member etcd (Debian's etcd-server, data on tmpfs), every call an exec of dist/bin/cluster-ipam through the
// launcher as a runtime makes it, served by the default install's auto-started server (on a socket of the
// benchmark's own, in a network namespace of its own). Scenarios:
//   scale     10,000 allocations over 1,000 simulated nodes, 100 calls at once, then the DELs
//   overload  2,000 calls at once over 200 nodes (ADD, then DEL)
//   full      a /20 pool (4,093 addresses: 4,094 hosts less the gateway) over 100 nodes, 4,093 ADDs at once, then one
//             more (which must fail: pool exhausted), then 100 DELs on some nodes and 100 ADDs on other nodes
//             (which must get exactly the freed addresses)
//   floor     the scale run's 10,000 calls with a config the server refuses before any etcd request: what starting
//             the processes and handing the calls to the server costs on this machine, nothing of the IPAM
// TSCNI_BENCH_SCALE_CALLS=N runs scale and floor with N calls over N/10 nodes.
// Duplicates are counted from etcd's allocation records, not from the results.
//   node bench/cluster-scale.mjs [scale] [overload] [full] [floor]      (default: all four)
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pool, quantile } from "./cluster.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(ROOT, "dist/bin");
const NS = "tscni-bench-cluster";

/** Execs cluster-ipam through the launcher (the default install) from Node; resolves to { ms, ok, stdout }. */
function exec(socket, command, conf, containerID) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(path.join(BIN, "cluster-ipam"), [], {
      env: { ...callEnv(socket), CNI_COMMAND: command, CNI_CONTAINERID: containerID },
      stdio: ["pipe", "pipe", process.env.TSCNI_DEBUG ? "inherit" : "ignore"],
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (c) => (stdout += c));
    child.on("close", (code) => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, ok: code === 0, stdout }));
    child.stdin.end(conf);
  });
}

/**
 * The environment of every call: the launcher and the auto-started server on the benchmark's socket.
 * TSCNI_DEBUG=1 in the benchmark's environment: the launcher's reasons for running a call itself, on stderr.
 */
const callEnv = (socket) => ({ PATH: process.env.PATH, TSCNI_RESIDENT: "auto", TSCNI_RESIDENT_SOCKET: socket, CNI_NETNS: "/run/netns/bench-none",
  CNI_IFNAME: "eth0", CNI_PATH: BIN, ...(process.env.TSCNI_DEBUG ? { TSCNI_DEBUG: "1" } : {}) });

/** bench/spawn-pool.c, compiled once into `dir` ("" without a C compiler: the calls are then started from Node). */
let poolPath;
function spawnPool(dir) {
  if (poolPath === undefined) {
    const out = path.join(dir, "spawn-pool");
    poolPath = spawnSync("cc", ["-O2", "-o", out, path.join(ROOT, "bench/spawn-pool.c")]).status === 0 ? out : "";
    if (!poolPath) console.log("(no C compiler: calls started from Node, which caps them at about 100 a second on a small VM)");
  }
  return poolPath;
}

/**
 * Runs `calls` `width` at a time through bench/spawn-pool (as many runtimes would start them), or from Node;
 * resolves to their { ms, ok, stdout } in order.
 */
function runCalls(ctx, command, calls, width) {
  // A DEL carries the ADD's result as prevResult, as libcni sends it from its cache.
  const confOf = (c) => (c.prev ? JSON.stringify({ ...JSON.parse(ctx.conf(c.node)), prevResult: JSON.parse(c.prev) }) : ctx.conf(c.node));
  const runner = spawnPool(ctx.scratch);
  if (!runner) return pool(calls.map((c) => () => exec(ctx.socket, command, confOf(c), c.id)), width);
  return new Promise((resolve, reject) => {
    const child = spawn(runner, [String(width), path.join(BIN, "cluster-ipam")], {
      env: callEnv(ctx.socket), stdio: ["pipe", "pipe", process.env.TSCNI_DEBUG ? "inherit" : "ignore"],
    });
    const chunks = [];
    child.stdout.on("data", (c) => chunks.push(c));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`spawn-pool exited with ${code}`));
      const buf = Buffer.concat(chunks);
      const results = new Array(calls.length);
      for (let at = 0; at < buf.length;) {
        const eol = buf.indexOf(10, at);
        const [index, ms, status, len] = buf.subarray(at, eol).toString().split(" ").map(Number);
        results[index] = { ms, ok: status === 0, stdout: buf.subarray(eol + 1, eol + 1 + len).toString() };
        at = eol + 1 + len;
      }
      resolve(results);
    });
    child.stdin.end(calls.map((c) => `${command}\t${c.id}\t${confOf(c)}\n`).join(""));
  });
}

/** The DELs of `calls` after `add`: each with its ADD's result when it had one. */
const withResults = (calls, add) => calls.map((c, i) => (add.results[i]?.ok ? { ...c, prev: add.results[i].stdout } : c));

/** One phase: `calls` ({ node, id, prev? }) `width` at a time; wall time, p50, p99, failures (with one example). */
async function phase(ctx, command, calls, width) {
  const t0 = process.hrtime.bigint();
  const results = await runCalls(ctx, command, calls, width);
  const ms = results.map((r) => r.ms);
  const failed = results.filter((r) => !r.ok);
  return { wallMs: Number(process.hrtime.bigint() - t0) / 1e6, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), failures: failed.length,
    example: failed[0]?.stdout.trim().slice(0, 300), results };
}

const SCENARIOS = {
  async scale(ctx) {
    const total = Number(process.env.TSCNI_BENCH_SCALE_CALLS ?? 10_000);
    const calls = Array.from({ length: total }, (_, i) => ({ node: `node-${i % (total / 10)}`, id: `scale-${i}` }));
    const before = await ctx.kvRequests();
    const add = await phase(ctx, "ADD", calls, 100);
    const roundTrips = (await ctx.kvRequests() - before) / calls.length;
    const check = await ctx.check(calls, add);
    const blocks = check.blocks;
    const del = await phase(ctx, "DEL", withResults(calls, add), 100);
    return { name: "10,000 allocations over 1,000 nodes, 100 at once", add, del, roundTrips, blocks, ...check, left: (await ctx.check()).allocations };
  },
  async overload(ctx) {
    const calls = Array.from({ length: 2000 }, (_, i) => ({ node: `node-${i % 200}`, id: `overload-${i}` }));
    const add = await phase(ctx, "ADD", calls, calls.length);
    const check = await ctx.check(calls, add);
    const del = await phase(ctx, "DEL", withResults(calls, add), calls.length);
    return { name: "2,000 calls at once over 200 nodes", add, del, ...check, left: (await ctx.check()).allocations };
  },
  async floor(ctx) {
    const total = Number(process.env.TSCNI_BENCH_SCALE_CALLS ?? 10_000);
    const calls = Array.from({ length: total }, (_, i) => ({ node: `node-${i % (total / 10)}`, id: `floor-${i}` }));
    // No "ipam.etcd": refused by the server's parse (code 7), after the whole hand-off and before any etcd request.
    const refused = { ...ctx, conf: () => JSON.stringify({ cniVersion: "1.1.0", name: "benchfloor", type: "bridge", ipam: { type: "cluster-ipam" } }) };
    const add = await phase(refused, "ADD", calls, 100);
    return { name: `the floor: ${total.toLocaleString("en")} calls refused by the server before etcd, 100 at once`, floor: add };
  },
  async full(ctx) {
    const calls = Array.from({ length: 4093 }, (_, i) => ({ node: `node-${i % 100}`, id: `full-${i}` }));
    const add = await phase(ctx, "ADD", calls, calls.length);
    const check = await ctx.check(calls, add);
    const t0 = process.hrtime.bigint();
    const extra = await exec(ctx.socket, "ADD", ctx.conf("node-extra"), "full-extra");
    const extraMs = Number(process.hrtime.bigint() - t0) / 1e6;
    // 100 pods deleted on the first half of the nodes; 100 new ones on nodes that deleted none.
    const freed = calls.filter((_, i) => i % 100 < 50).slice(0, 100);
    const freedIPs = new Set(add.results.filter((r, i) => r.ok && freed.some((f) => f.id === calls[i].id)).map((r) => JSON.parse(r.stdout).ips[0].address));
    const del = await phase(ctx, "DEL", freed, freed.length);
    const again = Array.from({ length: 100 }, (_, i) => ({ node: `node-${50 + (i % 50)}`, id: `full-again-${i}` }));
    const refill = await phase(ctx, "ADD", again, again.length);
    const got = new Set(refill.results.filter((r) => r.ok).map((r) => JSON.parse(r.stdout).ips[0].address));
    const after = await ctx.check(again, refill);
    return {
      name: "a /20 pool (4,093 addresses) over 100 nodes, 4,093 at once", add, del, ...check,
      extra: { ms: extraMs, ok: extra.ok, message: extra.stdout.trim().slice(0, 300) },
      refill: { ...refill, exactlyFreed: got.size === freedIPs.size && [...got].every((a) => freedIPs.has(a)) }, afterDuplicates: after.duplicates,
    };
  },
};

async function inside(names) {
  execFileSync("ip", ["link", "set", "lo", "up"]);
  const { EtcdCluster } = await import(path.join(ROOT, "dist/demo/etcd-cluster.js"));
  const { EtcdClient } = await import(path.join(ROOT, "dist/plugins/ipam/cluster-ipam/etcd.js"));
  const base = mkdtempSync(path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), "tscni-bench-cluster-"));
  const socketDir = mkdtempSync(path.join("/run", "tscni-bench-cluster-"));
  const socket = path.join(socketDir, "plugins.sock");
  const cluster = await EtcdCluster.start({ baseDir: path.join(base, "etcd"), members: 3, name: "scale" });
  const out = [];
  try {
    for (const name of names) {
      const network = `bench${name}`;
      const subnet = name === "full" ? "10.99.0.0/20" : "10.96.0.0/14";
      const conf = (node) => JSON.stringify({ cniVersion: "1.1.0", name: network, type: "bridge",
        ipam: { type: "cluster-ipam", nodeName: node, lockDir: path.join(base, "locks", network), etcd: { endpoints: cluster.endpoints }, ranges: [[{ subnet }]] } });
      const etcd = new EtcdClient({ endpoints: cluster.endpoints, dialTimeoutMs: 2000, requestTimeoutMs: 30_000 });
      const prefix = `/tscni/ipam/${network}/`;
      const ctx = {
        socket, conf, scratch: socketDir,
        kvRequests: () => cluster.metric(/^grpc_server_handled_total\{grpc_code="[A-Za-z]+",grpc_method="(Range|Txn|Put|DeleteRange)",grpc_service="etcdserverpb\.KV"/),
        /**
         * From etcd: the allocation records, the blocks claimed, and the duplicates: successful ADDs (of `phase`)
         * whose address etcd records for another container, or that share an address with another result.
         */
        async check(calls, added) {
          const ips = await etcd.range({ key: `${prefix}ips/`, prefix: true });
          const blocks = await etcd.range({ key: `${prefix}blocks/`, prefix: true, countOnly: true });
          const owner = new Map(ips.kvs.map((kv) => {
            const rec = JSON.parse(kv.value);
            return [rec.ip.split("/")[0], rec.containerID];
          }));
          let duplicates = 0;
          if (added) {
            const seen = new Set();
            added.results.forEach((r, i) => {
              if (!r.ok) return;
              const ip = JSON.parse(r.stdout).ips[0].address.split("/")[0];
              if (seen.has(ip) || owner.get(ip) !== calls[i].id) duplicates++;
              seen.add(ip);
            });
          }
          return { allocations: ips.kvs.length, duplicates, blocks: blocks.count };
        },
      };
      await exec(socket, "ADD", conf("warm"), "warm"); // the first call starts the server
      await exec(socket, "DEL", conf("warm"), "warm");
      const r = await SCENARIOS[name](ctx);
      out.push(r);
      if (r.floor) {
        console.log(`${r.name}: ${(r.floor.wallMs / 1000).toFixed(1)} s, p50 ${r.floor.p50.toFixed(0)} ms, p99 ${r.floor.p99.toFixed(0)} ms, ` +
          `${r.floor.results.filter((x) => !x.ok && x.stdout.includes('"code": 7')).length} refused as expected`);
        continue;
      }
      const f = (p) => `${(p.wallMs / 1000).toFixed(1)} s, p50 ${p.p50.toFixed(0)} ms, p99 ${p.p99.toFixed(0)} ms, ${p.failures} failures${p.example ? ` (e.g. ${p.example})` : ""}`;
      console.log(`${r.name}: ADD ${f(r.add)}; DEL ${f(r.del)}; ${r.allocations} allocations in etcd after the ADDs (${r.left ?? "-"} after the DELs), ${r.duplicates} duplicates, ${r.blocks} blocks` +
        (r.roundTrips !== undefined ? `, ${r.roundTrips.toFixed(2)} etcd round trips per allocation` : "") +
        (r.extra ? `; one more: ${r.extra.ok ? "SUCCEEDED (wrong)" : `failed in ${r.extra.ms.toFixed(0)} ms: ${r.extra.message}`}; 100 new pods on other nodes after 100 DELs: ${f(r.refill)}, exactly the freed addresses: ${r.refill.exactlyFreed}, duplicates after: ${r.afterDuplicates}` : ""));
    }
  } finally {
    spawnSync(path.join(BIN, "cnitool"), ["daemon", "stop", "--socket", socket]);
    await new Promise((r) => setTimeout(r, 1000));
    cluster.stop();
    rmSync(base, { recursive: true, force: true });
    if (process.env.TSCNI_DEBUG) spawnSync("cp", [`${socket}.log`, "/tmp/tscni-bench-cluster-server.log"]); // kept for the reader
    rmSync(socketDir, { recursive: true, force: true });
  }
  return out;
}

const args = process.argv.slice(2);
if (args[0] === "--inside") {
  await inside(args.slice(1));
} else {
  if (process.getuid() !== 0) throw new Error("the benchmark needs root (a network namespace)");
  if (spawnSync("etcd", ["--version"]).status !== 0) throw new Error("etcd is not installed (apt-get install etcd-server)");
  const names = args.length ? args : Object.keys(SCENARIOS);
  for (const n of names) if (!SCENARIOS[n]) throw new Error(`unknown scenario ${n}; known: ${Object.keys(SCENARIOS).join(", ")}`);
  spawnSync("ip", ["netns", "delete", NS]);
  execFileSync("ip", ["netns", "add", NS]);
  try {
    const r = spawnSync("ip", ["netns", "exec", NS, process.execPath, fileURLToPath(import.meta.url), "--inside", ...names], { stdio: "inherit" });
    if (r.status !== 0) throw new Error("benchmark failed");
  } finally {
    spawnSync("ip", ["netns", "delete", NS]);
  }
}
