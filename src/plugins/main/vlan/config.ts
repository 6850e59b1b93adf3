/**
 * The vlan plugin's configuration: the Go plugin's keys (`master`, `vlanId`, `mtu`, `linkInContainer`)
 * validated with errors that name the key and value; `master`, `vlanId` and `ipam` are required. What needs
 * the kernel (the master existing, the MTU fitting it) is checked by ADD.
 * @module
 */
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { bool, int, string, struct } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { ipamType } from "../../common/ipam.js";
import { decodeConfig, interfaceMtu, linkName } from "../../common/keys.js";

export interface VlanConf {
  conf: PluginConf;
  master: string;
  vlanId: number;
  mtu?: number;
  linkInContainer: boolean;
}

/** The Go plugin's NetConf. */
export const VLAN_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, master: string, vlanId: int, mtu: int, linkInContainer: bool });

/** Parses and validates the vlan config from stdin. */
export function loadVlanConf(stdin: Buffer): VlanConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(VLAN_SCHEMA, raw);
  if (!c.master) throw invalidKey("master", c.master ?? null, "required: the interface to create the VLAN on");
  if (c.vlanId === undefined) throw invalidKey("vlanId", null, "required: the VLAN ID, 0 to 4094");
  if (c.vlanId < 0 || c.vlanId > 4094) throw invalidKey("vlanId", c.vlanId, "want a VLAN ID from 0 to 4094");
  if (!ipamType(conf)) throw invalidConfig('invalid "ipam": missing (vlan needs an IPAM plugin: set ipam.type)');
  return {
    conf,
    master: linkName(c.master, "master"),
    vlanId: c.vlanId,
    mtu: interfaceMtu(c.mtu, "mtu", "the master's MTU"),
    linkInContainer: c.linkInContainer ?? false,
  };
}
