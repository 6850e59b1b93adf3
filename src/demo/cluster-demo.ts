/**
 * The cluster demo (`bash scripts/demo.sh --cluster`): one address space over three simulated nodes. A 3-member
 * etcd cluster (Debian's etcd-server) runs on 127.0.0.1 with ports the kernel picked and data under a temp dir;
 * three "node" namespaces each get their own bridge and two containers, attached by tscni's libcni and plugins
 * with `cluster-ipam` (`nodeName` per node), all three nodes at once; `cnitool ipam blocks` and `allocations` then
 * show the blocks each node claimed and who holds which address; the containers of a node ping each other; DEL
 * releases everything; etcd is stopped (by PID) and the namespaces and files removed.
 *
 * The node namespaces have their own loopback, so each reaches the cluster at the same 127.0.0.1 addresses
 * through a small relay: a listener per member inside the node namespace, forwarding over a Unix socket (which
 * crosses network namespaces) to the member in the demo's own namespace. Nothing on the real host changes.
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CNIConfig, type RuntimeConf } from "#libcni/api.js";
import { parseConfList } from "#spec/config.js";
import { messageOf } from "#spec/errors.js";
import { toCurrentResult } from "#spec/result/index.js";
import { EtcdCluster, etcdMissing } from "./etcd-cluster.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = path.join(ROOT, "dist/bin");
const NODES = ["node-a", "node-b", "node-c"];
const NODE_NS = (i: number) => `tscni-cdemo-n${i}`;
const CONTAINER_NS = (i: number, j: number) => `tscni-cdemo-n${i}c${j}`;
const ALL_NS = NODES.flatMap((_, i) => [NODE_NS(i), CONTAINER_NS(i, 0), CONTAINER_NS(i, 1)]);
const NETWORK = "clusterdemo";
const SUBNET = "10.98.0.0/16";

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (s: string) => console.log(`\n${bold("==>")} ${s}`);
const info = (s: string) => console.log(`    ${s}`);
const netnsExists = (name: string) => existsSync(`/run/netns/${name}`);

/** The demo network: a bridge per node (same gateway everywhere: one flat address space), cluster-ipam. */
function confList(endpoints: readonly string[], node: string, base: string): Record<string, unknown> {
  return {
    cniVersion: "1.1.0",
    name: NETWORK,
    plugins: [
      {
        type: "bridge",
        bridge: "cdemo0",
        isGateway: true,
        ipam: {
          type: "cluster-ipam",
          nodeName: node,
          lockDir: path.join(base, "locks"),
          etcd: { endpoints, requestTimeoutMs: 5000 },
          ranges: [[{ subnet: SUBNET }]],
          blockSize: 28,
          routes: [{ dst: "0.0.0.0/0" }],
        },
      },
    ],
  };
}

/** What runs inside node `i`'s namespace: ADD (or DEL) its two containers through libcni. */
async function nodeMain(i: number, verb: "add" | "del", endpoints: string[], base: string): Promise<void> {
  const list = parseConfList(JSON.stringify(confList(endpoints, NODES[i]!, base)));
  const cni = new CNIConfig({ path: [BIN], cacheDir: path.join(base, `cache-${i}`) });
  for (let j = 0; j < 2; j++) {
    const rt: RuntimeConf = { containerID: `cdemo-${NODES[i]}-${j}`, netNS: `/run/netns/${CONTAINER_NS(i, j)}`, ifName: "eth0" };
    if (verb === "del") {
      await cni.delNetworkList(list, rt);
      continue;
    }
    const result = toCurrentResult(await cni.addNetworkList(list, rt));
    console.log(`${NODES[i]} ${CONTAINER_NS(i, j)} ${result.ips![0]!.address}`);
  }
}

/** A relay per member: Unix socket (parent side) -> TCP 127.0.0.1:port of the member. */
function relayServers(cluster: EtcdCluster, base: string): { sockets: string[]; close: () => void } {
  const servers = cluster.endpoints.map((endpoint, m) => {
    const port = Number(new URL(endpoint).port);
    const sock = path.join(base, `relay-${m}.sock`);
    const server = net.createServer((c) => {
      const up = net.connect(port, "127.0.0.1");
      c.pipe(up).pipe(c);
      c.on("error", () => up.destroy());
      up.on("error", () => c.destroy());
    });
    server.listen(sock);
    return { server, sock, port };
  });
  return { sockets: servers.map((s) => `${s.port}=${s.sock}`), close: () => servers.forEach((s) => s.server.close()) };
}

/** Inside a node namespace: listeners on 127.0.0.1:<member port> forwarding to the Unix sockets. */
const RELAY_SCRIPT = `
const net = require("net");
let n = 0;
for (const pair of process.argv.slice(1)) {
  const [port, sock] = pair.split("=");
  net.createServer((c) => {
    const up = net.connect(sock);
    c.pipe(up).pipe(c);
    c.on("error", () => up.destroy());
    up.on("error", () => c.destroy());
  }).listen(Number(port), "127.0.0.1", () => { if (++n === process.argv.length - 1) console.log("ready"); });
}`;

function startRelay(ns: string, pairs: string[]): Promise<ChildProcess> {
  const child = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", RELAY_SCRIPT, ...pairs], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.stdout!.once("data", () => resolve(child));
    child.once("exit", (code) => reject(new Error(`relay in ${ns} exited (${code})`)));
  });
}

