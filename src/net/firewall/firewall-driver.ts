/**
 * One firewall driver for every plugin: the rules a plugin keeps for an attachment are written once per rule
 * engine (iptables, nftables) behind {@link AttachmentRules}, and a call picks its engine once, here, with
 * {@link firewallFor} (as Go's portmap picks a `PortMapper` and netavark a `FirewallDriver`). The plugins'
 * rule code stays beside each plugin; what they share is this contract and this choice.
 *
 * The choice, as the Go plugins make it (portmap, bridge and ptp `ipMasq`): the configured engine, else
 * iptables unless iptables does not work here and nftables does. DEL and GC remove what either engine may have
 * made (a Go plugin with another default, a config that changed) with {@link onEveryEngine}. An ADD whose
 * iptables attempt leaves nothing behind when it fails can skip the question on the usual path with
 * {@link withDefaultFirewall}. dnsname's INPUT rules are not here: they are a network's, and they have no nftables
 * form (an accept in a table of ours cannot let through what another table drops), so they stay iptables rules.
 * @module
 */
import type { GCAttachment } from "#spec/config.js";
import { failure, messageOf } from "#spec/errors.js";
import type { FirewallMark } from "./firewall-marks.js";
import { iptablesFor } from "./iptables.js";
import { nftUsable } from "./nftables.js";

/** The rule engines a plugin's firewall code is written for. */
export type FirewallKind = "iptables" | "nftables";

/** Whether each engine works here. */
export interface FirewallProbes {
  /** Whether iptables (IPv4) works here. */
  iptables(): Promise<boolean>;
  /** Whether nftables works here. */
  nftables(): Promise<boolean>;
}

/** The kernel asked: iptables over nf_tables (or its tool), nftables by a checked dry run of `nft`. */
export const liveFirewallProbes: FirewallProbes = {
  iptables: () => iptablesFor(4).usable(),
  nftables: nftUsable,
};

/** The engine a call uses: `configured`, else iptables unless only nftables works here. */
export async function chooseFirewallKind(configured: FirewallKind | undefined, probes: FirewallProbes = liveFirewallProbes): Promise<FirewallKind> {
  if (configured) return configured;
  if (await probes.iptables()) return "iptables";
  return (await probes.nftables()) ? "nftables" : "iptables";
}

/**
 * What a plugin keeps on the host's firewall for one attachment, in one engine. `Target` is what ADD knows (the
 * addresses, the mappings), `Owner` what DEL knows (network and container; addresses only when cached), `Garbage`
 * what GC knows (the network and its valid attachments, and whatever the plugin recorded).
 */
export interface AttachmentRules<Target, Owner = Target, Garbage = NetworkGarbage, Name extends string = FirewallKind> {
  /** The engine (or, for the firewall plugin, firewalld), for messages and records. */
  readonly name: Name;
  /** Installs what is missing; resolves whether anything was added. */
  add(t: Target): Promise<boolean>;
  /** What is missing, one readable line each; empty when everything is there (CHECK). */
  check(t: Target): Promise<string[]>;
  /** Puts back what a firewall reload took; resolves whether anything was put back. */
  restore(t: Target): Promise<boolean>;
  /** The objects whose absence shows the rules were lost (net/firewall-marks). */
  marks(t: Target): FirewallMark[];
  /** Removes the attachment's rules; rules already gone are not an error. */
  remove(o: Owner): Promise<void>;
  /** Removes the rules of attachments that are not valid any more. */
  collect(g: Garbage): Promise<void>;
}

/** What GC knows of a network: its name and the attachments the runtime still has. */
export interface NetworkGarbage {
  network: string;
  valid: readonly GCAttachment[];
}

/** A plugin's rules in each engine. */
export type RuleEngines<R> = Readonly<Record<FirewallKind, R>>;

/** The implementation of `engines` a call uses (see {@link chooseFirewallKind}). */
export async function firewallFor<R>(engines: RuleEngines<R>, configured?: FirewallKind, probes: FirewallProbes = liveFirewallProbes): Promise<R> {
  return engines[await chooseFirewallKind(configured, probes)];
}

/**
 * Runs `op` with the engine a call uses, asking which works only when it must: the configured engine; else
 * iptables, and, only when that fails and nftables is then the choice here, nftables. Only for an `op` that leaves
 * nothing behind when iptables does not work (each family one transaction, the first one where it fails): it
 * saves the probe on every call of the usual host, where iptables works.
 */
export async function withDefaultFirewall<R, T>(
  engines: RuleEngines<R>,
  configured: FirewallKind | undefined,
  op: (rules: R) => Promise<T>,
  probes: FirewallProbes = liveFirewallProbes,
): Promise<T> {
  if (configured) return op(engines[configured]);
  try {
    return await op(engines.iptables);
  } catch (e) {
    if ((await chooseFirewallKind(undefined, probes)) !== "nftables") throw e;
    return op(engines.nftables);
  }
}

/**
 * Runs `op` with each engine's implementation, both even when one fails; an error counts only from an engine
 * that works here (rules cannot be in an engine that does not), and then they are reported together.
 */
export async function onEveryEngine<R>(
  engines: RuleEngines<R>,
  op: (rules: R) => Promise<void>,
  probes: FirewallProbes = liveFirewallProbes,
): Promise<void> {
  const errors: string[] = [];
  for (const kind of ["iptables", "nftables"] as const) {
    try {
      await op(engines[kind]);
    } catch (e) {
      if (await probes[kind]()) errors.push(messageOf(e));
    }
  }
  if (errors.length) throw failure(errors.join("\n"));
}
