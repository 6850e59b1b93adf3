/**
 * The environment a plugin is executed with: the caller's environment plus the six CNI variables
 * (always all six, possibly empty), or, for delegation, the caller's environment with a new CNI_COMMAND.
 * @module
 */
import { formatCniArgs } from "#spec/args.js";

/** A CNI verb, as CNI_COMMAND carries it. */
export type CniCommand = "ADD" | "DEL" | "CHECK" | "STATUS" | "GC" | "VERSION";

/** The attachment parameters of one plugin execution. */
export interface InvokeArgs {
  command: CniCommand | string;
  containerID?: string;
  netNS?: string;
  ifName?: string;
  /** CNI_ARGS as key/value pairs. */
  pluginArgs?: ReadonlyArray<readonly [string, string]>;
  /** CNI_ARGS verbatim; wins over pluginArgs when non-empty. */
  pluginArgsStr?: string;
  /** CNI_PATH directories. */
  path?: readonly string[];
}

/** An environment: variable name to value (undefined removes it). */
export type Env = Record<string, string | undefined>;

/** The full environment for executing a plugin with these arguments. */
export function invokeEnv(args: InvokeArgs, base: Env = process.env): Env {
  return {
    ...base,
    CNI_COMMAND: args.command,
    CNI_CONTAINERID: args.containerID ?? "",
    CNI_NETNS: args.netNS ?? "",
    CNI_ARGS: args.pluginArgsStr || formatCniArgs(args.pluginArgs ?? []),
    CNI_IFNAME: args.ifName ?? "",
    CNI_PATH: (args.path ?? []).join(":"),
  };
}

/** The environment for a delegated call: everything inherited, only CNI_COMMAND replaced. */
export function delegateEnv(command: string, base: Env = process.env): Env {
  return { ...base, CNI_COMMAND: command };
}
