/**
 * firewall: lets traffic to and from the container's addresses through the host's forwarding filter, with
 * the Go plugin's iptables rules (CNI-FORWARD, the admin chain, per-address accepts), an nftables table of its
 * own, or firewalld zone sources; `ingressPolicy` same-bridge or isolated also isolates the container's bridge.
 *
 * Beyond the Go plugin: an unknown backend or ingress policy is a config error before anything changes (the
 * Go plugin falls back to the default backend, or fails after adding rules); CHECK does not create chains;
 * a record of each attachment's addresses lets DEL work without a prevResult and GC remove the rules of
 * attachments the runtime no longer has; STATUS reports whether the backend is usable.
 * @module
 */

import { liveFirewallProbes } from "#net/firewall/firewall-driver.js";
import { Firewalld } from "#net/firewall/firewalld.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig, pluginNotAvailable } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { type Attachment, selectBackend } from "./backends.js";
import { FIREWALL_SCHEMA, type FirewallConf, loadFirewallConf } from "./config.js";
import { hostCidr } from "./iptables.js";
import { listRecords, readRecord, recordedNetworks, removeRecord, unreadableRecords, writeRecord } from "./records.js";

/** The attachment from the config and environment; the ingress policy needs the bridge (prevResult interface 0). */
export function attachmentOf(n: FirewallConf, args: Pick<CmdArgs, "containerID" | "ifName">, prev: Result100): Attachment {
  const a: Attachment = {
    network: n.conf.name,
    containerID: args.containerID,
    ifName: args.ifName,
    addresses: (prev.ips ?? []).map((i) => i.address),
  };
  if (n.ingressPolicy !== "open") {
    const bridge = prev.interfaces?.[0]?.name;
    if (!bridge) {
      throw invalidConfig(
        `"ingressPolicy": "${n.ingressPolicy}" needs the bridge as the prevResult's first interface`,
        "chain the firewall plugin after the bridge plugin",
      );
    }
    a.isolation = { bridge, policy: n.ingressPolicy };
  }
  return a;
}

export function requirePrev(n: FirewallConf): Result100 {
  if (!n.prevResult)
    throw invalidConfig("missing prevResult from earlier plugin", "the firewall plugin must be chained after a plugin that reports addresses");
  return n.prevResult;
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadFirewallConf(args.stdinData);
  const prev = requirePrev(n);
  const a = attachmentOf(n, args, prev);
  const backend = await selectBackend(n, new Firewalld(undefined, args.env));
  // The record comes first, so a crash half-way still leaves GC something to find.
  writeRecord(n.dataDir, a.network, {
    containerID: a.containerID,
    ifName: a.ifName,
    backend: backend.name,
    addresses: a.addresses,
    ...(backend.name === "firewalld" ? { zone: n.firewalldZone } : {}),
  });
  try {
    await backend.add(a);
  } catch (e) {
    removeRecord(n.dataDir, a.network, a.containerID, a.ifName);
    throw e;
  }
  return prev;
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadFirewallConf(args.stdinData);
  const a = attachmentOf(n, args, requirePrev(n));
  const backend = await selectBackend(n, new Firewalld(undefined, args.env));
  const problems = await backend.check(a);
  if (problems.length) throw failure(`firewall (${backend.name}) rules are missing: ${problems.join("; ")}`);
}

/** Removes the attachment's rules: for the prevResult's addresses and those of its record (either may be missing). */
async function del(args: CmdArgs): Promise<void> {
  const n = loadFirewallConf(args.stdinData);
  const record = readRecord(n.dataDir, n.conf.name, args.containerID, args.ifName);
  const addresses = new Map<string, string>();
  for (const address of [...(n.prevResult?.ips ?? []).map((i) => i.address), ...(record?.addresses ?? [])]) addresses.set(hostCidr(address), address);
  const backend = await selectBackend(n, new Firewalld(undefined, args.env));
  await backend.remove({ network: n.conf.name, containerID: args.containerID, ifName: args.ifName, addresses: [...addresses.values()] });
  removeRecord(n.dataDir, n.conf.name, args.containerID, args.ifName);
}

/** Ready when the backend can be used: iptables or nft works, or firewalld runs. */
async function status(args: CmdArgs): Promise<void> {
  const n = loadFirewallConf(args.stdinData);
  const firewalldRuns = n.backend === undefined || n.backend === "firewalld" ? await new Firewalld(undefined, args.env).running() : false;
  const backend = n.backend ?? (firewalldRuns ? "firewalld" : "iptables");
  const usable = backend === "firewalld" ? firewalldRuns : await liveFirewallProbes[backend]();
  if (!usable) throw pluginNotAvailable(`the firewall backend "${backend}" is not usable on this host`);
}

/**
 * Removes the rules of every recorded attachment of this network that is not in `cni.dev/valid-attachments`
 * (with nftables also unrecorded ones, found by their comments). Addresses that a live attachment's record
 * still names, in any network, are left alone.
 */
async function gc(args: CmdArgs): Promise<void> {
  const n = loadFirewallConf(args.stdinData);
  const network = n.conf.name;
  const valid = n.conf.validAttachments ?? [];
  const isValid = (containerID: string, ifName: string) => valid.some((v) => v.containerID === containerID && v.ifname === ifName);
  const records = listRecords(n.dataDir, network);
  const stale = records.filter((r) => !isValid(r.containerID, r.ifName));
  const claimed = new Set<string>();
  for (const other of recordedNetworks(n.dataDir)) {
    for (const r of other === network ? records.filter((r) => isValid(r.containerID, r.ifName)) : listRecords(n.dataDir, other)) {
      for (const address of r.addresses) claimed.add(hostCidr(address));
    }
  }
  const backend = await selectBackend(n, new Firewalld(undefined, args.env));
  await backend.collect({ network, valid, stale, claimed });
  for (const r of stale) removeRecord(n.dataDir, network, r.containerID, r.ifName);
  // A record that does not parse (torn by a power loss) names its attachment only by its file: when that one is not
  // valid, the record goes too (its addresses are unknown; after a reboot its rules went with the boot).
  for (const r of unreadableRecords(n.dataDir, network))
    if (!isValid(r.containerID, r.ifName)) removeRecord(n.dataDir, network, r.containerID, r.ifName);
}

export const plugin: PluginModule = {
  funcs: { add, check, del, status, gc },
  config: { schema: FIREWALL_SCHEMA, parse: loadFirewallConf },
};
