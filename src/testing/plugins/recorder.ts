/**
 * recorder: a test plugin that records every call (verb, CNI_* values, its config with runtimeConfig) beside
 * itself (recorder-log.ts) and, as a chained plugin does, answers ADD with its prevResult. It stands in for a
 * plugin a test names but does not run: the dnsname stand-in is a recorder linked as `dnsname`.
 * @module
 */

import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { type CmdArgs, pluginMain } from "#skel/skel.js";
import { CniError, ErrorCode } from "#spec/errors.js";
import { getResultAsVersion, marshalResult } from "#spec/result/index.js";
import { ALL_VERSIONS, VersionInfo } from "#spec/version.js";
import { appendRecordedCall } from "./recorder-log.js";

function record(command: string, args: CmdArgs): ReturnType<typeof loadPluginConf> {
  const loaded = loadPluginConf(args.stdinData);
  appendRecordedCall(process.argv[1] ?? "recorder", {
    command,
    containerID: args.containerID,
    ifName: args.ifName,
    args: args.args,
    config: loaded.raw,
  });
  return loaded;
}

export function main(): Promise<void> {
  return pluginMain(
    {
      add: (args) => {
        const { conf } = record("ADD", args);
        const prev = parsePrevResult(conf);
        if (!prev) throw new CniError(ErrorCode.InvalidNetworkConfig, "recorder: must be chained (no prevResult)");
        return marshalResult(getResultAsVersion(prev, conf.cniVersion || "0.1.0"));
      },
      check: (args) => void record("CHECK", args),
      del: (args) => void record("DEL", args),
      status: (args) => void record("STATUS", args),
      gc: (args) => void record("GC", args),
    },
    new VersionInfo(ALL_VERSIONS),
    "CNI recorder test plugin",
  );
}
