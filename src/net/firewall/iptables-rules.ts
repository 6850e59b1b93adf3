/**
 * The one way tscni keeps iptables rules (the firewall plugin, portmap, bridge and ptp `ipMasq`): a table is
 * read once, then what is missing is added, or what is to go is removed, in one transaction. Over netlink when
 * iptables is iptables-nft (nfnetlink.ts: the table read and changed as iptables-nft does, no process started),
 * else `iptables -S` and `iptables-restore --noflush`; this module is the only place that chooses. A
 * transaction refused because another call changed the table meanwhile is tried again on a fresh reading, the
 * last time by the tools alone. The result is that of the Go plugins' rule-by-rule `-C`/`-N`/`-I`/`-A`/`-D`/`-X`.
 * @module
 */

import type { IptablesNftListing } from "../netlink/nfnetlink.js";
import type { Iptables } from "./iptables.js";
import { lineTarget, saveLine } from "./iptables-save.js";

export { jumpsTo, saveLine, saveQuote, splitListedRule } from "./iptables-save.js";

export interface IptablesRule {
  chain: string;
  /** The words after `-A <chain>`, as iptables takes them. */
  args: readonly string[];
  /** Where a missing rule goes: inserted at the top of the chain, or appended (the default). */
  position?: "first" | "last";
  /** Other forms that count as the rule being there already (e.g. an older plugin version's comment). */
  alternatives?: ReadonlyArray<readonly string[]>;
  /**
   * The line `iptables -S` prints for the rule, when it is not `saveLine(chain, args)` (iptables rewrites some
   * matches); null when it cannot be predicted: then `iptables -C` tells whether the rule is there.
   */
  listed?: string | null;
}

/** A rule of a table as read: its chain, its `iptables -S` line, and when read over netlink its handle. */
export interface ListedRule {
  chain: string;
  line: string;
  /** The chain it jumps or goes to (or its target), read even when the rest of the rule is not. */
  jump?: string;
  handle?: bigint;
  /** False: a shape the netlink reader does not render, so `line` equals no rule. */
  readable: boolean;
}

/** Some chains of a table as `iptables -S` shows them, read by the tool (the whole table) or over netlink. */
export class TableListing {
  readonly chains: ReadonlySet<string>;
  readonly lines: ReadonlySet<string>;
  readonly rules: readonly ListedRule[];

  /** From `iptables -S` lines (`-P`/`-N` name chains, `-A` are rules). */
  constructor(
    lines: readonly string[],
    /** Set when read over netlink: the chains that really exist (iptables-nft makes its built-in chains on first use). */
    readonly overNetlink = false,
    rules?: readonly ListedRule[],
  ) {
    const chains = new Set<string>();
    for (const l of lines) {
      const m = /^-[NP] (\S+)/.exec(l);
      if (m) chains.add(m[1]!);
    }
    this.chains = chains;
    this.rules =
      rules ??
      lines
        .filter((l) => l.startsWith("-A "))
        .map((line) => {
          const jump = lineTarget(line);
          return { chain: line.split(" ")[1]!, line, readable: true, ...(jump ? { jump } : {}) };
        });
    this.lines = new Set(this.rules.map((r) => r.line));
  }

  /** A listing read over netlink. */
  static fromNetlink(listing: IptablesNftListing): TableListing {
    return new TableListing(
      listing.chains.map((c) => `-N ${c}`),
      true,
      listing.rules,
    );
  }

  /**
   * Whether the listing tells for sure which rules `chain` holds: the tool printed them all; over netlink, the
   * chain is not there or every rule of it was rendered.
   */
  knowsRulesOf(chain: string): boolean {
    return !this.overNetlink || !this.chains.has(chain) || this.rules.every((r) => r.chain !== chain || r.readable);
  }

  /** Whether the rule (or one of its alternatives) is in the table; undefined when only `iptables -C` can tell. */
  has(rule: IptablesRule): boolean | undefined {
    if (!this.chains.has(rule.chain)) return false;
    if (rule.listed === null) return undefined;
    const forms = [rule.listed ?? saveLine(rule.chain, rule.args), ...(rule.alternatives ?? []).map((a) => saveLine(rule.chain, a))];
    if (forms.some((l) => this.lines.has(l))) return true;
    return this.knowsRulesOf(rule.chain) ? false : undefined;
  }

