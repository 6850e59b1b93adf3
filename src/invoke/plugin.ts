/**
 * Running a plugin for a result (ADD), for nothing (CHECK/DEL/STATUS/GC), or for its VERSION; and
 * delegating a verb to another plugin (IPAM) with the caller's own environment and stdin.
 * @module
 */

import { isJsonObject, marshalJson, parseJson } from "#go-json/json.js";
import { messageOf } from "#spec/errors.js";
import { createResult, type Result } from "#spec/result/index.js";
import { withTraceContext } from "#spec/trace-context.js";
import { CURRENT_VERSION, decodeConfigVersion, decodeVersionInfo, VersionInfo } from "#spec/version.js";
import { phase } from "#sys/phase-trace.js";
import { delegateEnv, type Env } from "./args.js";
import { configuredDefaultExec, setDefaultExec } from "./default-exec.js";
import { type ExecOptions, type PluginExec, RawExec } from "./exec.js";
import { findInPath, splitPathList } from "./find.js";

export { setDefaultExec };

/** The PluginExec that delegation and libcni use when none is given (RawExec unless one was set). */
export function getDefaultExec(): PluginExec {
  const exec = configuredDefaultExec();
  if (exec) return exec;
  const raw = new RawExec();
  setDefaultExec(raw);
  return raw;
}

/**
 * Gives a version-less plugin output the config's version, then decodes it. Empty output is an error
 * (an ADD must print a result).
 */
export function decodePluginResult(stdin: Uint8Array, stdout: Uint8Array): Result {
  const configVersion = decodeConfigVersion(stdin);
  let raw: unknown;
  try {
    raw = parseJson(stdout);
  } catch (e) {
    throw new Error(`failed to unmarshal raw result: ${messageOf(e)}`);
  }
  if (raw === null) raw = {};
  if (!isJsonObject(raw))
    throw new Error("failed to unmarshal raw result: json: cannot unmarshal non-object into Go value of type map[string]interface {}");
  let version = raw["cniVersion"];
  if (typeof version !== "string" || version === "") {
    version = configVersion;
    raw = { ...raw, cniVersion: configVersion };
  }
  return createResult(version as string, raw);
}

/** Runs a plugin and decodes its stdout as a result in the version the config (`stdin`) asked for. */
export async function execPluginWithResult(
  pluginPath: string,
  stdin: Uint8Array,
  env: Env,
  exec: PluginExec = getDefaultExec(),
  options?: ExecOptions,
): Promise<Result> {
  const stdout = await exec.execPlugin(pluginPath, stdin, withTraceContext(env, options?.traceContext), options);
  return decodePluginResult(stdin, stdout);
}

/** Runs a plugin for a verb without a result (DEL, CHECK, STATUS, GC); rejects with the error it reported. */
export async function execPluginWithoutResult(
  pluginPath: string,
  stdin: Uint8Array,
  env: Env,
  exec: PluginExec = getDefaultExec(),
  options?: ExecOptions,
): Promise<void> {
  await exec.execPlugin(pluginPath, stdin, withTraceContext(env, options?.traceContext), options);
}

/** The environment of a VERSION probe: dummies satisfy very old plugins that demand every variable. */
export function versionProbeEnv(base: Env = process.env): Env {
  return {
    ...base,
    CNI_COMMAND: "VERSION",
    CNI_CONTAINERID: "",
    CNI_NETNS: "dummy",
    CNI_ARGS: "",
    CNI_IFNAME: "dummy",
    CNI_PATH: "dummy",
  };
}

/** Asks a plugin which versions it supports; a plugin from before VERSION existed supports 0.1.0 only. */
export async function getVersionInfo(pluginPath: string, exec: PluginExec = getDefaultExec(), options?: ExecOptions): Promise<VersionInfo> {
  const stdin = Buffer.from(marshalJson({ cniVersion: CURRENT_VERSION }));
  let stdout: Buffer;
  try {
    stdout = await exec.execPlugin(pluginPath, stdin, withTraceContext(versionProbeEnv(), options?.traceContext), options);
  } catch (e) {
    if (e instanceof Error && e.message === "unknown CNI_COMMAND: VERSION") return new VersionInfo(["0.1.0"]);
    throw e;
  }
  return decodeVersionInfo(stdout);
}

/**
 * Options of a delegated call: exec, CNI_PATH and the trace context (TRACEPARENT, TRACESTATE, BAGGAGE) default to
 * the calling plugin's own.
 */
export interface DelegateOptions extends ExecOptions {
  exec?: PluginExec;
  /** Defaults to process.env (the delegating plugin's environment). */
  env?: Env;
}

async function delegatePath(pluginType: string, env: Env): Promise<string> {
  return findInPath(pluginType, splitPathList(env["CNI_PATH"]));
}

/** Runs ADD on a delegate (IPAM) with the caller's stdin and environment; returns its result. */
export function delegateAdd(pluginType: string, netconf: Uint8Array, options: DelegateOptions = {}): Promise<Result> {
  return phase("delegate", `${pluginType} ADD`, async () => {
    const env = options.env ?? process.env;
    const pluginPath = await delegatePath(pluginType, env);
    return execPluginWithResult(pluginPath, netconf, delegateEnv("ADD", env), options.exec ?? getDefaultExec(), options);
  });
}

function delegateWithoutResult(command: string, pluginType: string, netconf: Uint8Array, options: DelegateOptions): Promise<void> {
  return phase("delegate", `${pluginType} ${command}`, async () => {
    const env = options.env ?? process.env;
    const pluginPath = await delegatePath(pluginType, env);
    await execPluginWithoutResult(pluginPath, netconf, delegateEnv(command, env), options.exec ?? getDefaultExec(), options);
  });
}

/** CHECK with the delegate plugin `t` (found in CNI_PATH), the same config `c` and environment. */
export const delegateCheck = (t: string, c: Uint8Array, o: DelegateOptions = {}) => delegateWithoutResult("CHECK", t, c, o);
/** DEL with the delegate plugin `t` (found in CNI_PATH), the same config `c` and environment. */
export const delegateDel = (t: string, c: Uint8Array, o: DelegateOptions = {}) => delegateWithoutResult("DEL", t, c, o);
/** STATUS with the delegate plugin `t` (found in CNI_PATH), the same config `c` and environment. */
export const delegateStatus = (t: string, c: Uint8Array, o: DelegateOptions = {}) => delegateWithoutResult("STATUS", t, c, o);
/** GC with the delegate plugin `t` (found in CNI_PATH), the same config `c` and environment. */
export const delegateGC = (t: string, c: Uint8Array, o: DelegateOptions = {}) => delegateWithoutResult("GC", t, c, o);
