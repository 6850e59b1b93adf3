/**
 * The exec that delegation and libcni use when none is given: its own small module, so a program can set it
 * (main.ts: in-process delegation) without loading the delegation code, which a plugin that never delegates
 * does not need at start-up.
 * @module
 */
import { RawExec, type PluginExec } from "./exec.js";

let defaultExec: PluginExec | undefined;

/** The exec used when none is passed (replaceable, e.g. to run tscni's own plugins in-process). */
export function setDefaultExec(exec: PluginExec): void {
  defaultExec = exec;
}

/** The PluginExec that delegation and libcni use when none is given (RawExec unless one was set). */
export const getDefaultExec = (): PluginExec => (defaultExec ??= new RawExec());
