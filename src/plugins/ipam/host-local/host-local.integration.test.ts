/**
 * host-local driven as a runtime drives it: the built binary, CNI_* environment, config on stdin. Includes
 * 50 concurrent processes on one store, and interop with Go's host-local (/usr/lib/cni, spec <= 1.0.0) on a
 * shared data directory.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { GO_BIN, goPluginAvailable, OUR_BIN, type PluginCall, runPlugin, tempDir } from "#testing/plugin-run.js";

const work = tempDir("tscni-host-local-it-");
after(() => work.remove());
let netCounter = 0;

/** A fresh network (its own store directory) with the given ipam keys. */
function network(ipam: Record<string, unknown>, cniVersion = "1.1.0", extra: Record<string, unknown> = {}) {
  const name = `net${++netCounter}`;
  const config = { cniVersion, name, type: "host-local", ...extra, ipam: { type: "host-local", dataDir: work.dir, ...ipam } };
  return { config, name, dir: path.join(work.dir, name) };
}

const ours = (call: PluginCall, config: unknown) => runPlugin(OUR_BIN, "host-local", call, config);
const go = (call: PluginCall, config: unknown) => runPlugin(GO_BIN, "host-local", call, config);
const ipFiles = (dir: string) =>
  readdirSync(dir)
    .filter((n) => n !== "lock" && !n.startsWith("last_reserved_ip."))
    .sort();

