/**
 * The sbr plugin's configuration: `table` (rules only, into a table the administrator manages), `gateways`
 * (at most one IPv4 and one IPv6 gateway that override the prevResult's), `addSourceHints`, and the
 * prevResult it works from. Every error names the key and value (code 7) and comes before any change.
 * @module
 */

import { bool, int, list, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { tryParseIP } from "#ip/ip.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";
import { decodeSettings, type Settings } from "../../common/keys.js";

const MAX_TABLE = 0xffffffff;

/** Static gateways by family; they win over the prevResult's. */
type Gateways = { 4?: string; 6?: string };

/** A routing table id: an integer from 1 to 2^32-1 (0 is no table at all). */
const TABLE = refine(ptr(int), (v, key) => {
  if (v < 1 || v > MAX_TABLE) throw invalidKey(key, v, `want a routing table id from 1 to ${MAX_TABLE}`);
  return v;
});

/** `gateways`: at most one IPv4 and one IPv6 address, by family. */
const GATEWAYS = refine(list(string), (list, key): Gateways => {
  if (list.length > 2) throw invalidKey(key, list, "want at most 2 entries: one IPv4 and one IPv6 gateway");
  const gateways: Gateways = {};
  list.forEach((item, i) => {
    const ip = tryParseIP(item);
    if (!ip) throw invalidKey(`${key}[${i}]`, item, "want an IP address");
    if (gateways[ip.family]) throw invalidKey(key, list, `want at most one IPv${ip.family} gateway`);
    gateways[ip.family] = ip.text;
  });
  return gateways;
});

/**
 * The Go plugin's NetConf (with the newer `gateways` and `addSourceHints`). With a `table`, ADD only adds
 * `from <ip> lookup <table>` rules.
 */
export const SBR_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  table: TABLE,
  gateways: withDefault(GATEWAYS, {}),
  addSourceHints: withDefault(bool, false),
});

/** An sbr config: its keys as the schema declares them, and the prevResult in the current version. */
export type SbrConf = Settings<typeof SBR_SCHEMA> & { conf: PluginConf; prevResult?: Result100 };

/** Parses and validates the sbr config. */
export function loadSbrConf(stdin: Buffer): SbrConf {
  const { conf, raw } = loadPluginConf(stdin);
  const n: SbrConf = { ...decodeSettings(SBR_SCHEMA, raw), conf };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
