import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CniError } from "#spec/errors.js";
import { assertCniError } from "#testing/cni-error.js";
import { DEFAULT_DATA_DIR, loadHostDeviceConf, loadHostDeviceGcConf, parseHardwareAddr } from "./config.js";

const conf = (extra: Record<string, unknown>) => Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "host-device", ...extra }));

/** Asserts a code-7 error whose message matches `msg`. */
function rejects(extra: Record<string, unknown>, msg: RegExp) {
  assertCniError(() => loadHostDeviceConf(conf(extra)), 7, msg);
}

describe("host-device config", () => {
  test("each selector alone", () => {
    assert.deepEqual(loadHostDeviceConf(conf({ device: "eth1" })).selector, { by: "device", name: "eth1" });
    assert.deepEqual(loadHostDeviceConf(conf({ hwaddr: "0A-58-0A-F4-00-01" })).selector, { by: "hwaddr", mac: "0a:58:0a:f4:00:01" });
    assert.deepEqual(loadHostDeviceConf(conf({ kernelpath: "/sys/devices/pci0000:00/0000:00:19.0" })).selector, {
      by: "kernelpath",
      path: "/sys/devices/pci0000:00/0000:00:19.0",
    });
    assert.deepEqual(loadHostDeviceConf(conf({ pciBusID: "0000:03:00.1" })).selector, { by: "pciBusID", id: "0000:03:00.1", key: "pciBusID" });
    assert.deepEqual(loadHostDeviceConf(conf({ runtimeConfig: { deviceID: "mlx5_core.sf.4" } })).selector, { by: "deviceID", id: "mlx5_core.sf.4" });
  });

  test("the runtime's deviceID replaces pciBusID, as in Go", () => {
    assert.deepEqual(loadHostDeviceConf(conf({ pciBusID: "0000:03:00.1", runtimeConfig: { deviceID: "0000:03:00.2" } })).selector, {
      by: "deviceID",
      id: "0000:03:00.2",
    });
  });

  test("defaults: no IPAM, the record directory", () => {
    const n = loadHostDeviceConf(conf({ device: "eth1" }));
    assert.deepEqual([n.ipamType, n.dataDir], ["", DEFAULT_DATA_DIR]);
    const m = loadHostDeviceConf(conf({ device: "eth1", ipam: { type: "host-local" }, dataDir: "/tmp/x" }));
    assert.deepEqual([m.ipamType, m.dataDir], ["host-local", "/tmp/x"]);
  });

  test("GC needs no selector (a runtime's deviceID never reaches it), only the records' directory and IPAM", () => {
    const gc = (extra: Record<string, unknown>) =>
      loadHostDeviceGcConf(conf({ ...extra, "cni.dev/valid-attachments": [{ containerID: "c", ifname: "net1" }] }));
    const n = gc({ capabilities: { deviceID: true }, ipam: { type: "host-local" }, dataDir: "/tmp/x" });
    assert.deepEqual(
      [n.conf.name, n.ipamType, n.dataDir, n.conf.validAttachments],
      ["net", "host-local", "/tmp/x", [{ containerID: "c", ifname: "net1" }]],
    );
    assert.equal(gc({ device: "eth1" }).dataDir, DEFAULT_DATA_DIR);
    assert.throws(
      () => gc({ dataDir: "" }),
      (e: unknown) => e instanceof CniError && e.code === 7,
    );
  });

  test("no selector, or two (Go takes the first silently), is a code-7 error naming the keys", () => {
    rejects({}, /^specify either "device", "hwaddr", "kernelpath" or "pciBusID"$/);
    rejects({ device: "" }, /^specify either/);
    rejects({ device: "eth1", hwaddr: "0a:58:0a:f4:00:01" }, /^specify only one of "device" and "hwaddr"$/);
    rejects({ kernelpath: "/sys/devices/x", pciBusID: "0000:03:00.1" }, /^specify only one of "kernelpath" and "pciBusID"$/);
    rejects({ device: "eth1", runtimeConfig: { deviceID: "0000:03:00.1" } }, /^specify only one of "device" and "runtimeConfig\.deviceID"$/);
  });

  test("bad selector values name the key and the value", () => {
    rejects({ hwaddr: "zz" }, /^invalid "hwaddr": "zz" \(want a MAC address/);
    rejects({ hwaddr: "0a:58:0a:f4:00" }, /^invalid "hwaddr"/);
    rejects({ kernelpath: "sys/devices/x" }, /^invalid "kernelpath": "sys\/devices\/x" \(want an absolute path under \/sys\/devices\//);
    rejects({ kernelpath: "/sys/class/net/eth0" }, /^invalid "kernelpath"/);
    rejects({ kernelpath: "/sys/devices/../../etc" }, /^invalid "kernelpath": "\/sys\/devices\/\.\.\/\.\.\/etc"/);
    rejects({ pciBusID: "../../../etc" }, /^invalid "pciBusID"/);
    rejects({ runtimeConfig: { deviceID: ".." } }, /^invalid "runtimeConfig\.deviceID": "\.\."/);
    rejects({ device: "a/b" }, /^invalid "device": "a\/b"/);
    rejects({ device: "averyveryverylongname" }, /^invalid "device"/);
    rejects({ device: 5 }, /^invalid "device": 5 \(want a string\)/);
    rejects({ DPDKMode: true, device: "eth1" }, /^invalid "DPDKMode": true \(DPDK mode is detected/);
    rejects({ device: "eth1", dataDir: "" }, /^invalid "dataDir": ""/);
  });

  test("kernelpath is cleaned but must stay under /sys/devices/", () => {
    assert.deepEqual(loadHostDeviceConf(conf({ kernelpath: "/sys/devices/virtual/./x/../" })).selector, {
      by: "kernelpath",
      path: "/sys/devices/virtual",
    });
  });

  test("MACs as Go's net.ParseMAC reads them", () => {
    assert.equal(parseHardwareAddr("0A:58:0A:F4:00:01"), "0a:58:0a:f4:00:01");
    assert.equal(parseHardwareAddr("0a58.0af4.0001"), "0a:58:0a:f4:00:01");
    assert.equal(parseHardwareAddr("02:00:5e:10:00:00:00:01"), "02:00:5e:10:00:00:00:01");
    assert.equal(
      parseHardwareAddr("00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5E:10:00:00:00:01"),
      "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01",
    );
    assert.equal(parseHardwareAddr("0a:58-0a:f4:00:01"), undefined);
    assert.equal(parseHardwareAddr("0a:58:0a:f4:00:01:02"), undefined);
  });
});
