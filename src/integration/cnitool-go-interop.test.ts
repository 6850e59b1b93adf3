/**
 * Our cnitool (libcni) driving Debian's Go reference plugins in real network namespaces: a bridge +
 * host-local + portmap + tuning chain, a single 0.4.0 `.conf` network, and 20 parallel attachments.
 * The "host" side of every attachment is a namespace made by the test.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { containerIdForNetns } from "#runtime/container-ids.js";
import { Cleanup, CNITOOL, GO_BIN, type Netns, runTag, skipReason, writeJson } from "#testing/harness.js";

const skip = skipReason(true);
if (skip) console.log(`# skipping cnitool/Go interop tests: ${skip}`);

describe("cnitool with the Go reference plugins", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Netns;
  let confDir: string;
  let cacheDir: string;
  let dataDir: string;

  const bridgeName = `tcbr${tag}`;
  const chain = {
    cniVersion: "1.0.0",
    name: `tcnet${tag}`,
    plugins: [
      {
        type: "bridge",
        bridge: bridgeName,
        isGateway: true,
        ipMasq: true,
        ipam: { type: "host-local", ranges: [[{ subnet: "10.213.0.0/24" }]], routes: [{ dst: "0.0.0.0/0" }], dataDir: "" },
      },
      { type: "portmap", capabilities: { portMappings: true }, snat: true },
      { type: "tuning", sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1" } },
    ],
  };

  const cnitool = (args: string[], env: Record<string, string> = {}) =>
    host.run(CNITOOL, ["--cache-dir", cacheDir, ...args], {
      env: { ...process.env, NETCONFPATH: confDir, CNI_PATH: GO_BIN, ...env },
    });

  before(() => {
    host = cleanup.netns(`tscni-h-${tag}`);
    confDir = cleanup.dir("tscni-conf-");
    cacheDir = cleanup.dir("tscni-cache-");
    dataDir = cleanup.dir("tscni-ipam-");
    chain.plugins[0]!.ipam!.dataDir = dataDir;
    writeJson(path.join(confDir, "10-chain.conflist"), chain);
    writeJson(path.join(confDir, "20-single.conf"), {
      cniVersion: "0.4.0",
      name: `tcsingle${tag}`,
      type: "bridge",
      bridge: `tcsb${tag}`,
      isGateway: true,
      ipam: { type: "host-local", subnet: "10.214.0.0/24", dataDir },
    });
    writeJson(path.join(confDir, "30-par.conflist"), {
      cniVersion: "1.0.0",
      name: `tcpar${tag}`,
      plugins: [{ type: "bridge", bridge: `tcpb${tag}`, isGateway: true, ipam: { type: "host-local", subnet: "10.215.0.0/24", dataDir } }],
    });
  });
  after(() => cleanup.run());

  test("add, check, del, del of bridge + host-local + portmap + tuning", async () => {
    const ctr = cleanup.netns(`tscni-c-${tag}`);
    const containerID = containerIdForNetns(ctr.path);
    const env = {
      CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 18080, containerPort: 80, protocol: "tcp" }] }),
      CNI_ARGS: "IgnoreUnknown=1;IP=10.213.0.77",
    };
    const add = await cnitool(["add", chain.name, ctr.path], env);
    assert.equal(add.code, 0, add.stderr);
    const result = JSON.parse(add.stdout) as { cniVersion: string; ips: Array<{ address: string }>; interfaces: Array<{ name: string }> };
    assert.equal(result.cniVersion, "1.0.0");
    assert.equal(result.ips[0]!.address, "10.213.0.77/24");
    assert.deepEqual(result.interfaces.map((i) => i.name).slice(0, 1), [bridgeName]);

    // The container got the address; tuning applied its sysctl.
    const addrs = ctr.exec("ip", ["-4", "-o", "addr", "show", "dev", "eth0"]);
    assert.match(addrs, /10\.213\.0\.77\/24/);
    assert.equal(ctr.exec("cat", ["/proc/sys/net/ipv4/conf/eth0/arp_notify"]).trim(), "1");

    // The cache file is Go's format.
    const cacheFile = path.join(cacheDir, "results", `${chain.name}-${containerID}-eth0`);
    const cached = JSON.parse(readFileSync(cacheFile, "utf8")) as Record<string, unknown>;
    assert.deepEqual(Object.keys(cached), ["kind", "containerId", "config", "ifName", "networkName", "netns", "cniArgs", "capabilityArgs", "result"]);
    assert.equal(cached["kind"], "cniCacheV1");
    assert.equal(cached["containerId"], containerID);
    assert.deepEqual(JSON.parse(Buffer.from(cached["config"] as string, "base64").toString()), chain);
    assert.deepEqual(cached["cniArgs"], [
      ["IgnoreUnknown", "1"],
      ["IP", "10.213.0.77"],
    ]);

    // portmap's DNAT rules are in the (test) host's firewall.
    const rules = host.exec("iptables-save", ["-t", "nat"]);
    assert.match(rules, /CNI-HOSTPORT-DNAT/);
    assert.match(rules, /--dport 18080 -j DNAT --to-destination 10\.213\.0\.77:80/);

    // CHECK runs bridge (which checks host-local) first, then portmap. Debian's Go 1.1.1 portmap cannot pass
    // CHECK at all (it looks for its IPv4 rules in the IPv6 table, an upstream bug fixed later), so the only
    // acceptable failure is exactly that one; anything else (bridge, host-local, our request) fails the test.
    const check = await cnitool(["check", chain.name, ctr.path], env);
    if (check.code !== 0) assert.match(check.stderr, /^Error: could not check ipv6 dnat: /, check.stderr);

    const del = await cnitool(["del", chain.name, ctr.path], env);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(existsSync(cacheFile), false, "cache file removed by DEL");
    const after = host.exec("iptables-save", ["-t", "nat"]);
    assert.doesNotMatch(after, /--dport 18080/);
    assert.doesNotMatch(after, /CNI-DN-/);
    assert.equal(readdirSync(path.join(dataDir, chain.name)).filter((f) => /^\d/.test(f)).length, 0, "IP released");

    const again = await cnitool(["del", chain.name, ctr.path], env);
    assert.equal(again.code, 0, again.stderr);
  });

  test("a 0.4.0 single .conf network", async () => {
    const ctr = cleanup.netns(`tscni-s-${tag}`);
    const name = `tcsingle${tag}`;
    const add = await cnitool(["add", name, ctr.path]);
    assert.equal(add.code, 0, add.stderr);
    const result = JSON.parse(add.stdout) as { cniVersion: string; ips: Array<{ version: string; address: string }> };
    assert.equal(result.cniVersion, "0.4.0");
    assert.equal(result.ips[0]!.version, "4");
    assert.match(result.ips[0]!.address, /^10\.214\.0\.\d+\/24$/);
    assert.equal((await cnitool(["check", name, ctr.path])).code, 0);
    assert.equal((await cnitool(["del", name, ctr.path])).code, 0);
    assert.equal((await cnitool(["del", name, ctr.path])).code, 0);
  });

  test("20 parallel adds get distinct addresses and all clean up", async () => {
    const name = `tcpar${tag}`;
    const namespaces = Array.from({ length: 20 }, (_, i) => cleanup.netns(`tscni-p${i}-${tag}`));
    const adds = await Promise.all(namespaces.map((ns) => cnitool(["add", name, ns.path])));
    adds.forEach((r, i) => assert.equal(r.code, 0, `add ${i}: ${r.stderr}`));
    const addresses = adds.map((r) => (JSON.parse(r.stdout) as { ips: Array<{ address: string }> }).ips[0]!.address);
    assert.equal(new Set(addresses).size, 20, `distinct: ${addresses.join(" ")}`);
    const dels = await Promise.all(namespaces.map((ns) => cnitool(["del", name, ns.path])));
    dels.forEach((r, i) => assert.equal(r.code, 0, `del ${i}: ${r.stderr}`));
    assert.equal(readdirSync(path.join(dataDir, name)).filter((f) => /^\d/.test(f)).length, 0);
    assert.equal(readdirSync(path.join(cacheDir, "results")).filter((f) => f.startsWith(name)).length, 0);
  });

  test("bad input gives a clear error and a non-zero exit", async () => {
    const ctr = `/run/netns/tscni-none-${tag}`;
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [["add", "no-such-net", ctr], {}, /no net configuration with name "no-such-net"/],
      [["add", chain.name, ctr], { CAP_ARGS: "{bad" }, /CAP_ARGS is not valid JSON/],
      [["add", chain.name, ctr], { CAP_ARGS: "[1]" }, /CAP_ARGS must be a JSON object/],
      [["add", chain.name, ctr], { CNI_ARGS: "IP" }, /invalid CNI_ARGS pair "IP"/],
    ];
    for (const [args, env, expected] of cases) {
      const r = await cnitool(args, env);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, expected);
      assert.doesNotMatch(r.stderr + r.stdout, /\n\s+at /, "no stack trace");
    }
  });
});
