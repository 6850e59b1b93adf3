/**
 * Network configuration: a single plugin object and a network configuration list (conflist). Typed views over
 * the raw JSON: the raw object and the original bytes stay the source of truth, so every key tscni does not
 * know survives a round trip.
 * @module
 */

import { any, bool, decodeGo, list, map, member, string, struct } from "#go-json/go-decode.js";
import {
  goQuote,
  goTypeName,
  isJsonObject,
  type JsonObject,
  JsonSyntaxError,
  type JsonValue,
  jsonKindName,
  marshalJson,
  parseJson,
} from "#go-json/json.js";
import { CniError, cniError, ErrorCode, messageOf } from "./errors.js";
import { compactDNS, type DNS, DNS_TYPE } from "./result/common.js";
import { CURRENT_VERSION, compareVersions, parseVersion } from "./version.js";

/** One `{"containerID", "ifname"}` entry of `cni.dev/valid-attachments` (GC). */
export interface GCAttachment {
  containerID: string;
  ifname: string;
}

/** The keys every plugin config may carry (spec §"Plugin configuration objects"). */
export interface PluginConf {
  cniVersion: string;
  name: string;
  type: string;
  capabilities?: Record<string, boolean>;
  ipam?: JsonObject & { type?: string };
  dns?: DNS;
  prevResult?: JsonObject;
  runtimeConfig?: JsonObject;
  args?: JsonObject;
  /** `cni.dev/valid-attachments`, given to GC. */
  validAttachments?: GCAttachment[];
}

/** A plugin config: its typed view, the whole JSON object, and the bytes it came from. */
export interface PluginConfig {
  network: PluginConf;
  raw: JsonObject;
  bytes: Buffer;
}

/** A network configuration list (conflist). */
export interface NetworkConfigList {
  name: string;
  /** The version to speak: cniVersion, or the highest usable entry of cniVersions. */
  cniVersion: string;
  cniVersions?: string[];
  disableCheck: boolean;
  disableGC: boolean;
  loadOnlyInlinedPlugins: boolean;
  plugins: PluginConfig[];
  raw: JsonObject;
  bytes: Buffer;
}

const toBuffer = (b: string | Uint8Array): Buffer => (typeof b === "string" ? Buffer.from(b, "utf8") : Buffer.from(b));

/** A config error: code 6 when the bytes do not decode, 7 when a value is invalid; details say where. */
export function configError(code: number, msg: string, where?: { file?: string; offset?: number }): CniError {
  const parts = [];
  if (where?.file) parts.push(`in file ${where.file}`);
  if (where?.offset !== undefined) parts.push(`at byte offset ${where.offset}`);
  return cniError(code, msg, parts.join(" "));
}

/**
 * Parses bytes that Go decodes into `goType` (a map or a struct): `null` decodes to an empty object, any other
 * non-object fails with Go's "cannot unmarshal" text.
 */
function parseObject(bytes: Buffer, prefix: string, goType: string, file?: string): JsonObject {
  let raw: JsonValue;
  try {
    raw = parseJson(bytes);
  } catch (e) {
    const offset = e instanceof JsonSyntaxError ? e.offset : undefined;
    throw configError(ErrorCode.DecodingFailure, `${prefix}: ${messageOf(e)}`, { file, offset });
  }
  if (raw === null) return {};
  if (!isJsonObject(raw)) {
    throw configError(ErrorCode.DecodingFailure, `${prefix}: json: cannot unmarshal ${jsonKindName(raw)} into Go value of type ${goType}`, { file });
  }
  return raw;
}

/** The keys every plugin's Go config embeds (types.PluginConf), for plugin schemas to spread in. */
export const NET_CONF_FIELDS = {
  cniVersion: string,
  name: string,
  type: string,
  capabilities: map(bool),
  ipam: struct("IPAM", { type: string }, "types"),
  dns: DNS_TYPE,
  prevResult: map(any),
  "cni.dev/valid-attachments": list(struct("GCAttachment", { containerID: string, ifname: string }, "types")),
};

const PLUGIN_CONF = struct("PluginConf", NET_CONF_FIELDS, "types");

