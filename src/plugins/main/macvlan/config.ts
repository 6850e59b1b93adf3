/**
 * The macvlan plugin's configuration: the Go plugin's keys (`master`, `mode`, `mtu`, `mac`,
 * `linkInContainer`, `bcqueuelen`, `runtimeConfig.mac`) plus `args.cni.mac`, validated with errors that name
 * the key and value. What needs the kernel (the master existing, the MTU fitting it) is checked by ADD.
 * @module
 */
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { bool, int, string, struct, uint32 } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import type { MacvlanMode } from "#net/types.js";
import { chooseMac, cniArgsMac, decodeConfig, interfaceMtu, linkName } from "../../common/keys.js";
import { invalidKey } from "#spec/errors.js";

export interface MacvlanConf {
  conf: PluginConf;
  /** Empty: the interface of the default route. */
  master: string;
  mode: MacvlanMode;
  /** Undefined: the master's MTU (the kernel's default). */
  mtu?: number;
  /** `mac`, then CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac (the last one set wins). */
  mac?: string;
  /** The master is in the container, and the link is made there. */
  linkInContainer: boolean;
  /** The broadcast queue length; undefined leaves the kernel's. */
  bcqueuelen?: number;
}

/** The Go plugin's NetConf (with `args.cni.mac`, as bridge has it). */
export const MACVLAN_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  master: string,
  mode: string,
  mtu: int,
  mac: string,
  linkInContainer: bool,
  bcqueuelen: uint32,
  args: struct("MacvlanArgs", { cni: struct("MacvlanArgsCni", { mac: string }) }),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
});

const MODES: readonly MacvlanMode[] = ["bridge", "private", "vepa", "passthru", "source"];

/** Parses and validates the macvlan config from stdin and CNI_ARGS. */
export function loadMacvlanConf(stdin: Buffer, cniArgs: string): MacvlanConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(MACVLAN_SCHEMA, raw);
  const mode = c.mode || "bridge";
  if (!(MODES as readonly string[]).includes(mode)) throw invalidKey("mode", mode, `want one of ${MODES.map((m) => `"${m}"`).join(", ")}`);
  return {
    conf,
    master: c.master ? linkName(c.master, "master") : "",
    mode: mode as MacvlanMode,
    mtu: interfaceMtu(c.mtu, "mtu", "the master's MTU"),
    mac: chooseMac([
      ["mac", c.mac],
      ["CNI_ARGS MAC", cniArgsMac(cniArgs)],
      ["args.cni.mac", c.args?.cni?.mac],
      ["runtimeConfig.mac", c.runtimeConfig?.mac],
    ]),
    linkInContainer: c.linkInContainer ?? false,
    bcqueuelen: c.bcqueuelen || undefined,
  };
}
