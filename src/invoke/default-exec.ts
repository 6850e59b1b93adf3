/**
 * The exec that delegation and libcni use when none is given, as a setting with no imports: a program sets it
 * (main.ts: in-process delegation) on every call, and a module without dependencies costs that call nothing to
 * load. plugin.ts's getDefaultExec falls back to RawExec when nothing was set.
 * @module
 */
import type { PluginExec } from "./exec.js";

let defaultExec: PluginExec | undefined;

/** The exec used when none is passed (replaceable, e.g. to run tscni's own plugins in-process). */
export function setDefaultExec(exec: PluginExec): void {
  defaultExec = exec;
}

/** The exec set by setDefaultExec, if any. */
export const configuredDefaultExec = (): PluginExec | undefined => defaultExec;
