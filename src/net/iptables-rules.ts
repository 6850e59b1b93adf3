/**
 * Sets of iptables rules kept by looking at a table once: a snapshot (`iptables -S`) tells which chains and
 * rules exist, missing chains are created one by one (tolerating a concurrent creation), and missing rules
 * are inserted or appended, or present rules deleted, in one `iptables-restore --noflush` transaction. The
 * result is the same as the Go plugins' rule-by-rule `-C`/`-I`/`-A`/`-D`, with two or three processes
 * instead of one per rule.
 * @module
 */
import { NetOpError } from "./errors.js";
import type { Iptables } from "./iptables.js";
import { saveLine } from "./iptables-save.js";

export { jumpsTo, saveLine, saveQuote } from "./iptables-save.js";

export interface IptablesRule {
  chain: string;
  /** The words after `-A <chain>`, in the order `iptables -S` prints them: matches first, the target last. */
  args: readonly string[];
  /** Where a missing rule goes: inserted at the top of the chain, or appended (the default). */
  position?: "first" | "last";
  /** Other forms that count as the rule being there already (e.g. an older plugin version's comment). */
  alternatives?: ReadonlyArray<readonly string[]>;
}

/** A table as `iptables -S` showed it. */
export class TableSnapshot {
  constructor(
    readonly chains: ReadonlySet<string>,
    readonly lines: ReadonlySet<string>,
  ) {}

  static parse(lines: readonly string[]): TableSnapshot {
    const chains = new Set<string>();
    for (const l of lines) {
      const m = /^-[NP] (\S+)/.exec(l);
      if (m) chains.add(m[1]!);
    }
    return new TableSnapshot(chains, new Set(lines.filter((l) => l.startsWith("-A "))));
  }

  /** Whether the rule, or one of its alternatives, is in the table. */
  has(rule: IptablesRule): boolean {
    return [rule.args, ...(rule.alternatives ?? [])].some((args) => this.lines.has(saveLine(rule.chain, args)));
  }

  /** The chains of `chains` and the rules of `rules` that are not there. */
  missing(chains: readonly string[], rules: readonly IptablesRule[]): { chains: string[]; rules: IptablesRule[] } {
    return { chains: chains.filter((c) => !this.chains.has(c)), rules: rules.filter((r) => !this.has(r)) };
  }
}

/**
 * What `table` holds: over netlink when it can be read there (iptables-nft: the chain names and the rules of
 * the chains `rules` touch, each line's handles kept for deleteRules), else the whole table through the tool.
 */
export async function snapshot(
  ipt: Iptables,
  table: string,
  rules?: readonly IptablesRule[],
): Promise<TableSnapshot & { handles?: Map<string, bigint[]> }> {
  if (rules) {
    const listing = await ipt.listChains(table, [...new Set(rules.map((r) => r.chain))]);
    if (listing) {
      const handles = new Map<string, bigint[]>();
      for (const r of listing.rules) handles.set(r.line, [...(handles.get(r.line) ?? []), r.handle]);
      return Object.assign(new TableSnapshot(new Set(listing.chains), new Set(handles.keys())), { handles });
    }
  }
  return TableSnapshot.parse(await ipt.listTable(table));
}

const addLine = (r: IptablesRule): string[] => (r.position === "first" ? ["-I", r.chain, "1", ...r.args] : ["-A", r.chain, ...r.args]);

/**
 * Makes `chains` and `rules` exist in `table`: missing chains are created, then missing rules are added in
 * the given order (so `first` rules inserted later end up above those inserted earlier, as with successive
 * `iptables -I`). Returns the chains and rules it added.
 */
export async function ensureRules(
  ipt: Iptables,
  table: string,
  chains: readonly string[],
  rules: readonly IptablesRule[],
  operation: string,
): Promise<{ chains: string[]; rules: IptablesRule[] }> {
  const snap = await snapshot(ipt, table, rules);
  const missing = snap.missing(chains, rules);
  // Over netlink when the table was read there and every rule's chain is there or made here (a built-in chain
  // iptables has not made yet is left to iptables): chains and rules in one transaction.
  if (
    snap.handles &&
    missing.rules.every((r) => snap.chains.has(r.chain) || missing.chains.includes(r.chain)) &&
    (await ipt.addByNetlink(
      table,
      missing.chains,
      missing.rules.map((r) => ({ chain: r.chain, args: r.args, first: r.position === "first" })),
      operation,
    ))
  ) {
    return missing;
  }
  for (const chain of missing.chains) await ipt.ensureChain(table, chain);
  if (missing.rules.length) await ipt.restore(table, [], missing.rules.map(addLine), operation);
  return missing;
}

/**
 * Deletes those of `rules` that exist (the exact form, not alternatives). Retried on a fresh snapshot when
 * the transaction fails, since a concurrent call may have deleted some of them meanwhile.
 */
export async function deleteRules(ipt: Iptables, table: string, rules: readonly IptablesRule[], operation: string): Promise<void> {
  if (!rules.length) return;
  for (let attempt = 1; ; attempt++) {
    const snap = await snapshot(ipt, table, rules);
    const present = rules.filter((r) => snap.lines.has(saveLine(r.chain, r.args)));
    if (!present.length) return;
    try {
      // Over netlink: the first rule of each line, as `iptables -D` deletes the first that matches.
      const byHandle = snap.handles && present.map((r) => ({ chain: r.chain, handle: snap.handles!.get(saveLine(r.chain, r.args))![0]! }));
      if (byHandle && (await ipt.deleteByHandle(table, byHandle, [], operation))) return;
      await ipt.restore(
        table,
        [],
        present.map((r) => ["-D", r.chain, ...r.args]),
        operation,
      );
      return;
    } catch (e) {
      if (!(e instanceof NetOpError) || attempt >= 3) throw e;
    }
  }
}
