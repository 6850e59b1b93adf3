/**
 * The tuning plugin's configuration: sysctls to set in the container and link settings (MAC, MTU,
 * promiscuous and all-multicast modes, transmit queue length), from the config, CNI_ARGS, runtimeConfig and
 * `args.cni`, validated with errors that name the key and value.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { bool, decodeGo, int, map, member, ptr, refine, type StructOf, string, struct, withDefault } from "#go-json/go-decode.js";
import { duplicateKeysAt } from "#go-json/json-keys.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey, ioFailure } from "#spec/errors.js";
import * as path from "#sys/posix-path.js";
import { chooseMac, cniArgsMac, decodeSettings, type Settings } from "../../common/keys.js";
import type { LinkTunables } from "./link-tunables.js";

/** Where backups of the original link settings go, as with the Go plugin. */
export const DEFAULT_DATA_DIR = "/run/cni/tuning";
/** If this file exists, every sysctl key must match one of its lines (regular expressions), as with the Go plugin. */
export const ALLOWLIST_FILE = "/etc/cni/tuning/allowlist.conf";

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

const MAX_U32 = 0xffffffff;

/** A link setting's integer: 0 to `max`, the most the kernel's field holds. */
const upTo = (max: number) =>
  refine(ptr(int), (v, key) => {
    if (v < 0 || v > max) throw invalidKey(key, v, `want an integer from 0 to ${max}`);
    return v;
  });

/** The link settings a tuning config and its `args.cni` can carry; the MAC is checked once chosen (loadTuningConf). */
const LINK_SETTINGS = { mac: ptr(string), promisc: ptr(bool), mtu: upTo(2 ** 31 - 1), allmulti: ptr(bool), txQLen: upTo(MAX_U32) };

/** `dataDir`: where backups go; empty reads as the default too. */
const DATA_DIR = withDefault(string, DEFAULT_DATA_DIR, { orEmpty: true });

/** The Go plugin's TuningConf, with its `args.cni` (IPAMArgs) and `runtimeConfig`. */
export const TUNING_SCHEMA = struct("TuningConf", {
  ...NET_CONF_FIELDS,
  ...LINK_SETTINGS,
  dataDir: DATA_DIR,
  /** Sysctl key (as written, e.g. `net.ipv4.conf.IFNAME.rp_filter`) to value, in config order. */
  sysctl: withDefault(map(string), new Map<string, string>()),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
  args: ptr(struct("TuningArgs", { cni: ptr(struct("IPAMArgs", { ...LINK_SETTINGS, sysctl: ptr(map(string)) })) })),
});

/**
 * A tuning config: `dataDir` and `sysctl` as the schema declares them (`sysctl` with `args.cni.sysctl` added
 * or overriding entries), and the link settings the config, its `args.cni` and the runtime give together.
 */
export type TuningConf = Pick<Settings<typeof TUNING_SCHEMA>, "dataDir" | "sysctl"> & {
  conf: PluginConf;
  /** Link settings to apply; absent ones are left alone (`promisc: false` too). */
  link: Partial<LinkTunables>;
};

type LinkSettings = StructOf<typeof LINK_SETTINGS>;

/** Takes the link settings but the MAC of one object (the config itself or `args.cni`) into `link`, overriding. */
function readLinkSettings(from: LinkSettings, link: Partial<LinkTunables>): void {
  if (from.promisc !== undefined) link.promisc = from.promisc;
  if (from.mtu !== undefined) link.mtu = from.mtu;
  if (from.allmulti !== undefined) link.allmulti = from.allmulti;
  if (from.txQLen !== undefined) link.txQLen = from.txQLen;
}

/**
 * Parses and validates the tuning config. The MAC comes from, lowest priority first: `mac`, CNI_ARGS `MAC`,
 * `runtimeConfig.mac` (capability `mac`), `args.cni.mac`; `args.cni` also overrides the other settings and adds
 * to (or overrides entries of) `sysctl`. Repeated sysctl keys are an error.
 */
export function loadTuningConf(stdin: Buffer, cniArgs: string): TuningConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(TUNING_SCHEMA, raw);
  rejectDuplicateSysctls(stdin);
  const link: Partial<LinkTunables> = {};
  readLinkSettings(c, link);
  const argsMac = cniArgsMac(cniArgs);
  const argsCni = c.args?.cni;
  if (argsCni) {
    for (const [k, v] of argsCni.sysctl ?? []) c.sysctl.set(k, v);
    readLinkSettings(argsCni, link);
  }
  // An empty args.cni.mac clears the MAC, as in Go; any other empty MAC is no MAC.
  const mac =
    argsCni?.mac === ""
      ? undefined
      : chooseMac([
          ["mac", c.mac],
          ["CNI_ARGS MAC", argsMac],
          ["runtimeConfig.mac", c.runtimeConfig?.mac],
          ["args.cni.mac", argsCni?.mac],
        ]);
  if (mac) link.mac = mac;
  if (link.promisc === false) delete link.promisc; // false means "leave it alone"
  if (link.mtu === 0) delete link.mtu;

  return { conf, sysctl: c.sysctl, link, dataDir: c.dataDir };
}

/** Only `dataDir` (for DEL, which must work whatever else the config says: a `dataDir` not a string reads as unset). */
export function loadTuningDataDir(stdin: Buffer): string {
  const { raw } = loadPluginConf(stdin);
  const dataDir = member(raw, "dataDir");
  return decodeGo(DATA_DIR, typeof dataDir === "string" ? dataDir : null);
}

/**
 * The /proc/sys file of a sysctl key for interface `ifName`, as the Go plugin derives it: dots become
 * slashes, then the first `IFNAME` becomes the interface name (which may itself contain dots), and the
 * cleaned path must stay under /proc/sys/net/.
 */
export function sysctlFilePath(key: string, ifName: string): string {
  const relative = key.replaceAll(".", "/").replace("IFNAME", ifName);
  const file = path.join("/proc/sys", relative);
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
    throw ioFailure(`cannot read the sysctl allowlist ${file}`, e);
  }
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
}

/** Every sysctl key must match (anywhere in the key, as Go's regexp.MatchString) one allowlist pattern. */
export function checkAllowlist(keys: Iterable<string>, allowlist: readonly string[] | undefined, file = ALLOWLIST_FILE): void {
  if (!allowlist) return;
  const patterns = allowlist.map((p) => {
    try {
      return new RegExp(p);
    } catch (e) {
      throw invalidConfig(`invalid pattern ${JSON.stringify(p)} in the sysctl allowlist ${file}`, e);
    }
  });
  for (const key of keys) {
    if (!patterns.some((re) => re.test(key))) {
      throw invalidKey("sysctl", key, `not allowed by ${file}; allowed: ${allowlist.join(" ")}`);
    }
  }
}
