/**
 * ipMasq: masquerade traffic from a container's addresses to anything outside its subnet (bridge and ptp
 * `ipMasq: true`). Two backends with the Go plugins' exact object names, so either implementation removes
 * the other's rules: iptables (chain `CNI-<hash>` per container) and nftables (table
 * `inet cni_plugins_masquerade`, one commented rule per attachment).
 * @module
 */
import { canonicalIP, networkOf, parseCIDR, type IPCidr } from "../spec/ip.js";
import type { GCAttachment } from "../spec/config.js";
import { attachmentComment, ipMasqChainName, nftAttachmentComment, nftAttachmentHash, nftNetworkHash } from "./names.js";
import { iptablesFor, type IPFamilyNum } from "./iptables.js";
import { jumpsTo, saveLine } from "./iptables-rules.js";
import { nftListRules, nftListTable, nftQuote, nftRun, nftUsable } from "./nftables.js";
import type { FirewallMark } from "./firewall-marks.js";
import { failure, messageOf } from "../spec/errors.js";

/** Which firewall masquerading uses. */
export type IPMasqBackend = "iptables" | "nftables";

const NFT_TABLE = "cni_plugins_masquerade";
const NFT_CHAIN = "masq_checks";
/** Go's names for the hashes and comments of nftables masquerading rules (shared with the firewall). */
const networkHash = nftNetworkHash;
const instanceHash = nftAttachmentHash;
export const nftIPMasqComment = nftAttachmentComment;

/** Whether each backend works here (probes a caller may share between calls). */
export interface BackendProbes {
  iptables: () => Promise<boolean>;
  nftables: () => Promise<boolean>;
}

/** Which backend to use when the config does not say: iptables, unless only nftables works. */
export async function defaultIPMasqBackend(
  probes: BackendProbes = { iptables: () => iptablesFor(4).usable(), nftables: nftUsable },
): Promise<IPMasqBackend> {
  if (await probes.iptables()) return "iptables";
  return (await probes.nftables()) ? "nftables" : "iptables";
}

/** What masquerading is set up for: one attachment and its addresses. */
export interface IPMasqTarget {
  /** The container addresses, `addr/prefix`. */
  addresses: string[];
  network: string;
  ifName: string;
  containerID: string;
}

/** The rules of one family's addresses: the per-container chain, and the POSTROUTING jump per address. */
function iptablesRules(t: IPMasqTarget, cidrs: readonly IPCidr[]) {
  const chain = ipMasqChainName(t.network, t.containerID);
  const comment = ["-m", "comment", "--comment", attachmentComment(t.network, t.containerID)];
  const multicast = cidrs[0]!.ip.family === 4 ? "224.0.0.0/4" : "ff00::/8";
  const accepts = [...new Set(cidrs.map((c) => networkOf(c).text))].map((net) => ["-A", chain, "-d", net, "-j", "ACCEPT", ...comment]);
  return {
    chain,
    chainRules: [...accepts, ["-A", chain, "!", "-d", multicast, "-j", "MASQUERADE", ...comment]],
    jumps: cidrs.map((c) => ["-A", "POSTROUTING", "-s", c.ip.text, "-j", chain, ...comment]),
  };
}

/**
 * Per family: the chain `CNI-<hash>` (every destination subnet accepted, then MASQUERADE except multicast) and
 * a POSTROUTING jump per address, appended only when missing, as the Go plugin does. A new chain (the usual
 * case) costs one look-up and one iptables-restore transaction; an existing one is checked rule by rule.
 * Resolves whether anything was added.
 */
