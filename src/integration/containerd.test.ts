/**
 * The kubelet path, end to end: a private containerd (its CRI plugin running CNI from the plugin directory under
 * test) is driven over CRI v1 gRPC the way kubelet drives it. Pod sandboxes get addresses on our bridge, reach
 * their gateway, publish a port that answers from the host, pass DNS and bandwidth settings to the plugins, run
 * ten at once, and leave nothing behind. containerd runs in a test-made "host" network namespace, so bridges and
 * firewall rules never touch the real host. TSCNI_CONTAINERD_PLUGIN_DIR=/usr/lib/cni runs the same test against
 * Debian's Go plugins, to tell a harness problem from ours. Skips when containerd, runc or a static-linking gcc
 * (for the sandbox image's pause program) is missing.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { buildPauseImage, containerdSkipReason, linkPluginDir, PrivateContainerd, type SandboxNetns } from "#testing/containerd.js";
import type { PodSandboxConfig } from "#testing/cri-client.js";
import { docSnippet } from "#testing/doc-snippets.js";
import { Cleanup, type Netns, OUR_BIN, runCommand, runTag, TEST_BIN } from "#testing/harness.js";
import { readCommandLog, stdinOf } from "#testing/plugins/noop-debug.js";
import { RESIDENT_PASS, startResidentHost } from "#testing/resident-host.js";

const skip = containerdSkipReason();
if (skip) console.log(`# skipping containerd tests: ${skip}`);

const PLUGIN_DIR = process.env["TSCNI_CONTAINERD_PLUGIN_DIR"] ?? OUR_BIN;
/** containerd's go-cni keeps its result cache in libcni's default place. */
const CACHE = "/var/lib/cni/results";
const SUBNET_PREFIX = "10.234.0.";
const GATEWAY = "10.234.0.1";
/** The test host's own address (on a link of its own), for reaching a published port from outside loopback. */
const HOST_ADDR = "10.234.100.1";
const PAUSE_IMAGE_REPO = "localhost/tscni-pause";

/** A tiny HTTP GET run in the host namespace: prints the body, exits 1 on any failure. */
const FETCH =
  'const [h,p]=process.argv.slice(1);const s=require("net").connect(+p,h,()=>s.write("GET / HTTP/1.0\\r\\n\\r\\n"));let d="";s.on("data",b=>d+=b);s.on("end",()=>{const i=d.indexOf("\\r\\n\\r\\n");if(i<0)process.exit(1);process.stdout.write(d.slice(i+4))});s.on("error",()=>process.exit(1));setTimeout(()=>process.exit(1),2000).unref()';
/** A one-page HTTP responder on port 80, run in a sandbox's network namespace; prints "ready" when listening. */
const RESPOND =
  'require("net").createServer(s=>{s.on("data",()=>s.end("HTTP/1.0 200 OK\\r\\n\\r\\n"+process.argv[1]+"\\n"));s.on("error",()=>{})}).listen(80,"0.0.0.0",()=>console.log("ready"))';

/** The runtimeConfig a plugin saw in its stdin, as recorded by the noop plugin. */
interface RecordedCall {
  command: string;
  containerId: string;
  runtimeConfig: Record<string, unknown>;
}

