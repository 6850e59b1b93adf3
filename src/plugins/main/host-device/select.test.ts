/**
 * Selecting the host device against a fake sysfs tree (there is no PCI or SR-IOV hardware here): PCI devices with
 * a kernel driver, a userspace (DPDK) driver, a virtio child, no interface, several interfaces; an auxiliary-bus
 * device; kernel paths; and the device path that identifies a physical device the kernel hands back.
 */

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Link } from "#net/types.js";
import { CniError } from "#spec/errors.js";
import type { DeviceSelector } from "./config.js";
import { devicePathOf, type HostView, hasDpdkDriver, selectHostDevice, selectsDpdkDevice } from "./select.js";

const link = (name: string, mac: string, kind?: string): Link => ({
  index: 0,
  name,
  mtu: 1500,
  mac,
  up: true,
  operstate: "UP",
  promisc: false,
  ...(kind ? { kind } : {}),
});

const LINKS: Link[] = [
  link("lo", "00:00:00:00:00:00"),
  link("eth5", "52:54:00:00:00:05"),
  link("ens6", "52:54:00:00:00:06"),
  link("eth7", "52:54:00:00:00:07"),
  link("enp3s0f0s4", "52:54:00:00:00:04"),
  link("veth1", "0a:58:0a:f4:00:01", "veth"),
];

/** A fake sysfs: PCI devices under /devices/pci0000:00, linked from /bus/pci/devices, with drivers and net dirs. */
function fakeSysfs(root: string): void {
  const mk = (p: string) => mkdirSync(path.join(root, p), { recursive: true });
  const ln = (target: string, p: string) => symlinkSync(target, path.join(root, p));
  mk("bus/pci/devices");
  mk("class/net");
  for (const d of ["e1000", "vfio-pci", "virtio-pci"]) mk(`bus/pci/drivers/${d}`);
  const pci = (addr: string, driver: string | undefined, netPath: string | undefined, ifNames: string[]) => {
    const dev = `devices/pci0000:00/${addr}`;
    mk(dev);
    ln(`../../../${dev}`, `bus/pci/devices/${addr}`);
    if (driver) ln(`../../../bus/pci/drivers/${driver}`, `${dev}/driver`);
    for (const name of ifNames) {
      const netdir = `${dev}/${netPath}/${name}`;
      mk(netdir);
      ln(path.relative(path.join(root, netdir), path.join(root, netPath === "net" ? dev : path.dirname(`${dev}/${netPath}`))), `${netdir}/device`);
      ln(`../../${netdir}`, `class/net/${name}`);
    }
  };
  pci("0000:00:03.0", "e1000", "net", ["eth5"]);
  pci("0000:00:04.0", "vfio-pci", undefined, []);
  pci("0000:00:05.0", "virtio-pci", "virtio1/net", ["ens6"]);
  pci("0000:00:06.0", "e1000", undefined, []);
  pci("0000:00:07.0", "e1000", "net", ["aaa-not-here", "eth7"]);
  pci("0000:00:08.0", undefined, "net", ["gone0"]);
  mk("devices/platform/auxiliary/mlx5_core.sf.4/net/enp3s0f0s4");
  mk("bus/auxiliary/devices");
  ln("../../../devices/platform/auxiliary/mlx5_core.sf.4", "bus/auxiliary/devices/mlx5_core.sf.4");
  mk("devices/virtual/net/lo");
  mk("devices/virtual/net/veth1");
}

