/**
 * iptables/ip6tables operations with the semantics the Go plugins rely on: look a table up, insert a rule only
 * once, delete tolerating "does not exist". Runs in the namespace of this process.
 * @module
 */
import { realpathSync } from "node:fs";
import { findTool } from "#sys/tool-path.js";
import { NetOpError } from "../errors.js";
import {
  type IptablesNftListing,
  listIptablesNft,
  NFPROTO_IPV4,
  NFPROTO_IPV6,
  nftAddRules,
  nftDelete,
  nftTableExists,
  type RuleToAdd,
} from "../netlink/nfnetlink.js";
import { runTool } from "../tools.js";

export type IPFamilyNum = 4 | 6;

const variants = new Map<string, boolean>();
/**
 * Whether `command` is iptables-nft (xtables-nft-multi, as Debian's, Fedora's and Alpine's iptables are by
 * default): its tables are nf_tables tables, which the network layer reads and deletes from over netlink
 * instead of starting the tool. Anything else (iptables-legacy, a wrapper script) is left to the tool.
 */
function isIptablesNft(command: string): boolean {
  let nft = variants.get(command);
  if (nft === undefined) {
    const file = findTool(command);
    try {
      nft = file !== undefined && /^(xtables-nft-multi|ip6?tables-nft)$/.test(realpathSync(file).split("/").pop()!);
    } catch {
      nft = false;
    }
    variants.set(command, nft);
  }
  return nft;
}

/** iptables (or ip6tables) for one family: chains and rules, idempotent where the Go plugins' go-iptables is. */
export class Iptables {
  readonly command: string;
  constructor(readonly family: IPFamilyNum) {
    this.command = family === 4 ? "iptables" : "ip6tables";
  }

  private get nfproto(): number {
    return this.family === 4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
  }

  /** Whether reads and deletions go over netlink (iptables-nft, and the FFI to reach it: nfnetlink.ts). */
  private get overNetlink(): boolean {
    return isIptablesNft(this.command);
  }

  /**
   * The table's chain names and the rules of `chains` (or of all of them) as `iptables -S` lines with their
   * handles, read over netlink; undefined when only the tool can tell (then listTable).
   */
  async listChains(table: string, chains: readonly string[] | "all"): Promise<IptablesNftListing | undefined> {
    return this.overNetlink ? listIptablesNft(this.nfproto, table, chains) : undefined;
  }

  /**
   * Deletes rules by handle (from listChains) and then whole chains, in one transaction over netlink; false
   * when that is not possible here (nothing was done: use restore).
   */
  async deleteByHandle(
    table: string,
    rules: ReadonlyArray<{ chain: string; handle: bigint }>,
    chains: readonly string[],
    operation: string,
  ): Promise<boolean> {
    return this.overNetlink && nftDelete(this.nfproto, table, rules, chains, operation);
  }

  /**
   * Creates user chains and adds rules in one transaction over netlink, as iptables-nft would; false when that
   * is not possible here or for one of the rules (nothing was done: use restore). The rules' chains must exist
   * or be among `chains`; with `exclusive`, a chain that exists already fails it all (a NetOpError), as `-N` does.
   */
  async addByNetlink(table: string, chains: readonly string[], rules: readonly RuleToAdd[], operation: string, exclusive = false): Promise<boolean> {
    return this.overNetlink && nftAddRules(this.nfproto, table, chains, rules, operation, exclusive);
  }

  private run(args: string[], operation: string) {
    return runTool(this.command, ["--wait", ...args], operation);
  }

  /** Whether a rule exists (`-C`); a missing chain means no, an unusable iptables is an error. */
  async ruleExists(table: string, chain: string, rule: readonly string[]): Promise<boolean> {
    try {
      await this.run(["-t", table, "-C", chain, ...rule], `check ${this.command} rule in ${table}/${chain}: ${rule.join(" ")}`);
      return true;
    } catch (e) {
      if (e instanceof NetOpError && (e.exitCode === 1 || e.isNotFound)) return false;
      throw e;
    }
  }

  /** Inserts `rule` at `position` (1-based) of `chain` unless it is there already; resolves whether it inserted it. */
  async insertUnique(table: string, chain: string, position: number, rule: readonly string[]): Promise<boolean> {
    if (await this.ruleExists(table, chain, rule)) return false;
    await this.run(["-t", table, "-I", chain, String(position), ...rule], `insert ${this.command} rule into ${table}/${chain}: ${rule.join(" ")}`);
    return true;
  }

  /** Deletes a rule; a missing rule or chain is not an error. */
  async deleteRule(table: string, chain: string, rule: readonly string[]): Promise<void> {
    try {
      await this.run(["-t", table, "-D", chain, ...rule], `delete ${this.command} rule from ${table}/${chain}`);
    } catch (e) {
      if (!(e instanceof NetOpError && e.isNotFound)) throw e;
    }
  }

  /** A whole table as `-N`/`-A` lines (`iptables -S`), the form iptables-restore reads back. */
  async listTable(table: string): Promise<string[]> {
    const { stdout } = await this.run(["-t", table, "-S"], `list ${this.command} table ${table}`);
    return stdout.split("\n").filter((l) => l.startsWith("-"));
  }

  /**
   * Applies rule lines (`-A CHAIN ...`, `-D ...`, `-X ...`) to one table in a single transaction with
   * `iptables-restore --noflush`. Chains in `chains` are declared first: created when missing, and emptied
   * when they exist. Arguments are quoted for the restore format.
   */
  async restore(table: string, chains: readonly string[], rules: ReadonlyArray<readonly string[] | string>, operation: string): Promise<void> {
    const line = (r: readonly string[] | string) => (typeof r === "string" ? r : r.map(quoteRestoreWord).join(" "));
    const script = [`*${table}`, ...chains.map((c) => `:${c} - [0:0]`), ...rules.map(line), "COMMIT", ""].join("\n");
    await runTool(`${this.command}-restore`, ["--wait", "--noflush"], operation, script);
  }

  /** Whether this iptables works here at all (iptables-nft: whether nf_tables answers over netlink). */
  async usable(): Promise<boolean> {
    if (this.overNetlink && (await nftTableExists(this.nfproto, "filter")) !== undefined) return true;
    try {
      await this.run(["-t", "filter", "-S", "INPUT", "1"], "probe iptables");
      return true;
    } catch {
      return false;
    }
  }
}

/** A word of an iptables-restore line: quoted (with `"` and `\\` escaped) unless it is plain. */
export const quoteRestoreWord = (w: string): string => (/^[\w.:/!+-]+$/.test(w) ? w : `"${w.replace(/(["\\])/g, "\\$1")}"`);

/** The iptables of one family (4: iptables, 6: ip6tables). */
export const iptablesFor = (family: IPFamilyNum): Iptables => new Iptables(family);
