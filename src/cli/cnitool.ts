/**
 * cnitool as the multicall program runs it: the commands of src/cnitool, plus those that need the program
 * registry (`install`, `daemon`), which lives in this layer; the pod commands' manager runs tscni's own plugins in
 * this process (other plugins found in CNI_PATH are exec'd); `cnitool version` says which program this is.
 * @module
 */
import { main as cnitoolMain } from "#cnitool/cnitool.js";
import { MulticallExec } from "#plugins/inprocess.js";
import { addDaemonCommand } from "./daemon.js";
import { addInstallCommand } from "./install.js";
import { describeDir, describeSelf, formatProgramInfo } from "./native.js";

/** `cnitool version` without a plugin type: this program, or the one a plugin directory holds. */
function describeProgram(opts: { binDir?: string; json?: boolean }): string {
  const info = opts.binDir === undefined ? describeSelf() : describeDir(opts.binDir);
  return opts.json ? JSON.stringify(info) + "\n" : formatProgramInfo(info);
}

export const main = (): Promise<void> => cnitoolMain([addInstallCommand, addDaemonCommand], { podPluginExec: new MulticallExec(), describeProgram });
