/**
 * The bridge plugin's configuration: every key of the Go plugin with its default, validated with errors that
 * name the key and value.
 * @module
 */
import { CniError, ErrorCode } from "../../../spec/errors.js";
import { loadCniArgs } from "../../../spec/args.js";
import { isJsonObject } from "../../../spec/json.js";
import type { PluginConf } from "../../../spec/config.js";
import { loadPluginConf } from "../../../skel/conf.js";
import { invalidKey, optArray, optBool, optInt, optString, parseMac } from "../../common/keys.js";
import type { IPMasqBackend } from "../../../net/ipmasq.js";

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
  vlanTrunk: number[];
  preserveDefaultVlan: boolean;
  macspoofchk: boolean;
  enabledad: boolean;
  disableContainerInterface: boolean;
  portIsolation: boolean;
  /** Container MAC: runtimeConfig.mac, else args.cni.mac, else CNI_ARGS MAC. */
  mac?: string;
}

function parseTrunk(list: unknown[]): number[] {
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
    if (id === undefined && min === undefined) throw invalidKey(key, item, "want an id or a minID/maxID range");
  });
  return [...ids].sort((a, b) => a - b);
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
    mtu: optInt(raw, "mtu", { min: 0, max: 65535 }) || undefined,
    hairpinMode: optBool(raw, "hairpinMode") ?? false,
    promiscMode: optBool(raw, "promiscMode") ?? false,
    vlan: optInt(raw, "vlan", { min: 0, max: 4094 }) ?? 0,
    vlanTrunk: parseTrunk(optArray(raw, "vlanTrunk") ?? []),
    preserveDefaultVlan: optBool(raw, "preserveDefaultVlan") ?? false,
    macspoofchk: optBool(raw, "macspoofchk") ?? false,
    enabledad: optBool(raw, "enabledad") ?? false,
    disableContainerInterface: optBool(raw, "disableContainerInterface") ?? false,
    portIsolation: optBool(raw, "portIsolation") ?? false,
  };
  if (n.bridge.length > 15) throw invalidKey("bridge", n.bridge, "a link name has at most 15 characters");
  if (n.isDefaultGateway) n.isGateway = true;
  if (n.hairpinMode && n.promiscMode) {
    throw new CniError(ErrorCode.InvalidNetworkConfig, "cannot set hairpin mode and promiscuous mode at the same time", "hairpinMode and promiscMode are both true");
  }
  if (n.disableContainerInterface && typeof conf.ipam?.type === "string" && conf.ipam.type) {
    throw new CniError(ErrorCode.InvalidNetworkConfig, "IPAM cannot be used with disableContainerInterface", `ipam.type is "${conf.ipam.type}"`);
  }
  if (n.vlan && n.vlanTrunk.length) {
    throw new CniError(ErrorCode.InvalidNetworkConfig, "cannot set vlan and vlanTrunk at the same time", `vlan is ${n.vlan}`);
  }

  // Container MAC, lowest priority first.
  let args: { MAC?: string };
  try {
    args = loadCniArgs(cniArgs, { MAC: (v: string) => v });
  } catch (e) {
    throw new CniError(ErrorCode.InvalidEnvironmentVariables, `invalid CNI_ARGS: ${(e as Error).message}`);
  }
  if (args.MAC) n.mac = parseMac(args.MAC, "CNI_ARGS MAC");
  const cniArgsMac = isJsonObject(conf.args?.["cni"]) ? (conf.args!["cni"] as Record<string, unknown>)["mac"] : undefined;
  if (typeof cniArgsMac === "string" && cniArgsMac) n.mac = parseMac(cniArgsMac, "args.cni.mac");
  const rcMac = conf.runtimeConfig?.["mac"];
  if (typeof rcMac === "string" && rcMac) n.mac = parseMac(rcMac, "runtimeConfig.mac");
  return n;
}
