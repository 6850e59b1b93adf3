/**
 * The flannel plugin's configuration, as the flannel-io plugin's NetConf: the common keys, `subnetFile`
 * (default /run/flannel/subnet.env), `dataDir` (default /var/lib/cni/flannel), `delegate` and `ipam` (free-form
 * objects that seed the delegate's config) and `runtimeConfig` (passed to the delegate as it is). ADD also
 * validates what it will render: `delegate` may not set `name` or `ipam` (flannel sets them), its `type` must be
 * a non-empty string, and `ipam.routes` must be routes — each failure a code-7 error naming the key.
 * @module
 */

import { any, DecodeError, decodeGo, foldKey, type GoType, list, map, string, struct, withDefault } from "#go-json/go-decode.js";
import type { JsonObject } from "#go-json/json.js";
import { tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { ROUTE_TYPE, type Route, routeFrom } from "#spec/result/common.js";
import { decodeSettings, type Settings } from "../../common/keys.js";

/** flanneld's subnet file, where `subnetFile` is not set. */
export const DEFAULT_SUBNET_FILE = "/run/flannel/subnet.env";
/** Where delegate configs are saved for DEL and CHECK, where `dataDir` is not set. */
export const DEFAULT_DATA_DIR = "/var/lib/cni/flannel";

const ANY_MAP = map(any);

/**
 * Go's `map[string]interface{}`, read as a JSON object (keys exact). Two spellings of the key merge, as Go
 * decodes both into one map.
 */
const JSON_OBJECT: GoType<JsonObject> = {
  kind: ANY_MAP.kind,
  elem: ANY_MAP.elem,
  goType: ANY_MAP.goType,
  want: ANY_MAP.want,
  nilable: ANY_MAP.nilable,
  decode: (v, at, into) => Object.fromEntries(ANY_MAP.decode(v, at, into && new Map(Object.entries(into)))),
  zero: () => ({}),
};

/**
 * The flannel-io plugin's NetConf: its `ipam` is a free-form map that replaces the common IPAM struct. Go
 * starts from the defaults and lets the JSON overwrite them, so a `subnetFile` or `dataDir` given as "" stays ""
 * (ADD refuses it). `delegate` and `ipam` seed the delegate's config; `runtimeConfig` is passed on as it is.
 */
export const FLANNEL_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  ipam: JSON_OBJECT,
  subnetFile: withDefault(string, DEFAULT_SUBNET_FILE),
  dataDir: withDefault(string, DEFAULT_DATA_DIR),
  delegate: JSON_OBJECT,
  runtimeConfig: JSON_OBJECT,
});

/** A flannel config: its own keys (and its `ipam`) as the schema declares them. */
export type FlannelConf = Settings<typeof FLANNEL_SCHEMA> & { conf: PluginConf };

/** Decodes the config (types only: what DEL and CHECK need). */
export function decodeFlannelConf(stdin: Buffer): FlannelConf {
  const { conf, raw } = loadPluginConf(stdin);
  return { ...decodeSettings(FLANNEL_SCHEMA, raw), conf };
}

/** A key of `obj` that a Go delegate would read as `name` (exact or case-insensitive). */
const keyLike = (obj: JsonObject, name: string): string | undefined => Object.keys(obj).find((k) => k === name || foldKey(k) === foldKey(name));

/** The delegate checks of the flannel-io plugin, plus a non-empty type and case-insensitive `name`/`ipam`. */
function validateDelegate(delegate: JsonObject): void {
  const type = delegate["type"];
  if (type !== undefined && typeof type !== "string")
    throw invalidKey("delegate.type", type, "want a string: the type of the plugin flannel delegates to");
  if (type === "") throw invalidKey("delegate.type", type, "want the type of the plugin flannel delegates to, or leave it out for bridge");
  // Go's would run itself again and again.
  if (type === "flannel") throw invalidKey("delegate.type", type, "flannel cannot delegate to itself");
  const typeVariant = keyLike(delegate, "type");
  if (typeVariant !== undefined && typeVariant !== "type") {
    throw invalidKey(
      `delegate.${typeVariant}`,
      delegate[typeVariant],
      'write the delegate\'s type as "type": flannel chooses the plugin by that key',
    );
  }
  // A Go delegate reads "Name" or "IPAM" as its name or ipam, so they would fight with what flannel sets.
  for (const key of ["name", "ipam"]) {
    const found = keyLike(delegate, key);
    if (found !== undefined) throw invalidKey(`delegate.${found}`, delegate[found], `flannel sets the delegate's ${key}: remove it`);
  }
}

/** `ipam.routes` as Go's []types.Route (each dst a CIDR, gw an IP when given). */
export function ipamRoutes(ipam: JsonObject | undefined): Route[] {
  const routes = ipam?.["routes"];
  if (routes === undefined || routes === null) return [];
  let decoded;
  try {
    decoded = decodeGo(list(ROUTE_TYPE), routes, { path: "ipam.routes", struct: "", fields: [] });
  } catch (e) {
    if (e instanceof DecodeError) throw invalidKey(e.path, e.value, `want ${e.want}`);
    throw e;
  }
  return decoded.map((d, i) => {
    // Go's flannel sends a route without dst as "<nil>", which the delegate then refuses; refuse it here.
    if (!d.dst || !tryParseCIDR(d.dst)) throw invalidKey(`ipam.routes[${i}].dst`, d.dst ?? null, "want a CIDR like 10.96.0.0/12");
    if (d.gw && !tryParseIP(d.gw)) throw invalidKey(`ipam.routes[${i}].gw`, d.gw, "want an IP address");
    return routeFrom(d);
  });
}

/** Decodes and validates the config as ADD does (without reading subnet.env). */
export function loadFlannelConf(stdin: Buffer): FlannelConf {
  const n = decodeFlannelConf(stdin);
  if (!n.subnetFile)
    throw invalidKey("subnetFile", n.subnetFile, `want the path of flanneld's subnet file, or leave it out for ${DEFAULT_SUBNET_FILE}`);
  if (!n.dataDir) throw invalidKey("dataDir", n.dataDir, `want a directory, or leave it out for ${DEFAULT_DATA_DIR}`);
  if (n.delegate) validateDelegate(n.delegate);
  ipamRoutes(n.ipam);
  return n;
}
