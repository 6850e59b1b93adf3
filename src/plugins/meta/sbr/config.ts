/**
 * The sbr plugin's configuration: `table` (rules only, into a table the administrator manages), `gateways`
 * (at most one IPv4 and one IPv6 gateway that override the prevResult's), `addSourceHints`, and the
 * prevResult it works from. Every error names the key and value (code 7) and comes before any change.
 * @module
 */
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { bool, int, list, ptr, string, struct } from "#go-json/go-decode.js";
import { tryParseIP } from "#ip/ip.js";
import { toCurrentResult, type Result100 } from "#spec/result/index.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { decodeConfig } from "../../common/keys.js";
import { invalidKey } from "#spec/errors.js";

const MAX_TABLE = 0xffffffff;

export interface SbrConf {
  conf: PluginConf;
  /** With a table, ADD only adds `from <ip> lookup <table>` rules. */
  table?: number;
  /** Static gateways by family; they win over the prevResult's. */
  gateways: { 4?: string; 6?: string };
  addSourceHints: boolean;
  prevResult?: Result100;
}

/** The Go plugin's NetConf (with the newer `gateways` and `addSourceHints`). */
export const SBR_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, table: ptr(int), gateways: list(string), addSourceHints: bool });

/** A routing table id: an integer from 1 to 2^32-1 (0 is no table at all). */
function parseTable(v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (v < 1 || v > MAX_TABLE) {
    throw invalidKey("table", v, `want a routing table id from 1 to ${MAX_TABLE}`);
  }
  return v;
}

function parseGateways(list: readonly string[]): SbrConf["gateways"] {
  if (list.length > 2) throw invalidKey("gateways", list, "want at most 2 entries: one IPv4 and one IPv6 gateway");
  const gateways: SbrConf["gateways"] = {};
  list.forEach((item, i) => {
    const ip = tryParseIP(item);
    if (!ip) throw invalidKey(`gateways[${i}]`, item, "want an IP address");
    if (gateways[ip.family]) throw invalidKey("gateways", list, `want at most one IPv${ip.family} gateway`);
    gateways[ip.family] = ip.text;
  });
  return gateways;
}

export function loadSbrConf(stdin: Buffer): SbrConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(SBR_SCHEMA, raw);
  const n: SbrConf = {
    conf,
    table: parseTable(c.table),
    gateways: parseGateways(c.gateways ?? []),
    addSourceHints: c.addSourceHints ?? false,
  };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
