/**
 * What the vrf plugin does, as data: from the container namespace's links, addresses and routes, the `ip`
 * commands that create (or reuse) the VRF and enslave the interface, the addresses and routes to restore in
 * the VRF's table afterwards, what DEL removes and what CHECK expects. Pure, so the logic is unit-tested on
 * kernels without VRF support.
 * @module
 */

import { parseCIDR } from "#ip/ip.js";
import { type KernelRoute, kernelRouteWords, SCOPE_UNIVERSE, TABLE_MAIN } from "#net/link/policy-routing.js";
import type { Address, Link } from "#net/types.js";
import { failure } from "#spec/errors.js";

/** The routing table of a VRF link (from `ip -d link`), undefined for other links. */
export function vrfTableOf(link: Link): number | undefined {
  if (link.kind !== "vrf") return undefined;
  const table = Number(link.info?.["table"]);
  return Number.isInteger(table) ? table : undefined;
}

/** The first table id from 1 on that no VRF of the namespace uses. */
export function freeVrfTable(links: Link[]): number {
  const taken = new Set(links.map(vrfTableOf).filter((t): t is number => t !== undefined));
  let table = 1;
  while (taken.has(table)) table++;
  return table;
}

export interface VrfEnslavePlan {
  /** The `ip` commands, in order: create and bring up the VRF when it is new, then set it as master. */
  commands: string[][];
  /** The VRF's table. */
  table: number;
  /** Whether the VRF is created by this plan (and so is deleted again if the ADD fails). */
  created: boolean;
}

/**
 * ADD, first part: find the VRF (an existing one must be a VRF, with the configured table if one is set) or
 * create it, then enslave the interface, which must not have a master yet.
 */
export function planVrfEnslave(links: Link[], vrfName: string, table: number, ifName: string): VrfEnslavePlan {
  const vrf = links.find((l) => l.name === vrfName);
  const iface = links.find((l) => l.name === ifName);
  if (!iface) throw failure(`could not get link by name ${ifName}`);
  if (iface.master) throw failure(`interface ${ifName} has already a master set: ${iface.master}`);
  const commands: string[][] = [];
  let vrfTable: number;
  if (vrf) {
    const existing = vrfTableOf(vrf);
    if (existing === undefined) throw failure(`link ${vrfName} exists and is not a VRF (it is a ${vrf.kind ?? "device"})`);
    if (table !== 0 && existing !== table) throw failure(`VRF ${vrfName} already exist with different routing table ${existing}`);
    vrfTable = existing;
  } else {
    vrfTable = table || freeVrfTable(links);
    commands.push(["link", "add", "name", vrfName, "type", "vrf", "table", String(vrfTable)], ["link", "set", "dev", vrfName, "up"]);
  }
  commands.push(["link", "set", "dev", ifName, "master", vrfName]);
  return { commands, table: vrfTable, created: !vrf };
}

/** The interface's global IPv6 addresses: the kernel drops them on enslaving unless keep_addr_on_down is set. */
export const globalIPv6 = (addresses: Address[]): string[] =>
  addresses.filter((a) => a.family === 6 && a.scope === "global").map((a) => parseCIDR(a.cidr).text);

/** The interface's main-table routes of universe scope: enslaving removes them, so they are re-added in the VRF. */
export const routesToMove = (routes: KernelRoute[], ifName: string): KernelRoute[] =>
  routes.filter((r) => r.table === TABLE_MAIN && r.dev === ifName && r.scope === SCOPE_UNIVERSE);

export interface VrfRestorePlan {
  /** `ip addr add` for the IPv6 addresses enslaving dropped. */
  addresses: string[][];
  /** The `addr/128` destinations whose local route must show in the VRF table before routes are added. */
  waitFor: string[];
  /** `ip route replace` of the remembered routes, into the VRF table. */
  routes: string[][];
}

/** ADD, second part: from what the interface had before and has after enslaving, what to put back. */
export function planVrfRestore(ifName: string, ipv6Before: string[], ipv6After: string[], routes: KernelRoute[], table: number): VrfRestorePlan {
  const after = new Set(ipv6After);
  const missing = ipv6Before.filter((a) => !after.has(a));
  return {
    addresses: missing.map((a) => ["addr", "add", a, "dev", ifName]),
    waitFor: missing.map((a) => `${parseCIDR(a).ip.text}/128`),
    routes: routes.map((r) => ["route", "replace", ...kernelRouteWords(r, table)]),
  };
}

/**
 * DEL: release the interface if the VRF is its master (the Go plugin releases it from any master, and fails
 * when it is gone), then delete the VRF once no interface is left in it. Nothing when the VRF is gone.
 */
export function planVrfDel(links: Link[], vrfName: string, ifName: string): string[][] {
  const vrf = links.find((l) => l.name === vrfName);
  if (!vrf || vrfTableOf(vrf) === undefined) return [];
  const commands: string[][] = [];
  const iface = links.find((l) => l.name === ifName);
  if (iface?.master === vrfName) commands.push(["link", "set", "dev", ifName, "nomaster"]);
  const others = links.filter((l) => l.master === vrfName && l.name !== ifName);
  if (others.length === 0) commands.push(["link", "del", "dev", vrfName]);
  return commands;
}

/** CHECK: the VRF exists (with the configured table, if any) and the interface is enslaved to it. */
export function verifyVrf(links: Link[], vrfName: string, table: number, ifName: string): string[] {
  const vrf = links.find((l) => l.name === vrfName);
  if (!vrf) return [`VRF ${vrfName} does not exist`];
  const vrfTable = vrfTableOf(vrf);
  if (vrfTable === undefined) return [`link ${vrfName} is not a VRF`];
  const problems: string[] = [];
  if (table !== 0 && vrfTable !== table) problems.push(`VRF ${vrfName} uses table ${vrfTable}, not ${table}`);
  const iface = links.find((l) => l.name === ifName);
  if (!iface) problems.push(`interface ${ifName} does not exist`);
  else if (iface.master !== vrfName) problems.push(`failed to find ${ifName} associated to vrf ${vrfName}`);
  return problems;
}
