/**
 * Firewall marks: objects whose presence shows that a plugin's host firewall state is still there (an iptables
 * chain with the rule jumping to it, an exact iptables rule, an nftables chain). A firewall reload or flush takes
 * them away; looking for any number of them costs one listing per iptables table and one of nftables.
 * @module
 */

import { runTool } from "../tools.js";
import { type IPFamilyNum, iptablesFor } from "./iptables.js";
import { jumpsTo } from "./iptables-rules.js";

export type FirewallMark =
  /** A chain of `table`, and when `from` is given a rule of chain `from` jumping to it. */
  | { kind: "iptables"; family: IPFamilyNum; table: string; chain: string; from?: string }
  /** A rule exactly as `iptables -S` prints it (`-A CHAIN ...`). */
  | { kind: "iptables-rule"; family: IPFamilyNum; table: string; rule: string }
  /** A chain of an nftables table. */
  | { kind: "nftables"; family: string; table: string; chain: string };

/** A mark in words, for logs: `iptables nat CNI-HOSTPORT-DNAT (from PREROUTING)`. */
export function describeMark(m: FirewallMark): string {
  const ipt = (family: IPFamilyNum) => (family === 4 ? "iptables" : "ip6tables");
  switch (m.kind) {
    case "iptables":
      return `${ipt(m.family)} ${m.table} chain ${m.chain}${m.from ? ` (jumped to from ${m.from})` : ""}`;
    case "iptables-rule":
      return `${ipt(m.family)} ${m.table} rule ${m.rule}`;
    case "nftables":
      return `nftables chain ${m.family} ${m.table} ${m.chain}`;
  }
}

/** What the listings showed: per `<family>/<table>` the `iptables -S` lines, and the nftables chains as `family table chain`. */
export interface FirewallListings {
  /** Undefined for a table that could not be listed (every mark in it counts as missing). */
  iptables: ReadonlyMap<string, readonly string[] | undefined>;
  /** Undefined when nftables could not be listed. */
  nftChains: ReadonlySet<string> | undefined;
}

const tableKey = (family: IPFamilyNum, table: string) => `${family}/${table}`;
const BUILTIN = /^-P (\S+)/;

/** The marks that the listings do not show. */
export function marksMissingFrom(marks: readonly FirewallMark[], listings: FirewallListings): FirewallMark[] {
  return marks.filter((m) => {
    if (m.kind === "nftables") return !listings.nftChains?.has(`${m.family} ${m.table} ${m.chain}`);
    const lines = listings.iptables.get(tableKey(m.family, m.table));
    if (!lines) return true;
    if (m.kind === "iptables-rule") return !lines.includes(m.rule);
    const chainThere = lines.some((l) => l === `-N ${m.chain}` || BUILTIN.exec(l)?.[1] === m.chain);
    return !chainThere || (m.from !== undefined && !lines.some((l) => l.startsWith(`-A ${m.from} `) && jumpsTo(l, m.chain)));
  });
}

/** The chains of every nftables table, as `family table chain` (`nft -j list chains`). */
async function nftChains(): Promise<Set<string>> {
  const { stdout } = await runTool("nft", ["-j", "list", "chains"], "list nftables chains");
  const doc = JSON.parse(stdout) as { nftables?: Array<{ chain?: { family: string; table: string; name: string } }> };
  return new Set((doc.nftables ?? []).flatMap((i) => (i.chain ? [`${i.chain.family} ${i.chain.table} ${i.chain.name}`] : [])));
}

/** Lists what the marks live in (only the tables they name) and returns those that are not there. */
export async function missingMarks(marks: readonly FirewallMark[]): Promise<FirewallMark[]> {
  const iptables = new Map<string, readonly string[] | undefined>();
  for (const m of marks) {
    if (m.kind === "nftables" || iptables.has(tableKey(m.family, m.table))) continue;
    iptables.set(
      tableKey(m.family, m.table),
      await iptablesFor(m.family)
        .listTable(m.table)
        .catch(() => undefined),
    );
  }
  const nft = marks.some((m) => m.kind === "nftables") ? await nftChains().catch(() => undefined) : new Set<string>();
  return marksMissingFrom(marks, { iptables, nftChains: nft });
}
