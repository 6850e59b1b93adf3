/**
 * The catalog of the programs the multicall executable can be: their names, and each plugin's CNI versions (from
 * its manifest, plugins/manifests.ts) and about text. Plain data and lazy loaders, so what needs only the names
 * (install, the launcher's table) loads no plugin code.
 * @module
 */
import { MANIFESTS } from "./manifests.js";

/** Every plugin type and the versions it supports (what VERSION answers), from the plugins' manifests. */
export const PLUGIN_VERSIONS: Readonly<Record<string, readonly string[]>> = Object.fromEntries(MANIFESTS.map((m) => [m.name, m.versions]));

/** A plugin type. */
export type PluginName = string;

/** Every program: cnitool and the plugins. */
export const PROGRAM_NAMES: readonly string[] = ["cnitool", ...Object.keys(PLUGIN_VERSIONS)];

/** A plugin's about text (what it prints with no CNI_COMMAND). */
export const aboutText = (name: string): string => `CNI ${name} plugin (tscni)`;
