/**
 * nftables through the `nft` command: run a script as one transaction, list a chain's rules with their
 * handles and comments.
 * @module
 */
import { NetOpError } from "../errors.js";
import { NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6, nftTableExists } from "../netlink/nfnetlink.js";
import { runTool } from "../tools.js";

const NFT_FAMILY: Record<string, number> = { inet: NFPROTO_INET, ip: NFPROTO_IPV4, ip6: NFPROTO_IPV6 };

/** A rule as `nft -j list` shows it: its handle, comment and expression. */
export interface NftRule {
  /** The chain the rule is in. */
  chain: string;
  handle: number;
  comment?: string;
  /** The rule's expression as JSON (nft -j). */
  expr: unknown[];
}

/** Runs an nft script atomically (`nft -f -`). */
export async function nftRun(script: string, operation: string): Promise<void> {
  await runTool("nft", ["-f", "-"], operation, script);
}

/** What `nft -j -a list ...` showed: chain names and rules (with handles). */
export interface NftListing {
  chains: string[];
  rules: NftRule[];
}

/** Lists a table or chain (`what` = `["table", family, table]` etc.); empty when it does not exist. */
async function nftList(what: string[]): Promise<NftListing> {
  // The usual answer, that the table is not there (a node whose rules are iptables'), costs no process.
  const family = NFT_FAMILY[what[1]!];
  if (family !== undefined && (await nftTableExists(family, what[2]!)) === false) return { chains: [], rules: [] };
  let stdout: string;
  try {
    ({ stdout } = await runTool("nft", ["-j", "-a", "list", ...what], `list nft ${what.join(" ")}`));
  } catch (e) {
    if (e instanceof NetOpError && e.isNotFound) return { chains: [], rules: [] };
    throw e;
  }
  const doc = JSON.parse(stdout) as { nftables?: Array<Record<string, unknown>> };
  const listing: NftListing = { chains: [], rules: [] };
  for (const item of doc.nftables ?? []) {
    const chain = item["chain"] as { name: string } | undefined;
    if (chain) listing.chains.push(chain.name);
    const rule = item["rule"] as { chain: string; handle: number; comment?: string; expr: unknown[] } | undefined;
    if (rule) listing.rules.push({ chain: rule.chain, handle: rule.handle, comment: rule.comment, expr: rule.expr });
  }
  return listing;
}

/** The rules of a chain; an empty list when the table or chain does not exist. */
export async function nftListRules(family: string, table: string, chain: string): Promise<NftRule[]> {
  return (await nftList(["chain", family, table, chain])).rules;
}

/** The chains and rules of a table; empty when the table does not exist. */
export const nftListTable = (family: string, table: string): Promise<NftListing> => nftList(["table", family, table]);

/** The elements of a set (`"br0"`, or `"br0 . br0"` for a concatenation); empty when the set does not exist. */
export async function nftSetElements(family: string, table: string, name: string): Promise<string[]> {
  let stdout: string;
  try {
    ({ stdout } = await runTool("nft", ["-j", "list", "set", family, table, name], `list nft set ${name}`));
  } catch (e) {
    if (e instanceof NetOpError && e.isNotFound) return [];
    throw e;
  }
  const doc = JSON.parse(stdout) as { nftables?: Array<{ set?: { elem?: unknown[] } }> };
  const elems = doc.nftables?.find((i) => i.set)?.set?.elem ?? [];
  return elems.map((e) => (typeof e === "object" && e && "concat" in e ? (e as { concat: string[] }).concat.join(" . ") : String(e)));
}

/** Whether nft works here. */
export async function nftUsable(): Promise<boolean> {
  try {
    await runTool("nft", ["--check", "-f", "-"], "probe nftables", "add table inet cni_plugins_probe\n");
    return true;
  } catch {
    return false;
  }
}

/** Quotes a string for an nft script. */
export const nftQuote = (s: string): string => `"${s.replace(/["\\]/g, "")}"`;
