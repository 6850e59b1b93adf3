/**
 * The portmap iptables backend, with the Go plugin's exact layout in the nat table so either implementation
 * deletes the other's rules:
 *
 * ```
 * PREROUTING, OUTPUT:  -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
 * POSTROUTING (first): -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ
 * CNI-HOSTPORT-MASQ:    -m mark --mark 0x2000/0x2000 -j MASQUERADE
 * CNI-HOSTPORT-SETMARK: -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000
 * CNI-HOSTPORT-DNAT:    -m comment --comment "dnat name: ..." -m multiport -p tcp --destination-ports 8080 -j CNI-DN-<hash>
 * CNI-DN-<hash>:        per mapping: hairpin mark (-s container subnet), localhost mark (v4), DNAT
 * ```
 *
 * An ADD reads the table once and applies what is missing in one transaction per family; DEL deletes the
 * container's chain and the jumps to it in one. How the table is read and changed (over netlink with iptables-nft,
 * else `iptables -S` and `iptables-restore`) is net/iptables-rules' business.
 * @module
 */
import { type IPFamily, networkOf, parseCIDR } from "#ip/ip.js";
import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { iptablesFor } from "#net/firewall/iptables.js";
import {
  ensureRules,
  type IptablesRule,
  readTable,
  removeRules,
  ruleExists,
  splitListedRule,
  type TableListing,
} from "#net/firewall/iptables-rules.js";
import { hashWithPrefix, MAX_CHAIN_LENGTH } from "#net/names.js";
import { failure, messageOf } from "#spec/errors.js";
import { type ForwardTarget, familyOf, mappingFor, type PortForwarding, type Protocol } from "./config.js";

export const TOP_DNAT_CHAIN = "CNI-HOSTPORT-DNAT";
export const SETMARK_CHAIN = "CNI-HOSTPORT-SETMARK";
export const MASQ_CHAIN = "CNI-HOSTPORT-MASQ";
/** The top-level chain of the long-gone per-container SNAT chains (only torn down). */
export const OLD_SNAT_CHAIN = "CNI-HOSTPORT-SNAT";
const TABLE = "nat";
/** multiport takes at most 15 ports per rule. */
const MULTIPORT_MAX = 15;
/** iptables' comment length limit. */
const COMMENT_MAX = 255;

/** The per-container DNAT chain: `CNI-DN-` + sha512(network + containerID), 28 characters. */
export const dnatChainName = (network: string, containerID: string): string => hashWithPrefix(MAX_CHAIN_LENGTH, "CNI-DN-", network + containerID);
/** The per-container SNAT chain of old Go versions (only torn down). */
export const oldSnatChainName = (network: string, containerID: string): string => hashWithPrefix(MAX_CHAIN_LENGTH, "CNI-SN-", network + containerID);

/**
 * The entry rules' comment, `dnat name: "<net>" id: "<id>"`, cut to iptables' limit with "..." (Go cuts to
 * 253 + "...", one more than iptables accepts).
 */
export function dnatComment(network: string, containerID: string): string {
  const c = `dnat name: "${network}" id: "${containerID}"`;
  return c.length <= COMMENT_MAX ? c : `${c.slice(0, COMMENT_MAX - 3)}...`;
}

/** The `--comment` prefix that identifies a network's entry rules (for GC). */
export const networkCommentPrefix = (network: string): string => `dnat name: "${network}" id: "`;

/** Go's `%#x/%#x` of the mark bit. */
export function markDef(bit: number): string {
  const hex = `0x${(2 ** bit).toString(16)}`;
  return `${hex}/${hex}`;
}

/** A chain this plugin owns, its rules, and the rules elsewhere that jump to it. */
export interface ChainSpec {
  name: string;
  rules: IptablesRule[];
  entries: IptablesRule[];
}

const quoteListed = (s: string) => `"${s.replace(/(["\\])/g, "\\$1")}"`;

/**
 * How `iptables -S` prints an address match: the network of a CIDR, or a host address with its full prefix;
 * nothing for "any" (prefix 0).
 */
