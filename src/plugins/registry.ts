/**
 * The plugins the multicall executable can be and how each is loaded: the loader of each plugin's manifest
 * (plugins/manifests.ts), composed with its versions and the catalog's about text into the definition skel runs. VERSION and "about" are
 * answered from the catalog without loading any plugin code (the C launcher's table is generated from the same
 * answers by scripts/link-bins.mjs).
 * @module
 */

import type { PluginDefinition } from "#skel/skel.js";
import { VersionInfo } from "#spec/version.js";
import { aboutText } from "./catalog.js";
import { MANIFESTS } from "./manifests.js";

/** A plugin: how it is loaded, and the versions it answers VERSION with before that. */
export interface PluginEntry {
  /** Loads the plugin's module and gives its definition: the module's handlers and config reader, the catalog's versions and about text. */
  load: () => Promise<PluginDefinition>;
  versions: readonly string[];
  /**
   * Subcommands (`<program> <name> [args]`, e.g. `dhcp daemon`): loaders of their own modules, so the plugin's
   * start-up never loads them.
   */
  commands?: Record<string, () => Promise<{ main: (args: readonly string[]) => Promise<void> }>>;
}

/** Every plugin by type, with its versions and subcommands (cnitool, the one other program, is loaded by main.ts). */
export const PLUGINS: Record<string, PluginEntry> = Object.fromEntries(
  MANIFESTS.map((m) => {
    const load = async (): Promise<PluginDefinition> => ({
      ...(await m.load()).plugin,
      versionInfo: new VersionInfo(m.versions),
      about: aboutText(m.name),
    });
    return [m.name, { load, versions: m.versions, ...(m.commands ? { commands: { ...m.commands } } : {}) }];
  }),
);

/** What a plugin prints for VERSION (spec/version.ts's one answer). */
export const versionAnswer = (versions: readonly string[]): string => new VersionInfo(versions).encode();

/** What a plugin prints (on stderr) when run with no CNI_COMMAND. */
export const aboutAnswer = (name: string, versions: readonly string[]): string => new VersionInfo(versions).aboutText(aboutText(name));
