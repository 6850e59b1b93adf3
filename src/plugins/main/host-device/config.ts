/**
 * The host-device plugin's configuration: the Go plugin's keys — one selector of the host device (`device` by
 * name, `hwaddr` by MAC, `kernelpath` by sysfs path, `pciBusID` by PCI address, or the runtime's
 * `runtimeConfig.deviceID`, which replaces `pciBusID` as in Go) — plus tscni's `dataDir`, where the device's
 * original settings are kept from ADD to DEL. Exactly one selector is required: none, or two (Go silently
 * takes the first by its priority), is a code-7 error naming the keys. Parsing reads nothing from the system;
 * finding the device is select.ts's work.
 * @module
 */

import { bool, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { ipamType } from "../../common/ipam.js";
import { decodeSettings, type Settings } from "../../common/keys.js";

/** Where the records of moved devices go (tscni's own key; Go keeps only the name, in the link's alias). */
export const DEFAULT_DATA_DIR = "/var/lib/cni/host-device";

/** How the host device is chosen (exactly one). */
export type DeviceSelector =
  | { by: "device"; name: string }
  | { by: "hwaddr"; mac: string }
  | { by: "kernelpath"; path: string }
  /** A PCI address from `pciBusID` or `runtimeConfig.deviceID`; `key` is the one it came from, for messages. */
  | { by: "pciBusID"; id: string; key: string }
  /** `runtimeConfig.deviceID`: a PCI address or an auxiliary-bus device, whichever sysfs has. */
  | { by: "deviceID"; id: string };

/**
 * The Go plugin's NetConf (`DPDKMode` is an untagged field Go decodes from a `dpdkmode` key in any case), and
 * tscni's `dataDir` with its default. The selector keys are plain: which one counts, and so which one is
 * checked, follows from all of them together (loadHostDeviceConf), and GC reads none of them.
 */
export const HOST_DEVICE_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  device: string,
  hwaddr: string,
  DPDKMode: bool,
  kernelpath: string,
  pciBusID: string,
  runtimeConfig: struct("RuntimeConfig", { deviceID: string }),
  /** The records' directory; an empty one is an error, not the default. */
  dataDir: withDefault(
    refine(string, (v, key) => {
      if (v === "") throw invalidKey(key, v, `want a directory, or leave it out for ${DEFAULT_DATA_DIR}`);
      return v;
    }),
    DEFAULT_DATA_DIR,
  ),
});

/** A host-device config: the device's selector, derived from the selector keys, and the schema's `dataDir`. */
export type HostDeviceConf = Pick<Settings<typeof HOST_DEVICE_SCHEMA>, "dataDir"> & {
  conf: PluginConf;
  selector: DeviceSelector;
  /** `ipam.type`, or "" without IPAM. */
  ipamType: string;
};

/** Octets of a MAC as Go's net.ParseMAC reads it: 6, 8 or 20 of them, `:`/`-` separated or dotted in fours. */
export function parseHardwareAddr(text: string): string | undefined {
  let hex: string[];
  if (/^[0-9a-f]{2}([:-][0-9a-f]{2})+$/i.test(text)) {
    const sep = text[2]!;
    hex = text.split(sep);
    if (hex.some((h) => h.length !== 2)) return undefined; // mixed separators
  } else if (/^[0-9a-f]{4}(\.[0-9a-f]{4})+$/i.test(text)) {
    hex = text.split(".").flatMap((g) => [g.slice(0, 2), g.slice(2)]);
  } else {
    return undefined;
  }
  if (![6, 8, 20].includes(hex.length)) return undefined;
  return hex.join(":").toLowerCase();
}

/** A path component naming a sysfs entry (a PCI address, an auxiliary device): no `/`, not `.` or `..`. */
const isEntryName = (s: string): boolean => s !== "." && s !== ".." && !s.includes("/") && !s.includes("\0");

