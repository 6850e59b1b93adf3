/**
 * The firewall plugin's nftables backend (the Go plugin has none; this is the iptables design in one table
 * of its own, `inet cni_plugins_firewall`):
 *
 * ```
 * table inet cni_plugins_firewall {
 *   set ingress_policy_bridges { type ifname }          # bridges of networks with ingressPolicy same-bridge or isolated
 *   set same_bridge { type ifname . ifname }            # "br" . "br" for each of them
 *   set isolated_same_bridge { type ifname . ifname }   # "br" . "br" for bridges with ingressPolicy isolated
 *   chain forward {                                      # base chain; rewritten by every ADD
 *     type filter hook forward priority filter; policy accept;
 *     jump ingress_policy
 *     jump admin comment "CNI firewall plugin admin overrides"
 *     jump containers comment "CNI firewall plugin rules"
 *   }
 *   chain ingress_policy {                               # rewritten by every ADD
 *     iifname . oifname @isolated_same_bridge drop
 *     iifname . oifname @same_bridge return
 *     iifname @ingress_policy_bridges oifname @ingress_policy_bridges drop
 *   }
 *   chain admin { }                                      # the administrator's; never touched
 *   chain containers {                                   # two rules per container address
 *     ip daddr 10.1.0.2 ct state established,related accept comment "<attachment>"
 *     ip saddr 10.1.0.2 accept comment "<attachment>"
 *   }
 * }
 * ```
 * The ingress policy drops exactly what the iptables CNI-ISOLATION-STAGE-1/2 chains drop: traffic between two
 * different policy bridges, and for isolated bridges traffic within the bridge. Every container rule carries
 * the attachment comment `<hash(network)>-<hash(ifname:containerID)>, net: …, if: …, id: …` (the scheme of the
 * Go plugins' nftables ipMasq rules), so DEL needs no addresses and GC finds stale rules by network.
 *
 * One difference from iptables is inherent to nftables: an `accept` ends only this table's processing, so
 * these rules cannot let traffic through a `drop` in another table's forward chain (drops, such as the
 * ingress policy's and the admin chain's, are final everywhere).
 * @module
 */
import { parseCIDR } from "#ip/ip.js";
import { NetOpError } from "#net/errors.js";
import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { type NftRule, nftListTable, nftQuote, nftRun, nftSetElements } from "#net/firewall/nftables.js";
import { nftAttachmentComment, nftAttachmentHash, nftNetworkHash } from "#net/names.js";
import type { GCAttachment } from "#spec/config.js";

export const NFT_FIREWALL_TABLE = "cni_plugins_firewall";
const T = `inet ${NFT_FIREWALL_TABLE}`;
const CONTAINERS = "containers";

const instanceHash = nftAttachmentHash;
const networkHash = nftNetworkHash;

export { nftAttachmentComment };

export interface NftAttachment {
  network: string;
  ifName: string;
  containerID: string;
  /** The container's addresses (`addr/prefix`). */
  addresses: readonly string[];
  isolation?: { bridge: string; policy: "same-bridge" | "isolated" };
}

/** The two rules of each address (without the comment). */
export function nftAddressRules(addresses: readonly string[]): string[] {
  return addresses.flatMap((a) => {
    const ip = parseCIDR(a).ip;
    const proto = ip.family === 4 ? "ip" : "ip6";
    return [`${proto} daddr ${ip.text} ct state established,related accept`, `${proto} saddr ${ip.text} accept`];
  });
}

/**
 * The ADD transaction: the table, sets and chains (`add` leaves existing ones alone), the rewritten forward and
 * ingress_policy chains, the removal of this attachment's old rules (`staleHandles`), its new rules, and its
 * bridge in the ingress-policy sets.
 */
export function nftAllowScript(t: NftAttachment, staleHandles: readonly number[]): string {
  const comment = nftQuote(nftAttachmentComment(t.network, t.ifName, t.containerID));
  const lines = [
    `add table ${T}`,
    `add set ${T} ingress_policy_bridges { type ifname ; }`,
    `add set ${T} same_bridge { type ifname . ifname ; }`,
    `add set ${T} isolated_same_bridge { type ifname . ifname ; }`,
    `add chain ${T} forward { type filter hook forward priority filter ; policy accept ; }`,
    `add chain ${T} ingress_policy`,
    `add chain ${T} admin`,
    `add chain ${T} ${CONTAINERS}`,
    `flush chain ${T} forward`,
    `add rule ${T} forward jump ingress_policy`,
    `add rule ${T} forward jump admin comment "CNI firewall plugin admin overrides"`,
    `add rule ${T} forward jump ${CONTAINERS} comment "CNI firewall plugin rules"`,
    `flush chain ${T} ingress_policy`,
    `add rule ${T} ingress_policy iifname . oifname @isolated_same_bridge drop`,
    `add rule ${T} ingress_policy iifname . oifname @same_bridge return`,
    `add rule ${T} ingress_policy iifname @ingress_policy_bridges oifname @ingress_policy_bridges drop`,
    ...staleHandles.map((h) => `delete rule ${T} ${CONTAINERS} handle ${h}`),
    ...nftAddressRules(t.addresses).map((r) => `add rule ${T} ${CONTAINERS} ${r} comment ${comment}`),
  ];
  if (t.isolation) {
    const br = nftQuote(t.isolation.bridge);
    lines.push(`add element ${T} ingress_policy_bridges { ${br} }`, `add element ${T} same_bridge { ${br} . ${br} }`);
    if (t.isolation.policy === "isolated") lines.push(`add element ${T} isolated_same_bridge { ${br} . ${br} }`);
  }
  return lines.join("\n") + "\n";
}

