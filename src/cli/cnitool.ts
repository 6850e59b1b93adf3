/**
 * cnitool as the multicall program runs it: the commands of src/cnitool, plus those that need the program
 * registry (`install`, `daemon`), which lives in this layer; and the pod commands' manager runs tscni's own plugins in
 * this process (other plugins found in CNI_PATH are exec'd).
 * @module
 */
import { main as cnitoolMain } from "../cnitool/cnitool.js";
import { MulticallExec } from "../programs/inprocess.js";
import { addDaemonCommand } from "./daemon.js";
import { addInstallCommand } from "./install.js";

export const main = (): Promise<void> => cnitoolMain([addInstallCommand, addDaemonCommand], { podPluginExec: new MulticallExec() });