describe("host-device selection (fake sysfs)", () => {
  let root: string;
  let view: HostView;
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), "tscni-sysfs-"));
    fakeSysfs(root);
    view = { sysfsRoot: root, links: async () => LINKS };
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const select = (s: DeviceSelector) => selectHostDevice(s, view);
  const name = async (s: DeviceSelector) => {
    const d = await select(s);
    return d.kind === "netdev" ? d.link.name : `dpdk:${d.pciAddress}`;
  };
  const fails = (s: DeviceSelector, msg: RegExp) =>
    assert.rejects(select(s), (e: unknown) => e instanceof CniError && e.code === 7 && msg.test(e.msg), JSON.stringify(s));

  test("by name and by MAC", async () => {
    assert.equal(await name({ by: "device", name: "veth1" }), "veth1");
    assert.equal(await name({ by: "hwaddr", mac: "52:54:00:00:00:07" }), "eth7");
    await fails(
      { by: "device", name: "eth9" },
      /^invalid "device": "eth9" \(no such interface in the host namespace; is it in a container already\?\)/,
    );
    await fails({ by: "hwaddr", mac: "52:54:00:00:00:99" }, /^invalid "hwaddr": "52:54:00:00:00:99"/);
    await fails({ by: "device", name: "lo" }, /^invalid "device": "lo" \(the loopback interface cannot be moved/);
  });

  test("by PCI address: the device's net directory, or its virtio child's; the first entry that is an interface here", async () => {
    assert.equal(await name({ by: "pciBusID", id: "0000:00:03.0", key: "pciBusID" }), "eth5");
    assert.equal(await name({ by: "pciBusID", id: "0000:00:05.0", key: "pciBusID" }), "ens6");
    assert.equal(await name({ by: "pciBusID", id: "0000:00:07.0", key: "pciBusID" }), "eth7");
  });

  test("a PCI device bound to vfio-pci is in DPDK mode (nothing to move)", async () => {
    assert.equal(await name({ by: "pciBusID", id: "0000:00:04.0", key: "pciBusID" }), "dpdk:0000:00:04.0");
    assert.equal(await hasDpdkDriver(view, "0000:00:04.0"), true);
    assert.equal(await hasDpdkDriver(view, "0000:00:03.0"), false);
    assert.equal(await hasDpdkDriver(view, "0000:00:08.0"), false, "no driver bound");
    assert.equal(await selectsDpdkDevice({ by: "deviceID", id: "0000:00:04.0" }, view), true);
    assert.equal(await selectsDpdkDevice({ by: "device", name: "eth5" }, view), false);
  });

  test("PCI failures name the key that gave the address", async () => {
    await fails({ by: "pciBusID", id: "0000:00:99.0", key: "pciBusID" }, /^invalid "pciBusID": "0000:00:99\.0" \(no such PCI device/);
    await fails(
      { by: "pciBusID", id: "0000:00:06.0", key: "pciBusID" },
      /^invalid "pciBusID": "0000:00:06\.0" \(the PCI device has no network interface/,
    );
    await fails(
      { by: "pciBusID", id: "0000:00:08.0", key: "pciBusID" },
      /"0000:00:08\.0" \(none of the PCI device's interfaces is in the host namespace; is it in a container already\?\)/,
    );
    await fails({ by: "deviceID", id: "0000:00:06.0" }, /^invalid "runtimeConfig\.deviceID": "0000:00:06\.0"/);
  });

  test("the runtime's deviceID: a PCI address, else an auxiliary-bus device", async () => {
    assert.equal(await name({ by: "deviceID", id: "0000:00:03.0" }), "eth5");
    assert.equal(await name({ by: "deviceID", id: "mlx5_core.sf.4" }), "enp3s0f0s4");
    await fails(
      { by: "deviceID", id: "nothing.0" },
      /^invalid "runtimeConfig\.deviceID": "nothing\.0" \(not found: neither a PCI device nor an auxiliary-bus device/,
    );
  });

  test("by kernel path: the first entry of <path>/net that is an interface here, loopback aside", async () => {
    assert.equal(await name({ by: "kernelpath", path: "/sys/devices/pci0000:00/0000:00:03.0" }), "eth5");
    assert.equal(await name({ by: "kernelpath", path: "/sys/devices/pci0000:00/0000:00:07.0" }), "eth7");
    assert.equal(await name({ by: "kernelpath", path: "/sys/devices/virtual" }), "veth1");
    await fails(
      { by: "kernelpath", path: "/sys/devices/pci0000:00/0000:00:06.0" },
      /^invalid "kernelpath": "\/sys\/devices\/pci0000:00\/0000:00:06\.0" \(no interface of the host namespace in/,
    );
  });

  test("the device path of an interface identifies its hardware; virtual interfaces have none", async () => {
    assert.equal(await devicePathOf(view, "eth5"), "/sys/devices/pci0000:00/0000:00:03.0");
    assert.equal(await devicePathOf(view, "ens6"), "/sys/devices/pci0000:00/0000:00:05.0/virtio1");
    assert.equal(await devicePathOf(view, "veth1"), undefined);
  });
});
