import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KernelRoute } from "#net/link/policy-routing.js";
import type { Address, Link } from "#net/types.js";
import { CniError } from "#spec/errors.js";
import { loadVrfConf } from "./config.js";
import { freeVrfTable, globalIPv6, planVrfDel, planVrfEnslave, planVrfRestore, routesToMove, verifyVrf } from "./plan.js";

const link = (name: string, extra: Partial<Link> = {}): Link => ({
  index: 1,
  name,
  mtu: 1500,
  mac: "",
  up: true,
  operstate: "UP",
  promisc: false,
  ...extra,
});
const vrf = (name: string, table: number) => link(name, { kind: "vrf", info: { table } });
const fails = (fn: () => unknown, pattern: RegExp) => assert.throws(fn, (e: unknown) => e instanceof CniError && pattern.test(e.msg));

describe("vrf plan", () => {
  test("a free table: the first id from 1 on that no VRF uses", () => {
    assert.equal(freeVrfTable([link("lo"), link("eth0")]), 1);
    assert.equal(freeVrfTable([vrf("a", 1), vrf("b", 2), vrf("c", 4)]), 3);
  });

  test("a new VRF is created with its table, brought up, and made the interface's master", () => {
    assert.deepEqual(planVrfEnslave([link("lo"), link("eth0")], "red", 0, "eth0"), {
      commands: [
        ["link", "add", "name", "red", "type", "vrf", "table", "1"],
        ["link", "set", "dev", "red", "up"],
        ["link", "set", "dev", "eth0", "master", "red"],
      ],
      table: 1,
      created: true,
    });
    assert.equal(planVrfEnslave([link("eth0"), vrf("blue", 1)], "red", 0, "eth0").table, 2);
    assert.equal(planVrfEnslave([link("eth0")], "red", 42, "eth0").commands[0]!.at(-1), "42");
  });

  test("an existing VRF is reused (its table must match a configured one)", () => {
    const links = [link("eth0"), link("eth1", { master: "red" }), vrf("red", 7)];
    assert.deepEqual(planVrfEnslave(links, "red", 0, "eth0"), {
      commands: [["link", "set", "dev", "eth0", "master", "red"]],
      table: 7,
      created: false,
    });
    assert.equal(planVrfEnslave(links, "red", 7, "eth0").table, 7);
    fails(() => planVrfEnslave(links, "red", 8, "eth0"), /VRF red already exist with different routing table 7/);
    fails(() => planVrfEnslave([link("eth0"), link("red", { kind: "bridge" })], "red", 0, "eth0"), /red exists and is not a VRF/);
  });

  test("the interface must exist and have no master", () => {
    fails(() => planVrfEnslave([link("lo")], "red", 0, "eth0"), /could not get link by name eth0/);
    fails(() => planVrfEnslave([link("eth0", { master: "br0" })], "red", 0, "eth0"), /eth0 has already a master set: br0/);
  });

  test("restore: global IPv6 addresses the kernel dropped come back, then the routes move into the VRF table", () => {
    const addrs: Address[] = [
      { cidr: "10.0.0.2/24", family: 4, scope: "global", tentative: false, dadFailed: false },
      { cidr: "fd00::2/64", family: 6, scope: "global", tentative: false, dadFailed: false },
      { cidr: "fd01::2/64", family: 6, scope: "global", tentative: false, dadFailed: false },
      { cidr: "fe80::1/64", family: 6, scope: "link", tentative: false, dadFailed: false },
    ];
    assert.deepEqual(globalIPv6(addrs), ["fd00::2/64", "fd01::2/64"]);
    const routes: KernelRoute[] = [
      { family: 4, type: 1, dst: "0.0.0.0/0", gw: "10.0.0.1", dev: "eth0", table: 254, protocol: 3, scope: 0 },
      { family: 4, type: 1, dst: "10.0.0.0/24", dev: "eth0", table: 254, protocol: 2, scope: 253, src: "10.0.0.2" },
      { family: 6, type: 1, dst: "fd00::/64", dev: "eth0", table: 254, protocol: 2, scope: 0, metric: 256 },
      { family: 4, type: 1, dst: "10.9.0.0/24", gw: "10.0.0.1", dev: "eth0", table: 100, protocol: 3, scope: 0 },
      { family: 4, type: 1, dst: "0.0.0.0/0", gw: "10.8.0.1", dev: "eth1", table: 254, protocol: 3, scope: 0 },
    ];
    const moved = routesToMove(routes, "eth0");
    assert.deepEqual(
      moved.map((r) => r.dst),
      ["0.0.0.0/0", "fd00::/64"],
    );
    assert.deepEqual(planVrfRestore("eth0", ["fd00::2/64", "fd01::2/64"], ["fd01::2/64"], moved, 7), {
      addresses: [["addr", "add", "fd00::2/64", "dev", "eth0"]],
      waitFor: ["fd00::2/128"],
      routes: [
        ["route", "replace", "0.0.0.0/0", "via", "10.0.0.1", "dev", "eth0", "proto", "3", "scope", "0", "table", "7"],
        ["route", "replace", "fd00::/64", "dev", "eth0", "proto", "2", "scope", "0", "metric", "256", "table", "7"],
      ],
    });
    assert.deepEqual(planVrfRestore("eth0", [], [], [], 7), { addresses: [], waitFor: [], routes: [] });
  });

  test("DEL: release the interface from this VRF only, delete the VRF when it is empty, nothing when it is gone", () => {
    assert.deepEqual(planVrfDel([vrf("red", 7), link("eth0", { master: "red" })], "red", "eth0"), [
      ["link", "set", "dev", "eth0", "nomaster"],
      ["link", "del", "dev", "red"],
    ]);
    assert.deepEqual(planVrfDel([vrf("red", 7), link("eth0", { master: "red" }), link("eth1", { master: "red" })], "red", "eth0"), [
      ["link", "set", "dev", "eth0", "nomaster"],
    ]);
    assert.deepEqual(planVrfDel([vrf("red", 7)], "red", "eth0"), [["link", "del", "dev", "red"]], "the interface is gone: the empty VRF still goes");
    assert.deepEqual(
      planVrfDel([vrf("red", 7), link("eth0", { master: "br0" }), link("x", { master: "red" })], "red", "eth0"),
      [],
      "another master is left alone",
    );
    assert.deepEqual(planVrfDel([link("eth0")], "red", "eth0"), []);
    assert.deepEqual(planVrfDel([link("red", { kind: "bridge" })], "red", "eth0"), []);
  });

  test("CHECK: the VRF exists with the configured table and holds the interface", () => {
    const links = [vrf("red", 7), link("eth0", { master: "red" })];
    assert.deepEqual(verifyVrf(links, "red", 0, "eth0"), []);
    assert.deepEqual(verifyVrf(links, "red", 7, "eth0"), []);
    assert.deepEqual(verifyVrf(links, "red", 8, "eth0"), ["VRF red uses table 7, not 8"]);
    assert.deepEqual(verifyVrf([vrf("red", 7), link("eth0")], "red", 0, "eth0"), ["failed to find eth0 associated to vrf red"]);
    assert.deepEqual(verifyVrf([link("eth0")], "red", 0, "eth0"), ["VRF red does not exist"]);
  });
});

describe("vrf config", () => {
  const load = (keys: Record<string, unknown>) => loadVrfConf(Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "vrf", ...keys })));
  const rejects = (keys: Record<string, unknown>, pattern: RegExp) =>
    assert.throws(
      () => load(keys),
      (e: unknown) => e instanceof CniError && e.code === 7 && pattern.test(e.msg),
    );

  test("vrfname is required; table defaults to 0 (pick one)", () => {
    const n = load({ vrfname: "red" });
    assert.deepEqual([n.vrfname, n.table], ["red", 0]);
    assert.equal(load({ vrfname: "red", table: 4294967295 }).table, 4294967295);
    rejects({}, /"vrfname": ""/);
    rejects({ vrfname: "" }, /"vrfname": ""/);
    rejects({ vrfname: 5 }, /"vrfname": 5/);
    rejects({ vrfname: "a-very-long-vrf-name" }, /"vrfname": "a-very-long-vrf-name"/);
    rejects({ vrfname: "red", table: -1 }, /"table": -1/);
    rejects({ vrfname: "red", table: "10" }, /"table": "10"/);
    rejects({ vrfname: "red", table: 2 ** 32 }, /"table": 4294967296/);
  });
});
