/**
 * The bridge plugin's configuration: every key of the Go plugin with its default, validated with errors that
 * name the key and value.
 * @module
 */
import { invalidKey } from "#spec/errors.js";
import { bool, int, list, ptr, string, struct, type Decoded } from "#go-json/go-decode.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { loadPluginConf } from "#skel/conf.js";
import { chooseMac, cniArgsMac, decodeConfig, interfaceMtu, ipMasqBackend, linkName } from "../../common/keys.js";
import type { IPMasqBackend } from "#net/ipmasq.js";
import type { PortVlans } from "#net/bridge-vlans.js";

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

const VLAN_TRUNK = struct("VlanTrunk", { id: ptr(int), minID: ptr(int), maxID: ptr(int) });

/** The Go plugin's NetConf. */
export const BRIDGE_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  bridge: string,
  isDefaultGateway: bool,
  isGateway: bool,
  forceAddress: bool,
  ipMasq: bool,
  ipMasqBackend: ptr(string),
  mtu: int,
  hairpinMode: bool,
  promiscMode: bool,
  vlan: int,
  vlanTrunk: list(ptr(VLAN_TRUNK)),
  preserveDefaultVlan: bool,
  macspoofchk: bool,
  enabledad: bool,
  disableContainerInterface: bool,
  portIsolation: bool,
  args: struct("BridgeArgs", { cni: struct("BridgeArgsCni", { mac: string }) }),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
});

/**
 * The VLAN IDs of `vlanTrunk`: each item may carry an `id`, a `minID`..`maxID` range, or both (as in the Go
 * plugin, an item with neither adds nothing).
 */
export function parseTrunk(list: ReadonlyArray<Decoded<typeof VLAN_TRUNK>>): number[] {
  const ids = new Set<number>();
  list.forEach((item, i) => {
    const key = `vlanTrunk[${i}]`;
    const vid = (name: "id" | "minID" | "maxID"): number | undefined => {
      const v = item[name];
      if (v !== undefined && (v < 1 || v > 4094)) throw invalidKey(`${key}.${name}`, v, "want an integer from 1 to 4094");
      return v;
    };
    const id = vid("id");
    const min = vid("minID");
    const max = vid("maxID");
    if (id !== undefined) ids.add(id);
    if (min !== undefined || max !== undefined) {
      if (min === undefined || max === undefined) throw invalidKey(key, item, "minID and maxID go together");
      if (min > max) throw invalidKey(key, item, "minID must not exceed maxID");
      for (let v = min; v <= max; v++) ids.add(v);
    }
  });
  return [...ids].sort((a, b) => a - b);
}

/** Parses and validates the bridge config from stdin and CNI_ARGS. */
export function loadBridgeConf(stdin: Buffer, cniArgs: string): BridgeConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(BRIDGE_SCHEMA, raw);
  const vlan = c.vlan ?? 0;
  if (vlan < 0 || vlan > 4094) throw invalidKey("vlan", vlan, "want an integer from 0 to 4094");
  const n: BridgeConf = {
    conf,
    bridge: linkName(c.bridge || "cni0", "bridge"),
    isDefaultGateway: c.isDefaultGateway ?? false,
    isGateway: c.isGateway ?? false,
    forceAddress: c.forceAddress ?? false,
    ipMasq: c.ipMasq ?? false,
    ipMasqBackend: ipMasqBackend(c.ipMasqBackend),
    mtu: interfaceMtu(c.mtu),
    hairpinMode: c.hairpinMode ?? false,
    promiscMode: c.promiscMode ?? false,
    vlan,
    vlanTrunk: parseTrunk(c.vlanTrunk ?? []),
    // A new bridge gets VLAN filtering when `vlan` is set or a `vlanTrunk` list is given (even an empty one).
    vlanFiltering: vlan !== 0 || c.vlanTrunk !== undefined,
    preserveDefaultVlan: c.preserveDefaultVlan ?? false,
    macspoofchk: c.macspoofchk ?? false,
    enabledad: c.enabledad ?? false,
    disableContainerInterface: c.disableContainerInterface ?? false,
    portIsolation: c.portIsolation ?? false,
  };
  if (n.isDefaultGateway) n.isGateway = true;
  if (n.hairpinMode && n.promiscMode) {
    throw invalidKey("hairpinMode", true, 'cannot set hairpin mode and promiscuous mode at the same time; "promiscMode" is true too');
  }
  if (n.disableContainerInterface && conf.ipam?.type) {
    throw invalidKey(
      "disableContainerInterface",
      true,
      `cannot use IPAM when the container interface is disabled; "ipam.type" is "${conf.ipam.type}"`,
    );
  }
  const mac = chooseMac([
    ["CNI_ARGS MAC", cniArgsMac(cniArgs)],
    ["args.cni.mac", c.args?.cni?.mac],
    ["runtimeConfig.mac", c.runtimeConfig?.mac],
  ]);
  if (mac) n.mac = mac;
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
