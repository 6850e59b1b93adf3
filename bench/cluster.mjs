// cluster-ipam at scale: 1000 allocations across 10 simulated nodes at once against a local 3-member etcd
// cluster (Debian's etcd-server on 127.0.0.1 of the benchmark's namespace, data on tmpfs when there is one), each
// allocation an exec of the shipped plugin (dist/bin/cluster-ipam) as a runtime would run it, a node running
// `perNode` of its calls at a time; then the same number of host-local allocations on one node, exec'd with the
// same total concurrency. Reports wall time, p50/p99 latency per call, etcd round trips per allocation (KV
// requests the members handled, from their metrics) and failures; then releases everything (DEL, also timed).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(ROOT, "dist/bin");

export const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

/** Execs a plugin; resolves to { ms, ok, stdout }. */
function exec(type, command, conf, containerID) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(path.join(BIN, type), [], {
      // (No resident server: the exec numbers must not include a connect to one installed on this host.)
      env: {
        PATH: process.env.PATH,
        TSCNI_RESIDENT_SOCKET: "",
        CNI_COMMAND: command,
        CNI_CONTAINERID: containerID,
        CNI_NETNS: "/run/netns/bench-none",
        CNI_IFNAME: "eth0",
        CNI_PATH: BIN,
      },
      stdio: ["pipe", "pipe", "ignore"],
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (c) => (stdout += c));
    child.on("close", (code) => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, ok: code === 0, stdout }));
    child.stdin.end(conf);
  });
}

/** Runs `jobs` (functions returning promises) `width` at a time. */
export async function pool(jobs, width) {
  const out = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, jobs.length) }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]();
      }
    }),
  );
  return out;
}

/** One phase (ADD or DEL) of `calls` ({type, conf, id, node}), per node `perNode` at a time, all nodes at once. */
async function phase(command, calls, perNode) {
  const byNode = new Map();
  for (const c of calls) byNode.set(c.node, [...(byNode.get(c.node) ?? []), c]);
  const t0 = process.hrtime.bigint();
  const results = (
    await Promise.all(
      [...byNode.values()].map((list) =>
        pool(
          list.map((c) => () => exec(c.type, command, c.conf, c.id)),
          perNode,
        ),
      ),
    )
  ).flat();
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const ms = results.map((r) => r.ms);
  return { wallMs, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), failures: results.filter((r) => !r.ok).length, results };
}