describe("host-local binary: lifecycle", () => {
  test("ADD, CHECK, DEL, DEL again, CHECK after DEL", async () => {
    const net = network({ ranges: [[{ subnet: "10.50.0.0/24" }], [{ subnet: "fd50::/64" }]], routes: [{ dst: "0.0.0.0/0" }] });
    const add = await ours({ command: "ADD", containerID: "ctr1" }, net.config);
    assert.equal(add.exitCode, 0, add.stdout + add.stderr);
    assert.deepEqual(add.json, {
      cniVersion: "1.1.0",
      ips: [
        { address: "10.50.0.2/24", gateway: "10.50.0.1" },
        { address: "fd50::2/64", gateway: "fd50::1" },
      ],
      routes: [{ dst: "0.0.0.0/0" }],
    });
    assert.equal(readFileSync(path.join(net.dir, "10.50.0.2"), "utf8"), "ctr1\r\neth0");
    assert.equal(readFileSync(path.join(net.dir, "fd50::2"), "utf8"), "ctr1\r\neth0");

    const check = await ours({ command: "CHECK", containerID: "ctr1" }, net.config);
    assert.equal(check.exitCode, 0, check.stdout);
    assert.equal(check.stdout, "");

    for (let i = 0; i < 2; i++) {
      const del = await ours({ command: "DEL", containerID: "ctr1" }, net.config);
      assert.equal(del.exitCode, 0, del.stdout);
      assert.equal(del.stdout, "");
      assert.deepEqual(ipFiles(net.dir), []);
    }
    assert.deepEqual(readdirSync(net.dir).sort(), ["last_reserved_ip.0", "last_reserved_ip.1", "lock"]);

    const gone = await ours({ command: "CHECK", containerID: "ctr1" }, net.config);
    assert.equal(gone.exitCode, 1);
    assert.deepEqual(gone.json, { code: 999, msg: "host-local: Failed to find address added by container ctr1" });
  });

  test("DEL with no CNI_NETNS and nothing allocated succeeds", async () => {
    const net = network({ subnet: "10.51.0.0/24" });
    const del = await ours({ command: "DEL", containerID: "never-added", netns: "" }, net.config);
    assert.equal(del.exitCode, 0, del.stdout);
  });

  test("results in every version's shape", async () => {
    const ipam = { ranges: [[{ subnet: "10.52.0.0/24" }], [{ subnet: "fd52::/64" }]], routes: [{ dst: "0.0.0.0/0", gw: "10.52.0.254" }] };
    const expected: Record<string, unknown> = {
      "0.3.1": {
        cniVersion: "0.3.1",
        ips: [
          { version: "4", address: "10.52.0.2/24", gateway: "10.52.0.1" },
          { version: "6", address: "fd52::2/64", gateway: "fd52::1" },
        ],
        routes: [{ dst: "0.0.0.0/0", gw: "10.52.0.254" }],
        dns: {},
      },
      "0.4.0": {
        cniVersion: "0.4.0",
        ips: [
          { version: "4", address: "10.52.0.2/24", gateway: "10.52.0.1" },
          { version: "6", address: "fd52::2/64", gateway: "fd52::1" },
        ],
        routes: [{ dst: "0.0.0.0/0", gw: "10.52.0.254" }],
        dns: {},
      },
      "1.0.0": {
        cniVersion: "1.0.0",
        ips: [
          { address: "10.52.0.2/24", gateway: "10.52.0.1" },
          { address: "fd52::2/64", gateway: "fd52::1" },
        ],
        routes: [{ dst: "0.0.0.0/0", gw: "10.52.0.254" }],
      },
      "1.1.0": {
        cniVersion: "1.1.0",
        ips: [
          { address: "10.52.0.2/24", gateway: "10.52.0.1" },
          { address: "fd52::2/64", gateway: "fd52::1" },
        ],
        routes: [{ dst: "0.0.0.0/0", gw: "10.52.0.254" }],
      },
    };
    for (const [version, result] of Object.entries(expected)) {
      const net = network(ipam, version);
      const add = await ours({ command: "ADD", containerID: "ctr" }, net.config);
      assert.equal(add.exitCode, 0, add.stdout);
      assert.deepEqual(add.json, result, version);
    }
  });

  test("routes keep the 1.1 fields; resolvConf becomes dns", async () => {
    const resolv = path.join(work.dir, "resolv.conf");
    writeFileSync(resolv, "nameserver 10.53.0.53\nsearch svc.local local\noptions ndots:2\ndomain local\n");
    const net = network({
      subnet: "10.53.0.0/24",
      resolvConf: resolv,
      routes: [{ dst: "10.99.0.0/16", gw: "10.53.0.254", mtu: 1400, priority: 10, table: 100, scope: 253 }],
    });
    const add = await ours({ command: "ADD", containerID: "ctr" }, net.config);
    assert.equal(add.exitCode, 0, add.stdout);
    assert.deepEqual(add.json.routes, [{ dst: "10.99.0.0/16", gw: "10.53.0.254", mtu: 1400, priority: 10, table: 100, scope: 253 }]);
    assert.deepEqual(add.json.dns, { nameservers: ["10.53.0.53"], domain: "local", search: ["svc.local", "local"], options: ["ndots:2"] });
    const missing = network({ subnet: "10.53.1.0/24", resolvConf: path.join(work.dir, "nope.conf") });
    const bad = await ours({ command: "ADD", containerID: "ctr" }, missing.config);
    assert.equal(bad.json.code, 5);
    assert.match(bad.json.msg, /^failed to read ipam\.resolvConf .*nope\.conf: ENOENT/);
  });

  test("exhaustion is an error naming the range set, and leaves nothing behind", async () => {
    const net = network({ ranges: [[{ subnet: "10.54.0.0/30" }], [{ subnet: "10.55.0.0/30" }]] });
    assert.equal((await ours({ command: "ADD", containerID: "a" }, net.config)).exitCode, 0);
    const second = await ours({ command: "ADD", containerID: "b" }, net.config);
    assert.equal(second.exitCode, 1);
    assert.deepEqual(second.json, { code: 999, msg: "failed to allocate for range 0: no IP addresses available in range set: 10.54.0.1-10.54.0.2" });
    assert.deepEqual(ipFiles(net.dir), ["10.54.0.2", "10.55.0.2"]);
  });

  test("a failure in a later range set releases what earlier sets allocated", async () => {
    const net = network({ ranges: [[{ subnet: "10.56.0.0/24" }], [{ subnet: "10.57.0.0/30" }]] });
    assert.equal((await ours({ command: "ADD", containerID: "a" }, net.config)).exitCode, 0);
    const second = await ours({ command: "ADD", containerID: "b" }, net.config);
    assert.equal(second.json.msg, "failed to allocate for range 1: no IP addresses available in range set: 10.57.0.1-10.57.0.2");
    assert.deepEqual(ipFiles(net.dir), ["10.56.0.2", "10.57.0.2"]);
  });

  test("a second ADD for the same attachment is a duplicate allocation", async () => {
    const net = network({ subnet: "10.58.0.0/24" });
    assert.equal((await ours({ command: "ADD", containerID: "a" }, net.config)).exitCode, 0);
    const again = await ours({ command: "ADD", containerID: "a" }, net.config);
    assert.deepEqual(again.json, {
      code: 999,
      msg: "failed to allocate for range 0: 10.58.0.2 has been allocated to a, duplicate allocation is not allowed",
    });
  });
});