  /** The rules jumping (`-j`/`-g`) to `chain`. */
  jumpsTo(chain: string): ListedRule[] {
    return this.rules.filter((r) => r.jump === chain);
  }
}

/** Which chains' rules a reading needs: these, or all (one dump over netlink). */
export type Scope = readonly string[] | "all";

/**
 * `table` as it is now: over netlink when iptables is iptables-nft (the names of all chains, the rules of those
 * of `scope`), else the whole table by `iptables -S` (rejects when that iptables does not work). `tools`: by the
 * tool in any case; `whole`: by the tool when netlink left a rule of one of these chains unread.
 */
export async function readTable(
  ipt: Iptables,
  table: string,
  scope: Scope,
  { tools = false, whole = [] }: { tools?: boolean; whole?: readonly string[] } = {},
): Promise<TableListing> {
  const listing = tools ? undefined : await ipt.listChains(table, scope);
  if (listing) {
    const read = TableListing.fromNetlink(listing);
    if (whole.every((c) => read.knowsRulesOf(c))) return read;
  }
  return new TableListing(await ipt.listTable(table));
}

/** Whether a rule is in the table: by the listing when it tells, else by `iptables -C`. */
export async function ruleExists(ipt: Iptables, table: string, listing: TableListing, rule: IptablesRule): Promise<boolean> {
  return listing.has(rule) ?? ipt.ruleExists(table, rule.chain, rule.args);
}

/** One thing a plan makes, in the order iptables-restore makes them: a chain (its name) or a rule. */
export type Step = string | IptablesRule;

/** What is missing of a plan: its chains, its rules, and both in the plan's order. */
export interface Missing {
  chains: string[];
  rules: IptablesRule[];
  steps: Step[];
}

/** The rules of a plan. */
const rulesOf = (plan: readonly Step[]): IptablesRule[] => plan.filter((s): s is IptablesRule => typeof s !== "string");

/**
 * What of `plan` the table lacks, in its order. Nothing is in a chain that is missing, and nothing jumps to it,
 * so those rules are missing without a look.
 */
export async function missingFrom(ipt: Iptables, table: string, listing: TableListing, plan: readonly Step[]): Promise<Missing> {
  const missing: Missing = { chains: [], rules: [], steps: [] };
  const isNew = (chain: string | undefined) => chain !== undefined && missing.chains.includes(chain);
  for (const step of plan) {
    if (typeof step === "string") {
      if (listing.chains.has(step)) continue;
      missing.chains.push(step);
    } else {
      if (!isNew(step.chain) && !isNew(ruleTarget(step.args)) && (await ruleExists(ipt, table, listing, step))) continue;
      missing.rules.push(step);
    }
    missing.steps.push(step);
  }
  return missing;
}

/** The target of a rule given as iptables takes it (the word after `-j`/`-g`, not in a comment). */
const ruleTarget = (args: readonly string[]): string | undefined => {
  const i = args.findIndex((w, j) => (w === "-j" || w === "-g") && args[j - 1] !== "--comment");
  return i >= 0 ? args[i + 1] : undefined;
};

/** A step as an iptables-restore line. */
const restoreLine = (s: Step): string[] =>
  typeof s === "string" ? ["-N", s] : s.position === "first" ? ["-I", s.chain, "1", ...s.args] : ["-A", s.chain, ...s.args];

/**
 * Makes what `plan` names exist in `table`: reads it (the rules of `scope`, by default the chains the rules go
 * into), then creates the missing chains and adds the missing rules in the plan's order (so `first` rules added
 * later end up above those added earlier, as with successive `iptables -I`; over netlink the chains come first),
 * in one transaction. A chain must come in the plan before the rules that use it. Creating a chain another call
 * made meanwhile fails it (as `iptables -N` does, so no rule is added twice); then it reads again, up to twice,
 * the last time by the tools. Returns what it added.
 */
