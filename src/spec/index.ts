/**
 * tscni/spec: the CNI specification as data. Versions, results of every version and their conversions,
 * errors and codes, name validation, CNI_ARGS, network configuration parsing, and JSON read and written the way
 * the Go implementation reads and writes it. Pure: nothing here touches the file system, processes or the network.
 * @module
 */
export {
  CniError, ErrorCode, unwrapCniError, WrappedError, messageOf, cniError, failure, incompatibleVersion, unknownContainer, invalidEnv,
  invalidCniArgs, ioFailure, decodingFailure, invalidConfig, invalidKey, invalidNetNS, tryAgainLater, pluginNotAvailable, wrap,
  type Details, type ErrorCodeValue,
} from "./errors.js";
export {
  ALL_VERSIONS, CURRENT_VERSION, LEGACY_VERSIONS, versionsStartingFrom, parseVersion, compareVersions, versionGreaterThan,
  versionGreaterThanOrEqualTo, VersionInfo, pluginSupports, decodeVersionInfo, decodeConfigVersion, IncompatibleVersionError,
  reconcileVersion, negotiateVersion, type ParsedVersion,
} from "./version.js";
export { validateContainerId, validateInterfaceName, validateNetworkName, MAX_INTERFACE_NAME_LENGTH } from "./validate.js";
export { parseCniArgs, formatCniArgs, loadCniArgs, parseArgBool, type ArgParsers } from "./args.js";
export {
  parseIP, tryParseIP, parseCIDR, tryParseCIDR, canonicalIP, canonicalCIDR, ipFamily, networkOf, cidrContains, ipFromBytes,
  type IPAddress, type IPCidr, type IPFamily,
} from "./ip.js";
export {
  parsePluginConfig, parseConfList, confListFromConf, injectConf, decodePluginConf, NET_CONF_FIELDS,
  type PluginConf, type PluginConfig, type NetworkConfigList, type GCAttachment,
} from "./config.js";
export {
  createResult, createResultFromBytes, getResultAsVersion, convertResult, toCurrentResult, printResult, marshalResult, resultToJson,
  resultShapeMismatch,
  type Result, type ResultFamily, type Result100, type Result040, type Result020, type Version020, type Version040, type Version100, type Interface, type IPConfig, type Interface040,
  type IPConfig040, type IPConfig020, type Route, type DNS,
} from "./result/index.js";
export { parseJson, marshalJson, isJsonObject, JsonSyntaxError, type JsonValue, type JsonObject, type MarshalOptions } from "./json.js";
export {
  decodeGo, struct, list, map, ptr, any, string, bool, int, int32, int64, uint, uint8, uint16, uint32, uint64, float64, member,
  hasMember, DecodeError, type GoType, type Decoded, type StructOf, type Fields,
} from "./go-decode.js";