async function setupIptables(t: IPMasqTarget): Promise<boolean> {
  let changed = false;
  for (const cidrs of byFamily(t.addresses)) {
    const ipt = iptablesFor(cidrs[0]!.ip.family as IPFamilyNum);
    const { chain, chainRules, jumps } = iptablesRules(t, cidrs);
    const wanted = [...chainRules, ...jumps];
    // Over netlink (iptables-nft): the two chains read, what is missing added in one transaction.
    const listing = await ipt.listChains("nat", ["POSTROUTING", chain]);
    if (listing?.chains.includes("POSTROUTING")) {
      const have = new Set(listing.rules.map((r) => r.line));
      const exists = listing.chains.includes(chain);
      const missing = wanted.filter((rule) => !exists || !have.has(saveLine(rule[1]!, rule.slice(2))));
      if (missing.length === 0) continue;
      if (
        await ipt.addByNetlink(
          "nat",
          exists ? [] : [chain],
          missing.map((rule) => ({ chain: rule[1]!, args: rule.slice(2) })),
          `set up ${ipt.command} masquerading for ${t.containerID} (chain ${chain})`,
        )
      ) {
        changed = true;
        continue;
      }
    }
    const exists = await ipt.chainExists("nat", chain);
    const missing = [];
    for (const rule of wanted) {
      // A jump cannot exist without its chain, so a new chain needs no checks.
      if (!exists || !(await ipt.ruleExists("nat", rule[1]!, rule.slice(2)))) missing.push(rule);
    }
    if (exists && missing.length === 0) continue;
    await ipt.restore("nat", exists ? [] : [chain], missing, `set up ${ipt.command} masquerading for ${t.containerID} (chain ${chain})`);
    changed = true;
  }
  return changed;
}

/**
 * Per family: every POSTROUTING rule jumping to the container's chain (whatever its source address, so the
 * addresses need not be known), then the chain itself, in one transaction after one listing. Families
 * without a known address are both looked at.
 */
async function teardownIptables(t: IPMasqTarget): Promise<void> {
  const chain = ipMasqChainName(t.network, t.containerID);
  const known = byFamily(t.addresses).map((c) => c[0]!.ip.family as IPFamilyNum);
  for (const family of known.length ? known : ([4, 6] as const)) {
    const ipt = iptablesFor(family);
    for (let attempt = 0; ; attempt++) {
      // Over netlink (iptables-nft): the two chains, and one transaction deleting by handle.
      const listing = await ipt.listChains("nat", ["POSTROUTING", chain]);
      if (listing) {
        const jumps = listing.rules.filter((r) => r.chain === "POSTROUTING" && jumpsTo(r.line, chain));
        if (!jumps.length && !listing.chains.includes(chain)) break;
        try {
          await ipt.deleteByHandle(
            "nat",
            jumps,
            listing.chains.includes(chain) ? [chain] : [],
            `remove ${ipt.command} masquerading for ${t.containerID} (chain ${chain})`,
          );
          break;
        } catch (e) {
          if (attempt > 0) throw e;
          continue;
        }
      }
      const lines = await ipt.listTable("nat");
      const jumps = lines.filter((l) => l.startsWith("-A POSTROUTING ") && jumpsTo(l, chain));
      if (!jumps.length && !lines.includes(`-N ${chain}`)) break;
      try {
        await ipt.restore(
          "nat",
          [chain],
          [...jumps.map((l) => `-D${l.slice(2)}`), ["-X", chain]],
          `remove ${ipt.command} masquerading for ${t.containerID} (chain ${chain})`,
        );
        break;
      } catch (e) {
        if (attempt > 0) throw e; // another DEL of the same attachment raced us: look again, once
      }
    }
  }
}

/** Addresses grouped by family (IPv4 first), parsed. */
function byFamily(addresses: readonly string[]): IPCidr[][] {
  const cidrs = addresses.map((a) => parseCIDR(a));
  return [4, 6].map((f) => cidrs.filter((c) => c.ip.family === f)).filter((g) => g.length > 0);
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
    lines.push(
      `add rule inet ${NFT_TABLE} ${NFT_CHAIN} ${fam} saddr == ${canonicalIP(parsed.ip.text)} ${fam} daddr != ${networkOf(parsed).text} masquerade comment ${nftQuote(comment)}`,
    );
  }
  await nftRun(lines.join("\n") + "\n", `set up nftables masquerading for ${t.containerID}`);
}

async function deleteNftRules(handles: number[], operation: string): Promise<void> {
  if (handles.length === 0) return;
  await nftRun(handles.map((h) => `delete rule inet ${NFT_TABLE} ${NFT_CHAIN} handle ${h}`).join("\n") + "\n", operation);
}

async function teardownNftables(t: IPMasqTarget): Promise<void> {
  const rules = await rulesWithCommentPrefix(instanceHash(t.network, t.ifName, t.containerID));
  await deleteNftRules(
    rules.map((r) => r.handle),
    `remove nftables masquerading for ${t.containerID}`,
  );
}

