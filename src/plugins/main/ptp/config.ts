/**
 * The ptp plugin's configuration: the Go plugin's keys (`ipMasq`, `ipMasqBackend`, `mtu`) plus the
 * common ones, validated with errors that name the key and value. `ipam` is required: ptp has nothing to
 * configure without addresses.
 * @module
 */
import { invalidKey } from "#spec/errors.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { bool, int, member, ptr, string, struct } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { decodeConfig, interfaceMtu, ipMasqBackend } from "../../common/keys.js";
import type { IPMasqBackend } from "#net/ipmasq.js";

export interface PtpConf {
  conf: PluginConf;
  /** The IPAM plugin to delegate to (`ipam.type`, never empty). */
  ipamType: string;
  ipMasq: boolean;
  /** Undefined: iptables unless only nftables works here. */
  ipMasqBackend?: IPMasqBackend;
  /** Both veth ends; undefined leaves the kernel default. */
  mtu?: number;
}

/** The Go plugin's NetConf. */
export const PTP_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, ipMasq: bool, ipMasqBackend: ptr(string), mtu: int });

/** Parses and validates the ptp config from stdin. */
export function loadPtpConf(stdin: Buffer): PtpConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(PTP_SCHEMA, raw);

  const ipamType = typeof conf.ipam?.type === "string" ? conf.ipam.type : "";
  if (!ipamType) {
    throw invalidKey("ipam", member(raw, "ipam") ?? null, "ptp needs an IPAM plugin: set ipam.type");
  }

  return {
    conf,
    ipamType,
    ipMasq: c.ipMasq ?? false,
    ipMasqBackend: ipMasqBackend(c.ipMasqBackend),
    mtu: interfaceMtu(c.mtu, "mtu", "the kernel default"),
  };
}