/** A member that a plugin's own Go struct declares (so it is matched as Go matches fields), if it is an object. */
function objectMember(raw: JsonObject, name: string): JsonObject | undefined {
  const v = member(raw, name);
  return isJsonObject(v) ? v : undefined;
}

/**
 * Decodes the typed view of one plugin object (does not require `type`), with Go's rules (go-decode.ts).
 * `runtimeConfig` and `args` are each plugin's own, so they are picked up here only when they are objects.
 */
export function decodePluginConf(raw: JsonObject): PluginConf {
  const d = decodeGo(PLUGIN_CONF, raw);
  const conf: PluginConf = { cniVersion: d.cniVersion ?? "", name: d.name ?? "", type: d.type ?? "" };
  if (d.capabilities) conf.capabilities = Object.fromEntries(d.capabilities);
  if (d.ipam) conf.ipam = { ...objectMember(raw, "ipam"), type: d.ipam.type ?? "" };
  if (d.dns) conf.dns = compactDNS(d.dns);
  const prev = objectMember(raw, "prevResult");
  if (prev) conf.prevResult = prev;
  const runtimeConfig = objectMember(raw, "runtimeConfig");
  if (runtimeConfig) conf.runtimeConfig = runtimeConfig;
  const args = objectMember(raw, "args");
  if (args) conf.args = args;
  const valid = d["cni.dev/valid-attachments"];
  if (valid) conf.validAttachments = valid.map((a) => ({ containerID: a.containerID ?? "", ifname: a.ifname ?? "" }));
  return conf;
}

/** Parses one plugin config object (a `.conf` file, or an element of `plugins`). `type` is required. */
export function parsePluginConfig(input: string | Uint8Array, file?: string): PluginConfig {
  const bytes = toBuffer(input);
  const raw = parseObject(bytes, "error parsing configuration", "types.PluginConf", file);
  let network: PluginConf;
  try {
    network = decodePluginConf(raw);
  } catch (e) {
    throw configError(ErrorCode.DecodingFailure, `error parsing configuration: ${messageOf(e)}`, { file });
  }
  if (network.type === "") throw configError(ErrorCode.InvalidNetworkConfig, "error parsing configuration: missing 'type'", { file });
  return { network, raw, bytes };
}

/** Reads a boolean flag of a conflist: a bool, or the strings "true"/"false" in any case. */
function readBool(raw: JsonObject, key: string, file?: string): boolean {
  const v = raw[key];
  if (v === undefined) return false;
  if (typeof v === "boolean") return v;
  if (typeof v === "string") {
    const s = v.toLowerCase();
    if (s === "true") return true;
    if (s === "false") return false;
    throw configError(ErrorCode.InvalidNetworkConfig, `error parsing configuration list: invalid value ${goQuote(s)} for ${key}`, { file });
  }
  throw configError(ErrorCode.InvalidNetworkConfig, `error parsing configuration list: invalid type ${goTypeName(v)} for ${key}`, { file });
}

/** Picks the version a list speaks: the highest of cniVersion and cniVersions not newer than 1.1.0. */
function selectListVersion(raw: JsonObject, file?: string): { cniVersion: string; cniVersions?: string[] } {
  const listErr = (msg: string) => configError(ErrorCode.InvalidNetworkConfig, `error parsing configuration list: ${msg}`, { file });
  const cniVersion = raw["cniVersion"];
  if (cniVersion !== undefined && typeof cniVersion !== "string") throw listErr(`invalid cniVersion type ${goTypeName(cniVersion)}`);
  const version = (cniVersion as string | undefined) ?? "";
  const list = raw["cniVersions"];
  if (list === undefined) return { cniVersion: version };
  // Go prints the type of its failed conversion's zero value, so this always says []interface {}.
  if (!Array.isArray(list)) throw listErr("invalid type for cniVersions: []interface {}");
  const usable: string[] = [];
  const all: string[] = [];
  list.forEach((entry, i) => {
    if (typeof entry !== "string") throw listErr(`invalid type for cniVersions index ${i}: ${goTypeName(entry)}`);
    try {
      parseVersion(entry);
    } catch (e) {
      throw listErr(`invalid cniVersions entry ${entry} at index ${i}: ${messageOf(e)}`);
    }
    all.push(entry);
    if (compareVersions(entry, CURRENT_VERSION) <= 0) usable.push(entry);
  });
  if (version !== "") {
    try {
      parseVersion(version);
    } catch (e) {
      throw listErr(`invalid cniVersion ${version}: ${messageOf(e)}`);
    }
    if (compareVersions(version, CURRENT_VERSION) <= 0) usable.push(version);
  }
  if (usable.length === 0) return { cniVersion: version, cniVersions: all };
  const best = usable.reduce((a, b) => (compareVersions(b, a) > 0 ? b : a));
  return { cniVersion: best, cniVersions: all };
}

