/**
 * ipMasq: masquerade traffic from a container's addresses to anything outside its subnet (bridge and ptp
 * `ipMasq: true`). Two backends with the Go plugins' exact object names, so either implementation removes
 * the other's rules: iptables (chain `CNI-<hash>` per container) and nftables (table
 * `inet cni_plugins_masquerade`, one commented rule per attachment).
 * @module
 */
import { canonicalIP, type IPCidr, networkOf, parseCIDR } from "#ip/ip.js";
import type { GCAttachment } from "#spec/config.js";
import { attachmentComment, ipMasqChainName, nftAttachmentComment, nftAttachmentHash, nftNetworkHash } from "../names.js";
import {
  type AttachmentRules,
  type FirewallKind,
  type NetworkGarbage,
  onEveryEngine,
  type RuleEngines,
  withDefaultFirewall,
} from "./firewall-driver.js";
import { type IPFamilyNum, iptablesFor } from "./iptables.js";
import { ensureRules, type IptablesRule, missingFrom, readTable, removeRules } from "./iptables-rules.js";
import { nftListRules, nftListTable, nftQuote, nftRun } from "./nftables.js";

/** Which engine masquerading uses. */
export type IPMasqBackend = FirewallKind;

const NFT_TABLE = "cni_plugins_masquerade";
const NFT_CHAIN = "masq_checks";
/** Go's names for the hashes and comments of nftables masquerading rules (shared with the firewall). */
const networkHash = nftNetworkHash;
const instanceHash = nftAttachmentHash;
export const nftIPMasqComment = nftAttachmentComment;

/** What masquerading is set up for: one attachment and its addresses. */
export interface IPMasqTarget {
  /** The container addresses, `addr/prefix`. */
  addresses: string[];
  network: string;
  ifName: string;
  containerID: string;
}

/** The rules of one family's addresses: every destination subnet accepted, then MASQUERADE except multicast; a POSTROUTING jump per address. */
function iptablesRules(t: IPMasqTarget, cidrs: readonly IPCidr[]): { chain: string; rules: IptablesRule[] } {
  const chain = ipMasqChainName(t.network, t.containerID);
  const comment = ["-m", "comment", "--comment", attachmentComment(t.network, t.containerID)];
  const multicast = cidrs[0]!.ip.family === 4 ? "224.0.0.0/4" : "ff00::/8";
  const accepts = [...new Set(cidrs.map((c) => networkOf(c).text))].map((net) => ({ chain, args: ["-d", net, "-j", "ACCEPT", ...comment] }));
  return {
    chain,
    rules: [
      ...accepts,
      { chain, args: ["!", "-d", multicast, "-j", "MASQUERADE", ...comment] },
      ...cidrs.map((c) => ({ chain: "POSTROUTING", args: ["-s", c.ip.text, "-j", chain, ...comment] })),
    ],
  };
}

/**
 * Per family: the chain `CNI-<hash>` and its rules, and a POSTROUTING jump per address, appended only when
 * missing, as the Go plugin does. A new chain (the usual case) costs one look-up and one transaction
 * (net/iptables-rules). Resolves whether anything was added.
 */
async function setupIptables(t: IPMasqTarget): Promise<boolean> {
  let changed = false;
  for (const cidrs of byFamily(t.addresses)) {
    const ipt = iptablesFor(cidrs[0]!.ip.family as IPFamilyNum);
    const { chain, rules } = iptablesRules(t, cidrs);
    const operation = `set up ${ipt.command} masquerading for ${t.containerID} (chain ${chain})`;
    const added = await ensureRules(ipt, "nat", [chain, ...rules], operation, ["POSTROUTING", chain]);
    changed ||= added.chains.length + added.rules.length > 0;
  }
  return changed;
}