describe(`containerd's CRI with the plugin directory ${PLUGIN_DIR}`, { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  const network = `tcctrd${tag}`;
  const podNamespace = `tscni-${tag}`;
  const bridge = `tcctr${tag}`;
  const hostPort = 18000 + (parseInt(tag, 16) % 1000);
  const sandboxes = new Map<string, string>(); // name -> sandbox ID
  let host: Netns;
  let base: string;
  let ipamDir: string;
  let noopLog: string;
  let ctrd: PrivateContainerd | undefined;

  const cri = () => {
    if (!ctrd) throw new Error("containerd did not start");
    return ctrd.cri;
  };

  const sandboxConfig = (name: string, extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig => ({
    metadata: { name, uid: `uid-${tag}-${name}`, namespace: podNamespace, attempt: 0 },
    hostname: name,
    labels: { "tscni-test": tag },
    linux: { cgroupParent: ctrd?.cgroupParent ?? "" },
    ...extra,
  });

  async function runSandbox(name: string, extra: Partial<PodSandboxConfig> = {}): Promise<string> {
    const id = await cri().runPodSandbox(sandboxConfig(name, extra));
    sandboxes.set(name, id);
    return id;
  }

  async function removeSandbox(id: string): Promise<void> {
    await cri().stopPodSandbox(id);
    await cri().removePodSandbox(id);
    for (const [name, known] of sandboxes) if (known === id) sandboxes.delete(name);
  }

  /** Runs a command in a sandbox's network namespace (through containerd's netns mount). */
  const inSandbox = (ns: SandboxNetns, cmd: string, args: string[]) => {
    const [first, ...rest] = ctrd!.inSandbox(ns);
    return runCommand(first!, [...rest, cmd, ...args]);
  };

  /** The host side of a sandbox's eth0: the host link whose index is eth0's peer index. */
  async function hostVethOf(ns: SandboxNetns): Promise<{ ifname: string; master?: string }> {
    const r = await inSandbox(ns, "ip", ["-json", "link", "show", "eth0"]);
    assert.equal(r.code, 0, r.stderr);
    const peerIndex = (JSON.parse(r.stdout) as Array<{ link_index?: number }>)[0]?.link_index;
    const link = (host.ipJson(["link", "show"]) as Array<{ ifindex: number; ifname: string; master?: string }>).find((l) => l.ifindex === peerIndex);
    assert.ok(link, `no host link with index ${peerIndex} (eth0's peer)`);
    return link;
  }

  /** What the recording plugin (noop) saw, call by call. */
  const recordedCalls = (): RecordedCall[] =>
    readCommandLog(noopLog).map((e) => {
      const conf = JSON.parse(stdinOf(e.CmdArgs)) as { runtimeConfig?: Record<string, unknown> };
      return { command: e.Command, containerId: e.CmdArgs.ContainerID, runtimeConfig: conf.runtimeConfig ?? {} };
    });
  const addOf = (id: string): RecordedCall => {
    const call = recordedCalls().find((c) => c.command === "ADD" && c.containerId === id);
    assert.ok(call, `the recording plugin saw no ADD for ${id}`);
    return call;
  };

  const cachedResults = () => (existsSync(CACHE) ? readdirSync(CACHE).filter((f) => f.startsWith(`${network}-`)) : []);
  /** go-cni's loopback attachments of this run's sandboxes (told apart by the pod namespace in their CNI_ARGS). */
  const loopbackResults = () =>
    (existsSync(CACHE) ? readdirSync(CACHE) : []).filter((f) => {
      if (!f.startsWith("cni-loopback-")) return false;
      try {
        return readFileSync(path.join(CACHE, f), "utf8").includes(`["K8S_POD_NAMESPACE","${podNamespace}"]`);
      } catch {
        return false;
      }
    });

  const vethsOnBridge = () => (host.ipJson(["link", "show", "master", bridge]) as Array<{ ifname: string }>).map((l) => l.ifname);
  const netnsMounts = () => (existsSync(ctrd!.netnsDir) ? readdirSync(ctrd!.netnsDir) : []);

  /**
   * Nothing of this run's sandboxes is left: sandboxes, addresses, veths, IFBs, per-container firewall rules, cache
   * entries, netns mounts. With `only`, just what belongs to those sandboxes (an earlier test's leftovers aside):
   * their IDs and addresses, and the bridge's veths and containerd's netns mounts back to the counts before them.
   */
  async function assertNothingLeft(only?: { ids: string[]; ips: string[]; veths: number; netns: number }): Promise<void> {
    const listed = (await cri().listPodSandbox({ "tscni-test": tag })).map((s) => s.id);
    assert.deepEqual(only ? listed.filter((id) => only.ids.includes(id)) : listed, [], "CRI lists no sandbox");
    const store = path.join(ipamDir, network);
    const addresses = (existsSync(store) ? readdirSync(store) : []).filter((f) => f.startsWith(SUBNET_PREFIX) && (!only || only.ips.includes(f)));
    assert.deepEqual(addresses, [], "host-local released every address");
    if (only) assert.equal(vethsOnBridge().length, only.veths, "the bridge is back to its veths from before");
    else assert.deepEqual(vethsOnBridge(), [], "no veth left on the bridge");
    const rules = host.exec("iptables-save", []);
    if (only) {
      for (const ip of only.ips) assert.doesNotMatch(rules, new RegExp(`${ip.replaceAll(".", "\\.")}(/32|:|\\s)`), `no rule naming ${ip} left`);
    } else {
      const ifbs = (host.ipJson(["link", "show"]) as Array<{ ifname: string }>).map((l) => l.ifname).filter((n) => n.startsWith("bwp"));
      assert.deepEqual(ifbs, [], "no bandwidth IFB device left");
      assert.doesNotMatch(rules, /^:CNI-DN-/m, "no portmap DNAT chain left");
      assert.doesNotMatch(rules, /^:CNI-[0-9a-f]{24} /m, "no bridge ipMasq chain left");
      assert.doesNotMatch(rules, new RegExp(`--dport ${hostPort}\\b`), "no DNAT rule for the published port left");
      assert.doesNotMatch(rules, new RegExp(`${SUBNET_PREFIX.replaceAll(".", "\\.")}(?!0/24)\\d+`), "no rule naming a sandbox address left");
    }
    const ours = (f: string) => !only || only.ids.some((id) => f.includes(id));
    assert.deepEqual(cachedResults().filter(ours), [], `no ${CACHE} entry of ${network} left`);
    assert.deepEqual(loopbackResults().filter(ours), [], "no loopback cache entry left");
    if (only) assert.equal(netnsMounts().length, only.netns, "containerd removed their netns mounts");
    else assert.deepEqual(netnsMounts(), [], "containerd removed its netns mounts");
  }

  before(async () => {
    host = cleanup.netns(`tscni-ctrd-${tag}`);
    // A host NIC stand-in (a veth pair kept in the host: the dummy module may be missing) with the host's address.
    host.exec("ip", ["link", "add", `tch${tag}`, "type", "veth", "peer", "name", `tch${tag}p`]);
    host.exec("ip", ["addr", "add", `${HOST_ADDR}/24`, "dev", `tch${tag}`]);
    for (const end of [`tch${tag}`, `tch${tag}p`]) host.exec("ip", ["link", "set", end, "up"]);
    base = cleanup.dir("tscni-ctrd-");
    cleanup.add(() => {
      for (const f of [...cachedResults(), ...loopbackResults()]) rmSync(path.join(CACHE, f), { force: true });
    });
    ipamDir = path.join(base, "ipam");
    noopLog = path.join(base, "noop-calls.json");
    const confDir = path.join(base, "net.d");
    mkdirSync(confDir);

    // The recording plugin: noop, serialised with flock (each call rewrites its debug file and call log).
    // First in the chain with a fixed empty result, so it needs no prevResult (a failed ADD's DEL has none).
    const noopDebug = path.join(base, "noop-debug.json");
    writeFileSync(noopDebug, JSON.stringify({ ReportResult: '{"cniVersion":"1.0.0"}' }));
    const noop = path.join(base, "noop-serialised");
    writeFileSync(
      noop,
      `#!/bin/sh\nexec flock ${JSON.stringify(path.join(base, "noop.lock"))} ${JSON.stringify(path.join(TEST_BIN, "noop"))} "$@"\n`,
    );
    chmodSync(noop, 0o755);
    const binDir = linkPluginDir(path.join(base, "cni-bin"), PLUGIN_DIR, { noop });

    writeFileSync(
      path.join(confDir, `10-${network}.conflist`),
      JSON.stringify(
        {
          cniVersion: "1.0.0",
          name: network,
          plugins: [
            { type: "noop", debugFile: noopDebug, commandLog: noopLog, capabilities: { dns: true, bandwidth: true, portMappings: true } },
            {
              type: "bridge",
              bridge,
              isGateway: true,
              ipMasq: true,
              hairpinMode: true,
              ipam: { type: "host-local", dataDir: ipamDir, routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: `${SUBNET_PREFIX}0/24` }]] },
            },
            // dataDir: where our plugins keep state for GC (Go's tuning uses it too; Go's portmap and firewall ignore it).
            { type: "portmap", capabilities: { portMappings: true }, dataDir: path.join(base, "portmap") },
            { type: "firewall", dataDir: path.join(base, "firewall") },
            { type: "tuning", dataDir: path.join(base, "tuning") },
            { type: "bandwidth", capabilities: { bandwidth: true } },
          ],
        },
        null,
        2,
      ),
    );

    const sandboxImage = `${PAUSE_IMAGE_REPO}-${tag}:v1`;
    const imageArchive = buildPauseImage(base, sandboxImage);
    const ctrdBase = path.join(base, "containerd");
    mkdirSync(ctrdBase);
    // The resident pass: containerd shares a pinned mount namespace with a server, which serves its plugin calls.
    let pinned: { mountNs: string; env: Record<string, string> } | undefined;
    if (RESIDENT_PASS) {
      const resident = startResidentHost(host.name, cleanup.dir("tscni-rs-"), path.join(OUR_BIN, "cnitool"));
      cleanup.add(() => resident.stop());
      pinned = { mountNs: resident.mountNs, env: { TSCNI_RESIDENT_SOCKET: resident.socket } };
    }
    ctrd = await PrivateContainerd.start({
      base: ctrdBase,
      cniBinDir: binDir,
      cniConfDir: confDir,
      sandboxImage,
      imageArchive,
      hostNetns: host.path,
      ...(pinned ? { pinned } : {}),
    });
    const c = ctrd;
    cleanup.add(() => c.kill());
  });

  after(async () => {
    await ctrd?.stop();
    cleanup.run();
  });

  test("RunPodSandbox gets an address on the bridge", async () => {
    const id = await runSandbox("plain");
    const { status } = await cri().podSandboxStatus(id);
    assert.equal(status.state, "SANDBOX_READY");
    const ip = status.network?.ip ?? "";
    assert.ok(ip.startsWith(SUBNET_PREFIX) && ip !== GATEWAY, `sandbox address ${ip} in ${SUBNET_PREFIX}0/24`);
    const ns = await ctrd!.sandboxNetns(id);
    assert.equal(path.dirname(ns.path), ctrd!.netnsDir);
    assert.match(path.basename(ns.path), /^cni-[0-9a-f-]+$/);
    const addrs = await inSandbox(ns, "ip", ["-4", "-o", "addr", "show", "eth0"]);
    assert.match(addrs.stdout, new RegExp(`inet ${ip.replaceAll(".", "\\.")}/24`));
    assert.equal((await hostVethOf(ns)).master, bridge, "the host side of eth0 is on the bridge");
  });

  test("the gateway answers a ping from inside the sandbox's netns", async () => {
    const id = sandboxes.get("plain");
    assert.ok(id, "no sandbox from the first test");
    const ns = await ctrd!.sandboxNetns(id);
    let reply = { code: 1, stdout: "", stderr: "" };
    for (let i = 0; i < 10 && reply.code !== 0; i++) {
      reply = await inSandbox(ns, "ping", ["-c", "1", "-W", "1", "-n", GATEWAY]);
      if (reply.code !== 0) await sleep(200);
    }
    assert.equal(reply.code, 0, reply.stdout + reply.stderr);
  });

  test("a published port (container 80 -> host port) answers on the host's 127.0.0.1 and its own address", async (t) => {
    const id = await runSandbox("web", { portMappings: [{ protocol: "TCP", containerPort: 80, hostPort }] });
    assert.deepEqual(
      addOf(id).runtimeConfig["portMappings"],
      [{ HostPort: hostPort, ContainerPort: 80, Protocol: "tcp", HostIP: "" }],
      "containerd's go-cni sends Go field names",
    );
    const ns = await ctrd!.sandboxNetns(id);
    const [cmd, ...args] = ctrd!.inSandbox(ns);
    const page = `hello from containerd sandbox ${tag}`;
    const responder: ChildProcess = spawn(cmd!, [...args, process.execPath, "-e", RESPOND, page], { stdio: ["ignore", "pipe", "pipe"] });
    t.after(() => {
      responder.kill("SIGKILL");
    });
    await new Promise<void>((resolve, reject) => {
      let out = "";
      responder.stdout!.on("data", (b: Buffer) => (out += String(b)).includes("ready") && resolve());
      responder.on("exit", (code) => reject(new Error(`the responder exited (${code}) before listening`)));
      setTimeout(() => reject(new Error("the responder did not start listening")), 10_000).unref();
    });
    for (const target of ["127.0.0.1", HOST_ADDR]) {
      let r = { code: 1, stdout: "", stderr: "" };
      for (let i = 0; i < 10 && r.code !== 0; i++) {
        r = await host.run(process.execPath, ["-e", FETCH, target, String(hostPort)]);
        if (r.code !== 0) await sleep(200);
      }
      assert.equal(r.code, 0, `no answer on ${target}:${hostPort}`);
      assert.equal(r.stdout.trim(), page, `${target}:${hostPort}`);
    }
  });

  test("the sandbox's DNS config reaches the plugins as runtimeConfig.dns", async () => {
    const dnsConfig = { servers: ["10.234.0.53"], searches: ["svc.tscni.test"], options: ["ndots:3"] };
    const id = await runSandbox("dns", { dnsConfig });
    assert.deepEqual(addOf(id).runtimeConfig["dns"], { Servers: dnsConfig.servers, Searches: dnsConfig.searches, Options: dnsConfig.options });
  });

  test("bandwidth annotations reach the plugins and put a tbf qdisc on the host veth", async () => {
    const annotations = { "kubernetes.io/ingress-bandwidth": "1M", "kubernetes.io/egress-bandwidth": "2M" };
    const id = await runSandbox("shaped", { annotations });
    assert.deepEqual(addOf(id).runtimeConfig["bandwidth"], {
      IngressRate: 1_000_000,
      IngressBurst: 2 ** 32 - 1,
      EgressRate: 2_000_000,
      EgressBurst: 2 ** 32 - 1,
    });
    const veth = await hostVethOf(await ctrd!.sandboxNetns(id));
    const qdiscs = host.exec("tc", ["qdisc", "show", "dev", veth.ifname]);
    assert.match(qdiscs, /qdisc tbf /, `tbf on ${veth.ifname}:\n${qdiscs}`);
  });

  test("Stop+RemovePodSandbox leaves nothing behind", async () => {
    // Every sandbox of this run, as kubelet would find them: also those whose RunPodSandbox failed, which
    // containerd keeps (NOTREADY) for kubelet to stop and remove.
    const ids = (await cri().listPodSandbox({ "tscni-test": tag })).map((s) => s.id);
    assert.ok(ids.length > 0, "no sandbox to remove");
    const failures: string[] = [];
    for (const id of ids) await removeSandbox(id).catch((err: Error) => failures.push(err.message));
    assert.deepEqual(failures, [], "every sandbox stopped and removed");
    await assertNothingLeft();
  });

  test("ten sandboxes at once get ten distinct addresses, and all go away", async (t) => {
    const names = Array.from({ length: 10 }, (_, i) => `par${i}`);
    const before = { veths: vethsOnBridge().length, netns: netnsMounts().length };
    const t0 = Date.now();
    const ids = await Promise.all(names.map((name) => runSandbox(name)));
    const runMs = Date.now() - t0;
    const ips = await Promise.all(ids.map(async (id) => (await cri().podSandboxStatus(id)).status.network?.ip ?? ""));
    assert.equal(new Set(ips).size, 10, `distinct addresses: ${ips.join(" ")}`);
    for (const ip of ips) assert.ok(ip.startsWith(SUBNET_PREFIX), `${ip} in the subnet`);
    assert.equal(vethsOnBridge().length - before.veths, 10, "ten more veths on the bridge");
    const t1 = Date.now();
    await Promise.all(ids.map((id) => removeSandbox(id)));
    t.diagnostic(`10 parallel RunPodSandbox: ${runMs} ms; 10 parallel Stop+Remove: ${Date.now() - t1} ms`);
    await assertNothingLeft({ ids, ips, ...before });
  });
});