describe("host-local binary: requested IPs", () => {
  const ipam = { ranges: [[{ subnet: "10.60.0.0/24" }], [{ subnet: "fd60::/64" }]] };
  test("CNI_ARGS IP, args.cni.ips and runtimeConfig.ips are all honoured, one per range set", async () => {
    const net = network(ipam, "1.1.0", { args: { cni: { ips: ["fd60::60"] } } });
    const add = await ours({ command: "ADD", containerID: "a", args: "IgnoreUnknown=1;K8S_POD_NAME=pod;IP=10.60.0.60" }, net.config);
    assert.equal(add.exitCode, 0, add.stdout);
    assert.deepEqual(
      add.json.ips.map((i: { address: string }) => i.address),
      ["10.60.0.60/24", "fd60::60/64"],
    );
    const net2 = network(ipam, "1.1.0", { runtimeConfig: { ips: ["10.60.0.61/24", "fd60::61/64"] } });
    const add2 = await ours({ command: "ADD", containerID: "b" }, net2.config);
    assert.deepEqual(
      add2.json.ips.map((i: { address: string }) => i.address),
      ["10.60.0.61/24", "fd60::61/64"],
    );
  });
  test("CNI_ARGS IP takes precedence: it wins the range set, and a second request for that set is an error", async () => {
    const net = network(ipam, "1.1.0", { runtimeConfig: { ips: ["10.60.0.71/24"] } });
    const add = await ours({ command: "ADD", containerID: "a", args: "IP=10.60.0.70" }, net.config);
    assert.equal(add.exitCode, 1);
    assert.deepEqual(add.json, { code: 999, msg: "failed to allocate all requested IPs: 10.60.0.71" });
    assert.deepEqual(ipFiles(net.dir), [], "the addresses taken before the failure are released");
    assert.equal(readFileSync(path.join(net.dir, "last_reserved_ip.0"), "utf8"), "10.60.0.70", "CNI_ARGS IP was the one allocated");
  });
  test("the same IP from several sources collapses into one request", async () => {
    const net = network(ipam, "1.1.0", { args: { cni: { ips: ["10.60.0.80"] } }, runtimeConfig: { ips: ["10.60.0.80/24"] } });
    const add = await ours({ command: "ADD", containerID: "a", args: "IP=10.60.0.80" }, net.config);
    assert.equal(add.exitCode, 0, add.stdout);
    assert.deepEqual(
      add.json.ips.map((i: { address: string }) => i.address),
      ["10.60.0.80/24", "fd60::2/64"],
    );
  });
  test("a requested IP outside every range, or taken, or the gateway", async () => {
    const net = network(ipam);
    let r = await ours({ command: "ADD", containerID: "a", args: "IP=10.61.0.5" }, net.config);
    assert.deepEqual(r.json, { code: 999, msg: "failed to allocate all requested IPs: 10.61.0.5" });
    r = await ours({ command: "ADD", containerID: "a", args: "IP=10.60.0.1" }, net.config);
    assert.deepEqual(r.json, { code: 999, msg: "failed to allocate for range 0: requested ip 10.60.0.1 is subnet's gateway" });
    assert.equal((await ours({ command: "ADD", containerID: "a", args: "IP=10.60.0.9" }, net.config)).exitCode, 0);
    r = await ours({ command: "ADD", containerID: "b", args: "IP=10.60.0.9" }, net.config);
    assert.deepEqual(r.json, {
      code: 999,
      msg: "failed to allocate for range 0: requested IP address 10.60.0.9 is not available in range set 10.60.0.1-10.60.0.254",
    });
  });
  test("CNI_ARGS: unknown keys fail without IgnoreUnknown (code 4)", async () => {
    const net = network(ipam);
    const r = await ours({ command: "ADD", containerID: "a", args: "K8S_POD_NAME=pod" }, net.config);
    assert.deepEqual(r.json, { code: 4, msg: 'ARGS: unknown args ["K8S_POD_NAME=pod"]' });
  });
});

