/**
 * CNI versions: the list of spec versions, parsing and comparison (as the reference library does it: numeric
 * parts, not semver), the VERSION answer a plugin gives, decoding what a plugin answered, and reconciliation.
 * @module
 */

import { getString, getStringList } from "#go-json/go-decode.js";
import { goQuote, goQuoteList, isJsonObject, type JsonObject, type JsonValue, jsonKindName, marshalJson, parseJson } from "#go-json/json.js";
import { CniError, ErrorCode, messageOf } from "./errors.js";

import { CURRENT_VERSION, LEGACY_VERSIONS } from "./versions.js";

export { ALL_VERSIONS, CURRENT_VERSION, LEGACY_VERSIONS, type SpecVersion, type VersionsFrom, versionsStartingFrom } from "./versions.js";

/** A version's numeric parts. */
export interface ParsedVersion {
  major: number;
  minor: number;
  micro: number;
}

/** Go's strconv.Atoi on one version part: optional sign, decimal digits, within int64. */
function atoi(part: string, which: string): number {
  const fail = (why: string) => new Error(`failed to convert ${which} version part ${goQuote(part)}: strconv.Atoi: parsing ${goQuote(part)}: ${why}`);
  if (!/^[+-]?\d+$/.test(part)) throw fail("invalid syntax");
  const n = BigInt(part);
  if (n > 0x7fffffffffffffffn || n < -0x8000000000000000n) throw fail("value out of range");
  return Number(n);
}

/** Parses `major[.minor[.micro]]`; the empty string means 0.1.0 (a config without cniVersion). */
export function parseVersion(version: string): ParsedVersion {
  if (version === "") return { major: 0, minor: 1, micro: 0 };
  const parts = version.split(".");
  if (parts.length >= 4) throw new Error(`invalid version ${goQuote(version)}: too many parts`);
  return {
    major: atoi(parts[0]!, "major"),
    minor: parts.length > 1 ? atoi(parts[1]!, "minor") : 0,
    micro: parts.length > 2 ? atoi(parts[2]!, "micro") : 0,
  };
}

/** Compares two versions numerically; throws when either does not parse. */
export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  return x.major - y.major || x.minor - y.minor || x.micro - y.micro;
}

/** Whether version `a` is `b` or newer. */
export const versionGreaterThanOrEqualTo = (a: string, b: string): boolean => compareVersions(a, b) >= 0;
/** Whether version `a` is newer than `b`. */
export const versionGreaterThan = (a: string, b: string): boolean => compareVersions(a, b) > 0;

/**
 * What a plugin says in answer to VERSION. `V` is the versions it declares, as the compiler knows them
 * (`new VersionInfo(["1.0.0"])` is a `VersionInfo<"1.0.0">`): pluginMain requires the handlers they imply.
 */
export class VersionInfo<const V extends string = string> {
  readonly supportedVersions: readonly V[];
  constructor(supportedVersions: readonly V[]) {
    if (supportedVersions.length === 0) throw new Error("a plugin must support at least one CNI version");
    this.supportedVersions = [...supportedVersions];
  }
  /** Whether the plugin speaks `version`. */
  supports(version: string): boolean {
    return (this.supportedVersions as readonly string[]).includes(version);
  }
  /** The VERSION answer's JSON. */
  toJSON(): { cniVersion: string; supportedVersions: string[] } {
    return { cniVersion: CURRENT_VERSION, supportedVersions: [...this.supportedVersions] };
  }
  /**
   * The exact bytes a plugin prints for VERSION: compact JSON and a newline. The one VERSION answer: skel prints
   * it, the program entry prints it without loading a plugin, and the launcher's table is made of it.
   */
  encode(): string {
    return marshalJson(this.toJSON(), { sortKeys: false }) + "\n";
  }
  /** What a plugin prints on stderr when run with no CNI_COMMAND: `about`, then the versions it speaks. */
  aboutText(about: string): string {
    return `${about}\nCNI protocol versions supported: ${this.supportedVersions.join(", ")}\n`;
  }
}

/** The VersionInfo of a plugin that speaks `versions`. */
export const pluginSupports = <const V extends string>(...versions: V[]): VersionInfo<V> => new VersionInfo(versions);