// docs/runtimes.md's quick start as an operator follows it: its config.toml CNI table (every private containerd
// here is configured with it) and its network config, unchanged, in an otherwise empty conf dir. containerd sees a
// /var/lib/cni of the test's own, where host-local, tuning and the result cache keep their state. Once, in the
// exec pass.
describe("docs/runtimes.md's network config through containerd", { skip: skip ?? (RESIDENT_PASS ? "run once, in the exec pass" : undefined) }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let ctrd: PrivateContainerd | undefined;
  after(async () => {
    await ctrd?.stop();
    cleanup.run();
  });

  test("a pod sandbox gets an address of 10.85.0.0/16 on cni0, and leaves nothing in the cache", async () => {
    const host = cleanup.netns(`tscni-ctrdoc-${tag}`);
    const base = cleanup.dir("tscni-ctrdoc-");
    const confDir = path.join(base, "net.d");
    const cache = path.join(base, "var-lib-cni");
    mkdirSync(confDir);
    mkdirSync(cache);
    writeFileSync(path.join(confDir, "10-tscni.conflist"), docSnippet("docs/runtimes.md", "tscni-conflist"));
    const sandboxImage = `${PAUSE_IMAGE_REPO}-doc-${tag}:v1`;
    const imageArchive = buildPauseImage(base, sandboxImage);
    mkdirSync(path.join(base, "containerd"));
    ctrd = await PrivateContainerd.start({
      base: path.join(base, "containerd"),
      cniBinDir: PLUGIN_DIR,
      cniConfDir: confDir,
      sandboxImage,
      imageArchive,
      hostNetns: host.path,
      cniCacheDir: cache,
    });
    const c = ctrd;
    cleanup.add(() => c.kill());
    const id = await c.cri.runPodSandbox({
      metadata: { name: "doc", uid: `uid-doc-${tag}`, namespace: `tscni-${tag}`, attempt: 0 },
      hostname: "doc",
      labels: {},
      linux: { cgroupParent: c.cgroupParent },
    });
    const { status } = await c.cri.podSandboxStatus(id);
    assert.match(status.network?.ip ?? "", /^10\.85\.\d+\.\d+$/);
    assert.match(host.exec("ip", ["-o", "link", "show", "master", "cni0"]), /veth/, "the sandbox's veth is on cni0");
    await c.cri.stopPodSandbox(id);
    await c.cri.removePodSandbox(id);
    const results = path.join(cache, "results");
    assert.deepEqual(existsSync(results) ? readdirSync(results).filter((f) => f.startsWith("tscni-")) : [], []);
  });
});
