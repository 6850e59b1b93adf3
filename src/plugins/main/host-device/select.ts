/**
 * Finding the host device a host-device config selects, in the host namespace and its sysfs: by name, by MAC, by
 * a kernel path (the first entry of `<kernelpath>/net/` that is an interface here, as Go 1.1.1), by PCI address
 * (`/sys/bus/pci/devices/<id>/net/`, or that of its `virtio<N>` child), or by the runtime's deviceID (a PCI
 * address, else an auxiliary-bus device). A PCI device bound to a userspace driver (vfio-pci, uio_pci_generic,
 * igb_uio) is in DPDK mode: it has no interface to move. The sysfs root and the host's links are passed in (a
 * `HostView`), so tests can give a fake sysfs tree. Every failure names the config key and value (code 7).
 * @module
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import type { Link } from "#net/types.js";
import { invalidKey } from "#spec/errors.js";
import * as path from "#sys/posix-path.js";
import type { DeviceSelector } from "./config.js";

/** What selection reads: a sysfs tree and the links of the host namespace. */
export interface HostView {
  /** Where sysfs is mounted ("/sys"; a fake tree in tests). */
  sysfsRoot: string;
  /** Every link of the host namespace. */
  links(): Promise<Link[]>;
}

/** The selected device: an interface to move, or a PCI device in DPDK mode (nothing to move). */
export type SelectedDevice = { kind: "netdev"; link: Link } | { kind: "dpdk"; pciAddress: string };

/** Drivers that hand a PCI network device to userspace (DPDK). */
const USERSPACE_DRIVERS = ["vfio-pci", "uio_pci_generic", "igb_uio"];

const sysPath = (view: HostView, ...parts: string[]): string => path.join(view.sysfsRoot, ...parts);

/** A path under /sys, moved under the view's sysfs root. */
const underRoot = (view: HostView, sysPathText: string): string => path.join(view.sysfsRoot, path.relative("/sys", sysPathText));

async function exists(p: string): Promise<boolean> {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Entries of a directory, sorted by name as Go's os.ReadDir gives them; undefined when it cannot be read. */
async function entries(dir: string): Promise<string[] | undefined> {
  try {
    return readdirSync(dir).sort();
  } catch {
    return undefined;
  }
}

/** The first entry of a sysfs `net/` directory that is an interface of the host namespace (loopback aside). */
async function firstInterface(view: HostView, netDir: string): Promise<Link | undefined> {
  const names = await entries(netDir);
  if (!names?.length) return undefined;
  const links = await view.links();
  for (const name of names) {
    const link = links.find((l) => l.name === name && l.name !== "lo");
    if (link) return link;
  }
  return undefined;
}

/** Whether the PCI device is bound to a userspace (DPDK) driver. A device without a driver is not. */
export async function hasDpdkDriver(view: HostView, pciAddress: string): Promise<boolean> {
  try {
    const driver = realpathSync(sysPath(view, "bus/pci/devices", pciAddress, "driver"));
    return USERSPACE_DRIVERS.includes(path.basename(driver));
  } catch {
    return false;
  }
}

/** The `net/` directory of a PCI device: its own, or that of its virtio child. */
async function pciNetDir(view: HostView, pciAddress: string): Promise<string | undefined> {
  const dir = sysPath(view, "bus/pci/devices", pciAddress);
  if (await exists(path.join(dir, "net"))) return path.join(dir, "net");
  for (const name of (await entries(dir)) ?? []) {
    if (name.startsWith("virtio") && (await exists(path.join(dir, name, "net")))) return path.join(dir, name, "net");
  }
  return undefined;
}

const NOT_HERE = "is it in a container already?";
/** The kernel refuses to move it; say so before anything is recorded. */
const LOOPBACK = "the loopback interface cannot be moved into a container";

async function selectPci(view: HostView, pciAddress: string, key: string): Promise<SelectedDevice> {
  if (!(await exists(sysPath(view, "bus/pci/devices", pciAddress)))) {
    throw invalidKey(key, pciAddress, "no such PCI device in /sys/bus/pci/devices");
  }
  if (await hasDpdkDriver(view, pciAddress)) return { kind: "dpdk", pciAddress };
  const netDir = await pciNetDir(view, pciAddress);
  if (!netDir) throw invalidKey(key, pciAddress, "the PCI device has no network interface (no net directory, and no virtio one)");
  const link = await firstInterface(view, netDir);
  if (!link) throw invalidKey(key, pciAddress, `none of the PCI device's interfaces is in the host namespace; ${NOT_HERE}`);
  return { kind: "netdev", link };
}

/** Finds the device `selector` names (see the module comment). */
export async function selectHostDevice(selector: DeviceSelector, view: HostView): Promise<SelectedDevice> {
  switch (selector.by) {
    case "device": {
      const link = (await view.links()).find((l) => l.name === selector.name);
      if (!link) throw invalidKey("device", selector.name, `no such interface in the host namespace; ${NOT_HERE}`);
      if (link.name === "lo") throw invalidKey("device", selector.name, LOOPBACK);
      return { kind: "netdev", link };
    }
    case "hwaddr": {
      const link = (await view.links()).find((l) => l.mac.toLowerCase() === selector.mac);
      if (!link) throw invalidKey("hwaddr", selector.mac, `no interface with this MAC in the host namespace; ${NOT_HERE}`);
      if (link.name === "lo") throw invalidKey("hwaddr", selector.mac, LOOPBACK);
      return { kind: "netdev", link };
    }
    case "kernelpath": {
      const netDir = path.join(underRoot(view, selector.path), "net");
      const link = await firstInterface(view, netDir);
      if (!link)
        throw invalidKey("kernelpath", selector.path, `no interface of the host namespace in ${path.join(selector.path, "net")}; ${NOT_HERE}`);
      return { kind: "netdev", link };
    }
    case "pciBusID":
      return selectPci(view, selector.id, selector.key);
    case "deviceID": {
      if (await exists(sysPath(view, "bus/pci/devices", selector.id))) return selectPci(view, selector.id, "runtimeConfig.deviceID");
      const aux = sysPath(view, "bus/auxiliary/devices", selector.id);
      if (!(await exists(aux))) {
        throw invalidKey("runtimeConfig.deviceID", selector.id, "not found: neither a PCI device nor an auxiliary-bus device in sysfs");
      }
      const link = await firstInterface(view, path.join(aux, "net"));
      if (!link) throw invalidKey("runtimeConfig.deviceID", selector.id, `the auxiliary device has no interface in the host namespace; ${NOT_HERE}`);
      return { kind: "netdev", link };
    }
  }
}

/** Whether a selector names a PCI device in DPDK mode (CHECK has nothing to look at then). */
export async function selectsDpdkDevice(selector: DeviceSelector, view: HostView): Promise<boolean> {
  if (selector.by === "pciBusID" || (selector.by === "deviceID" && (await exists(sysPath(view, "bus/pci/devices", selector.id))))) {
    return hasDpdkDriver(view, selector.id);
  }
  return false;
}

/** The hardware behind an interface (`/sys/class/net/<name>/device`, resolved); undefined for virtual ones. */
export async function devicePathOf(view: HostView, name: string): Promise<string | undefined> {
  try {
    return path.join("/sys", path.relative(view.sysfsRoot, realpathSync(sysPath(view, "class/net", name, "device"))));
  } catch {
    return undefined;
  }
}