export async function ensureRules(
  ipt: Iptables,
  table: string,
  plan: readonly Step[],
  operation: string,
  scope: Scope = [...new Set(rulesOf(plan).map((r) => r.chain))],
): Promise<Missing> {
  for (let attempt = 0; ; attempt++) {
    const listing = await readTable(ipt, table, scope, { tools: attempt === 2 });
    const missing = await missingFrom(ipt, table, listing, plan);
    if (!missing.steps.length) return missing;
    try {
      // Over netlink when every rule goes into a chain that is there or made here (iptables makes its built-in chains).
      const overNetlink =
        listing.overNetlink &&
        missing.rules.every((r) => listing.chains.has(r.chain) || missing.chains.includes(r.chain)) &&
        (await ipt.addByNetlink(
          table,
          missing.chains,
          missing.rules.map((r) => ({ chain: r.chain, args: r.args, first: r.position === "first" })),
          operation,
          true,
        ));
      if (!overNetlink) await ipt.restore(table, [], missing.steps.map(restoreLine), operation);
      return missing;
    } catch (e) {
      if (attempt === 2) throw e;
    }
  }
}

/**
 * What to remove from a table: rules (their exact form; one whose form cannot be predicted, `listed: null`, is not
 * found), and whole chains with every rule of `scope` jumping to them.
 */
export interface Removal {
  rules?: readonly IptablesRule[];
  chains?: readonly string[];
}

/**
 * Removes what `removal` names in the table as read (rules and chains that are not there are not an error): each
 * rule the first line that equals it, as `iptables -D` does; each chain with the rules of `scope` (by default the
 * rules' and the chains' own) jumping to it, then its rules, then itself. One transaction; when another call
 * changed the table meanwhile, read again, up to twice, the last time by the tools. `first`: the table read
 * already (by the caller, with the same scope); `whole`: see {@link readTable}.
 */
export async function removeRules(
  ipt: Iptables,
  table: string,
  removal: Removal | ((listing: TableListing) => Removal),
  operation: string,
  { scope, whole, first }: { scope?: Scope; whole?: readonly string[]; first?: TableListing } = {},
): Promise<void> {
  const what = typeof removal === "function" ? removal : () => removal;
  const fixed = typeof removal === "function" ? undefined : removal;
  const readScope = scope ?? [...new Set([...(fixed?.rules ?? []).map((r) => r.chain), ...(fixed?.chains ?? [])])];
  for (let attempt = 0; ; attempt++) {
    const listing = attempt === 0 && first ? first : await readTable(ipt, table, readScope, { tools: attempt === 2, ...(whole ? { whole } : {}) });
    const { rules = [], chains = [] } = what(listing);
    const gone = chains.filter((c) => listing.chains.has(c));
    const inScope = (chain: string) => readScope === "all" || readScope.includes(chain);
    const present = rules.flatMap((r) => listing.rules.find((l) => l.line === (r.listed ?? saveLine(r.chain, r.args))) ?? []);
    const jumps = listing.rules.filter((l) => l.jump !== undefined && gone.includes(l.jump) && !gone.includes(l.chain) && inScope(l.chain));
    const doomed = [...new Set([...present, ...jumps])];
    if (!doomed.length && !gone.length) return;
    try {
      const byHandle = doomed.every((l) => l.handle !== undefined) && listing.overNetlink;
      if (!(byHandle && (await ipt.deleteByHandle(table, doomed as Array<ListedRule & { handle: bigint }>, gone, operation)))) {
        await ipt.restore(table, [], [...doomed.map((l) => `-D${l.line.slice(2)}`), ...gone.flatMap((c) => [`-F ${c}`, `-X ${c}`])], operation);
      }
      return;
    } catch (e) {
      if (attempt === 2) throw e;
    }
  }
}

/** Deletes those of `rules` that exist (the exact form, not alternatives). */
export const deleteRules = (ipt: Iptables, table: string, rules: readonly IptablesRule[], operation: string): Promise<void> =>
  rules.length ? removeRules(ipt, table, { rules }, operation) : Promise.resolve();
