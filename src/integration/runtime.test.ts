/**
 * The pod network manager in real namespaces: it runs inside a test-made "host" namespace (src/testing/
 * manager-driver.ts) with our plugins, while the test changes its config directory. A pod on two networks reaches
 * both gateways; a network added while it runs is usable at once, and removing the default network's file makes
 * status() fail until another appears; a failure in the second network leaves the first torn down; teardown works
 * from the cache after the config file is deleted; GC removes a stale attachment's address and rules; the `aliases`
 * capability reaches a plugin that declares it, with the pod's name in CNI_ARGS, as any capability does.
 */

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { ManagerClient } from "#testing/manager-client.js";
import { installRecorder, readRecordedCalls } from "#testing/plugins/recorder-log.js";
import { Host, ipIn, pingable } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping runtime integration tests: ${skip}`);

async function eventually<T>(probe: () => Promise<T>, ok: (v: T) => boolean, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(50);
  }
}

describe("PodNetworkManager in a test host", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let mgr: ManagerClient;
  let seq = 0;
  let bridges = 0;

  /** A bridge network with ipMasq, host-local over `subnet`, written into the watched directory as `file`. */
  const writeNet = (file: string, name: string, subnet: string, extraIpam: Record<string, unknown> = {}) => {
    host.writeNetwork({
      cniVersion: "1.1.0",
      name,
      plugins: [
        { type: "bridge", bridge: `tr${tag}${++bridges}`, isGateway: true, ipMasq: true, ipam: host.hostLocal([subnet], extraIpam) },
        { type: "portmap", capabilities: { portMappings: true }, dataDir: path.join(host.dataDir, "portmap") },
      ],
    });
    const written = path.join(host.confDir, `${name}.conflist`);
    const wanted = path.join(host.confDir, file);
    if (written !== wanted) cleanup.add(() => rmSync(wanted, { force: true }));
    if (written !== wanted) renameSync(written, wanted);
  };
  const pod = (ns: Netns) => ({ id: `pod-${tag}-${++seq}`, name: `web${seq}`, namespace: `t${tag}`, uid: `uid-${seq}`, netns: ns.path });
  const cache = () => (existsSync(path.join(host.cacheDir, "results")) ? readdirSync(path.join(host.cacheDir, "results")) : []);
  const links = (ns: Netns) =>
    ipIn(ns, ["link", "show"])
      .map((l) => String(l["ifname"]))
      .sort();

  before(async () => {
    host = new Host(cleanup, `tscni-rt-${tag}`, OUR_BIN);
    writeNet("10-neta.conflist", `neta${tag}`, "10.236.0.0/24");
    writeNet("20-netb.conflist", `netb${tag}`, "10.237.0.0/24");
    mgr = await ManagerClient.start(host.ns, { confDir: host.confDir, pluginDirs: [OUR_BIN], cacheDir: host.cacheDir, debounceMs: 20 });
    cleanup.add(() => mgr.stop());
  });
  after(() => cleanup.run());

  test("a pod on two networks gets eth0 and eth1 and reaches both gateways; teardown leaves nothing", async () => {
    await mgr.call("status");
    const ns = host.container(`tscni-rtp-${tag}-1`);
    const p = pod(ns);
    const attached = await mgr.call<Array<{ network: string; ifName: string }>>("setUpPod", {
      ...p,
      networks: [{ name: `neta${tag}` }, { name: `netb${tag}` }],
    });
    assert.deepEqual(
      attached.map((a) => `${a.network}:${a.ifName}`),
      [`neta${tag}:eth0`, `netb${tag}:eth1`],
    );
    assert.ok(await pingable(ns, "10.236.0.1"), "gateway of the first network");
    assert.ok(await pingable(ns, "10.237.0.1"), "gateway of the second network");
    assert.equal(ipIn(ns, ["link", "show", "lo"])[0]!["operstate"], "UNKNOWN", "loopback is up");
    const status = await mgr.call<Array<{ verified: boolean }>>("podStatus", p, { verify: true });
    assert.deepEqual(
      status.map((s) => s.verified),
      [true, true],
    );
    await mgr.call("checkPod", p);

    await mgr.call("tearDownPod", p);
    assert.deepEqual(links(ns), ["lo"]);
    assert.deepEqual([...host.allocations(`neta${tag}`), ...host.allocations(`netb${tag}`)], []);
    assert.deepEqual(cache(), []);
  });

  test("a network file added while running is usable at once; without the default network's file, status() fails until one appears", async () => {
    writeNet("30-netc.conflist", `netc${tag}`, "10.238.0.0/24");
    await eventually(
      () => mgr.call<Array<{ name: string }>>("networks"),
      (n) => n.some((x) => x.name === `netc${tag}`),
      "the new network",
    );
    const ns = host.container(`tscni-rtp-${tag}-2`);
    const p = pod(ns);
    await mgr.call("setUpPod", { ...p, networks: [{ name: `netc${tag}` }] });
    assert.ok(await pingable(ns, "10.238.0.1"));
    await mgr.call("tearDownPod", p);

    // The default network is the first file: 10-neta. Move every file away, then bring one back.
    const files = readdirSync(host.confDir);
    const parked = path.join(host.dataDir, "parked");
    mkdirSync(parked, { recursive: true });
    for (const f of files) renameSync(path.join(host.confDir, f), path.join(parked, f));
    await eventually(
      () =>
        mgr.call("status").then(
          () => "ready",
          (e: Error) => e.message,
        ),
      (m) => m.startsWith("network not ready"),
      "not ready",
    );
    renameSync(path.join(parked, "20-netb.conflist"), path.join(host.confDir, "20-netb.conflist"));
    await eventually(
      () =>
        mgr.call("status").then(
          () => "ready",
          (e: Error) => e.message,
        ),
      (m) => m === "ready",
      "ready again",
    );
    for (const f of files) if (f !== "20-netb.conflist") renameSync(path.join(parked, f), path.join(host.confDir, f));
  });

  test("a failure in the second network tears the first down again, and the error names the network", async () => {
    writeNet("40-bad.conflist", `netd${tag}`, "10.239.0.0/24", { routes: [{ dst: "10.250.0.0/16", gw: "192.0.2.1" }] });
    await eventually(
      () => mgr.call<Array<{ name: string }>>("networks"),
      (n) => n.some((x) => x.name === `netd${tag}`),
      "the failing network",
    );
    const ns = host.container(`tscni-rtp-${tag}-3`);
    const p = pod(ns);
    await assert.rejects(
      mgr.call("setUpPod", { ...p, networks: [{ name: `neta${tag}` }, { name: `netd${tag}` }] }),
      new RegExp(`network "netd${tag}" as eth1: plugin type="bridge" failed \\(add\\)`),
    );
    assert.deepEqual(links(ns), ["lo"], "eth0 of the first network is gone too");
    assert.deepEqual([...host.allocations(`neta${tag}`), ...host.allocations(`netd${tag}`)], []);
    assert.deepEqual(cache(), []);
  });

  test("teardown works from the cache after the network's config file is deleted", async () => {
    writeNet("50-gone.conflist", `nete${tag}`, "10.240.0.0/24");
    await eventually(
      () => mgr.call<Array<{ name: string }>>("networks"),
      (n) => n.some((x) => x.name === `nete${tag}`),
      "the network",
    );
    const ns = host.container(`tscni-rtp-${tag}-4`);
    const p = pod(ns);
    await mgr.call("setUpPod", { ...p, networks: [{ name: `nete${tag}` }] });
    rmSync(path.join(host.confDir, "50-gone.conflist"));
    await eventually(
      () => mgr.call<Array<{ name: string }>>("networks"),
      (n) => !n.some((x) => x.name === `nete${tag}`),
      "the network gone",
    );
    await mgr.call("tearDownPod", p);
    assert.deepEqual(links(ns), ["lo"]);
    assert.deepEqual(host.allocations(`nete${tag}`), []);
    assert.deepEqual(cache(), []);
  });

  test("gc removes a stale attachment's address and masquerading rules, and keeps the valid pod's", async () => {
    const [nsA, nsB] = [host.container(`tscni-rtp-${tag}-5`), host.container(`tscni-rtp-${tag}-6`)];
    const [a, b] = [pod(nsA), pod(nsB)];
    await mgr.call("setUpPod", { ...a, networks: [{ name: `neta${tag}` }] });
    await mgr.call("setUpPod", { ...b, networks: [{ name: `neta${tag}` }] });
    assert.equal(host.allocations(`neta${tag}`).length, 2);
    const nat = () => host.natRuleLines(4).filter((l) => l.includes(a.id) || l.includes(b.id));
    assert.ok(nat().some((l) => l.includes(b.id)));
    const report = await mgr.call<{ removed: Array<{ containerID: string }>; errors: string[] }>("gc", [a.id]);
    assert.deepEqual(report.errors, []);
    assert.deepEqual(
      report.removed.map((r) => r.containerID),
      [b.id],
    );
    assert.equal(host.allocations(`neta${tag}`).length, 1);
    assert.ok(!nat().some((l) => l.includes(b.id)), "the stale pod's rules are gone");
    assert.ok(
      nat().some((l) => l.includes(a.id)),
      "the valid pod's rules stay",
    );
    await mgr.call("tearDownPod", a);
  });

  test("runtimeConfig.aliases reaches a plugin that declares the aliases capability, with K8S_POD_NAME", async () => {
    // A manager of its own: its plugin dirs hold the recorder, its directory one network (the others stay as they are).
    const recorder = installRecorder(cleanup.dir("tscni-rec-"), "recorder");
    const confDir = cleanup.dir("tscni-conf-");
    const name = `netal${tag}`;
    writeFileSync(
      path.join(confDir, `${name}.conflist`),
      JSON.stringify({
        cniVersion: "1.0.0",
        name,
        plugins: [
          { type: "bridge", bridge: `tr${tag}al`, isGateway: true, ipam: host.hostLocal(["10.241.0.0/24"]) },
          { type: "recorder", capabilities: { aliases: true } },
          { type: "recorder" },
        ],
      }),
    );
    const own = await ManagerClient.start(host.ns, {
      confDir,
      pluginDirs: [path.dirname(recorder), OUR_BIN],
      cacheDir: host.cacheDir,
      debounceMs: 20,
    });
    cleanup.add(() => own.stop());
    const ns = host.container(`tscni-rtp-${tag}-7`);
    const p = pod(ns);
    const aliases = { [name]: ["db", "cache"] };
    await own.call("setUpPod", {
      ...p,
      networks: [{ name }],
      runtimeConfig: { [name]: { aliases, portMappings: [{ hostPort: 1, containerPort: 1, protocol: "tcp" }] } },
    });
    await own.call("tearDownPod", p);
    const calls = readRecordedCalls(recorder).filter((c) => c.containerID === p.id);
    assert.deepEqual(
      calls.map((c) => [c.command, c.config["runtimeConfig"]]),
      [
        ["ADD", { aliases }],
        ["ADD", undefined],
        ["DEL", undefined],
        ["DEL", { aliases }],
      ],
      "only the plugin declaring the capability gets it, on DEL too (from the cache)",
    );
    for (const c of calls) assert.match(c.args, new RegExp(`(^|;)K8S_POD_NAME=${p.name}(;|$)`));
    assert.deepEqual(cache(), []);
  });
});
