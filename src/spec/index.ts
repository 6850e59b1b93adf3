/**
 * tscni/spec: the CNI specification as data. Versions, results of every version and their conversions,
 * errors and codes, name validation, CNI_ARGS, network configuration parsing, Go-compatible JSON.
 * Pure: nothing here touches the file system, processes or the network.
 * @module
 */
export * from "./errors.js";
export * from "./version.js";
export * from "./validate.js";
export * from "./args.js";
export * from "./ip.js";
export * from "./config.js";
export * from "./result/index.js";
export {
  JsonSyntaxError, parseJson, marshalJson, findJsonSyntaxError, isJsonObject, jsonEqual, cloneJson, compareBytes, goQuote, goQuoteList,
  type JsonValue, type JsonObject, type MarshalOptions,
} from "./json.js";
