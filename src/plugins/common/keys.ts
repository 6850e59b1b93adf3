/**
 * Reading plugin-specific config keys into typed values: each plugin decodes its config into a schema that
 * mirrors the Go plugin's struct (spec/go-decode.ts). A wrong type or value is a CNI error (code 7, invalid
 * network config) whose message names the key and the value, e.g. `invalid "mtu": "abc" (want an integer)`.
 * @module
 */
import { CniError, ErrorCode } from "../../spec/errors.js";
import { DecodeError, decodeGo, type GoType } from "../../spec/go-decode.js";
import type { JsonObject } from "../../spec/json.js";

export const invalidKey = (key: string, value: unknown, want: string): CniError =>
  new CniError(ErrorCode.InvalidNetworkConfig, `invalid ${JSON.stringify(key)}: ${JSON.stringify(value)} (${want})`);

/**
 * Decodes a plugin's config object into its Go-shaped schema with Go's rules (spec/go-decode.ts): keys in
 * any case, null as absent, integers as Go reads them. A value of the wrong type is code 7 naming the key.
 */
export function decodeConfig<T>(schema: GoType<T>, raw: JsonObject): T {
  try {
    return decodeGo(schema, raw);
  } catch (e) {
    if (e instanceof DecodeError && e.path) throw invalidKey(e.path, e.value, `want ${e.want}`);
    throw e;
  }
}

const MAC_PATTERN = /^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/;

/** A MAC address in canonical lower-case colon form; throws naming `key` when it is not one. */
export function parseMac(value: string, key: string): string {
  if (!MAC_PATTERN.test(value)) throw invalidKey(key, value, "want a MAC address like 0a:58:0a:f4:00:01");
  return value.toLowerCase().replaceAll("-", ":");
}
