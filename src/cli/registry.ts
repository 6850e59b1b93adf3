/**
 * The programs the multicall executable can be: every plugin type and cnitool. Only names, VERSION answers
 * and loaders live here, so a VERSION probe is answered without loading any plugin code.
 * @module
 */

export interface ProgramEntry {
  /** Loads the program's module: a plugin exports `plugin` (a PluginDefinition) or `main()`; cnitool `main()`. */
  load: () => Promise<{ main?: () => Promise<void>; plugin?: unknown }>;
  /** Versions a plugin supports, for answering VERSION before loading it; absent for non-plugins. */
  versions?: readonly string[];
  /** A test helper: linked into dist/test-bin, not into the plugin directory. */
  test?: boolean;
}

const ALL = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;

export const PROGRAMS: Record<string, ProgramEntry> = {
  cnitool: { load: () => import("../cnitool/cnitool.js") },
  "host-local": { load: () => import("../plugins/ipam/host-local/main.js"), versions: ALL },
  static: { load: () => import("../plugins/ipam/static/main.js"), versions: ALL },
  loopback: { load: () => import("../plugins/main/loopback/main.js"), versions: ALL },
  bridge: { load: () => import("../plugins/main/bridge/main.js"), versions: ALL },
  ptp: { load: () => import("../plugins/main/ptp/main.js"), versions: ALL },
  portmap: { load: () => import("../plugins/meta/portmap/main.js"), versions: ALL },
  tuning: { load: () => import("../plugins/meta/tuning/main.js"), versions: ALL },
  bandwidth: { load: () => import("../plugins/meta/bandwidth/main.js"), versions: ALL.slice(ALL.indexOf("0.3.0")) },
  firewall: { load: () => import("../plugins/meta/firewall/main.js"), versions: ALL.slice(ALL.indexOf("0.4.0")) },
  sbr: { load: () => import("../plugins/meta/sbr/main.js"), versions: ALL },
  vrf: { load: () => import("../plugins/meta/vrf/main.js"), versions: ALL.slice(ALL.indexOf("0.3.1")) },
  noop: { load: () => import("../plugins/test/noop.js"), test: true },
  sleep: { load: () => import("../plugins/test/sleep.js"), test: true },
  legacy010: { load: () => import("../plugins/test/legacy.js"), test: true },
};

export const ALL_SPEC_VERSIONS = ALL;

/** A plugin's about text (what it prints with no CNI_COMMAND), answered without loading it. */
export const aboutText = (name: string): string => `CNI ${name} plugin (tscni)`;
