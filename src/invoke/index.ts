/**
 * tscni/invoke: finding and executing plugins, and delegating to them (the part of CNI both runtimes and
 * plugins use): CNI_PATH lookup, the CNI_* environment, exec with stdin and timeout, result decoding, VERSION
 * probes, and the delegate calls a main plugin makes to its IPAM plugin.
 * @module
 */
export { splitPathList, findInPath, findInPathSync } from "./find.js";
export { invokeEnv, delegateEnv, type CniCommand, type InvokeArgs, type Env } from "./args.js";
export { RawExec, pluginFailure, UnknownOutcomeError, type ExecOptions, type PluginExec, type StderrSink } from "./exec.js";
export {
  decodePluginResult,
  execPluginWithResult,
  execPluginWithoutResult,
  getVersionInfo,
  versionProbeEnv,
  delegateAdd,
  delegateCheck,
  delegateDel,
  delegateStatus,
  delegateGC,
  setDefaultExec,
  getDefaultExec,
  type DelegateOptions,
} from "./plugin.js";
export { TRACE_CONTEXT_VARIABLES, isValidTraceparent, type TraceContext } from "#spec/trace-context.js";
