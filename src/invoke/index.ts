/**
 * tscni/invoke: finding and executing plugins, and delegating to them (the part of CNI both runtimes and
 * plugins use): CNI_PATH lookup, the CNI_* environment, exec with stdin and timeout, result decoding, VERSION
 * probes, and the delegate calls a main plugin makes to its IPAM plugin.
 * @module
 */

export { isValidTraceparent, TRACE_CONTEXT_VARIABLES, type TraceContext } from "#spec/trace-context.js";
export { type CniCommand, delegateEnv, type Env, type InvokeArgs, invokeEnv } from "./args.js";
export { type ExecOptions, type PluginExec, pluginFailure, RawExec, type StderrSink, UnknownOutcomeError } from "./exec.js";
export { findInPath, findInPathSync, splitPathList } from "./find.js";
export {
  type DelegateOptions,
  decodePluginResult,
  delegateAdd,
  delegateCheck,
  delegateDel,
  delegateGC,
  delegateStatus,
  execPluginWithoutResult,
  execPluginWithResult,
  getDefaultExec,
  getVersionInfo,
  setDefaultExec,
  versionProbeEnv,
} from "./plugin.js";