function listedAddress(flag: "-s" | "-d", text: string, family: IPFamily): string {
  const cidr = text.includes("/") ? networkOf(parseCIDR(text)) : undefined;
  if (cidr?.prefix === 0) return "";
  return `${flag} ${cidr ? cidr.text : `${text}/${family === 4 ? 32 : 128}`} `;
}

export function setMarkChain(bit: number): ChainSpec {
  const args = ["-m", "comment", "--comment", "CNI portfwd masquerade mark", "-j", "MARK", "--set-xmark", markDef(bit)];
  return {
    name: SETMARK_CHAIN,
    rules: [
      {
        chain: SETMARK_CHAIN,
        args,
        listed: `-A ${SETMARK_CHAIN} -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark ${markDef(bit)}`,
      },
    ],
    entries: [],
  };
}

export function markMasqChain(bit: number): ChainSpec {
  const entry = ["-m", "comment", "--comment", "CNI portfwd requiring masquerade", "-j", MASQ_CHAIN];
  return {
    name: MASQ_CHAIN,
    rules: [
      {
        chain: MASQ_CHAIN,
        args: ["-m", "mark", "--mark", markDef(bit), "-j", "MASQUERADE"],
        listed: `-A ${MASQ_CHAIN} -m mark --mark ${markDef(bit)} -j MASQUERADE`,
      },
    ],
    // First in POSTROUTING, before the bridge and ptp plugins' masquerading rules.
    entries: [
      {
        chain: "POSTROUTING",
        args: entry,
        position: "first",
        listed: `-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j ${MASQ_CHAIN}`,
      },
    ],
  };
}

export function topDnatChain(): ChainSpec {
  const entry = (chain: string): IptablesRule => ({
    chain,
    args: ["-m", "addrtype", "--dst-type", "LOCAL", "-j", TOP_DNAT_CHAIN],
    listed: `-A ${chain} -m addrtype --dst-type LOCAL -j ${TOP_DNAT_CHAIN}`,
  });
  return { name: TOP_DNAT_CHAIN, rules: [], entries: [entry("PREROUTING"), entry("OUTPUT")] };
}

/** Host ports grouped by protocol (protocols sorted, ports in mapping order), in blocks of at most 15. */
export function entryPortLists(t: ForwardTarget): Array<{ protocol: Protocol; ports: string }> {
  const byProto = new Map<Protocol, number[]>();
  for (const m of t.mappings) byProto.set(m.protocol, [...(byProto.get(m.protocol) ?? []), m.hostPort]);
  const out: Array<{ protocol: Protocol; ports: string }> = [];
  for (const protocol of [...byProto.keys()].sort()) {
    const ports = byProto.get(protocol)!;
    for (let i = 0; i < ports.length; i += MULTIPORT_MAX) out.push({ protocol, ports: ports.slice(i, i + MULTIPORT_MAX).join(",") });
  }
  return out;
}

/**
 * The container's chain: per mapping of this family, the hairpin mark (source: the container's subnet, or
 * everything with masqAll), the localhost mark (IPv4 without masqAll), then the DNAT; and the entry rules in
 * CNI-HOSTPORT-DNAT (one per protocol and block of ports, for every mapping, with the family's conditions).
 */