/**
 * Parses a conflist. A list without `plugins` is returned with no plugins (the loader may add plugins from
 * the network's sub-directory) unless `loadOnlyInlinedPlugins` is set.
 */
export function parseConfList(input: string | Uint8Array, file?: string): NetworkConfigList {
  const bytes = toBuffer(input);
  const raw = parseObject(bytes, "error parsing configuration list", "map[string]interface {}", file);
  const listErr = (msg: string) => configError(ErrorCode.InvalidNetworkConfig, `error parsing configuration list: ${msg}`, { file });
  const name = raw["name"];
  if (name === undefined) throw listErr("no name");
  if (typeof name !== "string") throw listErr(`invalid name type ${goTypeName(name)}`);
  const { cniVersion, cniVersions } = selectListVersion(raw, file);
  const list: NetworkConfigList = {
    name,
    cniVersion,
    disableCheck: readBool(raw, "disableCheck", file),
    disableGC: readBool(raw, "disableGC", file),
    loadOnlyInlinedPlugins: readBool(raw, "loadOnlyInlinedPlugins", file),
    plugins: [],
    raw,
    bytes,
  };
  if (cniVersions) list.cniVersions = cniVersions;
  const plugins = raw["plugins"];
  if (plugins === undefined) {
    if (list.loadOnlyInlinedPlugins) throw listErr("`loadOnlyInlinedPlugins` is true, and no 'plugins' key");
    return list;
  }
  if (!Array.isArray(plugins)) throw listErr(`invalid 'plugins' type ${goTypeName(plugins)}`);
  if (plugins.length === 0) throw listErr("no plugins in list");
  // Each element is re-marshalled (sorted keys) and parsed on its own; libcni does not prefix these errors
  // with "error parsing configuration list".
  list.plugins = plugins.map((p, i) => {
    try {
      return parsePluginConfig(marshalJson(p));
    } catch (e) {
      const [code, msg] = e instanceof CniError ? [e.code, e.msg] : [ErrorCode.InvalidNetworkConfig, messageOf(e)];
      throw configError(code, `failed to parse plugin config ${i}: ${msg}`, { file });
    }
  });
  return list;
}

/** Turns a single plugin config into a one-plugin list (how `.conf` networks are run). */
export function confListFromConf(conf: PluginConfig): NetworkConfigList {
  const listObj = { cniVersion: conf.network.cniVersion, name: conf.network.name, plugins: [conf.raw] };
  return parseConfList(marshalJson(listObj));
}

/** Sets top-level keys of a plugin config (keys sorted on output, as libcni's InjectConf). */
export function injectConf(conf: PluginConfig, values: Record<string, unknown>): PluginConfig {
  let raw: JsonValue;
  try {
    raw = parseJson(conf.bytes);
  } catch (e) {
    throw new Error(`unmarshal existing network bytes: ${messageOf(e)}`);
  }
  if (raw === null) raw = {};
  if (!isJsonObject(raw)) {
    throw new Error(`unmarshal existing network bytes: json: cannot unmarshal ${jsonKindName(raw)} into Go value of type map[string]interface {}`);
  }
  for (const [key, value] of Object.entries(values)) {
    if (key === "") throw new Error("keys cannot be empty");
    if (value === undefined || value === null) throw new Error(`key '${key}' value must not be nil`);
    raw[key] = JSON.parse(marshalJson(value)) as JsonValue;
  }
  return parsePluginConfig(marshalJson(raw));
}

/** The plugin description libcni puts in errors: `type="bridge"` plus ` name="x"` when the object has a name. */
export function describePlugin(conf: PluginConf): string {
  return conf.name ? `type="${conf.type}" name="${conf.name}"` : `type="${conf.type}"`;
}
