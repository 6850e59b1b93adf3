/**
 * The tap plugin's configuration: the Go plugin's keys (`multiQueue`, `mtu`, `mac`, `owner`, `group`,
 * `selinuxContext`, `bridge`, `args`, `runtimeConfig.mac`), validated with errors that name the key and value.
 * `args` is any object, as in Go; `args.cni.mac` is read like bridge's.
 * @module
 */
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { bool, int, ptr, string, struct, uint32 } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { chooseMac, cniArgsMac, decodeConfig, interfaceMtu, linkName } from "../../common/keys.js";

export interface TapConf {
  conf: PluginConf;
  multiQueue: boolean;
  mtu?: number;
  /** `mac`, then CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac (the last one set wins). */
  mac?: string;
  /** The tap's owner uid and group gid; unset: any user or group may open it (with the capability to). */
  owner?: number;
  group?: number;
  /** The SELinux label `ip tuntap` runs under (see tuntap.ts). */
  selinuxContext?: string;
  /** A bridge in the container's namespace to make the tap a port of. */
  bridge?: string;
}

/** The Go plugin's NetConf (`args` is `*struct{}` there: any object; `args.cni.mac` is read as bridge reads it). */
export const TAP_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  multiQueue: bool,
  mtu: int,
  mac: string,
  owner: ptr(uint32),
  group: ptr(uint32),
  selinuxContext: string,
  bridge: string,
  args: ptr(struct("TapArgs", { cni: struct("TapArgsCni", { mac: string }) })),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
});

/** Parses and validates the tap config from stdin and CNI_ARGS. */
export function loadTapConf(stdin: Buffer, cniArgs: string): TapConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(TAP_SCHEMA, raw);
  const n: TapConf = { conf, multiQueue: c.multiQueue ?? false, mtu: interfaceMtu(c.mtu) };
  const mac = chooseMac([
    ["mac", c.mac],
    ["CNI_ARGS MAC", cniArgsMac(cniArgs)],
    ["args.cni.mac", c.args?.cni?.mac],
    ["runtimeConfig.mac", c.runtimeConfig?.mac],
  ]);
  if (mac) n.mac = mac;
  if (c.owner !== undefined) n.owner = c.owner;
  if (c.group !== undefined) n.group = c.group;
  if (c.selinuxContext) n.selinuxContext = c.selinuxContext;
  if (c.bridge) n.bridge = linkName(c.bridge, "bridge");
  return n;
}