export function containerChain(t: ForwardTarget): ChainSpec {
  const family = familyOf(t);
  const name = dnatChainName(t.network, t.containerID);
  const comment = dnatComment(t.network, t.containerID);
  const setMark = t.externalSetMarkChain ?? SETMARK_CHAIN;

  const entries: IptablesRule[] = entryPortLists(t).map(({ protocol, ports }) => ({
    chain: TOP_DNAT_CHAIN,
    args: ["-m", "comment", "--comment", comment, "-m", "multiport", "-p", protocol, "--destination-ports", ports, ...t.conditions, "-j", name],
    listed: t.conditions.length
      ? null
      : `-A ${TOP_DNAT_CHAIN} -p ${protocol} -m comment --comment ${quoteListed(comment)} -m multiport --dports ${ports} -j ${name}`,
  }));

  const rules: IptablesRule[] = [];
  const seen = new Set<string>();
  const push = (base: string[], listedMatch: string, extra: string[], listedTarget: string) => {
    const args = [...base, ...extra];
    const key = args.join("\0");
    if (seen.has(key)) return; // appended only once, as Go's exists-then-append does
    seen.add(key);
    rules.push({ chain: name, args, listed: `-A ${name} ${listedMatch} ${listedTarget}` });
  };
  for (const m of t.mappings) {
    const { applies, destination } = mappingFor(m, family);
    if (!applies) continue;
    const base = ["-p", m.protocol, "--dport", String(m.hostPort), ...(destination ? ["-d", destination] : [])];
    const dst = destination ? listedAddress("-d", destination, family) : "";
    const match = (src?: string) => `${src ? listedAddress("-s", src, family) : ""}${dst}-p ${m.protocol} -m ${m.protocol} --dport ${m.hostPort}`;
    if (t.snat) {
      const masqSource = t.masqAll ? (family === 4 ? "0.0.0.0/0" : "::/0") : t.container.text;
      push(base, match(masqSource), ["-s", masqSource, "-j", setMark], `-j ${setMark}`);
      if (family === 4 && !t.masqAll) push(base, match("127.0.0.1"), ["-s", "127.0.0.1", "-j", setMark], `-j ${setMark}`);
    }
    const to = family === 4 ? `${t.container.ip.text}:${m.containerPort}` : `[${t.container.ip.text}]:${m.containerPort}`;
    push(base, match(), ["-j", "DNAT", "--to-destination", to], `-j DNAT --to-destination ${to}`);
  }
  return { name, rules, entries };
}

/** The chains an ADD sets up, in the Go plugin's order (the marking chains first: the DNAT chain uses them). */
export function forwardChains(t: ForwardTarget): ChainSpec[] {
  const chains: ChainSpec[] = [];
  if (t.snat && t.externalSetMarkChain === undefined) chains.push(setMarkChain(t.markMasqBit), markMasqChain(t.markMasqBit));
  chains.push(topDnatChain(), containerChain(t));
  return chains;
}

/** The value after `flag` in a listed rule's words. */
const wordAfter = (words: readonly string[], flag: string): string | undefined => {
  const i = words.indexOf(flag);
  return i >= 0 ? words[i + 1] : undefined;
};

/**
 * Sets up forwarding for one family: reads the nat table, then creates the missing chains and rules in one
 * transaction (net/iptables-rules). Resolves whether anything was missing, so it also restores what a firewall
 * reload took away.
 */
export async function forwardIptables(t: ForwardTarget): Promise<boolean> {
  const ipt = iptablesFor(familyOf(t));
  const chains = forwardChains(t);
  const added = await ensureRules(
    ipt,
    TABLE,
    chains.flatMap((c) => [c.name, ...c.rules, ...c.entries]),
    `set up ${ipt.command} port forwarding for ${t.containerID} (chain ${dnatChainName(t.network, t.containerID)})`,
    "all",
  );
  return added.chains.length + added.rules.length > 0;
}

/**
 * CHECK for one family: the container's chain exists, and every rule an ADD would make (including the shared
 * chains' rules and jumps) is there.
 */
export async function checkIptables(t: ForwardTarget): Promise<string[]> {
  const ipt = iptablesFor(familyOf(t));
  const nat = await readTable(ipt, TABLE, "all");
  const command = ipt.command;
  const name = dnatChainName(t.network, t.containerID);
  // The first thing missing only: each further rule may cost a tool's run.
  if (!nat.chains.has(name)) return [`chain ${name} not found in ${command} table ${TABLE}`];
  for (const c of forwardChains(t)) {
    if (!nat.chains.has(c.name)) return [`chain ${c.name} not found in ${command} table ${TABLE}`];
    for (const r of [...c.rules, ...c.entries]) {
      if (!(await ruleExists(ipt, TABLE, nat, r))) return [`rule "${r.args.join(" ")}" not found in chain ${r.chain} of ${command} table ${TABLE}`];
    }
  }
  return [];
}

