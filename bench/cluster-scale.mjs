// cluster-ipam where other cluster IPAMs break (`npm run bench:cluster`, as root, after `npm run build`): a local
// 3-member etcd (Debian's etcd-server, data on tmpfs), every call an exec of dist/bin/cluster-ipam through the
// launcher as a runtime makes it, served by the default install's auto-started server (on a socket of the
// benchmark's own, in a network namespace of its own). Scenarios:
//   scale     10,000 allocations over 1,000 simulated nodes, 100 calls at once, then the DELs
//   overload  2,000 calls at once over 200 nodes (ADD, then DEL)
//   full      a /20 pool (4,093 addresses: 4,094 hosts less the gateway) over 100 nodes, 4,093 ADDs at once, then one
//             more (which must fail: pool exhausted), then 100 DELs on some nodes and 100 ADDs on other nodes
//             (which must get exactly the freed addresses)
//   faults    the scale run's shape with 2 ms each way between the calls and every member (a delaying proxy),
//             and a member killed (SIGKILL) a third of the way through each phase and started again two thirds
//             through: a follower, then in a second run the leader
//   hostlocal the scale run's shape with Go's host-local on each node (no coordination): the duplicates a flat
//             network would get
//   floor     the scale run's 10,000 calls with a config the server refuses before any etcd request: what starting
//             the processes and handing the calls to the server costs on this machine, nothing of the IPAM
// TSCNI_BENCH_SCALE_CALLS=N runs scale, faults, floor and hostlocal with N calls over N/10 nodes.
// Duplicates are counted from etcd's allocation records, not from the results.
//   node bench/cluster-scale.mjs [scale] [overload] [full] [faults] [floor] [hostlocal]      (default: all six)
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
const callEnv = (socket) => ({
  PATH: process.env.PATH,
  TSCNI_RESIDENT: "auto",
  TSCNI_RESIDENT_SOCKET: socket,
  CNI_NETNS: "/run/netns/bench-none",
  CNI_IFNAME: "eth0",
  CNI_PATH: BIN,
  ...(process.env.TSCNI_DEBUG ? { TSCNI_DEBUG: "1" } : {}),
});

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
  if (!runner) {
    let ended = 0;
    return pool(
      calls.map((c) => async () => {
        const r = await exec(ctx.socket, command, confOf(c), c.id);
        ctx.onProgress?.(++ended, calls.length);
        return r;
      }),
      width,
    );
  }
  return new Promise((resolve, reject) => {
    const child = spawn(runner, [String(width), ctx.program ?? path.join(BIN, "cluster-ipam")], {
      env: callEnv(ctx.socket),
      stdio: ["pipe", "pipe", process.env.TSCNI_DEBUG ? "inherit" : "ignore"],
    });
    // Calls are read as they end, so a scenario can act at a point of the run (ctx.onProgress: calls ended so far).
    const results = new Array(calls.length);
    let pending = Buffer.alloc(0);
    let done = 0;
    child.stdout.on("data", (c) => {
      pending = Buffer.concat([pending, c]);
      for (;;) {
        const eol = pending.indexOf(10);
        if (eol < 0) break;
        const [index, ms, status, len] = pending.subarray(0, eol).toString().split(" ").map(Number);
        if (pending.length < eol + 1 + len) break;
        results[index] = { ms, ok: status === 0, stdout: pending.subarray(eol + 1, eol + 1 + len).toString() };
        pending = pending.subarray(eol + 1 + len);
        ctx.onProgress?.(++done, calls.length);
      }
    });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(results) : reject(new Error(`spawn-pool exited with ${code}`))));
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
  return {
    wallMs: Number(process.hrtime.bigint() - t0) / 1e6,
    p50: quantile(ms, 0.5),
    p99: quantile(ms, 0.99),
    failures: failed.length,
    example: failed[0]?.stdout.trim().slice(0, 300),
    results,
  };
}

/**
 * A TCP proxy to 127.0.0.1:`port` that holds every chunk `delayMs` in each direction, in order (this kernel has no
 * netem): the network between a node and an etcd member. A member killed resets its connections through here too.
 */
