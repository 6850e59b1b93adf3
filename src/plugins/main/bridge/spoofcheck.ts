/**
 * macspoofchk: nftables bridge-family rules that let only the container's MAC leave its bridge port.
 * Table `bridge nat`, base chain PREROUTING; per attachment `cni-br-iface-<id>` and `…-mac`, every rule
 * commented `macspoofchk-<id>` (the Go plugins' names; id = `<containerID>-<ifname>`).
 * @module
 */

import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { nftListTable, nftQuote, nftRun } from "#net/firewall/nftables.js";

const TABLE = "nat";
const BASE = "PREROUTING";

const chains = (refId: string) => ({ iface: `cni-br-iface-${refId}`, mac: `cni-br-iface-${refId}-mac`, comment: `macspoofchk-${refId}` });

/** The script that installs the spoof check (the attachment's chains are emptied first). */
function setupLines(hostIface: string, mac: string, refId: string): string[] {
  const c = chains(refId);
  const comment = nftQuote(c.comment);
  return [
    `add table bridge ${TABLE}`,
    `add chain bridge ${TABLE} ${BASE} { type filter hook prerouting priority -300 ; policy accept ; }`,
    `add chain bridge ${TABLE} ${c.iface}`,
    `add chain bridge ${TABLE} ${c.mac}`,
    `flush chain bridge ${TABLE} ${c.iface}`,
    `flush chain bridge ${TABLE} ${c.mac}`,
    `add rule bridge ${TABLE} ${BASE} iifname ${nftQuote(hostIface)} jump ${c.iface} comment ${comment}`,
    `add rule bridge ${TABLE} ${c.iface} jump ${c.mac} comment ${comment}`,
    `add rule bridge ${TABLE} ${c.mac} ether saddr ${mac} return comment ${comment}`,
    `add rule bridge ${TABLE} ${c.mac} drop comment ${comment}`,
  ];
}

/** Installs the spoof check for a host-side port and the only MAC allowed through it. */
export async function setupSpoofCheck(hostIface: string, mac: string, refId: string): Promise<void> {
  await nftRun(setupLines(hostIface, mac, refId).join("\n") + "\n", `set up MAC spoof check on ${hostIface}`);
}

/**
 * Puts the spoof check back unless all of it is there (the base chain's jump, both chains and their three rules):
 * the attachment's jumps are replaced and its chains rewritten in one transaction. Resolves whether it did.
 */
export async function restoreSpoofCheck(hostIface: string, mac: string, refId: string): Promise<boolean> {
  const c = chains(refId);
  const table = await nftListTable("bridge", TABLE);
  const own = (chain: string) => table.rules.filter((r) => r.chain === chain && r.comment === c.comment);
  const jumps = own(BASE);
  if (jumps.length > 0 && own(c.iface).length === 1 && own(c.mac).length === 2) return false;
  const script = [...jumps.map((r) => `delete rule bridge ${TABLE} ${BASE} handle ${r.handle}`), ...setupLines(hostIface, mac, refId)];
  await nftRun(script.join("\n") + "\n", `restore the MAC spoof check on ${hostIface}`);
  return true;
}

/** What shows the spoof check is there: its MAC chain. */
export const spoofCheckMarks = (refId: string): FirewallMark[] => [{ kind: "nftables", family: "bridge", table: TABLE, chain: chains(refId).mac }];

/**
 * Removes the spoof check of an attachment: its jump rules in the base chain and its two chains (the shared
 * table and base chain stay). One listing of the table, then one transaction when anything is left.
 */
export async function teardownSpoofCheck(refId: string): Promise<void> {
  const c = chains(refId);
  const table = await nftListTable("bridge", TABLE);
  const lines = table.rules
    .filter((r) => r.chain === BASE && r.comment === c.comment)
    .map((r) => `delete rule bridge ${TABLE} ${BASE} handle ${r.handle}`);
  for (const chain of [c.iface, c.mac]) {
    if (table.chains.includes(chain)) lines.push(`flush chain bridge ${TABLE} ${chain}`, `delete chain bridge ${TABLE} ${chain}`);
  }
  if (lines.length === 0) return;
  await nftRun(lines.join("\n") + "\n", `remove MAC spoof check ${refId}`);
}
