/**
 * tscni/invoke: finding and executing plugins, and delegating to them (the part of CNI both runtimes and
 * plugins use).
 * @module
 */
export * from "./find.js";
export * from "./args.js";
export * from "./exec.js";
export {
  decodePluginResult, execPluginWithResult, execPluginWithoutResult, getVersionInfo, versionProbeEnv,
  delegateAdd, delegateCheck, delegateDel, delegateStatus, delegateGC, setDefaultExec, getDefaultExec,
  type DelegateOptions,
} from "./plugin.js";