describe("host-local binary: bad configs", () => {
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ["bad subnet", { ranges: [[{ subnet: "10.0.0.0/33" }]] }, 7, 'invalid range: subnet "10.0.0.0/33" is not a valid CIDR (ipam.ranges[0][0])'],
    ["legacy bad subnet", { subnet: "10.0.0.0/33" }, 7, 'invalid range: subnet "10.0.0.0/33" is not a valid CIDR (ipam)'],
    [
      "subnet too small",
      { ranges: [[{ subnet: "10.0.0.0/31" }]] },
      7,
      "invalid range: subnet 10.0.0.0/31 is too small to allocate from (a /31 or /32 has no usable addresses) (ipam.ranges[0][0])",
    ],
    [
      "rangeStart outside subnet",
      { ranges: [[{ subnet: "10.0.0.0/24", rangeStart: "10.1.0.1" }]] },
      7,
      "invalid range: rangeStart 10.1.0.1 is not in subnet 10.0.0.0/24 (ipam.ranges[0][0])",
    ],
    [
      "overlapping ranges in a set",
      { ranges: [[{ subnet: "10.0.0.0/24" }, { subnet: "10.0.0.0/24", rangeStart: "10.0.0.100" }]] },
      7,
      "invalid range set: ranges 10.0.0.1-10.0.0.254 (ipam.ranges[0][0]) and 10.0.0.100-10.0.0.254 (ipam.ranges[0][1]) overlap",
    ],
    [
      "overlapping range sets",
      { ranges: [[{ subnet: "10.0.0.0/16" }], [{ subnet: "10.0.3.0/24" }]] },
      7,
      "range set 0 overlaps with 1: 10.0.0.1-10.0.255.254 (ipam.ranges[0][0]) and 10.0.3.1-10.0.3.254 (ipam.ranges[1][0])",
    ],
    ["no ranges", {}, 7, "no IP ranges specified: set ipam.ranges, ipam.subnet or runtimeConfig.ipRanges"],
    ["ranges not an array", { ranges: { subnet: "10.0.0.0/24" } }, 7, 'invalid "ipam.ranges": {"subnet":"10.0.0.0/24"} (want a list)'],
  ];
  for (const [name, ipam, code, msg] of cases) {
    test(`${name}: code ${code}`, async () => {
      for (const command of ["ADD", "DEL"] as const) {
        const net = network(ipam);
        const r = await ours({ command, containerID: "a" }, net.config);
        assert.equal(r.exitCode, 1);
        assert.deepEqual(r.json, { code, msg }, command);
        assert.equal(r.stderr, "", "no stack trace");
      }
    });
  }
  test("not JSON, no ipam, and a 1.1.0-only verb at 1.0.0", async () => {
    let r = await ours({ command: "ADD", containerID: "a" }, "{nope");
    assert.equal(r.json.code, 6);
    r = await ours({ command: "ADD", containerID: "a" }, { cniVersion: "1.0.0", name: "n", type: "host-local" });
    assert.deepEqual(r.json, { code: 7, msg: "IPAM config missing 'ipam' key" });
    r = await ours({ command: "GC" }, network({ subnet: "10.0.0.0/24" }, "1.0.0").config);
    assert.equal(r.json.code, 1);
  });
});

