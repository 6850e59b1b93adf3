/**
 * The ipvlan plugin's configuration: the Go plugin's keys (`master`, `mode`, `mtu`, `linkInContainer`),
 * validated with errors that name the key and value, and Go's chaining rules: without `master`, a prevResult
 * with exactly one named interface gives it; without `ipam`, the prevResult's addresses are used.
 * @module
 */

import { bool, struct, withDefault } from "#go-json/go-decode.js";
import type { IpvlanMode } from "#net/types.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";
import { ipamType } from "../../common/ipam.js";
import { decodeSettings, LINK_NAME, mtuKey, oneOf, type Settings } from "../../common/keys.js";

/** The Go plugin's NetConf: each key with its default and the values it takes. */
export const IPVLAN_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  /** Empty: the interface of the default route (or, chained, the prevResult's one interface: see loadIpvlanConf). */
  master: withDefault(LINK_NAME, "", { orEmpty: true }),
  mode: withDefault(oneOf<IpvlanMode>(["l2", "l3", "l3s"]), "l2", { orEmpty: true }),
  /** Unset (0): the master's MTU. */
  mtu: mtuKey("the master's MTU"),
  linkInContainer: withDefault(bool, false),
});

/** An ipvlan config: its keys as the schema declares them, and what chaining gives. */
export type IpvlanConf = Settings<typeof IPVLAN_SCHEMA> & {
  conf: PluginConf;
  /** Chained without `ipam`: the prevResult whose addresses the link gets. */
  chainedResult?: Result100;
};

/** The keys alone (what DEL and STATUS need): no chaining rules, no IPAM requirement. */
export function decodeIpvlanConf(stdin: Buffer): IpvlanConf {
  const { conf, raw } = loadPluginConf(stdin);
  return { ...decodeSettings(IPVLAN_SCHEMA, raw), conf };
}

/**
 * Parses and validates the ipvlan config as ADD uses it. Chained (with a prevResult): without `master`, the
 * prevResult must hold exactly one named interface, which is the master; without `ipam`, the prevResult's
 * addresses are the link's (no IPAM is run). Unchained, `ipam` is required.
 */
export function loadIpvlanConf(stdin: Buffer): IpvlanConf {
  const n = decodeIpvlanConf(stdin);
  const prev = parsePrevResult(n.conf);
  const result = prev ? toCurrentResult(prev) : undefined;
  if (!n.master && result) {
    const only = result.interfaces?.length === 1 ? result.interfaces[0]!.name : "";
    if (!only) {
      const names = (result.interfaces ?? []).map((i) => i.name);
      throw invalidKey(
        "master",
        "",
        `not set, and the prevResult does not hold exactly one named interface to take it from (it has ${JSON.stringify(names)})`,
      );
    }
    n.master = only;
  }
  if (!ipamType(n.conf)) {
    if (!result?.ips?.length) {
      throw invalidConfig('invalid "ipam": missing (ipvlan needs an IPAM plugin, or a prevResult with addresses when chained)');
    }
    n.chainedResult = result;
  }
  return n;
}
