/**
 * DNS to the bridge through the host's INPUT filter: containers/dnsname inserts
 * `-I INPUT 1 -i <bridge> -p udp -m udp --dport 53 -j ACCEPT` (IPv4 only, never removed); we insert the same rule,
 * the tcp one beside it, and both in ip6tables for networks with IPv6 addresses, each only when it is not there
 * (so Go's rule and ours are one rule), and remove them with the network's last container. Without a usable
 * iptables there is no INPUT filter of iptables' to open: ADD goes on with a warning.
 * @module
 */

import { tryParseIP } from "#ip/ip.js";
import { type IPFamilyNum, iptablesFor } from "#net/firewall/iptables.js";
import { messageOf } from "#spec/errors.js";
import { type NetworkDir, otherNetworkUses } from "./state.js";

/** One rule in the filter table's INPUT chain. */
export interface InputRule {
  family: IPFamilyNum;
  rule: string[];
}

/** The accept rule for DNS over `proto` to `bridge`, as Go's dnsname words the udp one. */
const dnsRule = (bridge: string, proto: "udp" | "tcp"): string[] => ["-i", bridge, "-p", proto, "-m", proto, "--dport", "53", "-j", "ACCEPT"];

/** Every rule dnsname may have inserted for `bridge`. */
export const dnsRules = (bridge: string, families: readonly IPFamilyNum[] = [4, 6]): InputRule[] =>
  families.flatMap((family) => (["tcp", "udp"] as const).map((proto) => ({ family, rule: dnsRule(bridge, proto) })));

/** The families ADD opens DNS in for a container's addresses: IPv4 always, IPv6 when it has an IPv6 address. */
export const dnsFamilies = (addresses: readonly string[]): IPFamilyNum[] =>
  [...new Set<IPFamilyNum>([4, ...addresses.map((x) => tryParseIP(x)!.family as IPFamilyNum)])].sort();

/**
 * Inserts the accept rules for `bridge` in `families` that are missing (udp ends up first in INPUT, where Go puts
 * it); returns the ones it inserted. A family whose iptables does not work here is skipped with a warning.
 */
export async function acceptDns(bridge: string, families: readonly IPFamilyNum[], warn: (msg: string) => void): Promise<InputRule[]> {
  const inserted: InputRule[] = [];
  for (const family of families) {
    const ipt = iptablesFor(family);
    for (const r of dnsRules(bridge, [family])) {
      let added: boolean;
      try {
        added = await ipt.insertUnique("filter", "INPUT", 1, r.rule);
      } catch (e) {
        if (await ipt.usable()) throw e;
        warn(`${ipt.command} does not work here, so no INPUT rule lets DNS to ${bridge} through: ${messageOf(e)}`);
        break;
      }
      if (added) inserted.push(r);
    }
  }
  return inserted;
}

/** Removes the rules of network `d`'s bridge, unless another network's dnsmasq listens on that bridge too. */
export async function removeDnsRulesUnlessShared(d: NetworkDir, bridge: string | undefined, warn: (msg: string) => void): Promise<void> {
  if (bridge && !otherNetworkUses(d, bridge)) await removeRules(dnsRules(bridge), warn);
}

/** Deletes rules; a missing one is fine, any other failure is a warning (removal is best effort). */
export async function removeRules(rules: readonly InputRule[], warn: (msg: string) => void): Promise<void> {
  for (const r of rules) {
    const ipt = iptablesFor(r.family);
    try {
      await ipt.deleteRule("filter", "INPUT", r.rule);
    } catch (e) {
      if (await ipt.usable()) warn(`cannot remove ${ipt.command} INPUT rule ${r.rule.join(" ")}: ${messageOf(e)}`);
    }
  }
}
