/**
 * ipMasq: masquerade traffic from a container's addresses to anything outside its subnet (bridge and ptp
 * `ipMasq: true`). Two backends with the Go plugins' exact object names, so either implementation removes
 * the other's rules: iptables (chain `CNI-<hash>` per container) and nftables (table
 * `inet cni_plugins_masquerade`, one commented rule per attachment).
 * @module
 */
import { createHash } from "node:crypto";
import { canonicalIP, networkOf, parseCIDR } from "../spec/ip.js";
import type { GCAttachment } from "../spec/config.js";
import { attachmentComment, ipMasqChainName } from "./names.js";
import { iptablesFor, type IPFamilyNum } from "./iptables.js";
import { nftListRules, nftQuote, nftRun, nftUsable } from "./nftables.js";

export type IPMasqBackend = "iptables" | "nftables";

const NFT_TABLE = "cni_plugins_masquerade";
const NFT_CHAIN = "masq_checks";
const NFT_COMMENT_MAX = 128;

const hex16 = (s: string) => createHash("sha512").update(s).digest("hex").slice(0, 16);
const networkHash = (network: string) => hex16(network);
const instanceHash = (network: string, ifName: string, containerID: string) => `${networkHash(network)}-${hex16(`${ifName}:${containerID}`)}`;

/** The nftables rule comment of an attachment (hash first, then a readable description). */
export function nftIPMasqComment(network: string, ifName: string, containerID: string): string {
  const strip = (s: string) => s.replaceAll('"', "");
  const comment = `${instanceHash(network, ifName, containerID)}, net: ${strip(network)}, if: ${strip(ifName)}, id: ${strip(containerID)}`;
  return comment.slice(0, NFT_COMMENT_MAX);
}

/** Which backend to use when the config does not say: iptables, unless only nftables works. */
export async function defaultIPMasqBackend(): Promise<IPMasqBackend> {
  if (await iptablesFor(4).usable()) return "iptables";
  return (await nftUsable()) ? "nftables" : "iptables";
}

export interface IPMasqTarget {
  /** The container addresses, `addr/prefix`. */
  addresses: string[];
  network: string;
  ifName: string;
  containerID: string;
}

async function setupIptables(t: IPMasqTarget): Promise<void> {
  const chain = ipMasqChainName(t.network, t.containerID);
  const comment = attachmentComment(t.network, t.containerID);
  for (const cidr of t.addresses) {
    const parsed = parseCIDR(cidr);
    const family = parsed.ip.family as IPFamilyNum;
    const ipt = iptablesFor(family);
    const multicast = family === 4 ? "224.0.0.0/4" : "ff00::/8";
    await ipt.ensureChain("nat", chain);
    await ipt.appendUnique("nat", chain, ["-d", parsed.text, "-j", "ACCEPT", "-m", "comment", "--comment", comment]);
    await ipt.appendUnique("nat", chain, ["!", "-d", multicast, "-j", "MASQUERADE", "-m", "comment", "--comment", comment]);
    await ipt.appendUnique("nat", "POSTROUTING", ["-s", parsed.ip.text, "-j", chain, "-m", "comment", "--comment", comment]);
  }
}

async function teardownIptables(t: IPMasqTarget): Promise<void> {
  const chain = ipMasqChainName(t.network, t.containerID);
  const comment = attachmentComment(t.network, t.containerID);
  for (const cidr of t.addresses) {
    const parsed = parseCIDR(cidr);
    const ipt = iptablesFor(parsed.ip.family as IPFamilyNum);
    await ipt.deleteRule("nat", "POSTROUTING", ["-s", parsed.ip.text, "-j", chain, "-m", "comment", "--comment", comment]);
    await ipt.deleteRule("nat", "POSTROUTING", ["-s", parsed.text, "-j", chain, "-m", "comment", "--comment", comment]);
    await ipt.deleteChain("nat", chain);
  }
}

