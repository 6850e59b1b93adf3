/**
 * The portmap nftables backend, with the Go plugin's layout: tables `ip cni_hostport` and `ip6 cni_hostport`;
 * one DNAT rule per mapping in `hostports` and the masquerade rules in `masquerading`, each commented with
 * the bare container ID (which is how DEL finds them, so no prevResult is needed);
 * `prerouting`/`output` jump (for local destinations) to `hostports_all`, which jumps to the legacy
 * `hostip_hostports` and to `hostports`. An ADD is one `nft -f` transaction per family.
 * @module
 */
import type { IPFamily } from "#ip/ip.js";
import { NetOpError } from "#net/errors.js";
import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { type NftListing, type NftRule, nftListTable, nftQuote, nftRun } from "#net/firewall/nftables.js";
import { type ForwardTarget, familyOf, mappingFor, type PortForwarding } from "./config.js";
import { forgetForwarding, recordedContainers, recordForwarding } from "./records.js";

export const NFT_TABLE = "cni_hostport";
export const HOSTPORTS_CHAIN = "hostports";
/** Held rules with a hostIP in old Go versions; kept (and emptied of a container's rules) for upgrades. */
export const HOSTIP_HOSTPORTS_CHAIN = "hostip_hostports";
export const HOSTPORTS_ALL_CHAIN = "hostports_all";
export const MASQUERADING_CHAIN = "masquerading";
/** The chains that hold per-container rules. */
const CONTAINER_CHAINS = [HOSTPORTS_CHAIN, HOSTIP_HOSTPORTS_CHAIN, MASQUERADING_CHAIN];

const nftFamily = (family: IPFamily) => (family === 4 ? "ip" : "ip6");

/** `ip:port` or `[ip6]:port`. */
const joinHostPort = (ip: string, port: number, family: IPFamily) => (family === 4 ? `${ip}:${port}` : `[${ip}]:${port}`);

/** The nft script of an ADD for one family. */
export function forwardScript(t: ForwardTarget): string {
  const family = familyOf(t);
  const fam = nftFamily(family);
  const at = `${fam} ${NFT_TABLE}`;
  const cIP = t.container.ip.text;
  const comment = nftQuote(t.containerID);
  const entry = [...t.conditions, "fib daddr type local", "jump", HOSTPORTS_ALL_CHAIN].join(" ");
  // Priorities as numbers (dstnat = -100, srcnat = 100), as knftables writes them: older nft refuses the
  // name "dstnat" in the output hook.
  const lines = [
    `add table ${at} { comment "CNI portmap plugin" ; }`,
    `add chain ${at} ${HOSTPORTS_CHAIN}`,
    `add chain ${at} ${HOSTIP_HOSTPORTS_CHAIN}`,
    `add chain ${at} ${HOSTPORTS_ALL_CHAIN}`,
    `flush chain ${at} ${HOSTPORTS_ALL_CHAIN}`,
    `add rule ${at} ${HOSTPORTS_ALL_CHAIN} jump ${HOSTIP_HOSTPORTS_CHAIN}`,
    `add rule ${at} ${HOSTPORTS_ALL_CHAIN} jump ${HOSTPORTS_CHAIN}`,
    `add chain ${at} prerouting { type nat hook prerouting priority -100 ; }`,
    `flush chain ${at} prerouting`,
    `add rule ${at} prerouting ${entry}`,
    `add chain ${at} output { type nat hook output priority -100 ; }`,
    `flush chain ${at} output`,
    `add rule ${at} output ${entry}`,
  ];
  if (t.snat) lines.push(`add chain ${at} ${MASQUERADING_CHAIN} { type nat hook postrouting priority 100 ; }`);
  for (const m of t.mappings) {
    const { applies, destination } = mappingFor(m, family);
    if (!applies) continue;
    const dst = destination ? `${fam} daddr ${destination} ` : "";
    lines.push(
      `add rule ${at} ${HOSTPORTS_CHAIN} ${dst}${m.protocol} dport ${m.hostPort} dnat to ${joinHostPort(cIP, m.containerPort, family)} comment ${comment}`,
    );
  }
  if (t.snat) {
    // Hairpin (the container reaching itself through a host port), and localhost for IPv4; everything with masqAll.
    const source = t.masqAll ? (family === 4 ? "0.0.0.0/0" : "::/0") : cIP;
    lines.push(`add rule ${at} ${MASQUERADING_CHAIN} ${fam} saddr ${source} ${fam} daddr ${cIP} masquerade comment ${comment}`);
    if (family === 4 && !t.masqAll)
      lines.push(`add rule ${at} ${MASQUERADING_CHAIN} ${fam} saddr 127.0.0.1 ${fam} daddr ${cIP} masquerade comment ${comment}`);
  }
  return lines.join("\n") + "\n";
}

