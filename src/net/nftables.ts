/**
 * nftables through the `nft` command: run a script as one transaction, list a chain's rules with their
 * handles and comments.
 * @module
 */
import { NetOpError, runTool } from "./exec.js";

export interface NftRule {
  handle: number;
  comment?: string;
  /** The rule's expression as JSON (nft -j). */
  expr: unknown[];
}

/** Runs an nft script atomically (`nft -f -`). */
export async function nftRun(script: string, operation: string): Promise<void> {
  await runTool("nft", ["-f", "-"], operation, script);
}

/** The rules of a chain; an empty list when the table or chain does not exist. */
export async function nftListRules(family: string, table: string, chain: string): Promise<NftRule[]> {
  let stdout: string;
  try {
    ({ stdout } = await runTool("nft", ["-j", "-a", "list", "chain", family, table, chain], `list nft chain ${family} ${table} ${chain}`));
  } catch (e) {
    if (e instanceof NetOpError && /no such file|does not exist/i.test(e.reason)) return [];
    throw e;
  }
  const doc = JSON.parse(stdout) as { nftables?: Array<Record<string, unknown>> };
  const rules: NftRule[] = [];
  for (const item of doc.nftables ?? []) {
    const rule = item["rule"] as { handle: number; comment?: string; expr: unknown[] } | undefined;
    if (rule) rules.push({ handle: rule.handle, comment: rule.comment, expr: rule.expr });
  }
  return rules;
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