async function rulesWithCommentPrefix(prefix: string) {
  return (await nftListRules("inet", NFT_TABLE, NFT_CHAIN)).filter((r) => r.comment?.startsWith(prefix));
}

async function setupNftables(t: IPMasqTarget): Promise<void> {
  const stale = await rulesWithCommentPrefix(instanceHash(t.network, t.ifName, t.containerID));
  const comment = nftIPMasqComment(t.network, t.ifName, t.containerID);
  const lines = [
    `add table inet ${NFT_TABLE} { comment "Masquerading for plugins from github.com/containernetworking/plugins" ; }`,
    `add chain inet ${NFT_TABLE} ${NFT_CHAIN} { comment "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet" ; }`,
    `add chain inet ${NFT_TABLE} postrouting { type nat hook postrouting priority 100 ; }`,
    `flush chain inet ${NFT_TABLE} postrouting`,
    `add rule inet ${NFT_TABLE} postrouting ip daddr == 224.0.0.0/4 return`,
    `add rule inet ${NFT_TABLE} postrouting ip6 daddr == ff00::/8 return`,
    `add rule inet ${NFT_TABLE} postrouting goto ${NFT_CHAIN}`,
    ...stale.map((r) => `delete rule inet ${NFT_TABLE} ${NFT_CHAIN} handle ${r.handle}`),
  ];
  for (const cidr of t.addresses) {
    const parsed = parseCIDR(cidr);
    const fam = parsed.ip.family === 4 ? "ip" : "ip6";
    lines.push(`add rule inet ${NFT_TABLE} ${NFT_CHAIN} ${fam} saddr == ${canonicalIP(parsed.ip.text)} ${fam} daddr != ${networkOf(parsed).text} masquerade comment ${nftQuote(comment)}`);
  }
  await nftRun(lines.join("\n") + "\n", `set up nftables masquerading for ${t.containerID}`);
}

async function deleteNftRules(handles: number[], operation: string): Promise<void> {
  if (handles.length === 0) return;
  await nftRun(handles.map((h) => `delete rule inet ${NFT_TABLE} ${NFT_CHAIN} handle ${h}`).join("\n") + "\n", operation);
}

async function teardownNftables(t: IPMasqTarget): Promise<void> {
  const rules = await rulesWithCommentPrefix(instanceHash(t.network, t.ifName, t.containerID));
  await deleteNftRules(rules.map((r) => r.handle), `remove nftables masquerading for ${t.containerID}`);
}

/** Installs masquerading for an attachment's addresses with the chosen backend. */
export async function setupIPMasq(t: IPMasqTarget, backend?: IPMasqBackend): Promise<void> {
  const chosen = backend ?? (await defaultIPMasqBackend());
  if (chosen === "nftables") await setupNftables(t);
  else await setupIptables(t);
}

/**
 * Removes an attachment's masquerading from both backends (the rules may have been made by either, or by a
 * Go plugin with another default); an error counts only from a backend that works here.
 */
export async function teardownIPMasq(t: IPMasqTarget): Promise<void> {
  const errors: string[] = [];
  try {
    await teardownIptables(t);
  } catch (e) {
    if (await iptablesFor(4).usable()) errors.push((e as Error).message);
  }
  try {
    await teardownNftables(t);
  } catch (e) {
    if (await nftUsable()) errors.push((e as Error).message);
  }
  if (errors.length) throw new Error(errors.join("\n"));
}

/** GC for the nftables backend: removes this network's rules whose attachment is not valid any more. */
export async function gcIPMasq(network: string, valid: readonly GCAttachment[]): Promise<void> {
  const keep = new Set(valid.map((a) => nftIPMasqComment(network, a.ifname, a.containerID)));
  const rules = await rulesWithCommentPrefix(networkHash(network));
  await deleteNftRules(rules.filter((r) => !keep.has(r.comment ?? "")).map((r) => r.handle), `garbage-collect nftables masquerading of ${network}`);
}