describe("host-local binary: GC and STATUS (1.1.0)", () => {
  test("GC frees the addresses of attachments that are not valid", async () => {
    const net = network({ ranges: [[{ subnet: "10.62.0.0/24" }]] });
    for (const id of ["a", "b", "c"]) assert.equal((await ours({ command: "ADD", containerID: id }, net.config)).exitCode, 0);
    const gc = await ours({ command: "GC" }, { ...net.config, "cni.dev/valid-attachments": [{ containerID: "b", ifname: "eth0" }] });
    assert.equal(gc.exitCode, 0, gc.stdout);
    assert.deepEqual(ipFiles(net.dir), ["10.62.0.3"]);
    assert.ok(existsSync(path.join(net.dir, "lock")) && existsSync(path.join(net.dir, "last_reserved_ip.0")));
  });
  test("STATUS succeeds on a usable store and fails (code 50) when the data dir cannot be created", async () => {
    const net = network({ subnet: "10.63.0.0/24" });
    assert.equal((await ours({ command: "STATUS" }, net.config)).exitCode, 0);
    const file = path.join(work.dir, "a-file");
    writeFileSync(file, "");
    const bad = await ours({ command: "STATUS" }, network({ subnet: "10.63.0.0/24", dataDir: file }).config);
    assert.equal(bad.exitCode, 1);
    assert.equal(bad.json.code, 50);
    assert.match(bad.json.msg, /^host-local store is not usable: failed to open the host-local store .*a-file\/net\d+: /);
  });
  test("STATUS fails (code 50) once a range set has no address left, as the next ADD would; a DEL makes it ready", async () => {
    // 10.64.0.0/30 has one address (.2; .1 is the gateway); the IPv6 set has plenty: one full set is enough.
    const net = network({ ranges: [[{ subnet: "10.64.0.0/30" }], [{ subnet: "fd64::/64" }]] });
    assert.equal((await ours({ command: "STATUS" }, net.config)).exitCode, 0);
    assert.equal((await ours({ command: "ADD", containerID: "only" }, net.config)).exitCode, 0);
    const full = await ours({ command: "STATUS" }, net.config);
    assert.equal(full.exitCode, 1);
    assert.deepEqual(full.json, { code: 50, msg: "host-local: no IP addresses available in range set: 10.64.0.1-10.64.0.2" });
    const refused = await ours({ command: "ADD", containerID: "next" }, net.config);
    assert.match(refused.json.msg, /no IP addresses available in range set: 10\.64\.0\.1-10\.64\.0\.2/);
    assert.equal((await ours({ command: "DEL", containerID: "only" }, net.config)).exitCode, 0);
    assert.equal((await ours({ command: "STATUS" }, net.config)).exitCode, 0);
  });
});

describe("host-local binary: 50 concurrent processes", () => {
  test("50 ADDs give 50 distinct addresses and files; 50 DELs leave none", async (t) => {
    const net = network({ ranges: [[{ subnet: "10.70.0.0/24" }], [{ subnet: "fd70::/64" }]] });
    const ids = Array.from({ length: 50 }, (_, i) => `ctr-${i}`);
    let start = performance.now();
    const adds = await Promise.all(ids.map((id) => ours({ command: "ADD", containerID: id }, net.config)));
    const addMs = performance.now() - start;
    for (const r of adds) assert.equal(r.exitCode, 0, r.stdout + r.stderr);
    const v4 = adds.map((r) => r.json.ips[0].address as string);
    const v6 = adds.map((r) => r.json.ips[1].address as string);
    assert.equal(new Set(v4).size, 50);
    assert.equal(new Set(v6).size, 50);
    assert.equal(ipFiles(net.dir).length, 100);
    for (const [i, id] of ids.entries()) {
      assert.equal(readFileSync(path.join(net.dir, v4[i]!.split("/")[0]!), "utf8"), `${id}\r\neth0`);
    }
    start = performance.now();
    const dels = await Promise.all(ids.map((id) => ours({ command: "DEL", containerID: id }, net.config)));
    const delMs = performance.now() - start;
    for (const r of dels) assert.equal(r.exitCode, 0, r.stdout + r.stderr);
    assert.deepEqual(ipFiles(net.dir), []);
    t.diagnostic(`50 concurrent ADDs: ${addMs.toFixed(0)} ms, 50 concurrent DELs: ${delMs.toFixed(0)} ms`);
  });
});

