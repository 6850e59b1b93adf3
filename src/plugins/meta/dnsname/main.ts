/**
 * dnsname: containers on a network find each other by name. Chained after the bridge plugin, it gives the
 * network one dnsmasq, listening only on the bridge, that answers for each container's name (CNI_ARGS
 * K8S_POD_NAME) and aliases (capability `aliases`) under `domainName`, and points the container's DNS at the bridge.
 * Config, files, file formats and lock are containers/dnsname 1.3.1's (state.ts), so one network can be served by
 * Go's plugin and ours at once.
 *
 * Differences from the Go plugin, on purpose: names and aliases that are not DNS names are refused (Go writes
 * anything into the hosts file); a failed ADD leaves nothing behind; CHECK looks in the network's directory (Go's
 * looks in the parent, so it always fails) and checks the container's lines; DEL removes exactly this attachment's
 * lines (by address and name; from a record when there is no prevResult) and the firewall rules with the last one,
 * and a DEL or GC that finds nothing to remove still has a running dnsmasq reread the hosts file (the call it
 * repeats may have been cut short before its SIGHUP);
 * only a process that is dnsmasq with the network's config is signalled; STATUS and GC. dnsmasq, the bridge's
 * addresses and the INPUT rules are reached through host.ts.
 * @module
 */

import { loadPluginConf } from "#skel/conf.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { ErrorCode, failure } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { type Attachment, attachmentOf, DNSNAME_SCHEMA, type DnsnameConf, loadDelConf, loadDnsnameConf } from "./config.js";
import { renderConf } from "./dnsmasq.js";
import { dnsFamilies, type InputRule } from "./firewall.js";
import { dnsnameHost } from "./host.js";
import { type AttachmentRecord, hostsLine, isAttachment, type LineOwner, lineAddress, linesName, ownsLine } from "./hosts.js";
import {
  baseDir,
  confOf,
  type NetworkDir,
  type NetworkState,
  networkDir,
  readState,
  removeNetworkDir,
  withNetworkLock,
  writeConfIfMissing,
  writeState,
} from "./state.js";

const warn = (args: CmdArgs, msg: string) => args.stderr.write(`dnsname: ${msg}\n`);

/** The prevResult with the bridge's addresses first among the nameservers and the domain among the search domains. */
function withDns(prev: Result100, nameservers: readonly string[], domain: string): Result100 {
  const dns = { ...prev.dns };
  const servers = [...nameservers, ...(dns.nameservers ?? []).filter((s) => !nameservers.includes(s))];
  if (servers.length) dns.nameservers = servers;
  dns.search = [...(dns.search ?? []).filter((s) => s !== domain), domain];
  return { ...prev, dns };
}

/** Tears a network down with its last line: dnsmasq stopped, its firewall rules (unless shared) and directory removed. */
async function teardown(args: CmdArgs, d: NetworkDir, s: NetworkState, fallbackBridge?: string): Promise<void> {
  const host = dnsnameHost();
  await host.stopDnsmasq(d).catch((e: Error) => warn(args, `cannot stop dnsmasq of network ${d.network}: ${e.message}`));
  const bridge = confOf(s).interface ?? fallbackBridge;
  await host.removeDnsRulesUnlessShared(d, bridge, (m) => warn(args, m));
  removeNetworkDir(d);
}

/**
 * Writes the new lines and records, then has dnsmasq reread them; with no line left, tears the network down
 * instead. A failure to reload is only a warning (DEL and GC go on).
 */
async function commit(
  args: CmdArgs,
  d: NetworkDir,
  s: NetworkState,
  lines: string[],
  records: AttachmentRecord[],
  binary: string | undefined,
): Promise<void> {
  if (lines.length === 0) return teardown(args, d, s);
  writeState(d, lines, records);
  if (!binary) return;
  await dnsnameHost()
    .reloadDnsmasq(binary, d)
    .catch((e: Error) => warn(args, `cannot reload dnsmasq of network ${d.network}: ${e.message}`));
}

