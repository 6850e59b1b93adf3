/**
 * CNI results in every version's shape: decode from plugin output, convert between versions, print.
 * Plugins build a `Result100` at CURRENT_VERSION and let skel print it in the config's version.
 * @module
 */

import { DecodeError, getString } from "#go-json/go-decode.js";
import { goQuote, isJsonObject, type JsonObject, jsonKindName, marshalJson, parseJson } from "#go-json/json.js";
import { ALL_VERSIONS, decodeConfigVersion } from "../version.js";
import { convertResult, familyOf, type Result, type ResultFamily } from "./convert.js";
import { decode020, encode020, IMPLEMENTED_020, type Result020, VERSIONS_020 } from "./types020.js";
import { decode040, encode040, IMPLEMENTED_040, type Result040, VERSIONS_040 } from "./types040.js";
import { decode100, encode100, IMPLEMENTED_100, type Result100, VERSIONS_100 } from "./types100.js";

export { DecodeError } from "#go-json/go-decode.js";
export * from "./common.js";
export { convertResult, familyOf, type Result, type ResultFamily } from "./convert.js";
export type { IPConfig020, Result020, Version020 } from "./types020.js";
export type { Interface040, IPConfig040, Result040, Version040 } from "./types040.js";
export type { Interface, IPConfig, Result100, Version100 } from "./types100.js";

const FAMILY_LISTS = { "020": VERSIONS_020, "040": VERSIONS_040, "100": VERSIONS_100 } as const;
const IMPLEMENTED = { "020": IMPLEMENTED_020, "040": IMPLEMENTED_040, "100": IMPLEMENTED_100 } as const;

/** Go prints `%v` of a string slice as `[a b]` (the 0.x list starts with "", hence `[ 0.1.0 0.2.0]`). */
const goList = (list: readonly string[]) => `[${list.join(" ")}]`;

/**
 * Decodes a result of the given version (the version picks the family; the object's own cniVersion must be
 * one of that family's). Throws Go's messages: `unsupported CNI result version`, `result type supports ...`.
 */
export function createResult(version: string, raw: unknown): Result {
  const family = familyOf(version);
  if (!family) throw new Error(`unsupported CNI result version ${goQuote(version)}`);
  if (raw === null) raw = {}; // Go: decoding null leaves an empty result
  if (!isJsonObject(raw)) {
    throw new DecodeError(`json: cannot unmarshal ${jsonKindName(raw)} into Go value of type types${family}.Result`);
  }
  // Like Go: decode the whole object first (type errors win), then check the declared version.
  const cniVersion = getString(raw, "cniVersion", "Result") ?? "";
  const result = family === "020" ? decode020(raw, cniVersion) : family === "040" ? decode040(raw, cniVersion) : decode100(raw, cniVersion);
  if (!(FAMILY_LISTS[family] as readonly string[]).includes(cniVersion)) {
    throw new Error(`result type supports ${goList(FAMILY_LISTS[family])} but unmarshalled CNIVersion is ${goQuote(cniVersion)}`);
  }
  if (result.cniVersion === "") result.cniVersion = "0.1.0"; // only the 0.1.0/0.2.0 family accepts ""
  return result;
}

/** Decodes result bytes whose own cniVersion says which shape they have (missing means 0.1.0). */
export function createResultFromBytes(bytes: string | Uint8Array): Result {
  const version = decodeConfigVersion(bytes);
  return createResult(version, parseJson(bytes));
}

/** Converts to `version` ("" means 0.1.0); a version-less result is first given its family's own version. */
export function getResultAsVersion(result: Result, version: string): Result {
  if (result.cniVersion === "") result = { ...result, cniVersion: IMPLEMENTED[guessFamily(result)] };
  return convertResult(result, version);
}

function guessFamily(result: Result): "020" | "040" | "100" {
  if ("ip4" in result || "ip6" in result) return "020";
  if ((result as Result040).ips?.some((ip) => "version" in ip)) return "040";
  return "100";
}

/** The JSON object for a result in its own version's shape (with Go's key order). */
export function resultToJson(result: Result): JsonObject {
  switch (familyOf(result.cniVersion) ?? guessFamily(result)) {
    case "020":
      return encode020(result as Result020);
    case "040":
      return encode040(result as Result040);
    default:
      return encode100(result as Result100);
  }
}

