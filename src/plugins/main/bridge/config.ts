/**
 * The bridge plugin's configuration: every key of the Go plugin with its default, validated with errors that
 * name the key and value.
 * @module
 */
import { CniError, ErrorCode } from "../../../spec/errors.js";
import { loadCniArgs } from "../../../spec/args.js";
import { isJsonObject, type JsonObject } from "../../../spec/json.js";
import type { PluginConf } from "../../../spec/config.js";
import { loadPluginConf } from "../../../skel/conf.js";
import { invalidKey, optArray, optBool, optInt, optObject, optString, parseMac } from "../../common/keys.js";
import type { IPMasqBackend } from "../../../net/ipmasq.js";
import type { PortVlans } from "../../../net/bridge.js";

export interface BridgeConf {
  conf: PluginConf;
  bridge: string;
  isGateway: boolean;
  isDefaultGateway: boolean;
  forceAddress: boolean;
  ipMasq: boolean;
  ipMasqBackend?: IPMasqBackend;
  mtu?: number;
  hairpinMode: boolean;
  promiscMode: boolean;
  vlan: number;
  /** Tagged VLAN IDs, sorted and unique. */
  vlanTrunk: number[];
  /** Whether a new bridge gets VLAN filtering: `vlan` set or a `vlanTrunk` list given (even an empty one). */
  vlanFiltering: boolean;
  preserveDefaultVlan: boolean;
  macspoofchk: boolean;
  enabledad: boolean;
  disableContainerInterface: boolean;
  portIsolation: boolean;
  /** Container MAC: runtimeConfig.mac, else args.cni.mac, else CNI_ARGS MAC. */
  mac?: string;
}

/**
 * The VLAN IDs of `vlanTrunk`: each item may carry an `id`, a `minID`..`maxID` range, or both (as in the Go
 * plugin, an item with neither adds nothing).
 */
export function parseTrunk(list: unknown[]): number[] {
  const ids = new Set<number>();
  list.forEach((item, i) => {
    const key = `vlanTrunk[${i}]`;
    if (!isJsonObject(item)) throw invalidKey(key, item, "want {\"id\": N} or {\"minID\": N, \"maxID\": M}");
    const id = optInt(item, "id", { min: 1, max: 4094 }, `${key}.id`);
    const min = optInt(item, "minID", { min: 1, max: 4094 }, `${key}.minID`);
    const max = optInt(item, "maxID", { min: 1, max: 4094 }, `${key}.maxID`);
    if (id !== undefined) ids.add(id);
    if (min !== undefined || max !== undefined) {
      if (min === undefined || max === undefined) throw invalidKey(key, item, "minID and maxID go together");
      if (min > max) throw invalidKey(key, item, "minID must not exceed maxID");
      for (let v = min; v <= max; v++) ids.add(v);
    }
  });
  return [...ids].sort((a, b) => a - b);
}

/** A MAC for an interface: a valid MAC (see parseMac) that is not a multicast address. */
function interfaceMac(value: string, key: string): string {
  const mac = parseMac(value, key);
  if (parseInt(mac.slice(0, 2), 16) & 1) throw invalidKey(key, value, "a multicast MAC cannot be an interface's address");
  return mac;
}

/** The MTU: 0 (the kernel's default) or 68..65535. */
function parseMtu(raw: JsonObject): number | undefined {
  const mtu = optInt(raw, "mtu", { min: 0, max: 65535 });
  if (mtu !== undefined && mtu !== 0 && mtu < 68) throw invalidKey("mtu", mtu, "want 0 for the default, or 68 to 65535");
  return mtu || undefined;
}

/** Parses and validates the bridge config from stdin and CNI_ARGS. */
export function loadBridgeConf(stdin: Buffer, cniArgs: string): BridgeConf {
  const { conf, raw } = loadPluginConf(stdin);
  const backend = optString(raw, "ipMasqBackend");
  if (backend !== undefined && backend !== "iptables" && backend !== "nftables") {
    throw invalidKey("ipMasqBackend", backend, "want \"iptables\" or \"nftables\"");
  }
  const n: BridgeConf = {
    conf,
    bridge: optString(raw, "bridge") || "cni0",
    isDefaultGateway: optBool(raw, "isDefaultGateway") ?? false,
    isGateway: optBool(raw, "isGateway") ?? false,
    forceAddress: optBool(raw, "forceAddress") ?? false,
    ipMasq: optBool(raw, "ipMasq") ?? false,
    ipMasqBackend: backend as IPMasqBackend | undefined,
    mtu: parseMtu(raw),
    hairpinMode: optBool(raw, "hairpinMode") ?? false,
    promiscMode: optBool(raw, "promiscMode") ?? false,
    vlan: optInt(raw, "vlan", { min: 0, max: 4094 }) ?? 0,
    vlanTrunk: parseTrunk(optArray(raw, "vlanTrunk") ?? []),
    vlanFiltering: false,
    preserveDefaultVlan: optBool(raw, "preserveDefaultVlan") ?? false,
    macspoofchk: optBool(raw, "macspoofchk") ?? false,
    enabledad: optBool(raw, "enabledad") ?? false,
    disableContainerInterface: optBool(raw, "disableContainerInterface") ?? false,
    portIsolation: optBool(raw, "portIsolation") ?? false,
  };
  if (n.bridge.length > 15 || n.bridge === "." || n.bridge === ".." || /[/:\s]/.test(n.bridge)) {
    throw invalidKey("bridge", n.bridge, "want a link name: at most 15 characters, no '/', ':' or whitespace");
  }
  n.vlanFiltering = n.vlan !== 0 || Array.isArray(raw["vlanTrunk"]);
  if (n.isDefaultGateway) n.isGateway = true;
  if (n.hairpinMode && n.promiscMode) {
    throw invalidKey("hairpinMode", true, "cannot set hairpin mode and promiscuous mode at the same time; \"promiscMode\" is true too");
  }
  if (n.disableContainerInterface && typeof conf.ipam?.type === "string" && conf.ipam.type) {
    throw invalidKey("disableContainerInterface", true, `cannot use IPAM when the container interface is disabled; "ipam.type" is "${conf.ipam.type}"`);
  }

  // Container MAC, lowest priority first.
  let args: { MAC?: string };
  try {
    args = loadCniArgs(cniArgs, { MAC: (v: string) => v });
  } catch (e) {
    throw new CniError(ErrorCode.InvalidEnvironmentVariables, `invalid CNI_ARGS: ${(e as Error).message}`);
  }
  if (args.MAC) n.mac = interfaceMac(args.MAC, "CNI_ARGS MAC");
  const argsCni = optObject(conf.args ?? {}, "cni", "args.cni");
  const cniArgsMac = argsCni ? optString(argsCni, "mac", "args.cni.mac") : undefined;
  if (cniArgsMac) n.mac = interfaceMac(cniArgsMac, "args.cni.mac");
  const rcMac = optString(conf.runtimeConfig ?? {}, "mac", "runtimeConfig.mac");
  if (rcMac) n.mac = interfaceMac(rcMac, "runtimeConfig.mac");
  return n;
}

/**
 * The VLANs of the container's bridge port, or undefined when the config asks for none: `vlan` is the untagged
 * native VLAN; a trunk without `vlan` gets native VLAN 1, as in the Go plugin.
 */
export function containerPortVlans(n: BridgeConf): PortVlans | undefined {
  if (!n.vlan && n.vlanTrunk.length === 0) return undefined;
  return { pvid: n.vlan || 1, tagged: n.vlanTrunk, preserveExisting: n.preserveDefaultVlan };
}
