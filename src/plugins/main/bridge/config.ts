/**
 * The bridge plugin's configuration: every key of the Go plugin with its default, validated with errors that
 * name the key and value.
 * @module
 */

import { bool, type Decoded, int, list, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import type { PortVlans } from "#net/link/bridge-vlans.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { chooseMac, cniArgsMac, decodeSettings, IP_MASQ_BACKEND, LINK_NAME, mtuKey, type Settings } from "../../common/keys.js";

const VLAN_TRUNK = struct("VlanTrunk", { id: ptr(int), minID: ptr(int), maxID: ptr(int) });

/**
 * The VLAN IDs of `vlanTrunk`: each item may carry an `id`, a `minID`..`maxID` range, or both (as in the Go
 * plugin, an item with neither adds nothing).
 */
export function parseTrunk(list: ReadonlyArray<Decoded<typeof VLAN_TRUNK>>, at = "vlanTrunk"): number[] {
  const ids = new Set<number>();
  list.forEach((item, i) => {
    const key = `${at}[${i}]`;
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

const VLAN_ID = refine(int, (v, key) => {
  if (v < 0 || v > 4094) throw invalidKey(key, v, "want an integer from 0 to 4094");
  return v;
});

/**
 * `groupFwdMask` (containernetworking/plugins#1254): bit X lets the bridge forward the link-local group
 * 01:80:C2:00:00:0X (0x4000 LLDP, 0x8 802.1X); 0 leaves the bridge's mask as it is. Go refuses values outside 0 to
 * 65535; bits 0 to 2 (STP, pause frames, LACP) the kernel refuses, so they are refused here before anything is made.
 */
const GROUP_FWD_MASK = refine(int, (v, key) => {
  if (v < 0 || v > 0xffff) throw invalidKey(key, v, "want a mask from 0 to 65535 (0xffff)");
  if (v & 0x7) throw invalidKey(key, v, "bits 0 to 2 (STP, pause frames, LACP: 0x7) cannot be forwarded; the kernel refuses them");
  return v;
});

/** The Go plugin's NetConf: each key with its default and the values it takes. */
export const BRIDGE_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  bridge: withDefault(LINK_NAME, "cni0", { orEmpty: true }),
  isDefaultGateway: withDefault(bool, false),
  isGateway: withDefault(bool, false),
  forceAddress: withDefault(bool, false),
  ipMasq: withDefault(bool, false),
  ipMasqBackend: IP_MASQ_BACKEND,
  mtu: mtuKey(),
  hairpinMode: withDefault(bool, false),
  promiscMode: withDefault(bool, false),
  vlan: withDefault(VLAN_ID, 0),
  /** Tagged VLAN IDs, sorted and unique; a list given (even an empty one) asks for VLAN filtering. */
  vlanTrunk: refine(list(ptr(VLAN_TRUNK)), parseTrunk),
  preserveDefaultVlan: withDefault(bool, false),
  macspoofchk: withDefault(bool, false),
  enabledad: withDefault(bool, false),
  disableContainerInterface: withDefault(bool, false),
  portIsolation: withDefault(bool, false),
  groupFwdMask: withDefault(GROUP_FWD_MASK, 0),
  /** A port of the bridge that gets `vlan` and the `vlanTrunk` IDs as tagged VLANs (containernetworking/plugins#1195). */
  uplinkInterface: withDefault(LINK_NAME, "", { orEmpty: true }),
  args: struct("BridgeArgs", { cni: struct("BridgeArgsCni", { mac: string }) }),
  runtimeConfig: struct("RuntimeConfig", { mac: string }),
});

/** A bridge config: its keys as the schema declares them, and what follows from several of them. */
export type BridgeConf = Settings<typeof BRIDGE_SCHEMA> & {
  conf: PluginConf;
  /** Whether a new bridge gets VLAN filtering: `vlan` set or a `vlanTrunk` list given (even an empty one). */
  vlanFiltering: boolean;
  /** Container MAC: runtimeConfig.mac, else args.cni.mac, else CNI_ARGS MAC. */
  mac?: string;
};

/** Parses and validates the bridge config from stdin and CNI_ARGS. */
export function loadBridgeConf(stdin: Buffer, cniArgs: string): BridgeConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(BRIDGE_SCHEMA, raw);
  // A new bridge gets VLAN filtering when `vlan` is set or a `vlanTrunk` list is given (even an empty one).
  const n: BridgeConf = { ...c, conf, vlanFiltering: c.vlan !== 0 || c.vlanTrunk !== undefined };
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

/** The VLANs a bridge's `uplinkInterface` carries for this network: `vlan` and the `vlanTrunk` IDs, tagged. */
export function uplinkVlans(n: BridgeConf): number[] {
  return [...new Set([...(n.vlan ? [n.vlan] : []), ...(n.vlanTrunk ?? [])])].sort((a, b) => a - b);
}

/**
 * The VLANs of the container's bridge port, or undefined when the config asks for none: `vlan` is the untagged
 * native VLAN; a trunk without `vlan` gets native VLAN 1, as in the Go plugin.
 */
export function containerPortVlans(n: BridgeConf): PortVlans | undefined {
  const tagged = n.vlanTrunk ?? [];
  if (!n.vlan && tagged.length === 0) return undefined;
  return { pvid: n.vlan || 1, tagged, preserveExisting: n.preserveDefaultVlan };
}