const containerRules = async (): Promise<NftRule[]> => (await nftListTable("inet", NFT_FIREWALL_TABLE)).rules.filter((r) => r.chain === CONTAINERS);

/** Handles of the rules of one attachment. */
const handlesOf = (rules: NftRule[], t: Pick<NftAttachment, "network" | "ifName" | "containerID">): number[] => {
  const prefix = instanceHash(t.network, t.ifName, t.containerID);
  return rules.filter((r) => r.comment?.startsWith(prefix)).map((r) => r.handle);
};

/** Adds (or replaces) an attachment's rules and its bridge's ingress policy in one transaction. */
export async function nftAllow(t: NftAttachment): Promise<void> {
  const stale = handlesOf(await containerRules(), t);
  await nftRun(nftAllowScript(t, stale), `add nftables firewall rules for ${t.containerID}`);
}

/** Deletes rules by handle; a rule deleted meanwhile by someone else makes it retry on a fresh listing. */
async function deleteHandles(pick: (rules: NftRule[]) => number[], operation: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const handles = pick(await containerRules());
    if (!handles.length) return;
    try {
      await nftRun(handles.map((h) => `delete rule ${T} ${CONTAINERS} handle ${h}`).join("\n") + "\n", operation);
      return;
    } catch (e) {
      if (!(e instanceof NetOpError) || attempt >= 3) throw e;
    }
  }
}

/** Removes an attachment's rules (found by their comment; the addresses are not needed). */
export async function nftRevoke(t: Pick<NftAttachment, "network" | "ifName" | "containerID">): Promise<void> {
  await deleteHandles((rules) => handlesOf(rules, t), `remove nftables firewall rules of ${t.containerID}`);
}

/** Removes the rules of every attachment of `network` that is not in `valid`. */
export async function nftCollectGarbage(network: string, valid: readonly GCAttachment[]): Promise<void> {
  const keep = new Set(valid.map((a) => instanceHash(network, a.ifname, a.containerID)));
  const prefix = `${networkHash(network)}-`;
  const stale = (rules: NftRule[]) => rules.filter((r) => r.comment?.startsWith(prefix) && !keep.has(r.comment.slice(0, 33))).map((r) => r.handle);
  await deleteHandles(stale, `remove stale nftables firewall rules of network ${network}`);
}

/** What shows the table is there: its forward chain and the containers' chain. */
export const nftFirewallMarks = (): FirewallMark[] =>
  ["forward", CONTAINERS].map((chain) => ({ kind: "nftables", family: "inet", table: NFT_FIREWALL_TABLE, chain }));

/** The elements of a set of the firewall's table. */
const setElements = (name: string): Promise<string[]> => nftSetElements("inet", NFT_FIREWALL_TABLE, name);

/** What is missing of an attachment's rules (and its bridge's ingress policy), as readable lines. */
export async function nftMissing(t: NftAttachment): Promise<string[]> {
  const listing = await nftListTable("inet", NFT_FIREWALL_TABLE);
  if (!listing.chains.includes("forward")) return [`nftables table ${T} or its forward chain does not exist`];
  const problems: string[] = [];
  const jumps = listing.rules.filter((r) => r.chain === "forward").map((r) => JSON.stringify(r.expr));
  for (const target of ["ingress_policy", "admin", CONTAINERS]) {
    if (!jumps.some((j) => j.includes(`"jump":{"target":"${target}"}`))) problems.push(`the forward chain does not jump to ${target}`);
  }
  const own = listing.rules.filter((r) => r.chain === CONTAINERS && r.comment === nftAttachmentComment(t.network, t.ifName, t.containerID));
  for (const a of t.addresses) {
    const ip = parseCIDR(a).ip;
    for (const field of ["daddr", "saddr"]) {
      const found = own.some((r) =>
        r.expr.some((x) => {
          const m = (x as { match?: { left?: { payload?: { field?: string } }; right?: unknown } }).match;
          return m?.left?.payload?.field === field && m.right === ip.text;
        }),
      );
      if (!found) problems.push(`no rule for ${field === "daddr" ? "traffic to" : "traffic from"} ${ip.text} in chain ${CONTAINERS}`);
    }
  }
  if (t.isolation) {
    const br = t.isolation.bridge;
    const want: Array<[string, string]> = [
      ["ingress_policy_bridges", `${br}`],
      ["same_bridge", `${br} . ${br}`],
    ];
    if (t.isolation.policy === "isolated") want.push(["isolated_same_bridge", `${br} . ${br}`]);
    for (const [set, elem] of want) {
      if (!(await setElements(set)).includes(elem)) problems.push(`set ${set} lacks ${elem}`);
    }
  }
  return problems;
}