/**
 * With the files as they should be already (a DEL or GC repeated), has a running dnsmasq reread them anyway: the call
 * that wrote them may have been cut short before its SIGHUP, leaving dnsmasq serving the old lines.
 */
async function refresh(args: CmdArgs, d: NetworkDir): Promise<void> {
  const host = dnsnameHost();
  if (host.runningDnsmasq(d) === undefined) return;
  await host.reloadDnsmasq(host.dnsmasqBinary(), d).catch((e: Error) => warn(args, `cannot reload dnsmasq of network ${d.network}: ${e.message}`));
}

const dnsmasqIfThere = (): string | undefined => {
  try {
    return dnsnameHost().dnsmasqBinary();
  } catch {
    return undefined;
  }
};

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadDnsnameConf(args.stdinData, args.args);
  const a = n.attachment;
  const binary = dnsnameHost().dnsmasqBinary();
  const nameservers = await dnsnameHost().nameservers(a.bridge);
  const d = networkDir(baseDir(args.env), n.conf.name);
  await withNetworkLock(d, true, () => addLocked(args, n, a, d, binary));
  return withDns(n.prevResult, nameservers, n.domainName);
}

/**
 * ADD under the network's lock. The attachment's earlier lines (a repeated ADD) and any line of its addresses (left by
 * a container that is gone: an address has one owner) are replaced. On failure, what this call changed is undone.
 */
async function addLocked(args: CmdArgs, n: DnsnameConf, a: Attachment, d: NetworkDir, binary: string): Promise<void> {
  const before = readState(d);
  // An existing dnsmasq.conf is kept (as Go), and its interface is the one dnsmasq listens on.
  const listensOn = writeConfIfMissing(d, renderConf(d, n.domainName, a.bridge)) ? a.bridge : (confOf(before).interface ?? a.bridge);
  let inserted: InputRule[] = [];
  try {
    inserted = await dnsnameHost().acceptDns(listensOn, dnsFamilies(a.addresses), (m) => warn(args, m));
    const earlier = before.records.find((r) => isAttachment(r, args.containerID, args.ifName));
    const replaced: LineOwner[] = [{ addresses: a.addresses }, ...(earlier ? [earlier] : [])];
    const lines = [
      ...before.lines.filter((l) => !replaced.some((o) => ownsLine(o, l))),
      ...a.addresses.map((address) => hostsLine(address, n.podName, n.aliases)),
    ];
    const kept = new Set(lines.map(lineAddress));
    const records = [
      ...before.records.filter((r) => !isAttachment(r, args.containerID, args.ifName) && r.addresses.some((x) => kept.has(x))),
      { containerID: args.containerID, ifName: args.ifName, name: n.podName, aliases: n.aliases, addresses: a.addresses },
    ];
    writeState(d, lines, records);
    await dnsnameHost().reloadDnsmasq(binary, d);
  } catch (e) {
    await undoAdd(args, d, before, inserted).catch((u: Error) => warn(args, `undoing a failed ADD: ${u.message}`));
    throw e;
  }
}

/** Puts the network back as it was before a failed ADD: empty before means nothing at all. */
async function undoAdd(args: CmdArgs, d: NetworkDir, before: NetworkState, inserted: readonly InputRule[]): Promise<void> {
  const host = dnsnameHost();
  if (before.lines.length === 0) {
    await host.stopDnsmasq(d).catch((e: Error) => warn(args, `cannot stop dnsmasq of network ${d.network}: ${e.message}`));
    await host.removeRules(inserted, (m) => warn(args, m));
    removeNetworkDir(d);
    return;
  }
  writeState(d, before.lines, before.records);
  if (host.runningDnsmasq(d) !== undefined) await host.reloadDnsmasq(host.dnsmasqBinary(), d);
}

