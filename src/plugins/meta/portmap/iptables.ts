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
 * container's chain and the jumps to it in one. With iptables-nft (Debian's, Fedora's default) the table is read
 * and changed over netlink, encoded as iptables-nft encodes it, and no process is started; otherwise, or for a
 * rule or chain of a shape the netlink path does not read, `iptables -S` and `iptables-restore` do it.
 * @module
 */
import { type IPFamily, networkOf, parseCIDR } from "#ip/ip.js";
import type { FirewallMark } from "#net/firewall-marks.js";
import { type Iptables, iptablesFor } from "#net/iptables.js";
import { hashWithPrefix, MAX_CHAIN_LENGTH } from "#net/names.js";
import type { SavedRule } from "#net/nfnetlink.js";
import { failure, messageOf } from "#spec/errors.js";
import { type ForwardTarget, familyOf, mappingFor, type PortForwarding, type Protocol } from "./config.js";

export const TOP_DNAT_CHAIN = "CNI-HOSTPORT-DNAT";
export const SETMARK_CHAIN = "CNI-HOSTPORT-SETMARK";
export const MASQ_CHAIN = "CNI-HOSTPORT-MASQ";
/** The top-level chain of the long-gone per-container SNAT chains (only torn down). */
export const OLD_SNAT_CHAIN = "CNI-HOSTPORT-SNAT";
const TABLE = "nat";
const BUILTIN_CHAINS = ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"];
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

/** A rule: its chain, the arguments after the chain (as the Go plugin passes them), and how to place it. */
export interface Rule {
  chain: string;
  args: string[];
  /** Inserted at the top instead of appended. */
  prepend?: boolean;
  /** The rule as `iptables -S` prints it, when it can be predicted: lets a listing answer "does it exist". */
  listed?: string;
}

/** A chain this plugin owns, its rules, and the rules elsewhere that jump to it. */
export interface ChainSpec {
  name: string;
  rules: Rule[];
  entries: Rule[];
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
        prepend: true,
        listed: `-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j ${MASQ_CHAIN}`,
      },
    ],
  };
}