/**
 * Parses JSON that Go decodes into a struct: `null` is an empty object, any other non-object is Go's
 * "cannot unmarshal" error naming `goType`. Errors get `prefix`.
 */
function decodeStruct<T>(bytes: string | Uint8Array, prefix: string, goType: string, read: (obj: JsonObject) => T): T {
  let raw: JsonValue;
  try {
    raw = parseJson(bytes);
  } catch (e) {
    throw new Error(`${prefix}: ${messageOf(e)}`);
  }
  return readStruct(raw, prefix, goType, read);
}

/** decodeStruct of a document already parsed. */
function readStruct<T>(raw: JsonValue, prefix: string, goType: string, read: (obj: JsonObject) => T): T {
  try {
    if (raw !== null && !isJsonObject(raw)) {
      throw new Error(`json: cannot unmarshal ${jsonKindName(raw)} into Go value of type ${goType}`);
    }
    return read(raw ?? {});
  } catch (e) {
    throw new Error(`${prefix}: ${messageOf(e)}`);
  }
}

/** Decodes a plugin's VERSION output (runtime side). Keys match case-insensitively, as in Go. */
export function decodeVersionInfo(bytes: string | Uint8Array): VersionInfo {
  const prefix = "decoding version info";
  const { cniVersion, supported } = decodeStruct(bytes, prefix, "version.pluginInfo", (obj) => ({
    cniVersion: getString(obj, "cniVersion", "pluginInfo") ?? "",
    supported: getStringList(obj, "supportedVersions", "pluginInfo") ?? [],
  }));
  if (cniVersion === "") throw new Error(`${prefix}: missing field cniVersion`);
  if (supported.length === 0) {
    if (cniVersion === "0.2.0") return new VersionInfo(LEGACY_VERSIONS);
    throw new Error(`${prefix}: missing field supportedVersions`);
  }
  return new VersionInfo(supported);
}

const CONFIG_VERSION_PREFIX = "decoding version from network config";
const CONFIG_VERSION_TYPE = 'struct { CNIVersion string "json:\\"cniVersion\\"" }';
const readConfigVersion = (obj: JsonObject): string => getString(obj, "cniVersion", "") || "0.1.0";

/** The cniVersion a config or result declares; missing or empty means 0.1.0. */
export const decodeConfigVersion = (bytes: string | Uint8Array): string =>
  decodeStruct(bytes, CONFIG_VERSION_PREFIX, CONFIG_VERSION_TYPE, readConfigVersion);

/** decodeConfigVersion of a document already parsed (parseJson), for a caller that has it. */
export const parsedConfigVersion = (parsed: JsonValue): string => readStruct(parsed, CONFIG_VERSION_PREFIX, CONFIG_VERSION_TYPE, readConfigVersion);

/** Go-style `%q` of a string list: `["a" "b"]`. */
export const quoteList = goQuoteList;

/** A config version the plugin does not support (code 1). */
export class IncompatibleVersionError extends CniError {
  constructor(
    readonly configVersion: string,
    readonly supported: readonly string[],
  ) {
    super(
      ErrorCode.IncompatibleCNIVersion,
      "incompatible CNI versions",
      `config is ${goQuote(configVersion)}, plugin supports ${quoteList(supported)}`,
    );
    this.message = `incompatible CNI versions: ${this.details}`;
  }
}

/** Checks that the plugin supports the config's version exactly (no negotiation happens here). */
export function reconcileVersion(configVersion: string, info: VersionInfo): void {
  if (!info.supports(configVersion)) throw new IncompatibleVersionError(configVersion, info.supportedVersions);
}

/**
 * Picks the version to speak with a plugin: the highest version that both the config offers (cniVersion plus
 * cniVersions) and the plugin supports. Returns undefined when they share none.
 */
export function negotiateVersion(offered: readonly string[], info: VersionInfo): string | undefined {
  let best: string | undefined;
  for (const v of offered) {
    if (!info.supports(v)) continue;
    try {
      parseVersion(v);
    } catch {
      continue; // unparsable: never chosen
    }
    if (best === undefined || compareVersions(v, best) > 0) best = v;
  }
  return best;
}
