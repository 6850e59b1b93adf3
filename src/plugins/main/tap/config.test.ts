import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { tuntapAddWords } from "#net/link/tuntap.js";
import { assertCniError } from "#testing/cni-error.js";
import { loadTapConf } from "./config.js";

const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "tap", ...extra }));

function rejects(extra: Record<string, unknown>, msg: RegExp) {
  assertCniError(() => loadTapConf(conf(extra), ""), 7, msg);
}

describe("tap config", () => {
  test("defaults and every key", () => {
    const d = loadTapConf(conf({}), "");
    assert.deepEqual({ ...d, conf: undefined }, { conf: undefined, multiQueue: false });
    const n = loadTapConf(
      conf({ multiQueue: true, mtu: 9000, mac: "02:00:00:00:00:01", owner: 0, group: 4294967295, selinuxContext: "u:r:t:s0", bridge: "br0" }),
      "",
    );
    assert.deepEqual(
      [n.multiQueue, n.mtu, n.mac, n.owner, n.group, n.selinuxContext, n.bridge],
      [true, 9000, "02:00:00:00:00:01", 0, 4294967295, "u:r:t:s0", "br0"],
    );
  });

  test("args is any object (Go's *struct{}), its cni.mac read as bridge reads it; runtimeConfig.mac wins", () => {
    assert.equal(loadTapConf(conf({ args: { anything: [1, 2] } }), "").mac, undefined);
    assert.equal(loadTapConf(conf({ args: null }), "").mac, undefined);
    assert.equal(
      loadTapConf(conf({ args: { cni: { mac: "02:00:00:00:00:03" } } }), "IgnoreUnknown=1;MAC=02:00:00:00:00:02").mac,
      "02:00:00:00:00:03",
    );
    assert.equal(loadTapConf(conf({ runtimeConfig: { mac: "02:00:00:00:00:04" } }), "MAC=02:00:00:00:00:02").mac, "02:00:00:00:00:04");
  });

  test("bad values", () => {
    rejects({ owner: -1 }, /^invalid "owner": -1/);
    rejects({ group: 1.5 }, /^invalid "group": 1\.5/);
    rejects({ mtu: 65536 }, /^invalid "mtu": 65536/);
    rejects({ bridge: "has space" }, /^invalid "bridge": "has space"/);
    rejects({ mac: "01:00:00:00:00:00" }, /^invalid "mac": "01:00:00:00:00:00" \(a multicast MAC/);
    rejects({ args: "x" }, /^invalid "args": "x"/);
  });

  test("ip tuntap words", () => {
    assert.deepEqual(tuntapAddWords({ name: "veth01234567", multiQueue: false }), ["tuntap", "add", "mode", "tap", "name", "veth01234567"]);
    assert.deepEqual(tuntapAddWords({ name: "t", multiQueue: true, owner: 0, group: 100 }), [
      "tuntap",
      "add",
      "mode",
      "tap",
      "name",
      "t",
      "multi_queue",
      "user",
      "0",
      "group",
      "100",
    ]);
  });
});