/**
 * Installs masquerading for an attachment's addresses with the chosen backend. With none chosen: iptables,
 * unless iptables does not work here and nftables does (asked only when the iptables setup fails, which
 * leaves nothing behind: each family is one transaction, and the first one is where an unusable iptables fails).
 */
export async function setupIPMasq(t: IPMasqTarget, backend?: IPMasqBackend): Promise<void> {
  if (backend === "nftables") return setupNftables(t);
  if (backend === "iptables") {
    await setupIptables(t);
    return;
  }
  try {
    await setupIptables(t);
  } catch (e) {
    if ((await defaultIPMasqBackend()) !== "nftables") throw e;
    await setupNftables(t);
  }
}

/**
 * Whether an attachment's nftables masquerading is all there: the base chain going to the checks, and one rule
 * with the attachment's comment per address.
 */
async function nftablesComplete(t: IPMasqTarget): Promise<boolean> {
  const table = await nftListTable("inet", NFT_TABLE);
  const goesToChecks = table.rules.some((r) => r.chain === "postrouting" && JSON.stringify(r.expr).includes(`"goto":{"target":"${NFT_CHAIN}"}`));
  const comment = nftIPMasqComment(t.network, t.ifName, t.containerID);
  return goesToChecks && table.rules.filter((r) => r.chain === NFT_CHAIN && r.comment === comment).length >= t.addresses.length;
}

/**
 * Puts back what is missing of an attachment's masquerading with `backend` (the one its ADD used): iptables
 * rules are added one by one where missing, as ADD does; nftables rules are rewritten only when one is missing.
 * Resolves whether anything was put back.
 */
export async function restoreIPMasq(t: IPMasqTarget, backend: IPMasqBackend): Promise<boolean> {
  if (backend === "iptables") return setupIptables(t);
  if (await nftablesComplete(t)) return false;
  await setupNftables(t);
  return true;
}

/** What shows an attachment's masquerading is there: its chain and POSTROUTING jump per family, or the nftables chains. */
export function ipMasqMarks(t: IPMasqTarget, backend: IPMasqBackend): FirewallMark[] {
  if (backend === "nftables") return ["postrouting", NFT_CHAIN].map((chain) => ({ kind: "nftables", family: "inet", table: NFT_TABLE, chain }));
  const chain = ipMasqChainName(t.network, t.containerID);
  return byFamily(t.addresses).map((c) => ({ kind: "iptables", family: c[0]!.ip.family as IPFamilyNum, table: "nat", chain, from: "POSTROUTING" }));
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
    if (await iptablesFor(4).usable()) errors.push(messageOf(e));
  }
  try {
    await teardownNftables(t);
  } catch (e) {
    if (await nftUsable()) errors.push(messageOf(e));
  }
  if (errors.length) throw failure(errors.join("\n"));
}

/**
 * GC for both backends: removes this network's masquerading for attachments that are not valid any more.
 * nftables rules carry the attachment hash in their comment; iptables POSTROUTING jumps carry
 * `name: "<net>" id: "<id>"`, which names the container (the iptables backend ignores the ifname, as Go's).
 */
export async function gcIPMasq(network: string, valid: readonly GCAttachment[]): Promise<void> {
  const keep = new Set(valid.map((a) => nftIPMasqComment(network, a.ifname, a.containerID)));
  const rules = await rulesWithCommentPrefix(networkHash(network));
  await deleteNftRules(
    rules.filter((r) => !keep.has(r.comment ?? "")).map((r) => r.handle),
    `garbage-collect nftables masquerading of ${network}`,
  );

  const liveContainers = new Set(valid.map((a) => a.containerID));
  const stale = new Set<string>();
  for (const family of [4, 6] as const) {
    const ipt = iptablesFor(family);
    if (!(await ipt.usable())) continue;
    for (const line of await ipt.listTable("nat")) {
      if (!line.startsWith("-A POSTROUTING ")) continue;
      const m = /--comment "name: \\"([^"\\]*)\\" id: \\"([^"\\]*)\\""/.exec(line);
      if (m && m[1] === network && !liveContainers.has(m[2]!)) stale.add(m[2]!);
    }
  }
  for (const containerID of stale) await teardownIptables({ network, containerID, ifName: "", addresses: [] });
}
