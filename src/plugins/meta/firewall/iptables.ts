/**
 * The Go firewall plugin's iptables rules (filter table), with its exact chain names, comments and order, so
 * either implementation checks and removes the other's:
 *
 * ```
 * -A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD                  (inserted first)
 * -A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN      (inserted first)
 * -A CNI-FORWARD -d <ip>/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT             (per address)
 * -A CNI-FORWARD -s <ip>/32 -j ACCEPT                                                          (per address)
 * ```
 * and, for `ingressPolicy` same-bridge or isolated, the per-bridge isolation chains CNI-ISOLATION-STAGE-1/2
 * (jumped to before CNI-FORWARD). Only the per-address rules are ever removed: the chains and jumps are shared.
 * @module
 */
import { parseCIDR } from "#ip/ip.js";
import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { type IPFamilyNum, iptablesFor } from "#net/firewall/iptables.js";
import { deleteRules, ensureRules, type IptablesRule, missingFrom, readTable } from "#net/firewall/iptables-rules.js";

export const FORWARD_CHAIN = "CNI-FORWARD";
export const DEFAULT_ADMIN_CHAIN = "CNI-ADMIN";
export const ISOLATION_STAGE_1 = "CNI-ISOLATION-STAGE-1";
export const ISOLATION_STAGE_2 = "CNI-ISOLATION-STAGE-2";

export type IsolationPolicy = "same-bridge" | "isolated";

const FILTER = "filter";
const comment = (text: string) => ["-m", "comment", "--comment", text];

/** `ip/32` or `ip/128`: the rules match the container's single address. */
export function hostCidr(address: string): string {
  const ip = parseCIDR(address).ip;
  return `${ip.text}/${ip.family === 4 ? 32 : 128}`;
}

/** Addresses grouped by family, in their order. */
export function byFamily(addresses: readonly string[]): Map<IPFamilyNum, string[]> {
  const groups = new Map<IPFamilyNum, string[]>();
  for (const a of addresses) {
    const family = parseCIDR(a).ip.family as IPFamilyNum;
    groups.set(family, [...(groups.get(family) ?? []), a]);
  }
  return groups;
}

