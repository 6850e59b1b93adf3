/**
 * VLANs on bridge ports (`bridge vlan`; needs CONFIG_BRIDGE_VLAN_FILTERING): what a port has, and the changes
 * that give it exactly the VLANs asked for. Through iproute2's `bridge` tool: only a bridge with `vlan`,
 * `vlanTrunk` or `preserveDefaultVlan` set asks for it, never the default chains.
 * @module
 */
import { runTool } from "../tools.js";

/** VLAN membership of a bridge port: an untagged native VLAN (PVID) and tagged ones. */
export interface PortVlans {
  /** Native VLAN: PVID and untagged; 0 for none. */
  pvid: number;
  tagged: readonly number[];
  /** Keep the VLANs the port already has (the bridge's default PVID 1) instead of removing them first. */
  preserveExisting: boolean;
}

/** A VLAN entry as `bridge -json vlan show` lists it (a single VID or a range). */
export interface VlanEntry {
  vlan: number;
  vlanEnd?: number;
}

/**
 * The `bridge vlan` commands that give `port` exactly the VLANs `v` asks for, given the entries it has now
 * (pure, so the logic is tested even on kernels without VLAN filtering).
 */
export function portVlanCommands(port: string, v: PortVlans, existing: readonly VlanEntry[]): string[][] {
  const commands: string[][] = [];
  if (!v.preserveExisting) {
    for (const e of existing) commands.push(["del", "dev", port, "vid", e.vlanEnd ? `${e.vlan}-${e.vlanEnd}` : String(e.vlan), "master"]);
  }
  if (v.pvid) commands.push(["add", "dev", port, "vid", String(v.pvid), "pvid", "untagged", "master"]);
  for (const id of v.tagged) commands.push(["add", "dev", port, "vid", String(id), "master"]);
  return commands;
}

/** Sets a port's VLANs (`bridge vlan`); fails on a kernel without bridge VLAN filtering. */
export async function setPortVlans(port: string, v: PortVlans): Promise<void> {
  const existing = v.preserveExisting ? [] : await readPortVlans(port);
  await runVlanCommands(port, portVlanCommands(port, v, existing));
}

/** The VLAN entries of a port (`bridge -json vlan show dev PORT`); none when they cannot be read. */
export async function readPortVlans(port: string): Promise<VlanEntry[]> {
  const { stdout } = await runTool("bridge", ["-json", "vlan", "show", "dev", port], `read VLANs of ${port}`).catch(() => ({ stdout: "[]" }));
  return (JSON.parse(stdout.trim() || "[]") as Array<{ vlans?: VlanEntry[] }>).flatMap((e) => e.vlans ?? []);
}

async function runVlanCommands(port: string, commands: readonly string[][]): Promise<void> {
  for (const command of commands) {
    await runTool("bridge", ["vlan", ...command], `configure VLANs of ${port} (bridge vlan ${command.join(" ")})`);
  }
}

/** The VLAN IDs `entries` cover, ranges expanded. */
export const vlanIdsOf = (entries: readonly VlanEntry[]): number[] =>
  entries.flatMap((e) => Array.from({ length: (e.vlanEnd ?? e.vlan) - e.vlan + 1 }, (_, i) => e.vlan + i));

/**
 * The `bridge vlan` commands that add `vids` to `port` as tagged VLANs, skipping those it has already (pure):
 * adding one again would clear its PVID and untagged flags, a native VLAN set up by hand.
 */
export function taggedVlanCommands(port: string, vids: readonly number[], existing: readonly VlanEntry[]): string[][] {
  const have = new Set(vlanIdsOf(existing));
  return vids.filter((id) => !have.has(id)).map((id) => ["add", "dev", port, "vid", String(id), "master"]);
}

/** Adds tagged VLANs to a bridge port (a bridge's uplink), leaving those it has as they are. */
export async function addTaggedVlans(port: string, vids: readonly number[]): Promise<void> {
  if (vids.length) await runVlanCommands(port, taggedVlanCommands(port, vids, await readPortVlans(port)));
}
