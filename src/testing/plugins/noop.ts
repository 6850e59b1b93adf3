/**
 * noop: a test plugin that does what its debug file says (report a result, an error, stderr, an exit code)
 * and records how it was called. The libcni and invoke tests drive it. Debug file: CNI_ARGS `DEBUG=<path>`,
 * else the config's `debugFile`; `commandLog` in the config appends every call to a JSON list.
 * @module
 */

import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { type CmdArgs, pluginMain } from "#skel/skel.js";
import { CniError, ErrorCode } from "#spec/errors.js";
import { getResultAsVersion, marshalResult, toCurrentResult } from "#spec/result/index.js";
import { ALL_VERSIONS, VersionInfo } from "#spec/version.js";
import { appendCommandLog, type NoopCmdArgs, readDebug, writeDebug } from "./noop-debug.js";

export type { NoopDebug } from "./noop-debug.js";

export const NOOP_DEFAULT_VERSIONS = ["0.-42.0", ...ALL_VERSIONS];

function isJsonObjectText(text: string): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

function debugFileFromArgs(cniArgs: string): string | undefined {
  if (!cniArgs) return undefined;
  for (const pair of cniArgs.split(";")) {
    const kv = pair.split("=");
    if (kv.length !== 2) throw new CniError(ErrorCode.InvalidEnvironmentVariables, `CNI_ARGS invalid key/value pair: ${pair}`);
    if (kv[0] === "DEBUG") return kv[1];
  }
  return undefined;
}

function handle(command: string) {
  return (args: CmdArgs): string | void | Promise<never> => {
    const { conf, raw } = loadPluginConf(args.stdinData);
    const file = debugFileFromArgs(args.args) ?? (typeof raw["debugFile"] === "string" ? raw["debugFile"] : undefined);
    if (!file) {
      process.stderr.write("CNI_ARGS or config empty, no debug behavior\n");
      return "{}";
    }
    const debug = readDebug(file);
    const cmdArgs: NoopCmdArgs = {
      ContainerID: args.containerID,
      Netns: args.netns,
      IfName: args.ifName,
      Args: args.args,
      Path: args.path,
      NetnsOverride: args.netnsOverride,
      StdinData: args.stdinData.toString("base64"),
    };
    debug.Command = command;
    debug.CmdArgs = cmdArgs;
    writeDebug(file, debug);
    if (typeof raw["commandLog"] === "string") appendCommandLog(raw["commandLog"], { Command: command, CmdArgs: cmdArgs });
    if (debug.ReportStderr) process.stderr.write(debug.ReportStderr);
    if (debug.ReportError) throw new CniError(debug.ReportErrorCode || ErrorCode.Internal, debug.ReportError);
    let output = debug.ReportResult ?? "";
    if (output === "PASSTHROUGH" || output === "INJECT-DNS") {
      const prev = parsePrevResult(conf);
      // GC and STATUS carry no prevResult and print nothing: there is nothing to pass through.
      if (!prev && (command === "GC" || command === "STATUS")) return "";
      if (!prev) throw new CniError(ErrorCode.InvalidNetworkConfig, "noop: no prevResult to pass through");
      let result = prev;
      if (output === "INJECT-DNS") {
        const current = toCurrentResult(prev);
        result = { ...current, dns: { ...current.dns, nameservers: ["1.2.3.4"] } };
      }
      output = marshalResult(getResultAsVersion(result, conf.cniVersion || "0.1.0"));
    }
    // Go's noop prints what it is told, as it is: an exit code of its own, or an ADD answer that skel would refuse
    // as no result (nothing, or text that is not JSON), is written here and the process ends, skel never seeing it.
    if (debug.ExitWithCode || (command === "ADD" && !isJsonObjectText(output))) {
      process.stdout.write(output, () => process.exit(debug.ExitWithCode ?? 0));
      return new Promise<never>(() => {});
    }
    return output;
  };
}

function versionInfo(): VersionInfo {
  try {
    const file = debugFileFromArgs(process.env["CNI_ARGS"] ?? "");
    const debug = file ? readDebug(file) : {};
    if (debug.ReportVersionSupport?.length) return new VersionInfo(debug.ReportVersionSupport);
  } catch {
    /* default list */
  }
  return new VersionInfo(NOOP_DEFAULT_VERSIONS);
}

export function main(): Promise<void> {
  return pluginMain(
    { add: handle("ADD"), check: handle("CHECK"), del: handle("DEL"), status: handle("STATUS"), gc: handle("GC") },
    versionInfo(),
    "CNI noop plugin v0.7.0",
  );
}
