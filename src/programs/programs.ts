/**
 * The catalog of the programs the multicall executable can be: their names, and each plugin's CNI versions and
 * about text, declared here only. Plain data, so what needs only the names (install, the launcher's table) does
 * not load the program loaders.
 * @module
 */
import { ALL_VERSIONS, versionsStartingFrom } from "../spec/versions.js";

/** Every plugin type and the versions it supports (what VERSION answers). */
export const PLUGIN_VERSIONS = {
  "host-local": ALL_VERSIONS,
  static: ALL_VERSIONS,
  dhcp: ALL_VERSIONS,
  loopback: ALL_VERSIONS,
  bridge: ALL_VERSIONS,
  ptp: ALL_VERSIONS,
  portmap: ALL_VERSIONS,
  tuning: ALL_VERSIONS,
  bandwidth: versionsStartingFrom("0.3.0"),
  firewall: versionsStartingFrom("0.4.0"),
  sbr: ALL_VERSIONS,
  vrf: versionsStartingFrom("0.3.1"),
  macvlan: ALL_VERSIONS,
  ipvlan: ALL_VERSIONS,
  vlan: ALL_VERSIONS,
  dummy: ALL_VERSIONS,
  tap: ALL_VERSIONS,
  "host-device": ALL_VERSIONS,
  flannel: ALL_VERSIONS,
  "cluster-ipam": ALL_VERSIONS,
  dnsname: ALL_VERSIONS,
} as const satisfies Record<string, readonly string[]>;

export type PluginName = keyof typeof PLUGIN_VERSIONS;

/** Every program: cnitool and the plugins. */
export const PROGRAM_NAMES: readonly string[] = ["cnitool", ...Object.keys(PLUGIN_VERSIONS)];

/** A plugin's about text (what it prints with no CNI_COMMAND). */
export const aboutText = (name: string): string => `CNI ${name} plugin (tscni)`;
