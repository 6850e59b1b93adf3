/**
 * The ipvlan plugin's configuration: the Go plugin's keys (`master`, `mode`, `mtu`, `linkInContainer`),
 * validated with errors that name the key and value, and Go's chaining rules: without `master`, a prevResult
 * with exactly one named interface gives it; without `ipam`, the prevResult's addresses are used.
 * @module
 */
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { bool, int, string, struct } from "#go-json/go-decode.js";
import { toCurrentResult, type Result100 } from "#spec/result/index.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import type { IpvlanMode } from "#net/types.js";
import { ipamType } from "../../common/ipam.js";
import { decodeConfig, interfaceMtu, linkName } from "../../common/keys.js";

export interface IpvlanConf {
  conf: PluginConf;
  /** Empty: the interface of the default route (or, chained, the prevResult's one interface: see loadIpvlanConf). */
  master: string;
  mode: IpvlanMode;
  mtu?: number;
  linkInContainer: boolean;
  /** Chained without `ipam`: the prevResult whose addresses the link gets. */
  chainedResult?: Result100;
}

/** The Go plugin's NetConf. */
export const IPVLAN_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, master: string, mode: string, mtu: int, linkInContainer: bool });

const MODES: readonly IpvlanMode[] = ["l2", "l3", "l3s"];

/** The keys alone (what DEL and STATUS need): no chaining rules, no IPAM requirement. */
export function decodeIpvlanConf(stdin: Buffer): IpvlanConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(IPVLAN_SCHEMA, raw);
  const mode = c.mode || "l2";
  if (!(MODES as readonly string[]).includes(mode)) throw invalidKey("mode", mode, `want one of ${MODES.map((m) => `"${m}"`).join(", ")}`);
  return {
    conf,
    master: c.master ? linkName(c.master, "master") : "",
    mode: mode as IpvlanMode,
    mtu: interfaceMtu(c.mtu, "mtu", "the master's MTU"),
    linkInContainer: c.linkInContainer ?? false,
  };
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