/** What CHECK would miss of an attachment's iptables masquerading. */
async function checkIptables(t: IPMasqTarget): Promise<string[]> {
  const problems: string[] = [];
  for (const cidrs of byFamily(t.addresses)) {
    const ipt = iptablesFor(cidrs[0]!.ip.family as IPFamilyNum);
    const { chain, rules } = iptablesRules(t, cidrs);
    const listing = await readTable(ipt, "nat", ["POSTROUTING", chain]);
    if (!listing.chains.has(chain)) {
      problems.push(`chain ${chain} not found in ${ipt.command} table nat`);
      continue;
    }
    const missing = await missingFrom(ipt, "nat", listing, [chain, ...rules]);
    problems.push(...missing.rules.map((r) => `rule "${r.args.join(" ")}" not found in chain ${r.chain} of ${ipt.command} table nat`));
  }
  return problems;
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
    await removeRules(ipt, "nat", { chains: [chain] }, `remove ${ipt.command} masquerading for ${t.containerID} (chain ${chain})`, {
      scope: ["POSTROUTING", chain],
    });
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
 * Whether an attachment's nftables masquerading is all there: the base chain going to the checks, and one rule
 * with the attachment's comment per address.
 */
async function checkNftables(t: IPMasqTarget): Promise<string[]> {
  const table = await nftListTable("inet", NFT_TABLE);
  const goesToChecks = table.rules.some((r) => r.chain === "postrouting" && JSON.stringify(r.expr).includes(`"goto":{"target":"${NFT_CHAIN}"}`));
  const comment = nftIPMasqComment(t.network, t.ifName, t.containerID);
  const problems = goesToChecks ? [] : [`chain postrouting of nftables table inet ${NFT_TABLE} does not go to ${NFT_CHAIN}`];
  if (table.rules.filter((r) => r.chain === NFT_CHAIN && r.comment === comment).length < t.addresses.length)
    problems.push(`missing masquerade rules for ${t.containerID} in chain ${NFT_CHAIN} of nftables table inet ${NFT_TABLE}`);
  return problems;
}

/** GC of nftables masquerading: rules carry the attachment's hash in their comment. */
async function collectNftables({ network, valid }: NetworkGarbage): Promise<void> {
  const keep = new Set(valid.map((a) => nftIPMasqComment(network, a.ifname, a.containerID)));
  const rules = await rulesWithCommentPrefix(networkHash(network));
  await deleteNftRules(
    rules.filter((r) => !keep.has(r.comment ?? "")).map((r) => r.handle),
    `garbage-collect nftables masquerading of ${network}`,
  );
}

/**
 * GC of iptables masquerading: POSTROUTING jumps carry `name: "<net>" id: "<id>"`, which names the container
 * (the iptables rules ignore the ifname, as Go's). Families whose iptables does not work are skipped.
 */
async function collectIptables({ network, valid }: NetworkGarbage): Promise<void> {
  const liveContainers = new Set(valid.map((a) => a.containerID));
  const stale = new Set<string>();
  for (const family of [4, 6] as const) {
    const ipt = iptablesFor(family);
    if (!(await ipt.usable())) continue;
    const nat = await readTable(ipt, "nat", ["POSTROUTING"], { whole: ["POSTROUTING"] });
    for (const { chain, line } of nat.rules) {
      if (chain !== "POSTROUTING") continue;
      const m = /--comment "name: \\"([^"\\]*)\\" id: \\"([^"\\]*)\\""/.exec(line);
      if (m && m[1] === network && !liveContainers.has(m[2]!)) stale.add(m[2]!);
    }
  }
  for (const containerID of stale) await teardownIptables({ network, containerID, ifName: "", addresses: [] });
}

/** An attachment's masquerading, in one engine. */
export type IPMasqRules = AttachmentRules<IPMasqTarget>;

/** Masquerading in each engine, with the Go plugins' object names (so either implementation removes the other's). */
export const ipMasqRules: RuleEngines<IPMasqRules> = {
  iptables: {
    name: "iptables",
    add: setupIptables,
    check: checkIptables,
    restore: setupIptables,
    marks: (t) => {
      const chain = ipMasqChainName(t.network, t.containerID);
      return byFamily(t.addresses).map((c) => ({
        kind: "iptables",
        family: c[0]!.ip.family as IPFamilyNum,
        table: "nat",
        chain,
        from: "POSTROUTING",
      }));
    },
    remove: teardownIptables,
    collect: collectIptables,
  },
  nftables: {
    name: "nftables",
    add: async (t) => {
      await setupNftables(t);
      return true;
    },
    check: checkNftables,
    // The nftables rules are rewritten only when one is missing.
    restore: async (t) => {
      if ((await checkNftables(t)).length === 0) return false;
      await setupNftables(t);
      return true;
    },
    marks: () => ["postrouting", NFT_CHAIN].map((chain) => ({ kind: "nftables", family: "inet", table: NFT_TABLE, chain })),
    remove: teardownNftables,
    collect: collectNftables,
  },
};

/**
 * Installs masquerading for an attachment's addresses with the configured engine; with none, iptables, unless it
 * does not work here and nftables does (asked only when the iptables setup fails, which leaves nothing behind).
 */
export async function setupIPMasq(t: IPMasqTarget, backend?: IPMasqBackend): Promise<void> {
  await withDefaultFirewall(ipMasqRules, backend, (r) => r.add(t));
}

/** Removes an attachment's masquerading from both engines (the rules may have been made by either). */
export const teardownIPMasq = (t: IPMasqTarget): Promise<void> => onEveryEngine(ipMasqRules, (r) => r.remove(t));

/** GC in both engines: removes this network's masquerading for attachments that are not valid any more. */
export const gcIPMasq = (network: string, valid: readonly GCAttachment[]): Promise<void> =>
  onEveryEngine(ipMasqRules, (r) => r.collect({ network, valid }));
