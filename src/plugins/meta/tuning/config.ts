/**
 * The tuning plugin's configuration: sysctls to set in the container and link settings (MAC, MTU,
 * promiscuous and all-multicast modes, transmit queue length), from the config, CNI_ARGS, runtimeConfig and
 * `args.cni`, validated with errors that name the key and value.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { loadCniArgs } from "../../../spec/args.js";
import type { PluginConf } from "../../../spec/config.js";
import { CniError, ErrorCode } from "../../../spec/errors.js";
import { duplicateKeysAt } from "../../../spec/json-keys.js";
import type { JsonObject } from "../../../spec/json.js";
import { loadPluginConf } from "../../../skel/conf.js";
import type { LinkTunables } from "../../../net/link-tunables.js";
import { invalidKey, optBool, optInt, optObject, optString, parseMac } from "../../common/keys.js";

/** Where backups of the original link settings go, as with the Go plugin. */
export const DEFAULT_DATA_DIR = "/run/cni/tuning";
/** If this file exists, every sysctl key must match one of its lines (regular expressions), as with the Go plugin. */
export const ALLOWLIST_FILE = "/etc/cni/tuning/allowlist.conf";

export interface TuningConf {
  conf: PluginConf;
  /** Sysctl key (as written, e.g. `net.ipv4.conf.IFNAME.rp_filter`) to value, in config order. */
  sysctl: Map<string, string>;
  /** Link settings to apply; absent ones are left alone (`promisc: false` too). */
  link: Partial<LinkTunables>;
  dataDir: string;
}

/** One sysctl to write: its key as configured, the file it names for this interface, the value. */
export interface SysctlSetting {
  key: string;
  path: string;
  value: string;
}

function rejectDuplicateSysctls(stdin: Buffer): void {
  const text = stdin.toString("utf8");
  for (const at of [["sysctl"], ["args", "cni", "sysctl"]]) {
    const [dup] = duplicateKeysAt(text, at);
    if (dup !== undefined) throw invalidKey(at.join("."), dup, "the same sysctl key is given twice");
  }
}

/** A `sysctl` map: string keys to string values. */
function readSysctlMap(obj: JsonObject, key: string, where: string, into: Map<string, string>): void {
  const map = optObject(obj, key, where);
  for (const [k, v] of Object.entries(map ?? {})) {
    if (typeof v !== "string") throw invalidKey(`${where}[${JSON.stringify(k)}]`, v, "want a string value");
    into.set(k, v);
  }
}

/** A MAC an interface can have: canonical form, not multicast. */
function interfaceMac(value: string, key: string): string {
  const mac = parseMac(value, key);
  if (parseInt(mac.slice(0, 2), 16) & 1) throw invalidKey(key, value, "a multicast MAC cannot be an interface's address");
  return mac;
}

const MAX_U32 = 0xffffffff;

/** Reads the link settings of one object (the config itself or `args.cni`) into `link`, overriding. */
function readLinkSettings(obj: JsonObject, prefix: string, link: Partial<LinkTunables>, macSource: { key?: string; value?: string }): void {
  const mac = optString(obj, "mac", `${prefix}mac`);
  if (mac !== undefined && (prefix !== "" || mac !== "")) Object.assign(macSource, { key: `${prefix}mac`, value: mac });
  const promisc = optBool(obj, "promisc", `${prefix}promisc`);
  if (promisc !== undefined) link.promisc = promisc;
  const mtu = optInt(obj, "mtu", { min: 0, max: 2 ** 31 - 1 }, `${prefix}mtu`);
  if (mtu !== undefined) link.mtu = mtu;
  const allmulti = optBool(obj, "allmulti", `${prefix}allmulti`);
  if (allmulti !== undefined) link.allmulti = allmulti;
  const txQLen = optInt(obj, "txQLen", { min: 0, max: MAX_U32 }, `${prefix}txQLen`);
  if (txQLen !== undefined) link.txQLen = txQLen;
}

/**
 * Parses and validates the tuning config. The MAC comes from, lowest priority first: `mac`, CNI_ARGS `MAC`,
 * `runtimeConfig.mac` (capability `mac`), `args.cni.mac`; `args.cni` also overrides the other settings and adds
 * to (or overrides entries of) `sysctl`. Repeated sysctl keys are an error.
 */
