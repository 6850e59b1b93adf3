/**
 * The mptcp plugin's configuration, as the Go plugin of containernetworking/plugins#1239 reads it: `endpoints`, the
 * flags of the MPTCP endpoint made for each address of the prevResult, and `limits`, the path manager's limits
 * (each left as it is when unset). At least one of them is required. Errors name the key and value (code 7).
 * @module
 */
import { bool, ptr, struct, uint32, withDefault } from "#go-json/go-decode.js";
import { MPTCP_FLAGS, type MptcpFlag } from "#net/mptcp.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";
import { decodeSettings, type Settings } from "../../common/keys.js";

/** The Go plugin's EndpointConfig: the flags of every endpoint the plugin makes. */
const ENDPOINT_CONFIG = struct("EndpointConfig", {
  signal: withDefault(bool, false),
  subflow: withDefault(bool, false),
  backup: withDefault(bool, false),
  fullmesh: withDefault(bool, false),
});

/** The Go plugin's MPTCPNetConf. */
export const MPTCP_SCHEMA = struct("MPTCPNetConf", {
  ...NET_CONF_FIELDS,
  endpoints: ptr(ENDPOINT_CONFIG),
  /** Additional subflows per connection, and ADD_ADDR announcements accepted per connection. */
  limits: ptr(struct("LimitsConfig", { subflows: ptr(uint32), addAddrAccepted: ptr(uint32) })),
});

/** An mptcp config: its keys, the endpoint flags as MPTCP_PM_ADDR_FLAG_* bits, and the prevResult in the current version. */
export type MptcpConf = Settings<typeof MPTCP_SCHEMA> & { conf: PluginConf; flags: number; prevResult?: Result100 };

/** Parses and validates the mptcp config. */
export function loadMptcpConf(stdin: Buffer): MptcpConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(MPTCP_SCHEMA, raw);
  if (!c.endpoints && !c.limits) throw invalidConfig('at least one of "endpoints" or "limits" must be given');
  const flags = c.endpoints ? (Object.keys(MPTCP_FLAGS) as MptcpFlag[]).reduce((bits, f) => (c.endpoints![f] ? bits | MPTCP_FLAGS[f] : bits), 0) : 0;
  if (c.endpoints && !flags) throw invalidKey("endpoints", c.endpoints, "no flag is set: want at least one of signal, subflow, backup, fullmesh");
  if (c.endpoints?.signal && c.endpoints.fullmesh) {
    throw invalidKey("endpoints", c.endpoints, "signal and fullmesh cannot both be set (the kernel refuses such an endpoint)");
  }
  const n: MptcpConf = { ...c, conf, flags };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
