/**
 * Node GC believes only the real runtime, and never takes a namespace that is in use (issue 47). A pod: a bridge
 * attachment in a namespace of its own, cached as a CRI runtime's (CNI_ARGS naming its sandbox). Then, as an
 * attacker would: a root without capabilities (and the root of a user namespace of its own) binds the CRI socket
 * and answers ListPodSandbox with a decoy; `cnitool gc --cri-endpoint` sends it not one byte, exits 1 naming the
 * endpoint and the refusal, and the pod keeps its cache entry, its eth0 and its address; the resident server's
 * scheduled GC logs the refusal and removes nothing either. And the second line: a stand-in runtime of the test's
 * own (root with every capability: it passes the rule) that does not list the pod's sandbox gets it kept while a
 * process (`sleep`) is in its namespace, and removed with `--delete-occupied`.
 * Plugin calls run in exec mode in both passes: the subject is whom GC believes, not how plugins are served.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CAPLESS, USERNS_ROOT } from "#testing/confinement.js";
import { startFakeCri } from "#testing/fake-cri.js";
import { Cleanup, CNITOOL, type Netns, OUR_BIN, ROOT, runTag, skipReason } from "#testing/harness.js";

// The rule reads the listener's credentials through Bun's FFI: the Node build refuses every runtime.
const skip = skipReason(false, fs.realpathSync(CNITOOL).endsWith("/cli/main.js") ? "cnitool is the Node build (no peer rule)" : undefined);
if (skip) console.log(`# skipping node GC trust tests: ${skip}`);

const SUBNET = "10.229.7.0/24";

describe("node GC believes only the real runtime", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  const network = `tgct${tag}`;
  const sandbox = tag.repeat(16);
  let host: Netns;
  let pod: Netns;
  let base: string;
  let cacheDir: string;
  let confDir: string;
  const children: ChildProcess[] = [];
  const env = () => ({ ...process.env, TSCNI_RESIDENT: "exec", NETCONFPATH: confDir, CNI_PATH: OUR_BIN });
  const entryFile = () => path.join(cacheDir, "results", `${network}-${sandbox}-eth0`);
  /** The pod's eth0 addresses (none when it has no eth0). */
  const podAddresses = () => {
    const links = pod.ipJson(["addr", "show"]) as Array<{ ifname: string; addr_info: Array<{ family: string; local: string }> }>;
    return (links.find((l) => l.ifname === "eth0")?.addr_info ?? []).filter((a) => a.family === "inet").map((a) => a.local);
  };
  const gc = (endpoint: string, ...flags: string[]) =>
    host.run(CNITOOL, ["gc", "--cri-endpoint", endpoint, "--cache-dir", cacheDir, "--min-age", "0", ...flags], { env: env() });

  /** Runs `argv` as a child (killed at cleanup); resolves once it printed `ready`. */
  const startChild = async (argv: string[], what: string): Promise<{ child: ChildProcess; out: () => string }> => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (b: Buffer) => (out += b));
    child.stderr!.on("data", (b: Buffer) => (out += b));
    for (let i = 0; i < 100 && !out.includes("ready"); i++) await sleep(50);
    assert.ok(out.includes("ready"), `${what} did not start: ${out}`);
    return { child, out: () => out };
  };

  /** A stand-in CRI runtime run by `prefix` (an attacker) on `socket`'s directory, listing only `decoy`. */
  const attackerCri = (prefix: string[], dir: string, decoy: string) =>
    startChild(
      [
        ...prefix,
        process.execPath,
        "--input-type=module",
        "-e",
        `const { startFakeCri } = await import(${JSON.stringify(path.join(ROOT, "dist-test/testing/fake-cri.js"))});
         const fake = await startFakeCri(${JSON.stringify(dir)}, [{ id: ${JSON.stringify(decoy)} }]);
         process.on("SIGTERM", () => { console.log("listed " + fake.listed); process.exit(0); });
         console.log("ready");`,
      ],
      "the attacker's CRI server",
    );
  const stopAndCount = async (child: ChildProcess, out: () => string): Promise<string> => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    return /listed \d+/.exec(out())?.[0] ?? out();
  };

  before(async () => {
    host = cleanup.netns(`tscni-gct-${tag}-h`);
    pod = cleanup.netns(`tscni-gct-${tag}-p`);
    base = cleanup.dir("tscni-gct-");
    cleanup.add(() => children.forEach((c) => c.kill("SIGKILL")));
    cacheDir = path.join(base, "cache");
    confDir = path.join(base, "net.d");
    for (const d of [cacheDir, confDir]) fs.mkdirSync(d);
    fs.writeFileSync(
      path.join(confDir, `10-${network}.conflist`),
      JSON.stringify({
        cniVersion: "1.1.0",
        name: network,
        plugins: [
          { type: "bridge", bridge: network, ipam: { type: "host-local", dataDir: path.join(base, "ipam"), ranges: [[{ subnet: SUBNET }]] } },
        ],
      }),
    );
    const add = await host.run(CNITOOL, ["--cache-dir", cacheDir, "add", network, pod.path], {
      env: { ...env(), CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=${sandbox}` },
    });
    assert.equal(add.code, 0, add.stderr);
    // cnitool names the container by its netns: give the entry the sandbox's ID, as a runtime's ADD would.
    const results = path.join(cacheDir, "results");
    const [file] = fs.readdirSync(results);
    const entry = JSON.parse(fs.readFileSync(path.join(results, file!), "utf8")) as { containerId: string };
    entry.containerId = sandbox;
    fs.rmSync(path.join(results, file!));
    fs.writeFileSync(entryFile(), JSON.stringify(entry), { mode: 0o600 });
    assert.equal(podAddresses().length, 1, "the pod has its address");
  });
  after(() => cleanup.run());

  for (const [who, prefix, refusal] of [
    ["a root without capabilities", CAPLESS, /the listener lacks capabilities this caller has \([\d,]+\)/],
    ["the root of a user namespace of its own", USERNS_ROOT, /the listener is in another user namespace/],
  ] as const) {
    test(`${who} answering as the runtime is sent nothing; GC removes nothing and says why`, async () => {
      const dir = path.join(base, `cri-${prefix[0]}`);
      fs.mkdirSync(dir, { mode: 0o700 });
      const socket = path.join(dir, "cri.sock");
      const attacker = await attackerCri(prefix, dir, "decoy".padEnd(64, "0"));
      const entryBefore = fs.readFileSync(entryFile(), "utf8");
      const addresses = podAddresses();

      const r = await gc(`unix://${socket}`);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.equal(r.stdout, "");
      const message = new RegExp(
        `^Error: CRI runtime at unix://${socket}: the listener on unix://${socket} is not trusted, nothing was sent: ${refusal.source}\\n$`,
      );
      assert.match(r.stderr, message);
      assert.equal(fs.readFileSync(entryFile(), "utf8"), entryBefore, "the cache entry stays");
      assert.deepEqual(podAddresses(), addresses, "the pod keeps its eth0 and address");
      assert.equal(await stopAndCount(attacker.child, attacker.out), "listed 0", "the listener was never asked");
    });
  }

  test("the resident server's scheduled GC logs the refusal and removes nothing", async () => {
    const dir = path.join(base, "cri-daemon");
    fs.mkdirSync(dir, { mode: 0o700 });
    const socket = path.join(dir, "cri.sock");
    const attacker = await attackerCri(CAPLESS, dir, "decoy".padEnd(64, "1"));
    const sockDir = path.join(base, "daemon");
    fs.mkdirSync(sockDir, { mode: 0o700 });
    const [cmd, args] = host.commandLine(CNITOOL, [
      "daemon",
      "--socket",
      path.join(sockDir, "plugins.sock"),
      "--warm-up",
      "0",
      "--gc-cri-endpoint",
      `unix://${socket}`,
      "--gc-interval",
      "1",
      "--gc-min-age",
      "0",
      "--gc-cache-dir",
      cacheDir,
      "--gc-conf-dir",
      confDir,
      "--gc-cni-path",
      OUR_BIN,
    ]);
    const daemon = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"], env: env() });
    children.push(daemon);
    let log = "";
    daemon.stderr!.on("data", (b: Buffer) => (log += b));
    const exited = new Promise((resolve) => daemon.once("exit", resolve));
    for (let i = 0; i < 100 && !log.includes("node GC: removed nothing"); i++) await sleep(100);
    daemon.kill("SIGTERM");
    await exited;
    assert.match(
      log,
      new RegExp(
        `node GC: removed nothing: CRI runtime at unix://${socket}: the listener on unix://${socket} is not trusted, nothing was sent: the listener lacks capabilities`,
      ),
      log,
    );
    assert.doesNotMatch(log, /node GC: removed: /);
    assert.ok(fs.existsSync(entryFile()), "the cache entry stays");
    assert.equal(podAddresses().length, 1, "the pod keeps its address");
    assert.equal(await stopAndCount(attacker.child, attacker.out), "listed 0");
  });

  test("the real runtime not listing the sandbox: kept while a process is in its namespace, removed with --delete-occupied", async () => {
    const cri = await startFakeCri(cleanup.dir("tscni-gct-cri-"), [{ id: "other".padEnd(64, "2") }]);
    cleanup.add(() => cri.stop());
    const [cmd, args] = pod.commandLine("sh", ["-c", "echo ready; exec sleep 600"]);
    const occupant = await startChild([cmd, ...args], "the pod's process");
    const pid = occupant.child.pid!;
    // (`ip netns exec` and sh exec the next program: the child's pid becomes sleep's.)
    for (let i = 0; i < 50 && fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "sleep"; i++) await sleep(20);

    const kept = await gc(cri.endpoint);
    assert.equal(kept.code, 0, kept.stdout + kept.stderr);
    assert.ok(
      kept.stdout.includes(`kept (process ${pid} (sleep) is in its network namespace ${pod.path}): ${sandbox} on network "${network}" (eth0)\n`),
      kept.stdout,
    );
    assert.doesNotMatch(kept.stdout, /^removed: /m);
    assert.ok(fs.existsSync(entryFile()), "the cache entry stays");
    assert.equal(podAddresses().length, 1, "the pod keeps its address");
    assert.equal(cri.listed, 1, "the runtime was asked (it passes the rule)");

    const removed = await gc(cri.endpoint, "--delete-occupied");
    assert.equal(removed.code, 0, removed.stdout + removed.stderr);
    assert.ok(removed.stdout.includes(`removed: ${sandbox} on network "${network}" (eth0)\n`), removed.stdout);
    assert.equal(fs.existsSync(entryFile()), false, "the cache entry is gone");
    assert.deepEqual(podAddresses(), [], "and the pod's eth0");
  });
});