/** The benchmark; `allocations` across `nodes`, `perNode` calls at a time on each node. */
export async function runClusterBench({ allocations = 1000, nodes = 10, perNode = 10 } = {}) {
  const { EtcdCluster } = await import(path.join(ROOT, "dist/demo/etcd-cluster.js"));
  const base = mkdtempSync(path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), "tscni-bench-cluster-"));
  const cluster = await EtcdCluster.start({ baseDir: path.join(base, "etcd"), members: 3, name: "bench" });
  const rows = [];
  try {
    const kvRequests = () =>
      cluster.metric(/^grpc_server_handled_total\{grpc_code="[A-Za-z]+",grpc_method="(Range|Txn|Put|DeleteRange)",grpc_service="etcdserverpb\.KV"/);
    const clusterConf = (node) =>
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "benchcluster",
        type: "bridge",
        ipam: {
          type: "cluster-ipam",
          nodeName: node,
          lockDir: path.join(base, "locks"),
          etcd: { endpoints: cluster.endpoints },
          ranges: [[{ subnet: "10.96.0.0/16" }]],
        },
      });
    const nodeNames = Array.from({ length: nodes }, (_, i) => `node-${i}`);
    const calls = Array.from({ length: allocations }, (_, i) => {
      const node = nodeNames[i % nodes];
      return { type: "cluster-ipam", node, conf: clusterConf(node), id: `bench-${i}` };
    });
    const before = await kvRequests();
    const added = await phase("ADD", calls, perNode);
    const roundTrips = ((await kvRequests()) - before) / allocations;
    const addresses = added.results.filter((r) => r.ok).map((r) => JSON.parse(r.stdout).ips[0].address);
    const distinct = new Set(addresses).size;
    const deleted = await phase("DEL", calls, perNode);
    rows.push({ ipam: "cluster-ipam", nodes, allocations, concurrency: nodes * perNode, add: added, del: deleted, roundTrips, distinct });
    console.log(
      `cluster-ipam: ${allocations} ADDs on ${nodes} nodes (${nodes * perNode} at once): ${(added.wallMs / 1000).toFixed(1)} s, p50 ${added.p50.toFixed(0)} ms, p99 ${added.p99.toFixed(0)} ms, ${roundTrips.toFixed(2)} etcd round trips per allocation, ${added.failures} failures, ${distinct} distinct; DEL ${(deleted.wallMs / 1000).toFixed(1)} s`,
    );

    const hlConf = JSON.stringify({
      cniVersion: "1.1.0",
      name: "benchhl",
      type: "bridge",
      ipam: { type: "host-local", subnet: "10.97.0.0/16", dataDir: path.join(base, "host-local") },
    });
    const hlCalls = Array.from({ length: allocations }, (_, i) => ({ type: "host-local", node: "one", conf: hlConf, id: `benchhl-${i}` }));
    const hlAdded = await phase("ADD", hlCalls, nodes * perNode);
    const hlDistinct = new Set(hlAdded.results.filter((r) => r.ok).map((r) => JSON.parse(r.stdout).ips[0].address)).size;
    const hlDeleted = await phase("DEL", hlCalls, nodes * perNode);
    rows.push({
      ipam: "host-local",
      nodes: 1,
      allocations,
      concurrency: nodes * perNode,
      add: hlAdded,
      del: hlDeleted,
      roundTrips: 0,
      distinct: hlDistinct,
    });
    console.log(
      `host-local: ${allocations} ADDs on one node (${nodes * perNode} at once): ${(hlAdded.wallMs / 1000).toFixed(1)} s, p50 ${hlAdded.p50.toFixed(0)} ms, p99 ${hlAdded.p99.toFixed(0)} ms, ${hlAdded.failures} failures; DEL ${(hlDeleted.wallMs / 1000).toFixed(1)} s`,
    );
  } finally {
    cluster.stop();
    rmSync(base, { recursive: true, force: true });
  }
  return rows.map(({ add, del, ...r }) => ({
    ...r,
    add: { wallMs: add.wallMs, p50: add.p50, p99: add.p99, failures: add.failures },
    del: { wallMs: del.wallMs, p99: del.p99, failures: del.failures },
  }));
}

/** The report's section for these rows. */
export function clusterTable(rows) {
  if (!rows?.length) return [];
  return [
    "## cluster-ipam: 1000 allocations across 10 nodes at once",
    "",
    "A local 3-member etcd (Debian's etcd-server, data on tmpfs); every allocation an exec of the shipped plugin (`dist/bin/cluster-ipam`),",
    "10 simulated nodes (`ipam.nodeName`) each running 10 calls at a time (a node's calls queue on its lock file); latency is one call's wall",
    "time including that wait. host-local: the same number of allocations on one node, exec'd with the same total concurrency. Round trips:",
    "the KV requests the etcd members handled (their metrics) divided by the allocations.",
    "",
    "| IPAM | nodes | allocations | at once | ADD wall (s) | ADD p50 (ms) | ADD p99 (ms) | etcd round trips / allocation | failures | distinct | DEL wall (s) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.ipam} | ${r.nodes} | ${r.allocations} | ${r.concurrency} | ${(r.add.wallMs / 1000).toFixed(1)} | ${r.add.p50.toFixed(0)} | ` +
        `${r.add.p99.toFixed(0)} | ${r.ipam === "host-local" ? "-" : r.roundTrips.toFixed(2)} | ${r.add.failures + r.del.failures} | ${r.distinct} | ${(r.del.wallMs / 1000).toFixed(1)} |`,
    ),
    "",
  ];
}