/** CHECK: the network's dnsmasq runs with this bridge and domain, and its hosts file names the container at each address. */
async function check(args: CmdArgs): Promise<void> {
  const n = loadDnsnameConf(args.stdinData, args.args);
  const a = n.attachment;
  dnsnameHost().dnsmasqBinary();
  const d = networkDir(baseDir(args.env), n.conf.name);
  const problems = await withNetworkLock(d, false, async () => {
    const s = readState(d);
    const found: string[] = [];
    if (s.confText === undefined) return [`${d.conf} is missing`];
    const conf = confOf(s);
    if (conf.interface !== a.bridge) found.push(`dnsmasq listens on ${conf.interface ?? "no interface"}, not on the bridge ${a.bridge}`);
    if (conf.domain !== n.domainName) found.push(`dnsmasq serves domain ${conf.domain ?? "none"}, not ${n.domainName}`);
    if (dnsnameHost().runningDnsmasq(d) === undefined)
      found.push(`dnsmasq instance not running (no process in ${d.pidFile} runs dnsmasq with ${d.conf})`);
    for (const address of a.addresses) {
      if (!linesName(s.lines, address, n.podName, n.aliases))
        found.push(`${d.hosts} does not name ${address} ${[n.podName, ...n.aliases].join(" ")}`);
    }
    return found;
  });
  if (problems === undefined) throw failure(`dnsname: network ${n.conf.name} has no directory ${d.dir}`);
  if (problems.length) throw failure(`dnsname: ${problems.join("; ")}`);
}

/**
 * DEL: removes this attachment's lines — those of its addresses (its record's and the prevResult's) with its name,
 * or, when neither names an address, those of its name, as Go — and its record; succeeds when any of it is gone.
 */
async function del(args: CmdArgs): Promise<void> {
  const n = loadDelConf(args.stdinData, args.args);
  const d = networkDir(baseDir(args.env), n.network);
  let prevAttachment: Attachment | undefined;
  try {
    if (n.prevResult) prevAttachment = attachmentOf(n.prevResult);
  } catch {
    /* a prevResult without addresses or bridge: the record may still name them */
  }
  await withNetworkLock(d, false, async () => {
    const s = readState(d);
    const record = s.records.find((r) => isAttachment(r, args.containerID, args.ifName));
    const owner: LineOwner = { addresses: [...new Set([...(record?.addresses ?? []), ...(prevAttachment?.addresses ?? [])])] };
    const name = record?.name ?? n.podName;
    if (name !== undefined) owner.name = name;
    const lines = s.lines.filter((l) => !ownsLine(owner, l));
    const records = s.records.filter((r) => r !== record);
    if (lines.length === 0) return teardown(args, d, s, prevAttachment?.bridge);
    if (lines.length !== s.lines.length || records.length !== s.records.length) await commit(args, d, s, lines, records, dnsmasqIfThere());
    else await refresh(args, d);
  });
}

/** STATUS: ready when dnsmasq can be run (code 50 otherwise). */
async function status(args: CmdArgs): Promise<void> {
  loadPluginConf(args.stdinData);
  dnsnameHost().dnsmasqBinary(ErrorCode.PluginNotAvailable);
}

/**
 * GC: removes the lines of the attachments recorded on this network that are not in `cni.dev/valid-attachments`
 * (lines no record names, such as those Go's plugin wrote, are left alone). Without the list nothing is known to
 * be stale.
 */
async function gc(args: CmdArgs): Promise<void> {
  const { conf } = loadPluginConf(args.stdinData);
  const valid = conf.validAttachments;
  if (!valid) return;
  const d = networkDir(baseDir(args.env), conf.name);
  await withNetworkLock(d, false, async () => {
    const s = readState(d);
    const stale = s.records.filter((r) => !valid.some((v) => v.containerID === r.containerID && v.ifname === r.ifName));
    if (stale.length === 0) return refresh(args, d);
    const lines = s.lines.filter((l) => !stale.some((r) => ownsLine(r, l)));
    await commit(
      args,
      d,
      s,
      lines,
      s.records.filter((r) => !stale.includes(r)),
      dnsmasqIfThere(),
    );
  });
}

export const plugin: PluginModule = {
  funcs: { add, check, del, status, gc },
  config: { schema: DNSNAME_SCHEMA, parse: (stdin, cniArgs) => loadDnsnameConf(stdin, cniArgs) },
};
