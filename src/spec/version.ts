/**
 * CNI versions: the list of spec versions, parsing and comparison (as the reference library does it: numeric
 * parts, not semver), the VERSION answer a plugin gives, decoding what a plugin answered, and reconciliation.
 * @module
 */
import { CniError, ErrorCode } from "./errors.js";
import { isJsonObject, jsonKindName, marshalJson, parseJson } from "./json.js";

/** Every spec version, oldest first. */
export const ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;
/** Versions before the rich (0.3.0+) result format. */
export const LEGACY_VERSIONS = ["0.1.0", "0.2.0"] as const;
/** The newest spec version this implementation speaks. */
export const CURRENT_VERSION = "1.1.0";

export interface ParsedVersion { major: number; minor: number; micro: number }

/** Go's strconv.Atoi on one version part: optional sign, decimal digits. */
function atoi(part: string, which: string): number {
  if (!/^[+-]?\d+$/.test(part)) {
    throw new Error(`failed to convert ${which} version part "${part}": strconv.Atoi: parsing "${part}": invalid syntax`);
  }
  return Number.parseInt(part, 10);
}

/** Parses `major[.minor[.micro]]`; the empty string means 0.1.0 (a config without cniVersion). */
export function parseVersion(version: string): ParsedVersion {
  if (version === "") return { major: 0, minor: 1, micro: 0 };
  const parts = version.split(".");
  if (parts.length >= 4) throw new Error(`invalid version "${version}": too many parts`);
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

export const versionGreaterThanOrEqualTo = (a: string, b: string): boolean => compareVersions(a, b) >= 0;
export const versionGreaterThan = (a: string, b: string): boolean => compareVersions(a, b) > 0;

/** The spec versions from `version` (exact match) onwards; empty when `version` is not a spec version. */
export function versionsStartingFrom(version: string): string[] {
  const i = (ALL_VERSIONS as readonly string[]).indexOf(version);
  return i < 0 ? [] : ALL_VERSIONS.slice(i);
}

/** What a plugin says in answer to VERSION. */
export class VersionInfo {
  readonly supportedVersions: readonly string[];
  constructor(supportedVersions: readonly string[]) {
    if (supportedVersions.length === 0) throw new Error("a plugin must support at least one CNI version");
    this.supportedVersions = [...supportedVersions];
  }
  supports(version: string): boolean {
    return this.supportedVersions.includes(version);
  }
  toJSON(): { cniVersion: string; supportedVersions: string[] } {
    return { cniVersion: CURRENT_VERSION, supportedVersions: [...this.supportedVersions] };
  }
  /** The exact bytes a plugin prints for VERSION: compact JSON and a newline. */
  encode(): string {
    return marshalJson(this.toJSON(), { sortKeys: false }) + "\n";
  }
}

export const pluginSupports = (...versions: string[]): VersionInfo => new VersionInfo(versions);

/** Decodes a plugin's VERSION output (runtime side). */
export function decodeVersionInfo(bytes: string | Uint8Array): VersionInfo {
  let raw: unknown;
  try {
    raw = parseJson(bytes);
  } catch (e) {
    throw new Error(`decoding version info: ${(e as Error).message}`);
  }
  if (!isJsonObject(raw)) {
    throw new Error(`decoding version info: json: cannot unmarshal ${jsonKindName(raw)} into Go value of type version.PluginInfo`);
  }
  const cniVersion = raw["cniVersion"];
  if (typeof cniVersion !== "string" || cniVersion === "") throw new Error("decoding version info: missing field cniVersion");
  const supported = raw["supportedVersions"];
  if (!Array.isArray(supported) || supported.length === 0) {
    if (cniVersion === "0.2.0") return new VersionInfo(LEGACY_VERSIONS);
    throw new Error("decoding version info: missing field supportedVersions");
  }
  return new VersionInfo(supported.map(String));
}

/** The cniVersion a config or result declares; missing or empty means 0.1.0. */
export function decodeConfigVersion(bytes: string | Uint8Array): string {
  let raw: unknown;
  try {
    raw = parseJson(bytes);
  } catch (e) {
    throw new Error(`decoding version from network config: ${(e as Error).message}`);
  }
  const v = isJsonObject(raw) ? raw["cniVersion"] : undefined;
  if (v !== undefined && v !== null && typeof v !== "string") {
    throw new Error(`decoding version from network config: json: cannot unmarshal ${jsonKindName(v)} into Go struct field .cniVersion of type string`);
  }
  return v ? v : "0.1.0";
}

/** Go-style `%q` of a string list: `["a" "b"]`. */
export function quoteList(list: readonly string[]): string {
  return "[" + list.map((s) => JSON.stringify(s)).join(" ") + "]";
}

/** A config version the plugin does not support (code 1). */
export class IncompatibleVersionError extends CniError {
  constructor(readonly configVersion: string, readonly supported: readonly string[]) {
    super(ErrorCode.IncompatibleCNIVersion, "incompatible CNI versions",
      `config is "${configVersion}", plugin supports ${quoteList(supported)}`);
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
      if (best === undefined || compareVersions(v, best) > 0) best = v;
    } catch { /* unparsable: never chosen */ }
  }
  return best;
}
