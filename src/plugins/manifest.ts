/**
 * What the rest of the house knows of a plugin without loading it: each plugin's folder has a `manifest.ts`
 * (plain data and lazy loaders, importing nothing but types and the spec's version lists), and
 * `plugins/manifests.ts` lists them. The program catalog, the registry skel runs, the firewall reload (`cnitool
 * reload` and the server's repair), cnitool's commands for a plugin (`cnitool ipam`) and the conformance suite's
 * kernel probe all read the manifests; adding a plugin is its folder and one line in that list.
 * @module
 */
import type { Command } from "commander";
import type { PluginModule } from "#skel/skel.js";
import type { Restorer } from "./common/restore.js";

/** A subcommand of a plugin's program (`dhcp daemon`): a loader of its own module. */
export type PluginCommand = () => Promise<{ main: (args: readonly string[]) => Promise<void> }>;

/** What a plugin's cnitool command is given: the config directory its networks are read from, and its output. */
export interface ToolCommandContext {
  confDir: () => string;
  out: (s: string) => void;
}

/**
 * A command cnitool offers for a plugin (`cnitool ipam` for cluster-ipam): its one-line description, and a loader
 * of what adds its subcommands (loaded when cnitool runs, never on a plugin call).
 */
export interface ToolCommand {
  readonly description: string;
  readonly load: () => Promise<(command: Command, ctx: ToolCommandContext) => void>;
}

export interface PluginManifest {
  /** The plugin type: `type` in a network config, and the program's name. */
  readonly name: string;
  /** The CNI versions it speaks (what VERSION answers without loading it). */
  readonly versions: readonly string[];
  /** Loads the plugin's module (its `main.ts`, which exports `plugin`). */
  readonly load: () => Promise<{ plugin: PluginModule }>;
  /** Subcommands (`<program> <name> [args]`), loaded only when run, never on a plugin call's start-up. */
  readonly commands?: Readonly<Record<string, PluginCommand>>;
  /** Commands of cnitool's (`cnitool <name> ...`) for this plugin, by name. */
  readonly toolCommands?: Readonly<Record<string, ToolCommand>>;
  /** For a plugin that leaves host firewall state: loads what puts it back after a firewall reload. */
  readonly restorer?: () => Promise<{ restorer: Restorer }>;
  /**
   * For a plugin that makes a kernel link kind of its own: the `ip link add` words that make one (on the veth
   * `pv0` where it needs a parent), which tell "this kernel lacks the module" from the plugin's own failure.
   */
  readonly linkKindProbe?: readonly string[];
}