async function delayProxy(port, delayMs) {
  const net = await import("node:net");
  const pipeDelayed = (from, to) => {
    const queue = [];
    // biome-ignore lint/correctness/noUnusedVariables: read by `??=` below (one timer at a time)
    let timer;
    const flush = () => {
      timer = undefined;
      const now = performance.now();
      while (queue.length && queue[0].due <= now) to.write(queue.shift().chunk);
      if (queue.length) timer = setTimeout(flush, queue[0].due - now);
    };
    from.on("data", (chunk) => {
      queue.push({ chunk, due: performance.now() + delayMs });
      timer ??= setTimeout(flush, delayMs);
    });
    from.on("end", () => setTimeout(() => to.end(), delayMs + 1));
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
    pipeDelayed(client, upstream);
    pipeDelayed(upstream, client);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

/** The index of the member that is the leader now (from the members' etcd_server_is_leader metric). */
async function leaderOf(cluster) {
  for (const [i, endpoint] of cluster.endpoints.entries()) {
    const text = await cluster.get(`${endpoint}/metrics`).catch(() => "");
    if (/^etcd_server_is_leader 1$/m.test(text)) return i;
  }
  return -1;
}

const SCENARIOS = {
  /**
   * The scale run's shape with faults: 2 ms each way between every call and every member (a delaying proxy), and
   * one member — a follower, then in a second run the leader — killed with SIGKILL a third of the way through each
   * phase and started again two thirds through.
   */
  async faults(ctx) {
    const total = Number(process.env.TSCNI_BENCH_SCALE_CALLS ?? 10_000);
    const runs = [];
    for (const victim of ["follower", "leader"]) {
      const proxies = await Promise.all(ctx.cluster.endpoints.map((e) => delayProxy(Number(new URL(e).port), 2)));
      const v = ctx.variant(
        `benchfaults${victim}`,
        proxies.map((p) => p.url),
      );
      const calls = Array.from({ length: total }, (_, i) => ({ node: `node-${i % (total / 10)}`, id: `faults-${victim}-${i}` }));
      const events = [];
      const faulty = (phaseName) => {
        let state = "before"; // then "killing", "killed", "restarted"
        let member = -1;
        return {
          ...v,
          onProgress: (done, of) => {
            if (state === "before" && done >= of / 3) {
              state = "killing";
              void (async () => {
                const leader = await leaderOf(ctx.cluster);
                member = victim === "leader" ? leader : [0, 1, 2].find((i) => i !== leader);
                await ctx.cluster.kill(member, "SIGKILL");
                events.push(`${phaseName}: member ${member} (the ${victim}) killed at ${done}/${of}`);
                state = "killed";
              })();
            } else if (state === "killed" && done >= (2 * of) / 3) {
              state = "restarted";
              events.push(`${phaseName}: member ${member} started again at ${done}/${of}`);
              ctx.cluster.startMember(member);
            }
          },
        };
      };
      const add = await phase(faulty("ADD"), "ADD", calls, 100);
      for (let i = 0; i < 3; i++) ctx.cluster.startMember(i);
      await ctx.cluster.waitHealthy();
      const check = await v.check(calls, add);
      const del = await phase(faulty("DEL"), "DEL", withResults(calls, add), 100);
      for (let i = 0; i < 3; i++) ctx.cluster.startMember(i);
      await ctx.cluster.waitHealthy();
      const left = (await v.check()).allocations;
      for (const p of proxies) p.close();
      runs.push({ victim, add, del, ...check, left, events });
    }
    return {
      name: `faults: ${total.toLocaleString("en")} calls over ${(total / 10).toLocaleString("en")} nodes, 100 at once, 2 ms each way to every member`,
      runs,
    };
  },

  async scale(ctx) {
    const total = Number(process.env.TSCNI_BENCH_SCALE_CALLS ?? 10_000);
    const calls = Array.from({ length: total }, (_, i) => ({ node: `node-${i % (total / 10)}`, id: `scale-${i}` }));
    const before = await ctx.kvRequests();
    const add = await phase(ctx, "ADD", calls, 100);
    const roundTrips = ((await ctx.kvRequests()) - before) / calls.length;
    const check = await ctx.check(calls, add);
    const blocks = check.blocks;
    const del = await phase(ctx, "DEL", withResults(calls, add), 100);
    return {
      name: "10,000 allocations over 1,000 nodes, 100 at once",
      add,
      del,
      roundTrips,
      blocks,
      ...check,
      left: (await ctx.check()).allocations,
    };
  },
  async overload(ctx) {
    const calls = Array.from({ length: 2000 }, (_, i) => ({ node: `node-${i % 200}`, id: `overload-${i}` }));
    const add = await phase(ctx, "ADD", calls, calls.length);
    const check = await ctx.check(calls, add);
    const del = await phase(ctx, "DEL", withResults(calls, add), calls.length);
    return { name: "2,000 calls at once over 200 nodes", add, del, ...check, left: (await ctx.check()).allocations };
  },
  /**
   * The scale run's shape with Go's host-local (Debian's /usr/lib/cni/host-local) on every node, each with its own
   * store and the same flat subnet, as without a cluster IPAM: how many addresses would be handed out twice.
   */
  async hostlocal(ctx) {
    const goHostLocal = "/usr/lib/cni/host-local";
    if (!existsSync(goHostLocal))
      return { name: "Go's host-local per node", skipped: `${goHostLocal} is not installed (containernetworking-plugins)` };
    const total = Number(process.env.TSCNI_BENCH_SCALE_CALLS ?? 10_000);
    const calls = Array.from({ length: total }, (_, i) => ({ node: `node-${i % (total / 10)}`, id: `hostlocal-${i}` }));
    const v = {
      ...ctx,
      program: goHostLocal,
      conf: (node) =>
        JSON.stringify({
          cniVersion: "1.0.0",
          name: "benchhostlocal",
          type: "bridge",
          ipam: { type: "host-local", dataDir: path.join(ctx.scratch, "host-local", node), ranges: [[{ subnet: "10.96.0.0/14" }]] },
        }),
    };
    const add = await phase(v, "ADD", calls, 100);
    const owners = new Map();
    add.results.forEach((r) => {
      if (!r.ok) return;
      const ip = JSON.parse(r.stdout).ips[0].address.split("/")[0];
      owners.set(ip, (owners.get(ip) ?? 0) + 1);
    });
    const duplicates = [...owners.values()].reduce((n, c) => n + c - 1, 0);
    const del = await phase(v, "DEL", calls, 100);
    return {
      name: `Go's host-local on each of ${(total / 10).toLocaleString("en")} nodes, one flat subnet, ${total.toLocaleString("en")} ADDs, 100 at once`,
      add,
      del,
      duplicates,
      distinct: owners.size,
    };
  },
  async floor(ctx) {
    const total = Number(process.env.TSCNI_BENCH_SCALE_CALLS ?? 10_000);
    const calls = Array.from({ length: total }, (_, i) => ({ node: `node-${i % (total / 10)}`, id: `floor-${i}` }));
    // No "ipam.etcd": refused by the server's parse (code 7), after the whole hand-off and before any etcd request.
    const refused = {
      ...ctx,
      conf: () => JSON.stringify({ cniVersion: "1.1.0", name: "benchfloor", type: "bridge", ipam: { type: "cluster-ipam" } }),
    };
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
    const freedIPs = new Set(
      add.results.filter((r, i) => r.ok && freed.some((f) => f.id === calls[i].id)).map((r) => JSON.parse(r.stdout).ips[0].address),
    );
    const del = await phase(ctx, "DEL", freed, freed.length);
    const again = Array.from({ length: 100 }, (_, i) => ({ node: `node-${50 + (i % 50)}`, id: `full-again-${i}` }));
    const refill = await phase(ctx, "ADD", again, again.length);
    const got = new Set(refill.results.filter((r) => r.ok).map((r) => JSON.parse(r.stdout).ips[0].address));
    const after = await ctx.check(again, refill);
    return {
      name: "a /20 pool (4,093 addresses) over 100 nodes, 4,093 at once",
      add,
      del,
      ...check,
      extra: { ms: extraMs, ok: extra.ok, message: extra.stdout.trim().slice(0, 300) },
      refill: { ...refill, exactlyFreed: got.size === freedIPs.size && [...got].every((a) => freedIPs.has(a)) },
      afterDuplicates: after.duplicates,
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
    const etcd = new EtcdClient({ endpoints: cluster.endpoints, dialTimeoutMs: 2000, requestTimeoutMs: 30_000 });
    for (const name of names) {
      const subnet = name === "full" ? "10.99.0.0/20" : "10.96.0.0/14";
      const confFor = (network, endpoints) => (node) =>
        JSON.stringify({
          cniVersion: "1.1.0",
          name: network,
          type: "bridge",
          ipam: { type: "cluster-ipam", nodeName: node, lockDir: path.join(base, "locks", network), etcd: { endpoints }, ranges: [[{ subnet }]] },
        });
      const ctx = {
        socket,
        scratch: socketDir,
        cluster,
        /** The same context for another network (its own keys), reached through `endpoints`. */
        variant: (network, endpoints) => ({ ...ctx, conf: confFor(network, endpoints), check: checkIn(`/tscni/ipam/${network}/`) }),
        kvRequests: () =>
          cluster.metric(
            /^grpc_server_handled_total\{grpc_code="[A-Za-z]+",grpc_method="(Range|Txn|Put|DeleteRange)",grpc_service="etcdserverpb\.KV"/,
          ),
      };
      /**
       * From etcd, under the network's `prefix`: the allocation records, the blocks claimed, and the duplicates:
       * successful ADDs (of `phase`) whose address etcd records for another container, or that share an address
       * with another result.
       */
      function checkIn(prefix) {
        return async (calls, added) => {
          const ips = await etcd.range({ key: `${prefix}ips/`, prefix: true });
          const blocks = await etcd.range({ key: `${prefix}blocks/`, prefix: true, countOnly: true });
          const owner = new Map(
            ips.kvs.map((kv) => {
              const rec = JSON.parse(kv.value);
              return [rec.ip.split("/")[0], rec.containerID];
            }),
          );
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
        };
      }
      Object.assign(ctx, ctx.variant(`bench${name}`, cluster.endpoints));
      const conf = ctx.conf;
      await exec(socket, "ADD", conf("warm"), "warm"); // the first call starts the server
      await exec(socket, "DEL", conf("warm"), "warm");
      const r = await SCENARIOS[name](ctx);
      out.push(r);
      if (r.skipped) {
        console.log(`${r.name}: skipped: ${r.skipped}`);
        continue;
      }
      if (r.distinct !== undefined) {
        const f = (p) => `${(p.wallMs / 1000).toFixed(1)} s, p50 ${p.p50.toFixed(0)} ms, p99 ${p.p99.toFixed(0)} ms, ${p.failures} failures`;
        console.log(`${r.name}: ADD ${f(r.add)}; DEL ${f(r.del)}; ${r.distinct} distinct addresses, ${r.duplicates} handed out to a second pod`);
        continue;
      }
      if (r.runs) {
        const f = (p) =>
          `${(p.wallMs / 1000).toFixed(1)} s, p50 ${p.p50.toFixed(0)} ms, p99 ${p.p99.toFixed(0)} ms, ${p.failures} failures${p.example ? ` (e.g. ${p.example})` : ""}`;
        for (const run of r.runs) {
          console.log(
            `${r.name}, the ${run.victim} killed and started again: ADD ${f(run.add)}; DEL ${f(run.del)}; ${run.allocations} allocations in etcd ` +
              `after the ADDs (${run.left} after the DELs), ${run.duplicates} duplicates; ${run.events.join("; ")}`,
          );
        }
        continue;
      }
      if (r.floor) {
        console.log(
          `${r.name}: ${(r.floor.wallMs / 1000).toFixed(1)} s, p50 ${r.floor.p50.toFixed(0)} ms, p99 ${r.floor.p99.toFixed(0)} ms, ` +
            `${r.floor.results.filter((x) => !x.ok && x.stdout.includes('"code": 7')).length} refused as expected`,
        );
        continue;
      }
      const f = (p) =>
        `${(p.wallMs / 1000).toFixed(1)} s, p50 ${p.p50.toFixed(0)} ms, p99 ${p.p99.toFixed(0)} ms, ${p.failures} failures${p.example ? ` (e.g. ${p.example})` : ""}`;
      console.log(
        `${r.name}: ADD ${f(r.add)}; DEL ${f(r.del)}; ${r.allocations} allocations in etcd after the ADDs (${r.left ?? "-"} after the DELs), ${r.duplicates} duplicates, ${r.blocks} blocks` +
          (r.roundTrips !== undefined ? `, ${r.roundTrips.toFixed(2)} etcd round trips per allocation` : "") +
          (r.extra
            ? `; one more: ${r.extra.ok ? "SUCCEEDED (wrong)" : `failed in ${r.extra.ms.toFixed(0)} ms: ${r.extra.message}`}; 100 new pods on other nodes after 100 DELs: ${f(r.refill)}, exactly the freed addresses: ${r.refill.exactlyFreed}, duplicates after: ${r.afterDuplicates}`
            : ""),
      );
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
  const names = args.length ? args : ["scale", "overload", "full", "faults", "floor", "hostlocal"];
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
