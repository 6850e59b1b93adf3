import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { loadVlanConf } from "./config.js";

const conf = (extra: Record<string, unknown>) =>
  Buffer.from(
    JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "vlan", master: "eth0", vlanId: 100, ipam: { type: "host-local" }, ...extra }),
  );

function rejects(extra: Record<string, unknown>, msg: RegExp) {
  assertCniError(() => loadVlanConf(conf(extra)), 7, msg);
}

describe("vlan config", () => {
  test("every key", () => {
    const n = loadVlanConf(conf({ mtu: 1400, linkInContainer: true }));
    assert.deepEqual([n.master, n.vlanId, n.mtu, n.linkInContainer], ["eth0", 100, 1400, true]);
  });

  test("vlanId 0 to 4094, required; master and ipam required", () => {
    assert.equal(loadVlanConf(conf({ vlanId: 0 })).vlanId, 0);
    assert.equal(loadVlanConf(conf({ vlanId: 4094 })).vlanId, 4094);
    rejects({ vlanId: 4095 }, /^invalid "vlanId": 4095 \(want a VLAN ID from 0 to 4094\)$/);
    rejects({ vlanId: -1 }, /^invalid "vlanId": -1/);
    rejects({ vlanId: null }, /^invalid "vlanId": null \(required/);
    rejects({ vlanId: 1.5 }, /^invalid "vlanId": 1\.5 \(want an integer\)$/);
    rejects({ master: "" }, /^invalid "master": "" \(required/);
    rejects({ ipam: {} }, /^invalid "ipam": missing/);
    rejects({ mtu: -1 }, /^invalid "mtu": -1/);
  });
});