/** Runs this file in node `i`'s namespace for `verb`; resolves to what it printed. */
function inNode(i: number, verb: "add" | "del", endpoints: string[], base: string): Promise<string> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn("ip", ["netns", "exec", NODE_NS(i), process.execPath, self, "--node", String(i), verb, base, ...endpoints], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
  return new Promise((resolve, reject) =>
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${NODES[i]}: ${verb} failed`)))),
  );
}

function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** Whether a PID is a live process (not gone, not a zombie waiting to be reaped). */
function isRunning(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function removeNamespaces(): void {
  for (const ns of ALL_NS) if (netnsExists(ns)) spawnSync("ip", ["netns", "delete", ns]);
}

/** The demo, from the demo's own (the real host's) network namespace. */
export async function runClusterDemo(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error("the demo creates network namespaces: run it as root");
  if (!existsSync(path.join(BIN, "cluster-ipam"))) throw new Error(`${BIN} has no cluster-ipam: run npm run build first`);
  const missing = etcdMissing();
  if (missing) throw new Error(`${missing}: run scripts/setup.sh first`);
  removeNamespaces();
  const base = mkdtempSync(path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), "tscni-cluster-demo-"));
  const relays: ChildProcess[] = [];
  let cluster: EtcdCluster | undefined;
  let relay: ReturnType<typeof relayServers> | undefined;
  let failures = 0;
  try {
    step("Starting a 3-member etcd cluster on 127.0.0.1 (Debian's etcd-server)");
    cluster = await EtcdCluster.start({ baseDir: path.join(base, "etcd"), members: 3, name: "cdemo" });
    info(`members: ${cluster.endpoints.join(" ")} (PIDs ${cluster.pids.join(" ")}; data under ${base})`);
    const endpoints = cluster.endpoints;

    step("Three nodes: a host namespace each (own bridge cdemo0, gateway 10.98.0.1) with two containers");
    relay = relayServers(cluster, base);
    for (const [i, node] of NODES.entries()) {
      for (const ns of [NODE_NS(i), CONTAINER_NS(i, 0), CONTAINER_NS(i, 1)]) {
        sh("ip", ["netns", "add", ns]);
        sh("ip", ["-n", ns, "link", "set", "lo", "up"]);
      }
      relays.push(await startRelay(NODE_NS(i), relay.sockets));
      info(
        `${node}: ${NODE_NS(i)}, containers ${CONTAINER_NS(i, 0)} ${CONTAINER_NS(i, 1)}; etcd reached at the same 127.0.0.1 endpoints through a relay`,
      );
    }
    const confDir = path.join(base, "net.d");
    mkdirSync(confDir);
    writeFileSync(path.join(confDir, `${NETWORK}.conflist`), JSON.stringify(confList(endpoints, "admin", base), null, 2));

    step(`ADD on all three nodes at once: bridge + cluster-ipam (${SUBNET}, /28 blocks)`);
    const lines = (await Promise.all(NODES.map((_, i) => inNode(i, "add", endpoints, base)))).join("").trim().split("\n");
    for (const l of lines) info(l);
    const addresses = lines.map((l) => l.split(" ")[2]!);
    if (new Set(addresses).size !== 6) failures++;

    const env = { ...process.env, NETCONFPATH: confDir };
    const admin = (...args: string[]) => spawnSync(path.join(BIN, "cnitool"), args, { encoding: "utf8", env }).stdout;
    step(`cnitool ipam blocks ${NETWORK}: the blocks each node claimed`);
    for (const l of admin("ipam", "blocks", NETWORK).trimEnd().split("\n")) info(l);
    step(`cnitool ipam allocations ${NETWORK}`);
    for (const l of admin("ipam", "allocations", NETWORK).trimEnd().split("\n")) info(l);

    step("Traffic inside each node (container -> container on the node's bridge)");
    for (const [i] of NODES.entries()) {
      const target = addresses[i * 2 + 1]!.split("/")[0]!;
      const r = spawnSync("ip", ["netns", "exec", CONTAINER_NS(i, 0), "ping", "-c", "1", "-W", "2", target], { encoding: "utf8" });
      info(`${r.status === 0 ? "ok  " : "FAIL"} ${CONTAINER_NS(i, 0)} -> ${target}`);
      if (r.status !== 0) failures++;
    }

    step("DEL on all three nodes");
    await Promise.all(NODES.map((_, i) => inNode(i, "del", endpoints, base)));
    const left = admin("ipam", "allocations", NETWORK, "--format", "json");
    const count = (JSON.parse(left || "[]") as unknown[]).length;
    info(`addresses still allocated: ${count} (the blocks stay claimed by their nodes, ready for the next pods)`);
    if (count !== 0) failures++;
  } finally {
    step("Stopping etcd (by PID), the relays, and removing the namespaces and files");
    for (const r of relays) r.kill();
    relay?.close();
    const pids = cluster?.pids ?? [];
    cluster?.stop();
    removeNamespaces();
    rmSync(base, { recursive: true, force: true });
    const alive = pids.filter(isRunning);
    const leftNs = ALL_NS.filter(netnsExists);
    info(alive.length || leftNs.length || existsSync(base) ? `left behind: ${[...alive.map(String), ...leftNs].join(" ")}` : "nothing left behind");
  }
  if (failures) throw new Error(`${failures} check(s) failed`);
  step("Cluster demo finished: one address space over three nodes, blocks per node, no global lock.");
}

/** `--node <i> add|del <base> <endpoints...>`: the part run inside a node namespace. */
export async function clusterNodeMain(argv: readonly string[]): Promise<void> {
  const [i, verb, base, ...endpoints] = argv;
  await nodeMain(Number(i), verb === "del" ? "del" : "add", endpoints, base!);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "--node") {
  clusterNodeMain(process.argv.slice(3)).catch((e: unknown) => {
    console.error(`node: ${messageOf(e)}`);
    process.exitCode = 1;
  });
}
