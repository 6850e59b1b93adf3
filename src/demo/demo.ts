/**
 * The tscni demo: two "containers" (network namespaces) attached to the embedded default network by tscni's
 * own libcni and plugins, shown talking to each other and to their gateway, then torn down without a trace.
 *
 * Everything the demo touches lives in namespaces it creates: a "host" namespace holds the bridge and the
 * firewall rules, so the real host is never changed. `--keep` leaves it all up for inspection;
 * `--teardown` removes a kept demo. `--cluster` runs the cluster-ipam demo instead (cluster-demo.ts).
 * @module
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CNIConfig, type RuntimeConf } from "#libcni/api.js";
import { DEFAULT_BRIDGE, DEFAULT_NETWORK_NAME, defaultNetworkConfList } from "#runtime/default-network.js";
import { parseConfList } from "#spec/config.js";
import { messageOf } from "#spec/errors.js";
import { marshalResult, toCurrentResult } from "#spec/result/index.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = path.join(ROOT, "dist/bin");
const HOST_NS = "tscni-demo-host";
const CONTAINERS = ["tscni-demo-a", "tscni-demo-b"];
const STATE = "/run/tscni-demo";
const HOST_PORT = 8080;

/** A tiny TCP server on port 80 inside a container that says who it is. */
function startServer(container: string) {
  const code = `require("net").createServer((s) => s.end("hello from ${container}\\n")).listen(80, () => console.log("ready"))`;
  const child = spawn("ip", ["netns", "exec", container, process.execPath, "-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  return Object.assign(child, {
    ready: new Promise<void>((resolve) => child.stdout!.once("data", () => resolve())),
  });
}

/** Connects to host:port from the (sandboxed) host side and returns what the server said. */
function fetchOnce(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: 3000 });
    let data = "";
    socket.on("data", (b) => (data += b.toString()));
    socket.on("end", () => resolve(data));
    socket.on("timeout", () => socket.destroy(new Error("timed out")));
    socket.on("error", reject);
  });
}

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (s: string) => console.log(`\n${bold("==>")} ${s}`);
const info = (s: string) => console.log(`    ${s}`);

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

const netnsExists = (name: string) => existsSync(`/run/netns/${name}`);

/** Runs the part that must execute inside the demo's host namespace (plugins act on "their" host). */
async function inside(keep: boolean): Promise<void> {
  const cacheDir = path.join(STATE, "cache");
  const dataDir = path.join(STATE, "ipam"); // where defaultNetworkConfList puts host-local's store
  mkdirSync(cacheDir, { recursive: true });
  const list = parseConfList(JSON.stringify(defaultNetworkConfList({ stateDir: STATE })));
  const cni = new CNIConfig({ path: [BIN], cacheDir });

  step(`Embedded default network "${DEFAULT_NETWORK_NAME}" (cniVersion ${list.cniVersion}): ${list.plugins.map((p) => p.network.type).join(" -> ")}`);
  info(`plugins from ${BIN}`);
  const caps = await cni.validateNetworkList(list);
  info(`validated: every plugin found and speaks ${list.cniVersion}${caps.length ? `; capabilities: ${caps.join(", ")}` : ""}`);

  const attachments: Array<{ name: string; rt: RuntimeConf; address: string; gateway: string }> = [];
  for (const [i, name] of CONTAINERS.entries()) {
    // The first container publishes a port, as `podman run -p 8080:80` would ask for.
    const capabilityArgs = i === 0 ? { portMappings: [{ hostPort: HOST_PORT, containerPort: 80, protocol: "tcp" }] } : {};
    step(`ADD container ${name}${i === 0 ? ` (publishing host port ${HOST_PORT} -> ${name}:80)` : ""}`);
    const rt: RuntimeConf = { containerID: `demo-${name}`, netNS: `/run/netns/${name}`, ifName: "eth0", capabilityArgs };
    const result = toCurrentResult(await cni.addNetworkList(list, rt));
    const ipc = result.ips![0]!;
    attachments.push({ name, rt, address: ipc.address.split("/")[0]!, gateway: ipc.gateway ?? "" });
    info(`eth0 ${ipc.address}, gateway ${ipc.gateway}`);
    console.log(
      marshalResult(result, true)
        .split("\n")
        .map((l) => `      ${l}`)
        .join("\n"),
    );
  }

  step("CHECK both attachments");
  for (const a of attachments) await cni.checkNetworkList(list, a.rt);
  info("CHECK passed: interfaces, addresses and routes are as the results say");

  step("Traffic");
  const pings: Array<[string, string, string]> = [
    [attachments[0]!.name, attachments[1]!.address, `${attachments[0]!.name} -> ${attachments[1]!.name}`],
    [attachments[1]!.name, attachments[0]!.address, `${attachments[1]!.name} -> ${attachments[0]!.name}`],
    [attachments[0]!.name, attachments[0]!.gateway, `${attachments[0]!.name} -> gateway on ${DEFAULT_BRIDGE}`],
  ];
  let failures = 0;
  for (const [from, to, label] of pings) {
    const r = spawnSync("ip", ["netns", "exec", from, "ping", "-c", "2", "-i", "0.2", "-W", "1", to], { encoding: "utf8" });
    const summary = /(\d+) received/.exec(r.stdout)?.[1] ?? "0";
    const rtt = /= [\d.]+\/([\d.]+)\//.exec(r.stdout)?.[1];
    info(`${r.status === 0 ? "ok  " : "FAIL"} ${label} (${to}): ${summary}/2 replies${rtt ? `, avg ${rtt} ms` : ""}`);
    if (r.status !== 0) failures++;
  }

  step(`Published port: host ${HOST_PORT} -> ${attachments[0]!.name}:80`);
  const server = startServer(attachments[0]!.name);
  await server.ready;
  try {
    for (const target of ["127.0.0.1", attachments[0]!.gateway]) {
      const answer = await fetchOnce(target, HOST_PORT).catch((e: Error) => `error: ${e.message}`);
      const ok = answer.startsWith("hello from");
      info(`${ok ? "ok  " : "FAIL"} ${target}:${HOST_PORT} answered: ${answer.trim()}`);
      if (!ok) failures++;
    }
  } finally {
    server.kill();
  }

  if (keep) {
    step("Kept running (--keep). Look around, e.g.:");
    info(`ip -n ${HOST_NS} addr show ${DEFAULT_BRIDGE}`);
    info(`ip netns exec ${CONTAINERS[0]} ip addr`);
    info(`ls ${cacheDir}/results ${dataDir}/${DEFAULT_NETWORK_NAME}`);
    info("then remove it all with: bash scripts/demo.sh --teardown");
  } else {
    step("DEL both attachments");
    for (const a of [...attachments].reverse()) {
      await cni.delNetworkList(list, a.rt);
      info(`${a.name}: deleted`);
    }
    const leftIPs = readdirSync(path.join(dataDir, DEFAULT_NETWORK_NAME)).filter((f) => /^[\d.:a-f]+$/.test(f) && f.includes("."));
    const leftCache = existsSync(path.join(cacheDir, "results")) ? readdirSync(path.join(cacheDir, "results")) : [];
    info(`IPs still allocated: ${leftIPs.length}; cached results left: ${leftCache.length}`);
    if (leftIPs.length || leftCache.length) failures++;
  }
  if (failures) throw new Error(`${failures} check(s) failed`);
}