/** Serialises a result as Go does: 4-space indent when `pretty`, 1.x keys sorted, 0.x in struct order. */
export function marshalResult(result: Result, pretty = false): string {
  const family = familyOf(result.cniVersion) ?? guessFamily(result);
  return marshalJson(resultToJson(result), { sortKeys: family === "100", indent: pretty ? "    " : "" });
}

/** The keys a result's object may have at one place, each with what its value holds (a list: its entries). */
interface Shape {
  readonly [key: string]: Shape | null;
}
const ROUTE: Shape = { dst: null, gw: null, mtu: null, advmss: null, priority: null, table: null, scope: null };
const DNS_KEYS: Shape = { nameservers: null, domain: null, search: null, options: null };
const IP_020: Shape = { ip: null, gateway: null, routes: ROUTE };
const SHAPES: Record<ResultFamily, Shape> = {
  "020": { cniVersion: null, ip4: IP_020, ip6: IP_020, dns: DNS_KEYS },
  "040": {
    cniVersion: null,
    interfaces: { name: null, mac: null, sandbox: null },
    ips: { version: null, interface: null, address: null, gateway: null },
    routes: ROUTE,
    dns: DNS_KEYS,
  },
  "100": {
    cniVersion: null,
    interfaces: { name: null, mac: null, mtu: null, sandbox: null, socketPath: null, pciID: null },
    ips: { interface: null, address: null, gateway: null },
    routes: ROUTE,
    dns: DNS_KEYS,
  },
};

/** The first key of `value`, at any depth, that `shape` does not have: where it is, the key, the keys there. */
function strayKey(value: unknown, shape: Shape, where: string): { where: string; key: string; keys: string[] } | undefined {
  if (Array.isArray(value)) {
    for (const [i, entry] of value.entries()) {
      const found = strayKey(entry, shape, `${where}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (!Object.hasOwn(shape, key)) return { where, key, keys: Object.keys(shape) };
    const innerShape = shape[key];
    if (innerShape) {
      const found = strayKey(inner, innerShape, where === "" ? key : `${where}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Why a result a plugin built does not have the shape of the version it is labelled with (a key, at any depth,
 * that results of that version do not have, such as a misspelled one or one of another version's shape; an IP
 * without or with `version` where that version wants the other), or undefined. Printing such a result would
 * silently lose data (a misspelled `gatway`, 1.x keys under 0.2.0) or be invalid (a 0.3.x IP without `version`),
 * so skel reports it as the plugin's error instead. The message names the key and the keys its place takes.
 */
export function resultShapeMismatch(result: Result): string | undefined {
  const family = familyOf(result.cniVersion);
  if (!family) {
    const want = `want one of ${ALL_VERSIONS.join(", ")}`;
    if (typeof result.cniVersion !== "string") return `the result has no cniVersion (${want})`;
    return `the result is labelled cniVersion ${goQuote(result.cniVersion)}, which is not a CNI version (${want})`;
  }
  const label = `the result is labelled cniVersion ${goQuote(result.cniVersion)}`;
  const stray = strayKey(result, SHAPES[family], "");
  if (stray) {
    const where = stray.where === "" ? "" : ` ${stray.where}`;
    return `${label} but${where} has ${goQuote(stray.key)}, which results of that version do not have (${stray.where || "a result"} takes: ${stray.keys.join(", ")})`;
  }
  if (family === "040" && (result as Result040).ips?.some((ip) => !("version" in ip))) return `${label} but has an IP without "version"`;
  if (family === "100" && (result as Result100).ips?.some((ip) => "version" in ip))
    return `${label} but has an IP with "version" (1.x results have none)`;
  return undefined;
}

/** What a plugin prints: the result converted to the config's version, pretty-printed, no trailing newline. */
export function printResult(result: Result, version: string): string {
  return marshalResult(getResultAsVersion(result, version), true);
}

/** Converts any result to the current (1.1.0) shape, the one plugins work with. */
export function toCurrentResult(result: Result): Result100 {
  return getResultAsVersion(result, IMPLEMENTED_100) as Result100;
}
