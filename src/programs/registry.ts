/**
 * The plugins the multicall executable can be and how each is loaded: a loader of the plugin's module, composed
 * with the catalog's versions and about text (programs.ts) into the definition skel runs. VERSION and "about" are
 * answered from the catalog without loading any plugin code (the C launcher's table is generated from the same
 * answers by scripts/link-bins.mjs).
 * @module
 */
import { CURRENT_VERSION } from "../spec/versions.js";
import { VersionInfo } from "../spec/version.js";
import type { PluginDefinition, PluginModule } from "../skel/skel.js";
import { aboutText, PLUGIN_VERSIONS, type PluginName } from "./programs.js";

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

/** Each plugin's module, which exports `plugin` (its PluginModule). */
const PLUGIN_LOADERS: Record<PluginName, () => Promise<{ plugin: PluginModule }>> = {
  "host-local": () => import("../plugins/ipam/host-local/main.js"),
  static: () => import("../plugins/ipam/static/main.js"),
  dhcp: () => import("../plugins/ipam/dhcp/main.js"),
  loopback: () => import("../plugins/main/loopback/main.js"),
  bridge: () => import("../plugins/main/bridge/main.js"),
  ptp: () => import("../plugins/main/ptp/main.js"),
  portmap: () => import("../plugins/meta/portmap/main.js"),
  tuning: () => import("../plugins/meta/tuning/main.js"),
  bandwidth: () => import("../plugins/meta/bandwidth/main.js"),
  firewall: () => import("../plugins/meta/firewall/main.js"),
  sbr: () => import("../plugins/meta/sbr/main.js"),
  vrf: () => import("../plugins/meta/vrf/main.js"),
  macvlan: () => import("../plugins/main/macvlan/main.js"),
  ipvlan: () => import("../plugins/main/ipvlan/main.js"),
  vlan: () => import("../plugins/main/vlan/main.js"),
  dummy: () => import("../plugins/main/dummy/main.js"),
  tap: () => import("../plugins/main/tap/main.js"),
  "host-device": () => import("../plugins/main/host-device/main.js"),
  flannel: () => import("../plugins/meta/flannel/main.js"),
  "cluster-ipam": () => import("../plugins/ipam/cluster-ipam/main.js"),
  dnsname: () => import("../plugins/meta/dnsname/main.js"),
};

/** Subcommands of plugins: `dhcp daemon`, upstream's way of running its daemon from the plugin binary. */
const PLUGIN_COMMANDS: Partial<Record<PluginName, PluginEntry["commands"]>> = {
  dhcp: { daemon: () => import("../plugins/ipam/dhcp/daemon.js") },
};

/** Every plugin by type, with its versions and subcommands (cnitool, the one other program, is loaded by main.ts). */
export const PLUGINS: Record<string, PluginEntry> = Object.fromEntries(Object.entries(PLUGIN_LOADERS).map(([name, loadModule]) => {
  const versions = PLUGIN_VERSIONS[name as PluginName];
  const commands = PLUGIN_COMMANDS[name as PluginName];
  const load = async (): Promise<PluginDefinition> =>
    ({ ...(await loadModule()).plugin, versionInfo: new VersionInfo(versions), about: aboutText(name) });
  return [name, { load, versions, ...(commands ? { commands } : {}) }];
}));

/** What a plugin prints for VERSION. */
export const versionAnswer = (versions: readonly string[]): string =>
  JSON.stringify({ cniVersion: CURRENT_VERSION, supportedVersions: versions }) + "\n";

/** What a plugin prints (on stderr) when run with no CNI_COMMAND. */
export const aboutAnswer = (name: string, versions: readonly string[]): string =>
  `${aboutText(name)}\nCNI protocol versions supported: ${versions.join(", ")}\n`;