/**
 * Removes chains (and the jumps to them) from every family where iptables works, one transaction per family
 * (net/iptables-rules). `readsChain`: the chain whose rules `chainsOf` reads. An error only when no family works
 * at all.
 */
async function removeChains(chainsOf: (nat: TableListing) => string[], what: string, needIptables = true, readsChain?: string): Promise<void> {
  const unusable: string[] = [];
  const whole = readsChain ? [readsChain] : [];
  for (const family of [4, 6] as const) {
    const ipt = iptablesFor(family);
    let first: TableListing;
    try {
      first = await readTable(ipt, TABLE, "all", { whole });
    } catch (e) {
      unusable.push(`(${ipt.command}) ${messageOf(e)}`);
      continue;
    }
    await removeRules(ipt, TABLE, (nat) => ({ chains: chainsOf(nat) }), `remove ${ipt.command} port forwarding ${what}`, {
      scope: "all",
      whole,
      first,
    });
  }
  if (unusable.length === 2 && needIptables) throw failure(`neither iptables nor ip6tables is usable, ${unusable.join(", ")}`);
}

/** DEL: the container's chain (and the old SNAT chain) with every jump to them, found by the chain's hash. */
export function unforwardIptables(network: string, containerID: string): Promise<void> {
  const chains = [dnatChainName(network, containerID), oldSnatChainName(network, containerID)];
  return removeChains(() => chains, `for ${containerID}`);
}

/**
 * The DNAT chains of a network's attachments that are not valid: found through the entry rules, whose
 * comment names the network (its container ID may be cut short, so a chain is kept by its hash instead).
 */
export function staleDnatChains(nat: TableListing, network: string, validContainerIDs: Iterable<string>): string[] {
  const keep = new Set([...validContainerIDs].map((id) => dnatChainName(network, id)));
  const prefix = networkCommentPrefix(network);
  const stale = new Set<string>();
  for (const line of nat.lines) {
    if (!line.startsWith(`-A ${TOP_DNAT_CHAIN} `)) continue;
    const words = splitListedRule(line);
    const target = wordAfter(words, "-j");
    if (!target?.startsWith("CNI-DN-") || !wordAfter(words, "--comment")?.startsWith(prefix)) continue;
    if (!keep.has(target)) stale.add(target);
  }
  return [...stale];
}

/**
 * GC: removes the DNAT chains of the network's attachments that are not in `validContainerIDs`. Where
 * iptables does not work there is nothing to collect.
 */
export function gcIptables(network: string, validContainerIDs: Iterable<string>): Promise<void> {
  const valid = [...validContainerIDs];
  return removeChains((nat) => staleDnatChains(nat, network, valid), `of stale attachments of ${network}`, false, TOP_DNAT_CHAIN);
}

/** What shows one family's forwarding is there: every chain it uses, with the jumps into it. */
export function forwardingMarks(t: ForwardTarget): FirewallMark[] {
  return forwardChains(t).flatMap((c) => {
    const froms = [...new Set(c.entries.map((e) => e.chain))];
    return (froms.length ? froms : [undefined]).map(
      (from): FirewallMark => ({ kind: "iptables", family: familyOf(t), table: TABLE, chain: c.name, ...(from ? { from } : {}) }),
    );
  });
}

/** Port forwarding in iptables, Go's chains and rules. */
export const iptablesForwarding: PortForwarding = {
  name: "iptables",
  add: forwardIptables,
  check: checkIptables,
  restore: forwardIptables,
  marks: forwardingMarks,
  remove: (o) => unforwardIptables(o.network, o.containerID),
  collect: (g) =>
    gcIptables(
      g.network,
      g.valid.map((a) => a.containerID),
    ),
};
