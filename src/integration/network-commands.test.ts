/**
 * `cnitool network` and `cnitool pod` in a test-made host namespace (entered with nsenter, so the pods' named
 * namespaces are visible to later commands): a created network gets a free subnet and bridge name and serves a
 * pod that reaches its gateway and publishes a port; `network rm` refuses while a pod is attached and `--force`
 * leaves no address, rule or cache entry; bad input names the value and writes nothing.
 */
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { CNITOOL, Cleanup, Netns, OUR_BIN, runCommand, runTag, skipReason } from "../testing/harness.js";
import { Host, pingable } from "../testing/rig.js";
import { DEFAULT_DATA_DIR } from "../plugins/ipam/host-local/config.js";

const skip = skipReason();
if (skip) console.log(`# skipping network/pod command tests: ${skip}`);

describe("cnitool network and pod", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  const podName = `tscni-pp-${tag}`;

  /** cnitool inside the host namespace (same mount namespace, so /run/netns/<pod> stays usable). */
  const cnitoolEnv = () => ({ ...process.env, NETCONFPATH: host.confDir, CNI_PATH: OUR_BIN });
  const cnitool = (...args: string[]) => runCommand("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "--cache-dir", host.cacheDir, ...args], { env: cnitoolEnv() });
  const ok = async (...args: string[]) => {
    const r = await cnitool(...args);
    assert.equal(r.code, 0, `cnitool ${args.join(" ")}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const files = () => readdirSync(host.confDir).sort();
  const cache = () => (existsSync(path.join(host.cacheDir, "results")) ? readdirSync(path.join(host.cacheDir, "results")) : []);

  before(() => {
    // The first network's IPAM store is host-local's default (`network create` writes no dataDir, as podman's);
    // removed last, after the pod is down (cleanup runs in reverse order).
    cleanup.add(() => rmSync(path.join(DEFAULT_DATA_DIR, `web${tag}`), { recursive: true, force: true }));
    host = new Host(cleanup, `tscni-nc-${tag}`, OUR_BIN);
    cleanup.add(() => {
      spawnSync("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "--cache-dir", host.cacheDir, "pod", "down", podName], { env: cnitoolEnv() });
      spawnSync("ip", ["netns", "delete", podName]);
    });
  });
  after(() => cleanup.run());

  test("network create picks a free subnet and bridge; a pod on it reaches the gateway and publishes a port; rm --force cleans up", async () => {
    await ok("network", "create", "--label", "team=blue", `web${tag}`);
    const ls = JSON.parse(await ok("network", "ls", "--format", "json")) as Array<{ name: string; subnets: string[]; labels: Record<string, string> }>;
    const net = ls.find((n) => n.name === `web${tag}`)!;
    assert.deepEqual(net.subnets, ["10.89.0.0/24"]);
    assert.deepEqual(net.labels, { team: "blue" });
    const config = JSON.parse(await ok("network", "inspect", `web${tag}`)) as { config: { plugins: Array<Record<string, unknown>> } };
    assert.deepEqual(config.config.plugins.map((p) => p["type"]), ["bridge", "portmap", "firewall", "tuning"]);
    assert.equal(config.config.plugins[0]!["bridge"], "cni-podman1");

    const up = JSON.parse(await ok("pod", "up", podName, "--network", `web${tag}`, "-p", "18091:80")) as { attachments: unknown[] };
    assert.equal(up.attachments.length, 1);
    assert.ok(await pingable(new Netns(podName), "10.89.0.1"), "the pod reaches its gateway");
    assert.match(host.natRules(), /--dport 18091 /, "the port is published");
    const status = JSON.parse(await ok("pod", "status", podName)) as { attachments: Array<{ verified: boolean; addresses: string[] }> };
    assert.deepEqual(status.attachments.map((a) => [a.verified, a.addresses]), [[true, ["10.89.0.2/24"]]]);
    assert.match(await ok("pod", "ls"), new RegExp(`${podName}\\t/run/netns/${podName}\\tweb${tag}:eth0=10\\.89\\.0\\.2/24`));
    assert.ok(host.natRules().includes("tscni-pod-"), "masquerading and port rules exist");

    const refused = await cnitool("network", "rm", `web${tag}`);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, new RegExp(`network "web${tag}" is in use by tscni-pod-${podName} \\(eth0\\): use --force`));
    await ok("network", "rm", "--force", `web${tag}`);
    assert.deepEqual(files(), []);
    assert.deepEqual(host.allocations(`web${tag}`, DEFAULT_DATA_DIR), [], "no address left");
    assert.ok(!host.natRules().includes("tscni-pod-"), "no rule left");
    assert.deepEqual(cache(), [], "no cache entry left");
    await ok("pod", "down", podName);
    assert.equal(existsSync(`/run/netns/${podName}`), false);
  });

  test("a second network gets the next subnet and bridge; prune removes unused networks", async () => {
    await ok("network", "create", `a${tag}`);
    await ok("network", "create", "--ipv6", `b${tag}`);
    const ls = JSON.parse(await ok("network", "ls", "--format", "json")) as Array<{ name: string; subnets: string[] }>;
    // 10.89.0.0/24 is still routed to the first test's bridge (bridges outlive their networks, as in Go).
    assert.deepEqual(ls.map((n) => [n.name, n.subnets[0]]), [[`a${tag}`, "10.89.1.0/24"], [`b${tag}`, "10.89.2.0/24"]]);
    assert.match(ls[1]!.subnets[1]!, /^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::\/64$/);
    assert.deepEqual((await ok("network", "prune")).trim().split("\n").sort(), [`a${tag}`, `b${tag}`]);
    assert.deepEqual(files(), []);
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
