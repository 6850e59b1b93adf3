/**
 * The macvlan plugin's configuration: the Go plugin's keys (`master`, `mode`, `mtu`, `mac`,
 * `linkInContainer`, `bcqueuelen`, `runtimeConfig.mac`) plus `args.cni.mac`, validated with errors that name
 * the key and value. What needs the kernel (the master existing, the MTU fitting it) is checked by ADD.
 * @module
 */

import { bool, refine, string, struct, uint32, withDefault } from "#go-json/go-decode.js";
import type { MacvlanMode } from "#net/types.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { chooseMac, cniArgsMac, decodeSettings, LINK_NAME, mtuKey, oneOf, type Settings } from "../../common/keys.js";

/** The Go plugin's NetConf (with `args.cni.mac`, as bridge has it): each key with its default and the values it takes. */
export const MACVLAN_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  /** Empty: the interface of the default route. */
  master: withDefault(LINK_NAME, "", { orEmpty: true }),
  /** Every mode the kernel has, `source` included (Go knows four). */
  mode: withDefault(oneOf<MacvlanMode>(["bridge", "private", "vepa", "passthru", "source"]), "bridge", { orEmpty: true }),
  /** Unset (0): the master's MTU (the kernel's default). */
  mtu: mtuKey("the master's MTU"),
  mac: string,
  /** The master is in the container, and the link is made there. */
  linkInContainer: withDefault(bool, false),
  /** The broadcast queue length; unset (0) leaves the kernel's. */
  bcqueuelen: refine(uint32, (v) => v || undefined),
  args: struct("MacvlanArgs", { cni: struct("MacvlanArgsCni", { mac: string }) }),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
});

/** A macvlan config: its keys as the schema declares them, and the MAC chosen from the places that give one. */
export type MacvlanConf = Settings<typeof MACVLAN_SCHEMA> & {
  conf: PluginConf;
  /** `mac`, then CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac (the last one set wins). */
  mac?: string;
};

/** Parses and validates the macvlan config from stdin and CNI_ARGS. */
export function loadMacvlanConf(stdin: Buffer, cniArgs: string): MacvlanConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(MACVLAN_SCHEMA, raw);
  return {
    ...c,
    conf,
    mac: chooseMac([
      ["mac", c.mac],
      ["CNI_ARGS MAC", cniArgsMac(cniArgs)],
      ["args.cni.mac", c.args?.cni?.mac],
      ["runtimeConfig.mac", c.runtimeConfig?.mac],
    ]),
  };
}