const skipGo = goPluginAvailable("host-local") ? undefined : "Go's host-local is not installed in /usr/lib/cni";
describe("host-local: interop with Go's host-local on a shared data dir", { skip: skipGo }, () => {
  const ipam = { ranges: [[{ subnet: "10.80.0.0/24" }], [{ subnet: "fd80::/64" }]] };
  let net: ReturnType<typeof network>;
  before(() => {
    net = network(ipam, "1.0.0");
  });
  const addresses = (r: { json: { ips: Array<{ address: string }> } }) => r.json.ips.map((i) => i.address);

  test("same results and files as Go for the same config", async () => {
    for (const version of ["0.3.1", "0.4.0", "1.0.0"]) {
      const a = network(ipam, version);
      const b = network(ipam, version);
      const mine = await ours({ command: "ADD", containerID: "x" }, a.config);
      const theirs = await go({ command: "ADD", containerID: "x" }, b.config);
      assert.equal(theirs.exitCode, 0, theirs.stdout);
      if (version === "1.0.0" && JSON.stringify(theirs.json.dns) === "{}") delete theirs.json.dns; // newer libcni omits an empty dns
      assert.deepEqual(mine.json, theirs.json, version);
      for (const name of ["10.80.0.2", "fd80::2", "last_reserved_ip.0", "last_reserved_ip.1", "lock"]) {
        assert.deepEqual(readFileSync(path.join(a.dir, name)), readFileSync(path.join(b.dir, name)), name);
      }
    }
  });
  test("a gateway outside the subnet: accepted, and the same allocations and results as Go 1.1.1", async () => {
    const outside = { ranges: [[{ subnet: "10.81.0.0/24", gateway: "10.81.1.1" }]] };
    const a = network(outside, "1.0.0");
    const b = network(outside, "1.0.0");
    for (const id of ["g1", "g2"]) {
      const mine = await ours({ command: "ADD", containerID: id }, a.config);
      const theirs = await go({ command: "ADD", containerID: id }, b.config);
      assert.equal(theirs.exitCode, 0, theirs.stdout);
      assert.equal(mine.exitCode, 0, mine.stdout);
      if (JSON.stringify(theirs.json.dns) === "{}") delete theirs.json.dns;
      assert.deepEqual(mine.json, theirs.json, id);
    }
    assert.deepEqual(ipFiles(a.dir), ipFiles(b.dir));
    assert.deepEqual(ipFiles(a.dir), ["10.81.0.1", "10.81.0.2"], "the subnet's first address is allocatable when the gateway is elsewhere");
  });

  test("ours allocates, Go releases; Go allocates, ours releases; round robin continues across both", async () => {
    const r1 = await ours({ command: "ADD", containerID: "c1" }, net.config);
    assert.deepEqual(addresses(r1), ["10.80.0.2/24", "fd80::2/64"]);
    const r2 = await go({ command: "ADD", containerID: "c2" }, net.config);
    assert.equal(r2.exitCode, 0, r2.stdout);
    assert.deepEqual(addresses(r2), ["10.80.0.3/24", "fd80::3/64"], "Go continues after our last_reserved_ip");
    const r3 = await ours({ command: "ADD", containerID: "c3" }, net.config);
    assert.deepEqual(addresses(r3), ["10.80.0.4/24", "fd80::4/64"], "we continue after Go's");

    assert.equal((await go({ command: "CHECK", containerID: "c1" }, net.config)).exitCode, 0, "Go finds our allocation");
    assert.equal((await ours({ command: "CHECK", containerID: "c2" }, net.config)).exitCode, 0, "we find Go's");
    assert.equal((await go({ command: "DEL", containerID: "c1" }, net.config)).exitCode, 0);
    assert.equal((await ours({ command: "DEL", containerID: "c2" }, net.config)).exitCode, 0);
    assert.deepEqual(ipFiles(net.dir), ["10.80.0.4", "fd80::4"]);

    const dup = await go({ command: "ADD", containerID: "c3" }, net.config);
    assert.match(dup.json.msg, /10\.80\.0\.4 has been allocated to c3, duplicate allocation is not allowed/, "Go sees our allocation as c3's");
    const r4 = await go({ command: "ADD", containerID: "c4" }, net.config);
    assert.deepEqual(addresses(r4), ["10.80.0.5/24", "fd80::5/64"]);
    assert.equal((await ours({ command: "DEL", containerID: "c3" }, net.config)).exitCode, 0);
    assert.equal((await ours({ command: "DEL", containerID: "c4" }, net.config)).exitCode, 0);
    assert.deepEqual(ipFiles(net.dir), []);
  });
  test("40 concurrent ADDs, half ours and half Go's, share the lock: 40 distinct addresses", async () => {
    const mixed = network({ ranges: [[{ subnet: "10.81.0.0/24" }]] }, "1.0.0");
    const ids = Array.from({ length: 40 }, (_, i) => `mix-${i}`);
    const adds = await Promise.all(ids.map((id, i) => (i % 2 ? go : ours)({ command: "ADD", containerID: id }, mixed.config)));
    for (const r of adds) assert.equal(r.exitCode, 0, r.stdout + r.stderr);
    assert.equal(new Set(adds.map((r) => r.json.ips[0].address)).size, 40);
    assert.equal(ipFiles(mixed.dir).length, 40);
    const dels = await Promise.all(ids.map((id, i) => (i % 2 ? ours : go)({ command: "DEL", containerID: id }, mixed.config)));
    for (const r of dels) assert.equal(r.exitCode, 0, r.stdout + r.stderr);
    assert.deepEqual(ipFiles(mixed.dir), []);
  });
});
