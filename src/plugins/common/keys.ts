/**
 * Reading plugin-specific config keys into typed values. A wrong type or value is a CNI error (code 7,
 * invalid network config) whose message names the key and the value, e.g. `invalid "mtu": "abc" (want an
 * integer)`.
 * @module
 */
import { CniError, ErrorCode } from "../../spec/errors.js";
import { isJsonObject, type JsonObject } from "../../spec/json.js";

export const invalidKey = (key: string, value: unknown, want: string): CniError =>
  new CniError(ErrorCode.InvalidNetworkConfig, `invalid ${JSON.stringify(key)}: ${JSON.stringify(value)} (${want})`);

const present = (v: unknown) => v !== undefined && v !== null;

export function optString(obj: JsonObject, key: string, path = key): string | undefined {
  const v = obj[key];
  if (!present(v)) return undefined;
  if (typeof v !== "string") throw invalidKey(path, v, "want a string");
  return v;
}

export function optBool(obj: JsonObject, key: string, path = key): boolean | undefined {
  const v = obj[key];
  if (!present(v)) return undefined;
  if (typeof v !== "boolean") throw invalidKey(path, v, "want true or false");
  return v;
}

export function optInt(obj: JsonObject, key: string, range: { min?: number; max?: number } = {}, path = key): number | undefined {
  const v = obj[key];
  if (!present(v)) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v)) throw invalidKey(path, v, "want an integer");
  if ((range.min !== undefined && v < range.min) || (range.max !== undefined && v > range.max)) {
    throw invalidKey(path, v, `want an integer from ${range.min ?? "-inf"} to ${range.max ?? "inf"}`);
  }
  return v;
}

export function optObject(obj: JsonObject, key: string, path = key): JsonObject | undefined {
  const v = obj[key];
  if (!present(v)) return undefined;
  if (!isJsonObject(v)) throw invalidKey(path, v, "want an object");
  return v;
}

export function optArray(obj: JsonObject, key: string, path = key): unknown[] | undefined {
  const v = obj[key];
  if (!present(v)) return undefined;
  if (!Array.isArray(v)) throw invalidKey(path, v, "want a list");
  return v;
}

const MAC_PATTERN = /^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/;

/** A MAC address in canonical lower-case colon form; throws naming `key` when it is not one. */
export function parseMac(value: string, key: string): string {
  if (!MAC_PATTERN.test(value)) throw invalidKey(key, value, "want a MAC address like 0a:58:0a:f4:00:01");
  return value.toLowerCase().replaceAll("-", ":");
}
