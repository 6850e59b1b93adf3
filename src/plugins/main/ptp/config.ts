/**
 * The ptp plugin's configuration: the Go plugin's keys (`ipMasq`, `ipMasqBackend`, `mtu`) plus the
 * common ones, validated with errors that name the key and value. `ipam` is required: ptp has nothing to
 * configure without addresses.
 * @module
 */

import { bool, member, struct, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { decodeSettings, IP_MASQ_BACKEND, mtuKey, type Settings } from "../../common/keys.js";

/** The Go plugin's NetConf: each key with its default and the values it takes. */
export const PTP_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  ipMasq: withDefault(bool, false),
  /** Unset: iptables unless only nftables works here. */
  ipMasqBackend: IP_MASQ_BACKEND,
  /** Both veth ends; unset (0) leaves the kernel default. */
  mtu: mtuKey("the kernel default"),
});

/** A ptp config: its keys as the schema declares them, and the IPAM plugin it delegates to. */
export type PtpConf = Settings<typeof PTP_SCHEMA> & {
  conf: PluginConf;
  /** The IPAM plugin to delegate to (`ipam.type`, never empty). */
  ipamType: string;
};

/** Parses and validates the ptp config from stdin. */
export function loadPtpConf(stdin: Buffer): PtpConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(PTP_SCHEMA, raw);

  const ipamType = typeof conf.ipam?.type === "string" ? conf.ipam.type : "";
  if (!ipamType) {
    throw invalidKey("ipam", member(raw, "ipam") ?? null, "ptp needs an IPAM plugin: set ipam.type");
  }

  return { ...c, conf, ipamType };
}
