/**
 * cnitool as the multicall program runs it: the commands of src/cnitool, plus those that need the program
 * registry (`install`), which lives in this layer.
 * @module
 */
import { main as cnitoolMain } from "../cnitool/cnitool.js";
import { addInstallCommand } from "./install.js";

export const main = (): Promise<void> => cnitoolMain([addInstallCommand]);
