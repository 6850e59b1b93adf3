import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { decodeIpvlanConf, loadIpvlanConf } from "./config.js";

const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "ipvlan", ...extra }));
const prev = (interfaces: string[], ips = ["10.1.0.5/24"]) => ({
  cniVersion: "1.0.0",
  interfaces: interfaces.map((name) => ({ name })),
  ips: ips.map((address) => ({ address, interface: 0 })),
});

function rejects(extra: Record<string, unknown>, msg: RegExp) {
  assertCniError(() => loadIpvlanConf(conf(extra)), 7, msg);
}

describe("ipvlan config", () => {
  test("defaults and modes", () => {
    const n = loadIpvlanConf(conf({ ipam: { type: "host-local" } }));
    assert.deepEqual([n.master, n.mode, n.mtu, n.linkInContainer, n.chainedResult], ["", "l2", undefined, false, undefined]);
    for (const mode of ["l2", "l3", "l3s"]) assert.equal(loadIpvlanConf(conf({ mode, ipam: { type: "x" } })).mode, mode);
    rejects({ mode: "vepa", ipam: { type: "x" } }, /^invalid "mode": "vepa" \(want one of "l2", "l3", "l3s"\)$/);
  });

  test("chained: the prevResult's one interface is the master, its addresses are used without ipam", () => {
    const n = loadIpvlanConf(conf({ prevResult: prev(["eth9"]) }));
    assert.equal(n.master, "eth9");
    assert.deepEqual(n.chainedResult?.ips, [{ address: "10.1.0.5/24", interface: 0 }]);
    const withIpam = loadIpvlanConf(conf({ prevResult: prev(["eth9"]), ipam: { type: "host-local" } }));
    assert.deepEqual([withIpam.master, withIpam.chainedResult], ["eth9", undefined], "with ipam, IPAM gives the addresses");
    assert.equal(loadIpvlanConf(conf({ master: "eth1", prevResult: prev(["a", "b"]) })).master, "eth1", "a configured master wins");
    rejects(
      { prevResult: prev(["a", "b"]) },
      /^invalid "master": "" \(not set, and the prevResult does not hold exactly one named interface to take it from \(it has \["a","b"\]\)\)$/,
    );
    rejects({ prevResult: prev([""]) }, /^invalid "master": ""/);
    rejects({ master: "eth1", prevResult: prev(["eth9"], []) }, /^invalid "ipam": missing/);
    rejects({ master: "eth1" }, /^invalid "ipam": missing \(ipvlan needs an IPAM plugin, or a prevResult with addresses when chained\)$/);
  });

  test("DEL's reading needs neither ipam nor a master", () => {
    assert.deepEqual(decodeIpvlanConf(conf({})).master, "");
  });
});