/** The two accept rules of each address: replies to it, and everything from it. */
export function addressRules(addresses: readonly string[]): IptablesRule[] {
  return addresses.flatMap((a) => {
    const ip = hostCidr(a);
    return [
      { chain: FORWARD_CHAIN, args: ["-d", ip, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"] },
      { chain: FORWARD_CHAIN, args: ["-s", ip, "-j", "ACCEPT"] },
    ];
  });
}

/** The jumps FORWARD -> CNI-FORWARD -> admin chain, each first in its chain. */
export function jumpRules(adminChain: string): IptablesRule[] {
  return [
    { chain: "FORWARD", args: [...comment("CNI firewall plugin rules"), "-j", FORWARD_CHAIN], position: "first" },
    { chain: FORWARD_CHAIN, args: [...comment("CNI firewall plugin admin overrides"), "-j", adminChain], position: "first" },
  ];
}

const SHARED_COMMENT = "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)";
/** What Go 1.1.1 (same-bridge only) wrote on every isolation rule: counts as the same rule. */
const OLD_COMMENT = "CNI firewall plugin rules (ingressPolicy: same-bridge)";

/**
 * The isolation rules of one bridge, in the order the Go plugin adds them: the FORWARD jump (first), stage 1
 * "from this bridge to elsewhere: stage 2" (first), for `isolated` also "within this bridge: drop" (first),
 * stage 1's final RETURN, stage 2 "to this bridge: drop" (first) and its final RETURN. Rules that Go 1.1.1
 * wrote with its older comment count as present.
 */
export function isolationRules(bridge: string, policy: IsolationPolicy): IptablesRule[] {
  const policyComment = `CNI firewall plugin rules (ingressPolicy: ${policy})`;
  const shared = (chain: string, args: string[], position: "first" | "last"): IptablesRule => ({
    chain,
    args: [...args.slice(0, -2), ...comment(SHARED_COMMENT), ...args.slice(-2)],
    position,
    alternatives: [[...args.slice(0, -2), ...comment(OLD_COMMENT), ...args.slice(-2)]],
  });
  // Go 1.1.1's comment on these was the same-bridge one, which is this one for same-bridge.
  const own = (chain: string, args: string[]): IptablesRule => ({
    chain,
    args: [...args.slice(0, -2), ...comment(policyComment), ...args.slice(-2)],
    position: "first",
  });
  const rules = [
    shared("FORWARD", ["-j", ISOLATION_STAGE_1], "first"),
    own(ISOLATION_STAGE_1, ["-i", bridge, "!", "-o", bridge, "-j", ISOLATION_STAGE_2]),
  ];
  if (policy === "isolated") rules.push(own(ISOLATION_STAGE_1, ["-i", bridge, "-o", bridge, "-j", "DROP"]));
  rules.push(
    shared(ISOLATION_STAGE_1, ["-j", "RETURN"], "last"),
    shared(ISOLATION_STAGE_2, ["-o", bridge, "-j", "DROP"], "first"),
    shared(ISOLATION_STAGE_2, ["-j", "RETURN"], "last"),
  );
  return rules;
}

export interface FirewallSpec {
  /** The container's addresses (`addr/prefix`); they also decide which families (iptables, ip6tables) get rules. */
  addresses: readonly string[];
  adminChain: string;
  /** False: only the isolation rules (the firewalld backend's ingress policy). Default true. */
  forward?: boolean;
  /** Isolate the container's bridge from other isolated bridges (ingressPolicy). */
  isolation?: { bridge: string; policy: IsolationPolicy };
}

/** Per family that has an address: the chains and the rules, in the order they are added. */
export function firewallPlan(spec: FirewallSpec): Map<IPFamilyNum, { chains: string[]; rules: IptablesRule[] }> {
  const plan = new Map<IPFamilyNum, { chains: string[]; rules: IptablesRule[] }>();
  for (const [family, addresses] of byFamily(spec.addresses)) {
    const forward = spec.forward ?? true;
    const chains = forward ? [FORWARD_CHAIN, spec.adminChain] : [];
    const rules = forward ? [...jumpRules(spec.adminChain), ...addressRules(addresses)] : [];
    if (spec.isolation) {
      chains.push(ISOLATION_STAGE_1, ISOLATION_STAGE_2);
      rules.push(...isolationRules(spec.isolation.bridge, spec.isolation.policy));
    }
    plan.set(family, { chains, rules });
  }
  return plan;
}

/**
 * Creates what is missing of the plan, family by family (each family in one transaction). When a family
 * fails, the per-address rules already added for the others are removed again; shared chains and jumps stay.
 * Resolves whether anything was missing (so it also restores what a firewall reload took away).
 */
export async function ensureFirewallRules(spec: FirewallSpec): Promise<boolean> {
  const added: Array<{ family: IPFamilyNum; rules: IptablesRule[] }> = [];
  let changed = false;
  try {
    for (const [family, { chains, rules }] of firewallPlan(spec)) {
      const ipt = iptablesFor(family);
      const missing = await ensureRules(ipt, FILTER, [...chains, ...rules], `add ${ipt.command} firewall rules`);
      added.push({ family, rules: missing.rules });
      changed ||= missing.chains.length + missing.rules.length > 0;
    }
    return changed;
  } catch (e) {
    for (const { family, rules } of added) {
      const own = rules.filter((r) => r.chain === FORWARD_CHAIN && !r.args.includes("--comment"));
      await deleteRules(iptablesFor(family), FILTER, own, "undo firewall rules").catch(() => undefined);
    }
    throw e;
  }
}

/** What shows the plan is there: per family, its chains with the jumps into them. */
export function firewallMarks(spec: FirewallSpec): FirewallMark[] {
  const marks: FirewallMark[] = [];
  for (const [family, { chains, rules }] of firewallPlan(spec)) {
    for (const chain of chains) {
      const from = rules.find((r) => r.args.at(-1) === chain && r.args.at(-2) === "-j")?.chain;
      marks.push({ kind: "iptables", family, table: FILTER, chain, ...(from ? { from } : {}) });
    }
  }
  return marks;
}

/** Removes the per-address rules (the shared chains, jumps and isolation rules stay). */
export async function removeAddressRules(addresses: readonly string[]): Promise<void> {
  for (const [family, group] of byFamily(addresses)) {
    const ipt = iptablesFor(family);
    await deleteRules(ipt, FILTER, addressRules(group), `remove ${ipt.command} firewall rules`);
  }
}

/** What of the plan is missing, as readable lines (empty when everything is there). */
export async function missingFirewallRules(spec: FirewallSpec): Promise<string[]> {
  const problems: string[] = [];
  for (const [family, { chains, rules }] of firewallPlan(spec)) {
    const ipt = iptablesFor(family);
    const listing = await readTable(ipt, FILTER, [...new Set(rules.map((r) => r.chain))]);
    const missing = await missingFrom(ipt, FILTER, listing, [...chains, ...rules]);
    problems.push(...missing.chains.map((c) => `${ipt.command} chain ${c} does not exist`));
    problems.push(...missing.rules.map((r) => `${ipt.command} rule "-A ${r.chain} ${r.args.join(" ")}" not found`));
  }
  return problems;
}