export function topDnatChain(): ChainSpec {
  const entry = (chain: string): Rule => ({
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

  const entries: Rule[] = entryPortLists(t).map(({ protocol, ports }) => ({
    chain: TOP_DNAT_CHAIN,
    args: ["-m", "comment", "--comment", comment, "-m", "multiport", "-p", protocol, "--destination-ports", ports, ...t.conditions, "-j", name],
    listed: t.conditions.length
      ? undefined
      : `-A ${TOP_DNAT_CHAIN} -p ${protocol} -m comment --comment ${quoteListed(comment)} -m multiport --dports ${ports} -j ${name}`,
  }));

  const rules: Rule[] = [];
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

/**
 * A nat table as `iptables -S` shows it: chain names and rule lines; when it was read over netlink, also each
 * rule's handle and jump, and the chains that really exist (iptables-nft makes its built-in chains on first use).
 */
export class NatListing {
  readonly chains: Set<string>;
  readonly lines: Set<string>;
  constructor(
    readonly raw: readonly string[],
    readonly saved?: { chains: readonly string[]; rules: readonly SavedRule[] },
  ) {
    this.chains = new Set([...BUILTIN_CHAINS, ...raw.filter((l) => l.startsWith("-N ")).map((l) => l.slice(3).trim())]);
    this.lines = new Set(raw.filter((l) => l.startsWith("-A ")));
  }

  /** A listing read over netlink. */
  static fromNetlink(listing: { chains: readonly string[]; rules: readonly SavedRule[] }): NatListing {
    return new NatListing([...listing.chains.map((c) => `-N ${c}`), ...listing.rules.map((r) => r.line)], listing);
  }

  /**
   * Whether the listing tells for sure that `chain` has or lacks a rule: read over netlink, and the chain is not
   * there (a built-in chain iptables-nft has not made yet) or every rule of it was read.
   */
  knowsRulesOf(chain: string): boolean {
    return !!this.saved && (!this.saved.chains.includes(chain) || this.saved.rules.every((r) => r.chain !== chain || r.readable));
  }

  /** Every rule line that jumps (`-j`/`-g`) to `chain`. */
  jumpsTo(chain: string): string[] {
    return [...this.lines].filter((l) => {
      const w = splitListedRule(l);
      return w.some((x, i) => (x === "-j" || x === "-g") && w[i + 1] === chain);
    });
  }
}

/**
 * Splits an `iptables -S` line into words: double quotes group, a backslash escapes the next character
 * (as in `--comment "dnat name: \"net\" id: \"id\""`).
 */
export function splitListedRule(line: string): string[] {
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (c === '"') {
      quoted = !quoted;
      inWord = true;
    } else if (!quoted && /\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

/** The value after `flag` in a listed rule's words. */
const wordAfter = (words: readonly string[], flag: string): string | undefined => {
  const i = words.indexOf(flag);
  return i >= 0 ? words[i + 1] : undefined;
};

/**
 * The family's iptables and its nat table as it is now: over netlink when iptables is iptables-nft, else by
 * `iptables -S` (rejects when iptables does not work for that family).
 */
async function openNat(family: IPFamily, tools = false): Promise<{ ipt: Iptables; nat: NatListing }> {
  const ipt = iptablesFor(family);
  const listing = tools ? undefined : await ipt.listChains(TABLE, "all");
  return { ipt, nat: listing ? NatListing.fromNetlink(listing) : new NatListing(await ipt.listTable(TABLE)) };
}

/** Whether a rule exists: by the listing when it predicts the line, else by `iptables -C`. */
async function ruleExists(ipt: Iptables, nat: NatListing, rule: Rule): Promise<boolean> {
  if (!nat.chains.has(rule.chain)) return false;
  if (rule.listed && nat.lines.has(rule.listed)) return true;
  if (rule.listed && nat.knowsRulesOf(rule.chain)) return false;
  return ipt.ruleExists(TABLE, rule.chain, rule.args);
}

/** What is missing of `chains`: the chains to create and the rules to add (a chain's existing rules are left alone). */
interface Missing {
  chains: string[];
  rules: Rule[];
  /** The same as iptables-restore lines, chain by chain as the Go plugin makes them (iptables-nft makes a built-in chain at its first rule). */
  lines: string[][];
}

async function missingOf(ipt: Iptables, nat: NatListing, chains: readonly ChainSpec[]): Promise<Missing> {
  const missing: Missing = { chains: [], rules: [], lines: [] };
  const add = (r: Rule) => {
    missing.rules.push(r);
    missing.lines.push(r.prepend ? ["-I", r.chain, "1", ...r.args] : ["-A", r.chain, ...r.args]);
  };
  for (const c of chains) {
    const exists = nat.chains.has(c.name);
    if (!exists) {
      missing.chains.push(c.name);
      missing.lines.push(["-N", c.name]);
    }
    for (const r of c.rules) {
      if (!exists || !(await ruleExists(ipt, nat, r))) add(r);
    }
    for (const r of c.entries) {
      // A jump to a chain made just now cannot exist yet; nor can anything in a chain made just now.
      if (!exists || missing.chains.includes(r.chain) || !(await ruleExists(ipt, nat, r))) add(r);
    }
  }
  return missing;
}

/**
 * Sets up forwarding for one family: reads the nat table, then creates the missing chains and rules in one
 * transaction (creating a chain fails if a concurrent ADD created it first; then it looks again, once; a
 * failure over netlink is tried once more with the tools). Resolves whether anything was missing, so it also
 * restores what a firewall reload took away.
 */
export async function forwardIptables(t: ForwardTarget): Promise<boolean> {
  const family = familyOf(t);
  const chains = forwardChains(t);
  const operation = (ipt: Iptables) =>
    `set up ${ipt.command} port forwarding for ${t.containerID} (chain ${dnatChainName(t.network, t.containerID)})`;
  for (let attempt = 0; ; attempt++) {
    // A third look is by the tools alone: what netlink refused twice, iptables-restore may still do.
    const { ipt, nat } = await openNat(family, attempt === 2);
    const missing = await missingOf(ipt, nat, chains);
    if (missing.chains.length === 0 && missing.rules.length === 0) return false;
    try {
      // Over netlink when every rule goes into a chain that exists (iptables makes its built-in chains) or is made here.
      const present = new Set(nat.saved?.chains ?? []);
      if (
        nat.saved &&
        missing.rules.every((r) => present.has(r.chain) || missing.chains.includes(r.chain)) &&
        (await ipt.addByNetlink(
          TABLE,
          missing.chains,
          missing.rules.map((r) => ({ chain: r.chain, args: r.args, first: !!r.prepend })),
          operation(ipt),
          true,
        ))
      ) {
        return true;
      }
      await ipt.restore(TABLE, [], missing.lines, operation(ipt));
      return true;
    } catch (e) {
      if (attempt === 2) throw e;
    }
  }
}

/**
 * CHECK for one family: the container's chain exists, and every rule an ADD would make (including the shared
 * chains' rules and jumps) is there.
 */
export async function checkIptables(t: ForwardTarget): Promise<string[]> {
  const family = familyOf(t);
  const { ipt, nat } = await openNat(family);
  const command = ipt.command;
  const name = dnatChainName(t.network, t.containerID);
  // The first thing missing only: each further rule may cost a tool's run.
  if (!nat.chains.has(name)) return [`chain ${name} not found in ${command} table ${TABLE}`];
  for (const c of forwardChains(t)) {
    if (!nat.chains.has(c.name)) return [`chain ${c.name} not found in ${command} table ${TABLE}`];
    for (const r of [...c.rules, ...c.entries]) {
      if (!(await ruleExists(ipt, nat, r))) return [`rule "${r.args.join(" ")}" not found in chain ${r.chain} of ${command} table ${TABLE}`];
    }
  }
  return [];
}

/** The restore lines that remove chains and every rule jumping to them. */
function removalLines(nat: NatListing, chains: readonly string[]): string[] {
  const lines: string[] = [];
  for (const chain of chains) {
    if (!nat.chains.has(chain)) continue;
    lines.push(...nat.jumpsTo(chain).map((l) => `-D${l.slice(2)}`), `-F ${chain}`, `-X ${chain}`);
  }
  return lines;
}

/**
 * Removes `chains` and the jumps to them over netlink, in one transaction: the jumps by handle (read from each
 * rule's verdict, whatever the rest of it holds), then the chains. False when the table was not read there.
 */
async function removeByHandle(ipt: Iptables, nat: NatListing, chains: readonly string[], operation: string): Promise<boolean> {
  if (!nat.saved) return false;
  const gone = chains.filter((c) => nat.saved!.chains.includes(c));
  const jumps = nat.saved.rules.filter((r) => r.jump !== undefined && gone.includes(r.jump) && !gone.includes(r.chain));
  return ipt.deleteByHandle(TABLE, jumps, gone, operation);
}

/**
 * Removes chains (and the jumps to them) from every family where iptables works, one transaction per
 * family; a concurrent change makes it look again, once (then with the tools). `readsChain`: the chain whose
 * rules `chainsOf` reads. An error only when no family works at all.
 */
async function removeChains(chainsOf: (nat: NatListing) => string[], what: string, needIptables = true, readsChain?: string): Promise<void> {
  const unusable: string[] = [];
  for (const family of [4, 6] as const) {
    for (let attempt = 0; ; attempt++) {
      let opened;
      try {
        opened = await openNat(family, attempt > 0);
        // chainsOf reads the rules of `readsChain`: by the tools when netlink left one of them unread.
        if (readsChain && opened.nat.saved && !opened.nat.knowsRulesOf(readsChain)) opened = await openNat(family, true);
      } catch (e) {
        unusable.push(`(${family === 4 ? "iptables" : "ip6tables"}) ${messageOf(e)}`);
        break;
      }
      const { ipt, nat } = opened;
      const chains = chainsOf(nat).filter((c) => nat.chains.has(c));
      if (chains.length === 0) break;
      const operation = `remove ${ipt.command} port forwarding ${what}`;
      try {
        if (!(await removeByHandle(ipt, nat, chains, operation))) await ipt.restore(TABLE, [], removalLines(nat, chains), operation);
        break;
      } catch (e) {
        if (attempt > 0) throw e;
      }
    }
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
export function staleDnatChains(nat: NatListing, network: string, validContainerIDs: Iterable<string>): string[] {
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
