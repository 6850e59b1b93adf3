import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { DEFAULT_DATA_DIR, DEFAULT_SUBNET_FILE, decodeFlannelConf, loadFlannelConf } from "./config.js";

const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "flannel", ...extra }));

/** Asserts a CNI error with `code` whose message matches `msg`. */
function rejects(extra: Record<string, unknown>, msg: RegExp, code = 7) {
  assertCniError(() => loadFlannelConf(conf(extra)), code, msg);
}

describe("flannel config", () => {
  test("defaults: flanneld's subnet file and the flannel-io plugin's data directory", () => {
    const n = loadFlannelConf(conf({}));
    assert.deepEqual(
      [n.subnetFile, n.dataDir, n.delegate, n.ipam, n.runtimeConfig],
      [DEFAULT_SUBNET_FILE, DEFAULT_DATA_DIR, undefined, undefined, undefined],
    );
  });

  test("every key, in any case (Go's decoding)", () => {
    const n = loadFlannelConf(
      conf({
        SubnetFile: "/tmp/s.env",
        DATADIR: "/tmp/d",
        Delegate: { type: "bridge", bridge: "cni0" },
        IPAM: { routes: [{ dst: "10.96.0.0/12" }] },
        runtimeConfig: { bandwidth: { ingressRate: 1 } },
      }),
    );
    assert.deepEqual([n.subnetFile, n.dataDir], ["/tmp/s.env", "/tmp/d"]);
    assert.deepEqual(n.delegate, { type: "bridge", bridge: "cni0" });
    assert.deepEqual(n.ipam, { routes: [{ dst: "10.96.0.0/12" }] });
    assert.deepEqual(n.runtimeConfig, { bandwidth: { ingressRate: 1 } });
  });

  test("the delegate may not set name or ipam (in any case), and its type must be a non-empty string", () => {
    rejects({ delegate: { type: 5 } }, /^invalid "delegate\.type": 5 \(want a string/);
    rejects({ delegate: { type: "" } }, /^invalid "delegate\.type": ""/);
    rejects({ delegate: { type: "flannel" } }, /^invalid "delegate\.type": "flannel" \(flannel cannot delegate to itself\)/);
    rejects({ delegate: { Type: "ipvlan" } }, /^invalid "delegate\.Type": "ipvlan" .*"type"/);
    rejects({ delegate: { name: "x" } }, /^invalid "delegate\.name": "x" \(flannel sets the delegate's name/);
    rejects({ delegate: { Name: "x" } }, /^invalid "delegate\.Name"/);
    rejects({ delegate: { ipam: {} } }, /^invalid "delegate\.ipam": \{\} \(flannel sets the delegate's ipam/);
    rejects({ delegate: { IPAM: {} } }, /^invalid "delegate\.IPAM"/);
  });

  test("values of the wrong type name the key", () => {
    rejects({ delegate: "bridge" }, /^invalid "delegate": "bridge" \(want an object\)/);
    rejects({ subnetFile: 1 }, /^invalid "subnetFile": 1/);
    rejects({ subnetFile: "" }, /^invalid "subnetFile": ""/);
    rejects({ dataDir: "" }, /^invalid "dataDir": ""/);
    rejects({ runtimeConfig: [] }, /^invalid "runtimeConfig"/);
  });

  test('ipam.routes must be routes (Go fails later, in the delegate, or sends dst "<nil>")', () => {
    rejects({ ipam: { routes: {} } }, /^invalid "ipam\.routes": \{\} \(want a list\)/);
    rejects({ ipam: { routes: [{ dst: "10.0.0.0" }] } }, /^invalid "ipam\.routes\[0\]\.dst": "10\.0\.0\.0"/);
    rejects({ ipam: { routes: [{ gw: "10.0.0.1" }] } }, /^invalid "ipam\.routes\[0\]\.dst": null/);
    rejects({ ipam: { routes: [{ dst: "10.0.0.0/8", gw: "x" }] } }, /^invalid "ipam\.routes\[0\]\.gw": "x"/);
    rejects({ ipam: { routes: [{ dst: "10.0.0.0/8", mtu: "1" }] } }, /^invalid "ipam\.routes\[0\]\.mtu": "1"/);
  });

  test("DEL and CHECK decode without the ADD checks (they use the saved delegate config)", () => {
    assert.deepEqual(decodeFlannelConf(conf({ delegate: { name: "x" } })).delegate, { name: "x" });
  });
});