export async function forwardNftables(t: ForwardTarget): Promise<void> {
  await nftRun(forwardScript(t), `set up nftables port forwarding for ${t.containerID} (table ${nftFamily(familyOf(t))} ${NFT_TABLE})`);
}

/**
 * Restores one family's forwarding: when CHECK would find something missing, the container's rules are replaced
 * and the shared chains rewritten in one transaction (with nothing missing, nothing changes). Resolves whether it
 * did.
 */
export async function restoreNftables(t: ForwardTarget): Promise<boolean> {
  const fam = nftFamily(familyOf(t));
  const listing = await nftListTable(fam, NFT_TABLE);
  if (missingNftables(t, listing).length === 0) return false;
  const own = listing.rules.filter((r) => CONTAINER_CHAINS.includes(r.chain) && r.comment === t.containerID);
  const script = own.map((r) => `delete rule ${fam} ${NFT_TABLE} ${r.chain} handle ${r.handle}`).join("\n");
  await nftRun((script ? `${script}\n` : "") + forwardScript(t), `restore nftables port forwarding for ${t.containerID} (table ${fam} ${NFT_TABLE})`);
  return true;
}

/** What shows one family's forwarding is there: the table's chains. */
export function forwardingMarks(t: ForwardTarget): FirewallMark[] {
  const chains = [HOSTPORTS_CHAIN, HOSTPORTS_ALL_CHAIN, "prerouting", "output", ...(t.snat ? [MASQUERADING_CHAIN] : [])];
  return chains.map((chain) => ({ kind: "nftables", family: nftFamily(familyOf(t)), table: NFT_TABLE, chain }));
}

/** How many DNAT and masquerade rules an ADD makes for one family. */
export function expectedRuleCounts(t: ForwardTarget): { hostports: number; masquerading: number } {
  const family = familyOf(t);
  return {
    hostports: t.mappings.filter((m) => mappingFor(m, family).applies).length,
    masquerading: !t.snat ? 0 : family === 4 && !t.masqAll ? 2 : 1,
  };
}

const rulesOf = (rules: readonly NftRule[], chain: string, containerID: string) =>
  rules.filter((r) => r.chain === chain && r.comment === containerID);

/** A rule's expression jumps to `chain`. */
const jumps = (r: NftRule, chain: string) => JSON.stringify(r.expr).includes(`"jump":{"target":"${chain}"}`);

/**
 * What one family's forwarding lacks in a listing of its table: the chains, the jumps between them, and at
 * least as many of the container's rules as an ADD makes.
 */
function missingNftables(t: ForwardTarget, listing: NftListing): string[] {
  const at = `${nftFamily(familyOf(t))} ${NFT_TABLE}`;
  const problems: string[] = [];
  for (const chain of [HOSTPORTS_CHAIN, HOSTPORTS_ALL_CHAIN, "prerouting", "output", ...(t.snat ? [MASQUERADING_CHAIN] : [])]) {
    if (!listing.chains.includes(chain)) problems.push(`chain ${chain} not found in nftables table ${at}`);
  }
  const linked: Array<[string, string]> = [
    ["prerouting", HOSTPORTS_ALL_CHAIN],
    ["output", HOSTPORTS_ALL_CHAIN],
    [HOSTPORTS_ALL_CHAIN, HOSTIP_HOSTPORTS_CHAIN],
    [HOSTPORTS_ALL_CHAIN, HOSTPORTS_CHAIN],
  ];
  for (const [from, to] of linked) {
    if (listing.chains.includes(from) && !listing.rules.some((r) => r.chain === from && jumps(r, to)))
      problems.push(`chain ${from} of nftables table ${at} does not jump to ${to}`);
  }
  const want = expectedRuleCounts(t);
  if (rulesOf(listing.rules, HOSTPORTS_CHAIN, t.containerID).length < want.hostports) {
    problems.push(`missing hostport rules for ${t.containerID} in chain ${HOSTPORTS_CHAIN} of nftables table ${at}`);
  }
  if (rulesOf(listing.rules, MASQUERADING_CHAIN, t.containerID).length < want.masquerading) {
    problems.push(`missing masquerade rules for ${t.containerID} in chain ${MASQUERADING_CHAIN} of nftables table ${at}`);
  }
  return problems;
}

