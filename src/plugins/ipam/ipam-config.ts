/**
 * What the IPAM plugins (host-local, static) read the same way: the top-level keys of their config, typed
 * access to keys with Go's case-insensitive matching and an error that names the key path and the value,
 * `ipam.routes`, CNI_ARGS, and the one-address-per-family rule of old spec versions.
 * @module
 */
import { loadCniArgs, type ArgParsers } from "../../spec/args.js";
import { CniError, ErrorCode } from "../../spec/errors.js";
import { isJsonObject, type JsonObject } from "../../spec/json.js";
import { decodeRoute, type Route } from "../../spec/result/common.js";
import { member } from "../../spec/result/decode.js";
import { versionGreaterThanOrEqualTo } from "../../spec/version.js";
import { invalidKey } from "../common/keys.js";
import { loadPluginConf } from "../../skel/conf.js";
import type { GCAttachment } from "../../spec/config.js";

/** An invalid value in the network configuration (code 7). */
export const invalidConfig = (msg: string): CniError => new CniError(ErrorCode.InvalidNetworkConfig, msg);

/** A short, quoted rendering of a JSON value for error messages. */
export function showValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A value of the wrong type, in the message format all plugins share: `invalid "<key path>": <value> (want ...)`. */
const typeError = (where: string, expected: string, value: unknown): CniError => invalidKey(where, value, `want ${expected}`);

/** Member `key` of `obj` as Go's encoding/json finds it (case-insensitive, last wins); null is absent. */
export function field(obj: JsonObject, key: string): unknown {
  const v = member(obj, key);
  return v === null ? undefined : v;
}

export function optionalString(obj: JsonObject, key: string, where: string): string | undefined {
  const v = field(obj, key);
  if (v !== undefined && typeof v !== "string") throw typeError(where, "a string", v);
  return v;
}

export function optionalObject(obj: JsonObject, key: string, where: string): JsonObject | undefined {
  const v = field(obj, key);
  if (v !== undefined && !isJsonObject(v)) throw typeError(where, "an object", v);
  return v;
}

export function optionalArray(obj: JsonObject, key: string, where: string): unknown[] | undefined {
  const v = field(obj, key);
  if (v !== undefined && !Array.isArray(v)) throw typeError(where, "an array", v);
  return v;
}

export function expectObject(value: unknown, where: string): JsonObject {
  if (!isJsonObject(value)) throw typeError(where, "an object", value);
  return value;
}

/** An array of strings (`args.cni.ips`, `runtimeConfig.ips`); each element must be a string. */
export function optionalStringList(obj: JsonObject, key: string, where: string): Array<{ value: string; where: string }> | undefined {
  return optionalArray(obj, key, where)?.map((item, i) => {
    if (typeof item !== "string") throw typeError(`${where}[${i}]`, "a string", item);
    return { value: item, where: `${where}[${i}]` };
  });
}

/** The top-level keys an IPAM plugin reads, and its `ipam` object. */
export interface IpamEnvelope {
  name: string;
  cniVersion: string;
  raw: JsonObject;
  ipam: JsonObject;
  runtimeConfig?: JsonObject;
  /** `args.cni`, the per-attachment arguments of the conventions document. */
  argsCni?: JsonObject;
  validAttachments?: GCAttachment[];
}

/** Decodes stdin (code 6 when it does not decode) and requires an `ipam` object (code 7). */
export function loadIpamEnvelope(stdin: Buffer): IpamEnvelope {
  const { conf, raw } = loadPluginConf(stdin);
  const ipam = optionalObject(raw, "ipam", "ipam");
  if (!ipam) throw invalidConfig("IPAM config missing 'ipam' key");
  const envelope: IpamEnvelope = { name: conf.name, cniVersion: conf.cniVersion, raw, ipam };
  const runtimeConfig = optionalObject(raw, "runtimeConfig", "runtimeConfig");
  if (runtimeConfig) envelope.runtimeConfig = runtimeConfig;
  const args = optionalObject(raw, "args", "args");
  const argsCni = args && optionalObject(args, "cni", "args.cni");
  if (argsCni) envelope.argsCni = argsCni;
  if (conf.validAttachments) envelope.validAttachments = conf.validAttachments;
  return envelope;
}

/** `ipam.routes`, copied to results as they are (with the 1.1.0 fields). */
export function parseRoutes(ipam: JsonObject): Route[] {
  const list = optionalArray(ipam, "routes", "ipam.routes") ?? [];
  return list.map((item, i) => {
    const where = `ipam.routes[${i}]`;
    const obj = expectObject(item, where);
    const dst = field(obj, "dst");
    if (dst === undefined || dst === "") throw invalidConfig(`invalid route: dst is missing (${where})`);
    try {
      return decodeRoute(obj);
    } catch (e) {
      throw invalidConfig(`invalid route ${showValue(obj)}: ${(e as Error).message} (${where})`);
    }
  });
}

/** Loads CNI_ARGS with the given keys (unknown keys fail unless IgnoreUnknown is true); errors are code 4. */
export function loadIpamArgs<T extends object>(cniArgs: string, parsers: ArgParsers<T>): Partial<T> {
  try {
    return loadCniArgs(cniArgs, parsers);
  } catch (e) {
    throw new CniError(ErrorCode.InvalidEnvironmentVariables, (e as Error).message);
  }
}

/** Spec 0.2.0 and older results hold one IPv4 and one IPv6 address at most. */
export function checkAddressesPerFamily(cniVersion: string, families: ReadonlyArray<4 | 6>): void {
  const v4 = families.filter((f) => f === 4).length;
  const v6 = families.length - v4;
  if (v4 <= 1 && v6 <= 1) return;
  let modern = false;
  try {
    modern = versionGreaterThanOrEqualTo(cniVersion, "0.3.0");
  } catch { /* an unparsable version is an old one, as in Go */ }
  if (!modern) throw invalidConfig(`CNI version ${cniVersion} does not support more than 1 address per family`);
}
