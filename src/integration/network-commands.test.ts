/**
 * `cnitool network` and `cnitool pod` in a test-made host namespace (entered with nsenter, so the pods' named
 * namespaces are visible to later commands): a created network gets a free subnet and bridge name and serves a
 * pod that reaches its gateway and publishes a port; `network rm` refuses while a pod is attached, `--force`
 * leaves no address, rule or cache entry, and `rm` and `prune` delete the bridge and its route so the subnet can
 * be used again (unless another network names the bridge); `pod up --alias` reaches the aliases capability; bad
 * input names the value and writes nothing. CNI_PATH starts with a stand-in `dnsname` (the recorder test plugin),
 * so networks get dnsname as podman writes them and every call it gets is recorded.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DEFAULT_DATA_DIR } from "#plugins/ipam/host-local/config.js";
import { Cleanup, CNITOOL, Netns, OUR_BIN, runCommand, runTag, skipReason } from "#testing/harness.js";
import { installRecorder, readRecordedCalls } from "#testing/plugins/recorder-log.js";
import { Host, pingable } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping network/pod command tests: ${skip}`);

describe("cnitool network and pod", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let dnsname: string;
  const podName = `tscni-pp-${tag}`;

  /** cnitool inside the host namespace (same mount namespace, so /run/netns/<pod> stays usable). */
  const cnitoolEnv = () => ({ ...process.env, NETCONFPATH: host.confDir, CNI_PATH: `${path.dirname(dnsname)}:${OUR_BIN}` });
  const cnitool = (...args: string[]) =>
    runCommand("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "--cache-dir", host.cacheDir, ...args], { env: cnitoolEnv() });
  const ok = async (...args: string[]) => {
    const r = await cnitool(...args);
    assert.equal(r.code, 0, `cnitool ${args.join(" ")}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const files = () => readdirSync(host.confDir).sort();
  const links = () => host.ipJson(["link", "show"]).map((l) => String(l["ifname"]));
  const routes = () => host.ipJson(["route", "show"]).map((r) => `${String(r["dst"])} dev ${String(r["dev"])}`);
  const dnsnameCalls = () => readRecordedCalls(dnsname);
  /** A pod taken down and its IPAM store (host-local's default: `network create` writes no dataDir) removed at cleanup. */
  const podOn = (pod: string, network: string) => {
    cleanup.add(() => rmSync(path.join(DEFAULT_DATA_DIR, network), { recursive: true, force: true }));
    cleanup.add(() => {
      spawnSync("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "--cache-dir", host.cacheDir, "pod", "down", pod], { env: cnitoolEnv() });
      spawnSync("ip", ["netns", "delete", pod]);
    });
  };
  const cache = () => (existsSync(path.join(host.cacheDir, "results")) ? readdirSync(path.join(host.cacheDir, "results")) : []);

  before(() => {
    // The first network's IPAM store is host-local's default (`network create` writes no dataDir, as podman's);
    // removed last, after the pod is down (cleanup runs in reverse order).
    cleanup.add(() => rmSync(path.join(DEFAULT_DATA_DIR, `web${tag}`), { recursive: true, force: true }));
    host = new Host(cleanup, `tscni-nc-${tag}`, OUR_BIN);
    dnsname = installRecorder(cleanup.dir("tscni-dnsname-"), "dnsname");
    cleanup.add(() => {
      spawnSync("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "--cache-dir", host.cacheDir, "pod", "down", podName], { env: cnitoolEnv() });
      spawnSync("ip", ["netns", "delete", podName]);
    });
  });
  after(() => cleanup.run());

  test("network create picks a free subnet and bridge; a pod on it reaches the gateway and publishes a port; rm --force cleans up", async () => {
    await ok("network", "create", "--label", "team=blue", `web${tag}`);
    const ls = JSON.parse(await ok("network", "ls", "--format", "json")) as Array<{
      name: string;
      subnets: string[];
      labels: Record<string, string>;
    }>;
    const net = ls.find((n) => n.name === `web${tag}`)!;
    assert.deepEqual(net.subnets, ["10.89.0.0/24"]);
    assert.deepEqual(net.labels, { team: "blue" });
    const config = JSON.parse(await ok("network", "inspect", `web${tag}`)) as { config: { plugins: Array<Record<string, unknown>> } };
    assert.deepEqual(
      config.config.plugins.map((p) => p["type"]),
      ["bridge", "portmap", "firewall", "tuning", "dnsname"],
    );
    assert.deepEqual(config.config.plugins[4], { type: "dnsname", domainName: "dns.podman", capabilities: { aliases: true } });
    assert.equal(config.config.plugins[0]!["bridge"], "cni-podman1");

    const up = JSON.parse(await ok("pod", "up", podName, "--network", `web${tag}`, "-p", "18091:80")) as { attachments: unknown[] };
    assert.equal(up.attachments.length, 1);
    assert.ok(await pingable(new Netns(podName), "10.89.0.1"), "the pod reaches its gateway");
    assert.match(host.natRules(), /--dport 18091 /, "the port is published");
    const status = JSON.parse(await ok("pod", "status", podName)) as { attachments: Array<{ verified: boolean; addresses: string[] }> };
    assert.deepEqual(
      status.attachments.map((a) => [a.verified, a.addresses]),
      [[true, ["10.89.0.2/24"]]],
    );
    assert.match(await ok("pod", "ls"), new RegExp(`${podName}\\t/run/netns/${podName}\\tweb${tag}:eth0=10\\.89\\.0\\.2/24`));
    assert.ok(host.natRules().includes("tscni-pod-"), "masquerading and port rules exist");

    const refused = await cnitool("network", "rm", `web${tag}`);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, new RegExp(`network "web${tag}" is in use by tscni-pod-${podName} \\(eth0\\): use --force`));
    assert.ok(links().includes("cni-podman1"));
    await ok("network", "rm", "--force", `web${tag}`);
    assert.deepEqual(files(), []);
    assert.deepEqual(host.allocations(`web${tag}`, DEFAULT_DATA_DIR), [], "no address left");
    assert.ok(!host.natRules().includes("tscni-pod-"), "no rule left");
    assert.deepEqual(cache(), [], "no cache entry left");
    assert.ok(!links().includes("cni-podman1"), "the bridge is gone");
    assert.deepEqual(
      routes().filter((r) => r.startsWith("10.89.0.0/24")),
      [],
      "and its route",
    );
    const calls = dnsnameCalls().filter((c) => c.containerID === `tscni-pod-${podName}`);
    assert.deepEqual(
      calls.map((c) => c.command),
      ["ADD", "DEL"],
      "dnsname's DEL ran with the teardown",
    );
    assert.match(calls[0]!.args, new RegExp(`(^|;)K8S_POD_NAME=${podName}(;|$)`));
    assert.equal(calls[0]!.config["runtimeConfig"], undefined, "no aliases asked for, none passed");
    await ok("pod", "down", podName);
    assert.equal(existsSync(`/run/netns/${podName}`), false);
  });

  test("a second network gets the next subnet and bridge; prune removes unused networks", async () => {
    await ok("network", "create", `a${tag}`);
    await ok("network", "create", "--ipv6", `b${tag}`);
    const ls = JSON.parse(await ok("network", "ls", "--format", "json")) as Array<{ name: string; subnets: string[] }>;
    // The first test's network, bridge and route are gone: its subnet is free again.
    assert.deepEqual(
      ls.map((n) => [n.name, n.subnets[0]]),
      [
        [`a${tag}`, "10.89.0.0/24"],
        [`b${tag}`, "10.89.1.0/24"],
      ],
    );
    assert.match(ls[1]!.subnets[1]!, /^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::\/64$/);
    assert.deepEqual((await ok("network", "prune")).trim().split("\n").sort(), [`a${tag}`, `b${tag}`]);
    assert.deepEqual(files(), []);
  });

  test("network rm deletes the bridge and its route: the same subnet can be created again", async () => {
    const net = `re${tag}`;
    const pod = `tscni-pr-${tag}`;
    podOn(pod, net);
    await ok("network", "create", "--subnet", "10.96.0.0/24", net);
    const bridge = String(
      (JSON.parse(await ok("network", "inspect", net)) as { config: { plugins: Array<Record<string, unknown>> } }).config.plugins[0]!["bridge"],
    );
    await ok("pod", "up", pod, "--network", net);
    await ok("pod", "down", pod);
    assert.ok(links().includes(bridge), "the bridge outlives its last pod");
    assert.ok(routes().includes(`10.96.0.0/24 dev ${bridge}`));
    const refused = await cnitool("network", "create", "--subnet", "10.96.0.0/24", `x${net}`);
    assert.match(refused.stderr, /overlaps 10\.96\.0\.0\/24, used by network/);

    const removed = await cnitool("network", "rm", net);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(removed.stderr, "");
    assert.ok(!links().includes(bridge), "the bridge is gone");
    assert.deepEqual(
      routes().filter((r) => r.startsWith("10.96.0.0/24")),
      [],
      "and its route",
    );
    await ok("network", "create", "--subnet", "10.96.0.0/24", net);
    await ok("pod", "up", pod, "--network", net);
    assert.ok(await pingable(new Netns(pod), "10.96.0.1"), "a pod on the new network reaches its gateway");
    await ok("network", "rm", "--force", net);
    assert.ok(!links().includes(bridge));
    assert.deepEqual(cache(), []);
    await ok("pod", "down", pod);
  });

  test("a bridge another network names is left in place; prune deletes the bridges of the networks it removes", async () => {
    const [one, two] = [`s1${tag}`, `s2${tag}`];
    const pod = `tscni-ps-${tag}`;
    podOn(pod, one);
    await ok("network", "create", "--subnet", "10.97.0.0/24", one);
    const config = (
      JSON.parse(await ok("network", "inspect", one)) as { config: Record<string, unknown> & { plugins: Array<Record<string, unknown>> } }
    ).config;
    const bridge = String(config.plugins[0]!["bridge"]);
    await ok("pod", "up", pod, "--network", one);
    await ok("pod", "down", pod);
    // A hand-written network on the same bridge (another subnet).
    const shared = {
      ...config,
      name: two,
      plugins: [{ ...config.plugins[0]!, ipam: { type: "host-local", dataDir: host.dataDir, ranges: [[{ subnet: "10.98.0.0/24" }]] } }],
    };
    writeFileSync(path.join(host.confDir, `${two}.conflist`), JSON.stringify(shared));

    const kept = await cnitool("network", "rm", one);
    assert.equal(kept.code, 0, kept.stderr);
    assert.equal(kept.stderr, `Warning: bridge ${bridge} left in place: network "${two}" uses it too\n`);
    assert.ok(links().includes(bridge));
    await ok("network", "create", "--subnet", "10.99.0.0/24", `p${tag}`);
    assert.deepEqual((await ok("network", "prune")).trim().split("\n").sort(), [`p${tag}`, two]);
    assert.ok(!links().includes(bridge), "pruning the last network on it deleted the bridge");
    assert.deepEqual(files(), []);
  });

  test("pod up --alias passes the aliases capability to each network, keyed by its name, with the pod's name", async () => {
    const [one, two] = [`al1${tag}`, `al2${tag}`];
    const pod = `tscni-pa-${tag}`;
    podOn(pod, one);
    podOn(pod, two);
    await ok("network", "create", "--subnet", "10.100.0.0/24", one);
    await ok("network", "create", "--subnet", "10.101.0.0/24", two);
    await ok("pod", "up", pod, "--network", one, "--network", `${two}:net1`, "--alias", "db", "--alias", "cache", "-p", "18092:80");
    const ours = () => dnsnameCalls().filter((c) => c.containerID === `tscni-pod-${pod}`);
    const adds = ours().filter((c) => c.command === "ADD");
    assert.deepEqual(
      adds.map((c) => [c.config["name"], c.ifName, c.config["runtimeConfig"]]),
      [
        [one, "eth0", { aliases: { [one]: ["db", "cache"] } }],
        [two, "net1", { aliases: { [two]: ["db", "cache"] } }],
      ],
      "only the capability dnsname declares, not portMappings",
    );
    for (const c of adds) {
      assert.match(c.args, new RegExp(`(^|;)K8S_POD_NAME=${pod}(;|$)`));
      assert.deepEqual(c.config["domainName"], "dns.podman");
      assert.ok(c.config["prevResult"], "chained after tuning");
    }
    await ok("pod", "down", pod);
    const dels = ours().filter((c) => c.command === "DEL");
    assert.deepEqual(
      dels.map((c) => [c.config["name"], c.config["runtimeConfig"]]),
      [
        [two, { aliases: { [two]: ["db", "cache"] } }],
        [one, { aliases: { [one]: ["db", "cache"] } }],
      ],
      "DEL gets the aliases the pod was added with (from the cache)",
    );
    await ok("network", "rm", one);
    await ok("network", "rm", two);
  });

  test("network create --disable-dns leaves dnsname out", async () => {
    await ok("network", "create", "--disable-dns", `nd${tag}`);
    const config = JSON.parse(await ok("network", "inspect", `nd${tag}`)) as {
      dnsEnabled: boolean;
      config: { plugins: Array<Record<string, unknown>> };
    };
    assert.deepEqual(
      config.config.plugins.map((p) => p["type"]),
      ["bridge", "portmap", "firewall", "tuning"],
    );
    assert.equal(config.dnsEnabled, false);
    await ok("network", "rm", `nd${tag}`);
  });

  test("bad input names the value and writes nothing", async () => {
    await ok("network", "create", "--subnet", "10.91.0.0/24", `c${tag}`);
    const before = files();
    const cases: Array<[string[], RegExp]> = [
      [["network", "create", `c${tag}`], new RegExp(`network "c${tag}" already exists`)],
      [["network", "create", "--subnet", "10.91.0.128/25", "x1"], /subnet "10\.91\.0\.128\/25" overlaps 10\.91\.0\.0\/24, used by network/],
      [["network", "create", "--subnet", "10.92.0.5/24", "x2"], /invalid subnet "10\.92\.0\.5\/24": host bits are set/],
      [["network", "create", "--subnet", "nonsense", "x3"], /invalid subnet "nonsense"/],
      [["network", "create", "-d", "weird", "x4"], /unknown driver "weird"/],
      [["network", "create", "-d", "macvlan", "x5"], /driver macvlan needs a parent interface/],
      [["network", "create", "-d", "macvlan", "-o", "parent=nope0", "x6"], /parent interface "nope0" does not exist/],
      [["network", "create", "--subnet", "10.93.0.0/24", "--gateway", "10.94.0.1", "x7"], /gateway "10\.94\.0\.1" is in none of the subnets/],
      [["network", "create", "bad/name"], /invalid network name "bad\/name"/],
      [["network", "rm", "nope"], /network "nope" not found/],
      [["pod", "up", "x8", "-p", "99999:80"], /invalid --publish "99999:80"/],
      [["pod", "up", "x9", "--alias", ""], /invalid --alias "": want a name/],
    ];
    for (const [args, message] of cases) {
      const r = await cnitool(...args);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.match(r.stderr, message, args.join(" "));
      assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
    }
    assert.deepEqual(files(), before, "nothing written");
    await ok("network", "rm", `c${tag}`);
  });
});