function teardown(): void {
  for (const ns of [...CONTAINERS, HOST_NS]) if (netnsExists(ns)) sh("ip", ["netns", "delete", ns]);
  rmSync(STATE, { recursive: true, force: true });
}

async function outside(keep: boolean): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error("the demo creates network namespaces: run it as root");
  if (!existsSync(path.join(BIN, "bridge"))) throw new Error(`${BIN} has no plugins: run npm run build first`);
  if ([HOST_NS, ...CONTAINERS].some(netnsExists)) {
    step("Removing a previous demo");
    teardown();
  }
  step("Creating namespaces: a sandboxed host side and two containers");
  for (const ns of [HOST_NS, ...CONTAINERS]) {
    sh("ip", ["netns", "add", ns]);
    sh("ip", ["-n", ns, "link", "set", "lo", "up"]);
    info(ns);
  }
  const self = fileURLToPath(import.meta.url);
  const child = spawnSync("ip", ["netns", "exec", HOST_NS, process.execPath, self, "--inside", ...(keep ? ["--keep"] : [])], { stdio: "inherit" });
  if (!keep) {
    step("Tearing down the namespaces");
    teardown();
    const left = [HOST_NS, ...CONTAINERS].filter(netnsExists);
    info(left.length ? `still there: ${left.join(" ")}` : "nothing left behind");
  }
  if (child.status !== 0) throw new Error("the demo failed (see above)");
  step(keep ? "Demo is up." : "Demo finished: two containers attached, talking, and cleaned up.");
}

const OPTIONS = ["--keep", "--teardown", "--cluster", "--inside", "--help", "-h"];

/** What `demo --help` prints: the options, and the plugins of the built plugin directory. */
function usage(): string {
  const plugins = existsSync(BIN)
    ? readdirSync(BIN)
        .filter((n) => n !== "cnitool")
        .sort()
    : [];
  return [
    "usage: bash scripts/demo.sh [--keep | --teardown | --cluster]",
    "",
    "  (no option)  two containers on the embedded default network (bridge + host-local, portmap, firewall, tuning,",
    "               bandwidth) through tscni's libcni and plugins: results, CHECK, pings, a published port, then DEL",
    "  --keep       leave the demo's namespaces, bridge and rules up for inspection",
    "  --teardown   remove what --keep left",
    "  --cluster    the cluster-ipam demo: a local 3-member etcd, three simulated nodes sharing one address space",
    "",
    `plugins in ${path.relative(process.cwd(), BIN) || BIN} (one multicall program; cnitool beside them):`,
    `  ${plugins.length ? plugins.join(", ") : "none yet: run npm run build"}`,
    "",
  ].join("\n");
}

async function run(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(usage());
    return;
  }
  const unknown = args.filter((a) => !OPTIONS.includes(a));
  if (unknown.length) throw new Error(`unknown option ${unknown.join(" ")}\n${usage()}`);
  if (args.includes("--teardown")) {
    teardown();
    console.log("demo removed");
    return;
  }
  if (args.includes("--cluster")) {
    const { runClusterDemo } = await import("./cluster-demo.js");
    return runClusterDemo();
  }
  if (args.includes("--inside")) return inside(args.includes("--keep"));
  return outside(args.includes("--keep"));
}

run().catch((e: unknown) => {
  console.error(`\ndemo: ${messageOf(e)}`);
  if (!process.argv.includes("--inside") && !process.argv.includes("--keep")) {
    try {
      teardown();
    } catch {
      /* best effort */
    }
  }
  process.exitCode = 1;
});
