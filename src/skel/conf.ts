/**
 * What a plugin does first with its stdin: decode the config into the common keys, and parse the prevResult
 * a chained plugin receives.
 * @module
 */

import { isJsonObject, type JsonObject, parseJson } from "#go-json/json.js";
import { decodePluginConf, type PluginConf } from "#spec/config.js";
import { decodingFailure, ErrorCode, wrap } from "#spec/errors.js";
import { createResult, type Result } from "#spec/result/index.js";

/** A decoded plugin config: the common keys, typed, and the whole object for plugin-specific keys. */
export interface LoadedConf {
  conf: PluginConf;
  raw: JsonObject;
}

/** Decodes stdin as a plugin config (code 6 when it is not one). */
export function loadPluginConf(stdin: Uint8Array): LoadedConf {
  try {
    const raw = parseJson(stdin);
    if (!isJsonObject(raw)) throw new Error("the network configuration is not a JSON object");
    return { conf: decodePluginConf(raw), raw };
  } catch (e) {
    throw decodingFailure("failed to load netconf", e);
  }
}

/**
 * The prevResult of a chained call, decoded in the config's version family (a version-less prevResult
 * takes the config's version). Undefined when there is none.
 */
export function parsePrevResult(conf: PluginConf): Result | undefined {
  if (!conf.prevResult) return undefined;
  const declared = conf.prevResult["cniVersion"];
  const raw = { ...conf.prevResult, cniVersion: typeof declared === "string" && declared ? declared : conf.cniVersion };
  try {
    return createResult(conf.cniVersion || "0.1.0", raw);
  } catch (e) {
    throw wrap("could not parse prevResult", e, ErrorCode.DecodingFailure);
  }
}
