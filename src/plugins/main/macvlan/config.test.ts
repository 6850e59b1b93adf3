import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { loadMacvlanConf } from "./config.js";

const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "macvlan", ...extra }));

/** Asserts a CNI error of `code` whose message matches `msg`. */
function rejects(extra: Record<string, unknown>, msg: RegExp, cniArgs = "", code = 7) {
  assertCniError(() => loadMacvlanConf(conf(extra), cniArgs), code, msg);
}

describe("macvlan config", () => {
  test("defaults: bridge mode, no master (the default route's), the kernel's MTU, MAC and queue", () => {
    const n = loadMacvlanConf(conf({}), "");
    assert.deepEqual({ ...n, conf: undefined }, { conf: undefined, master: "", mode: "bridge", mac: undefined, linkInContainer: false });
  });

  test("every mode the kernel has, source included (Go knows four)", () => {
    for (const mode of ["bridge", "private", "vepa", "passthru", "source"]) assert.equal(loadMacvlanConf(conf({ mode }), "").mode, mode);
    rejects({ mode: "Bridge" }, /^invalid "mode": "Bridge" \(want one of/);
  });

  test("the MAC: mac, then CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac; the last one set wins", () => {
    const all = { mac: "02:00:00:00:00:01", args: { cni: { mac: "02:00:00:00:00:03" } }, runtimeConfig: { mac: "02:00:00:00:00:04" } };
    assert.equal(loadMacvlanConf(conf(all), "IgnoreUnknown=1;MAC=02:00:00:00:00:02").mac, "02:00:00:00:00:04");
    assert.equal(loadMacvlanConf(conf({ ...all, runtimeConfig: {} }), "MAC=02:00:00:00:00:02").mac, "02:00:00:00:00:03");
    assert.equal(loadMacvlanConf(conf({ mac: "02:00:00:00:00:01" }), "MAC=02:00:00:00:00:02").mac, "02:00:00:00:00:02");
    assert.equal(loadMacvlanConf(conf({ mac: "02-00-00-00-00-0A" }), "").mac, "02:00:00:00:00:0a");
    rejects({ runtimeConfig: { mac: "03:00:00:00:00:01" } }, /^invalid "runtimeConfig\.mac": "03:00:00:00:00:01" \(a multicast MAC/);
    rejects({}, /CNI_ARGS MAC/, "MAC=xyz");
    rejects({}, /^invalid CNI_ARGS/, "POD=x", 4);
  });

  test("mtu, bcqueuelen, master", () => {
    assert.deepEqual(
      [loadMacvlanConf(conf({ mtu: 0 }), "").mtu, loadMacvlanConf(conf({ mtu: 9000 }), "").mtu],
      [undefined, 9000],
      "the master's MTU is checked by ADD",
    );
    rejects({ mtu: -5 }, /^invalid "mtu": -5/);
    rejects({ mtu: 67 }, /^invalid "mtu": 67 \(want 0 for the master's MTU, or 68 to 65535\)$/);
    assert.equal(loadMacvlanConf(conf({ bcqueuelen: 0 }), "").bcqueuelen, undefined);
    assert.equal(loadMacvlanConf(conf({ bcqueuelen: 4294967295 }), "").bcqueuelen, 4294967295);
    rejects({ bcqueuelen: 4294967296 }, /^invalid "bcqueuelen": 4294967296/);
    rejects({ master: "0123456789abcdef" }, /^invalid "master": "0123456789abcdef" \(want a link name/);
    assert.equal(loadMacvlanConf(conf({ master: "eth0", linkInContainer: true }), "").linkInContainer, true);
  });
});