/** CHECK for one family: the entry chains and at least as many of the container's rules as an ADD makes. */
export async function checkNftables(t: ForwardTarget): Promise<string[]> {
  return missingNftables(t, await nftListTable(nftFamily(familyOf(t)), NFT_TABLE));
}

/** Whether an error says the nft tool is not installed. */
const nftMissing = (e: unknown) => e instanceof NetOpError && e.kind === "tool-missing";

/**
 * Deletes every per-container rule whose comment is one of `containerIDs`, in both families (one transaction
 * each). Like the Go plugin, this finds a container's rules by ID alone, so it needs no addresses.
 */
export async function unforwardNftables(containerIDs: readonly string[]): Promise<void> {
  if (containerIDs.length === 0) return;
  const ids = new Set(containerIDs);
  for (const family of [4, 6] as const) {
    const fam = nftFamily(family);
    for (let attempt = 0; ; attempt++) {
      let rules: NftRule[];
      try {
        rules = (await nftListTable(fam, NFT_TABLE)).rules;
      } catch (e) {
        if (nftMissing(e)) return; // no nft here: nothing can have been set up
        throw e;
      }
      const doomed = rules.filter((r) => CONTAINER_CHAINS.includes(r.chain) && r.comment !== undefined && ids.has(r.comment));
      if (doomed.length === 0) break;
      const script = doomed.map((r) => `delete rule ${fam} ${NFT_TABLE} ${r.chain} handle ${r.handle}`).join("\n") + "\n";
      try {
        await nftRun(script, `remove nftables port forwarding for ${containerIDs.join(", ")} (table ${fam} ${NFT_TABLE})`);
        break;
      } catch (e) {
        if (attempt > 0) throw e; // a concurrent DEL removed some of them first: look again, once
      }
    }
  }
}

/**
 * Port forwarding in nftables, Go's table and rules. The rules carry only the container ID, so a container is
 * recorded (records.ts) before its rules are added, for GC to tell networks apart; a record that cannot be
 * written or removed is a warning, never a failed call.
 */
/**
 * What the nftables backend asks of the kernel. The crash simulator's kernel model (src/testing/crash/stores.ts)
 * replaces it, so the backend's own code (its GC records) runs over rules the simulator can crash. Nothing in the
 * product sets it.
 */
let kernel = { forward: forwardNftables, unforward: unforwardNftables };
export function useKernelModel(model: typeof kernel | undefined): void {
  kernel = model ?? { forward: forwardNftables, unforward: unforwardNftables };
}

export const nftablesForwarding: PortForwarding = {
  name: "nftables",
  async add(t) {
    if (t.dataDir)
      await recordForwarding(t.dataDir, t.network, t.containerID).catch((e: Error) => t.warn?.(`cannot record the forwarding for GC: ${e.message}`));
    await kernel.forward(t);
    return true;
  },
  check: checkNftables,
  restore: restoreNftables,
  marks: forwardingMarks,
  async remove(o) {
    await kernel.unforward([o.containerID]);
    await forgetForwarding(o.dataDir, o.network, o.containerID).catch((e: Error) => o.warn?.(`cannot remove the GC record: ${e.message}`));
  },
  async collect(g) {
    const valid = new Set(g.valid.map((a) => a.containerID));
    const stale = (await recordedContainers(g.dataDir, g.network)).filter((id) => !valid.has(id));
    await kernel.unforward(stale);
    for (const id of stale) await forgetForwarding(g.dataDir, g.network, id);
  },
};
