/**
 * The vlan plugin's configuration: the Go plugin's keys (`master`, `vlanId`, `mtu`, `linkInContainer`)
 * validated with errors that name the key and value; `master`, `vlanId` and `ipam` are required. What needs
 * the kernel (the master existing, the MTU fitting it) is checked by ADD.
 * @module
 */

import { bool, int, member, refine, struct, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { ipamType } from "../../common/ipam.js";
import { decodeSettings, LINK_NAME, mtuKey, type Settings } from "../../common/keys.js";

/** A VLAN ID: 0 to 4094. */
const VLAN_ID = refine(int, (v, key) => {
  if (v < 0 || v > 4094) throw invalidKey(key, v, "want a VLAN ID from 0 to 4094");
  return v;
});

/** The Go plugin's NetConf: each key with its default and the values it takes. */
export const VLAN_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  /** The interface to create the VLAN on (required: empty reads as unset). */
  master: withDefault(LINK_NAME, "", { orEmpty: true }),
  /** Required. */
  vlanId: VLAN_ID,
  /** Unset (0): the master's MTU. */
  mtu: mtuKey("the master's MTU"),
  linkInContainer: withDefault(bool, false),
});

/** The schema's keys, decoded. */
type VlanSettings = Settings<typeof VLAN_SCHEMA>;

/** A vlan config: its keys as the schema declares them, `vlanId` known to be set. */
export type VlanConf = VlanSettings & Required<Pick<VlanSettings, "vlanId">> & { conf: PluginConf };

/** Parses and validates the vlan config from stdin. */
export function loadVlanConf(stdin: Buffer): VlanConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(VLAN_SCHEMA, raw);
  if (!c.master) throw invalidKey("master", member(raw, "master") ?? null, "required: the interface to create the VLAN on");
  const { vlanId } = c;
  if (vlanId === undefined) throw invalidKey("vlanId", null, "required: the VLAN ID, 0 to 4094");
  if (!ipamType(conf)) throw invalidConfig('invalid "ipam": missing (vlan needs an IPAM plugin: set ipam.type)');
  return { ...c, conf, vlanId };
}
