/**
 * The tap plugin's configuration: the Go plugin's keys (`multiQueue`, `mtu`, `mac`, `owner`, `group`,
 * `selinuxContext`, `bridge`, `args`, `runtimeConfig.mac`), validated with errors that name the key and value.
 * `args` is any object, as in Go; `args.cni.mac` is read like bridge's.
 * @module
 */

import { bool, ptr, refine, string, struct, uint32, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { chooseMac, cniArgsMac, decodeSettings, linkName, mtuKey, type Settings } from "../../common/keys.js";

/**
 * The Go plugin's NetConf (`args` is `*struct{}` there: any object; `args.cni.mac` is read as bridge reads it):
 * each key with its default and the values it takes.
 */
export const TAP_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  multiQueue: withDefault(bool, false),
  mtu: mtuKey(),
  mac: string,
  /** The tap's owner uid; unset: any user may open it (with the capability to). */
  owner: ptr(uint32),
  /** The tap's group gid; unset: any group may open it (with the capability to). */
  group: ptr(uint32),
  /** The SELinux label `ip tuntap` runs under (see tuntap.ts); empty reads as unset. */
  selinuxContext: refine(string, (v) => v || undefined),
  /** A bridge in the container's namespace to make the tap a port of; empty reads as unset. */
  bridge: refine(string, (v, key) => (v ? linkName(v, key) : undefined)),
  args: ptr(struct("TapArgs", { cni: struct("TapArgsCni", { mac: string }) })),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
});

/** A tap config: its keys as the schema declares them, and the MAC chosen from the places that give one. */
export type TapConf = Settings<typeof TAP_SCHEMA> & {
  conf: PluginConf;
  /** `mac`, then CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac (the last one set wins). */
  mac?: string;
};

/** Parses and validates the tap config from stdin and CNI_ARGS. */
export function loadTapConf(stdin: Buffer, cniArgs: string): TapConf {
  const { conf, raw } = loadPluginConf(stdin);
  // `mac` is the config's own choice; the tap gets the one chosen from every place that gives one.
  const { mac: macKey, ...c } = decodeSettings(TAP_SCHEMA, raw);
  const n: TapConf = { ...c, conf };
  const mac = chooseMac([
    ["mac", macKey],
    ["CNI_ARGS MAC", cniArgsMac(cniArgs)],
    ["args.cni.mac", c.args?.cni?.mac],
    ["runtimeConfig.mac", c.runtimeConfig?.mac],
  ]);
  if (mac) n.mac = mac;
  return n;
}