export function loadTuningConf(stdin: Buffer, cniArgs: string): TuningConf {
  const { conf, raw } = loadPluginConf(stdin);
  rejectDuplicateSysctls(stdin);
  const sysctl = new Map<string, string>();
  readSysctlMap(raw, "sysctl", "sysctl", sysctl);
  const link: Partial<LinkTunables> = {};
  const mac: { key?: string; value?: string } = {};
  readLinkSettings(raw, "", link, mac);

  let args: { MAC?: string };
  try {
    args = loadCniArgs(cniArgs, { MAC: (v: string) => v });
  } catch (e) {
    throw new CniError(ErrorCode.InvalidEnvironmentVariables, `invalid CNI_ARGS: ${(e as Error).message}`);
  }
  if (args.MAC) Object.assign(mac, { key: "CNI_ARGS MAC", value: args.MAC });
  const rcMac = optString(conf.runtimeConfig ?? {}, "mac", "runtimeConfig.mac");
  if (rcMac) Object.assign(mac, { key: "runtimeConfig.mac", value: rcMac });

  const argsCni = optObject(conf.args ?? {}, "cni", "args.cni");
  if (argsCni) {
    readSysctlMap(argsCni, "sysctl", "args.cni.sysctl", sysctl);
    readLinkSettings(argsCni, "args.cni.", link, mac);
  }
  if (mac.value) link.mac = interfaceMac(mac.value, mac.key!);
  if (link.promisc === false) delete link.promisc; // false means "leave it alone"
  if (link.mtu === 0) delete link.mtu;

  const dataDir = optString(raw, "dataDir") || DEFAULT_DATA_DIR;
  return { conf, sysctl, link, dataDir };
}

/** Only `dataDir` (for DEL, which must work whatever else the config says). */
export function loadTuningDataDir(stdin: Buffer): string {
  const { raw } = loadPluginConf(stdin);
  return optString(raw, "dataDir") || DEFAULT_DATA_DIR;
}

/**
 * The /proc/sys file of a sysctl key for interface `ifName`, as the Go plugin derives it: dots become
 * slashes, then the first `IFNAME` becomes the interface name (which may itself contain dots), and the
 * cleaned path must stay under /proc/sys/net/.
 */
export function sysctlFilePath(key: string, ifName: string): string {
  const relative = key.replaceAll(".", "/").replace("IFNAME", ifName);
  const file = path.posix.join("/proc/sys", relative);
  if (!file.startsWith("/proc/sys/net/")) {
    throw invalidKey("sysctl", key, `only network sysctls (net.*) can be set; this key names ${file}`);
  }
  return file;
}

/** The sysctls of a config for interface `ifName`, in config order. */
export function sysctlSettings(n: TuningConf, ifName: string): SysctlSetting[] {
  return [...n.sysctl].map(([key, value]) => ({ key, path: sysctlFilePath(key, ifName), value }));
}

/** Whether the config changes any link setting (and so needs a backup to undo it on DEL). */
export const changesLink = (n: TuningConf): boolean => Object.values(n.link).some((v) => v !== undefined);

/** The allowlist's patterns, or undefined when there is no allowlist file. */
export function readAllowlist(file = ALLOWLIST_FILE): string[] | undefined {
  if (!existsSync(file)) return undefined;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new CniError(ErrorCode.IOFailure, `cannot read the sysctl allowlist ${file}`, (e as Error).message);
  }
  return text.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
}

/** Every sysctl key must match (anywhere in the key, as Go's regexp.MatchString) one allowlist pattern. */
export function checkAllowlist(keys: Iterable<string>, allowlist: readonly string[] | undefined, file = ALLOWLIST_FILE): void {
  if (!allowlist) return;
  const patterns = allowlist.map((p) => {
    try {
      return new RegExp(p);
    } catch (e) {
      throw new CniError(ErrorCode.InvalidNetworkConfig, `invalid pattern ${JSON.stringify(p)} in the sysctl allowlist ${file}`, (e as Error).message);
    }
  });
  for (const key of keys) {
    if (!patterns.some((re) => re.test(key))) {
      throw invalidKey("sysctl", key, `not allowed by ${file}; allowed: ${allowlist.join(" ")}`);
    }
  }
}