const SELECTOR_KEYS = ["device", "hwaddr", "kernelpath", "pciBusID"] as const;

/** Parses and validates the config (nothing is read from the system). */
export function loadHostDeviceConf(stdin: Buffer): HostDeviceConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(HOST_DEVICE_SCHEMA, raw);
  const deviceID = c.runtimeConfig?.deviceID ?? "";

  if (c.DPDKMode) {
    // Go would skip moving any device when this is set by hand; DPDK mode follows the PCI device's driver.
    throw invalidKey("DPDKMode", true, "DPDK mode is detected from the driver of the PCI device (pciBusID); it cannot be set");
  }

  const given = SELECTOR_KEYS.filter((k) => c[k]);
  // The runtime's deviceID takes pciBusID's place, as in Go; beside any other selector it is ambiguous.
  const selectors = deviceID ? [...given.filter((k) => k !== "pciBusID"), "runtimeConfig.deviceID"] : given;
  if (selectors.length === 0) {
    throw invalidConfig(
      'specify either "device", "hwaddr", "kernelpath" or "pciBusID"',
      "host-device needs exactly one way to find the host device (or the runtime's runtimeConfig.deviceID)",
    );
  }
  if (selectors.length > 1) {
    throw invalidConfig(
      `specify only one of ${selectors.map((k) => `"${k}"`).join(" and ")}`,
      "host-device takes exactly one way to find the host device",
    );
  }

  let selector: DeviceSelector;
  if (deviceID) {
    if (!isEntryName(deviceID))
      throw invalidKey("runtimeConfig.deviceID", deviceID, "want a PCI address like 0000:03:00.1 or an auxiliary device name");
    selector = { by: "deviceID", id: deviceID };
  } else if (c.device) {
    if (c.device.length > 15 || !isEntryName(c.device) || /[\s:]/.test(c.device)) throw invalidKey("device", c.device, "want an interface name");
    selector = { by: "device", name: c.device };
  } else if (c.hwaddr) {
    const mac = parseHardwareAddr(c.hwaddr);
    if (!mac) throw invalidKey("hwaddr", c.hwaddr, "want a MAC address like 0a:58:0a:f4:00:01");
    selector = { by: "hwaddr", mac };
  } else if (c.kernelpath) {
    selector = { by: "kernelpath", path: kernelPath(c.kernelpath) };
  } else {
    if (!isEntryName(c.pciBusID!)) throw invalidKey("pciBusID", c.pciBusID, "want a PCI address like 0000:03:00.1");
    selector = { by: "pciBusID", id: c.pciBusID!, key: "pciBusID" };
  }

  return { conf, selector, ipamType: ipamType(conf), dataDir: c.dataDir };
}

/**
 * What GC needs of the config: the network, its IPAM and the records' directory. No selector is required (GC finds
 * devices by their records, and a runtime's deviceID never reaches GC).
 */
export function loadHostDeviceGcConf(stdin: Buffer): Pick<HostDeviceConf, "conf" | "ipamType" | "dataDir"> {
  const { conf, raw } = loadPluginConf(stdin);
  const { dataDir } = decodeSettings(HOST_DEVICE_SCHEMA, raw);
  return { conf, ipamType: ipamType(conf), dataDir };
}

/**
 * `kernelpath` must be absolute and under /sys/devices/ (Go's rule), and stay there once `.` and `..` are
 * resolved (Go would follow `/sys/devices/../../etc`).
 */
function kernelPath(text: string): string {
  const want = "want an absolute path under /sys/devices/, e.g. /sys/devices/pci0000:00/0000:00:19.0";
  if (!text.startsWith("/sys/devices/")) throw invalidKey("kernelpath", text, want);
  const parts: string[] = [];
  for (const part of text.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  const clean = "/" + parts.join("/");
  if (!clean.startsWith("/sys/devices/")) throw invalidKey("kernelpath", text, want);
  return clean;
}
