/**
 * bandwidth: a chained plugin that rate-limits a container's veth with token-bucket filters on the host side.
 * Traffic into the container is shaped by a tbf on the host veth; traffic out of it is redirected from the host
 * veth's ingress to an IFB device (`bwp<hash>`) and shaped there. DEL removes the IFB (the rest goes with the
 * veth), CHECK compares the live qdiscs with the config, and GC removes IFBs of attachments the runtime no
 * longer has (an addition: the Go plugin has no GC).
 * @module
 */

import { ip } from "#net/link/links.js";
import {
  acceptedTbfBuffers,
  addIngressRedirect,
  addRootTbf,
  deleteIngressQdisc,
  deleteRootQdisc,
  listIngressRedirects,
  listQdiscs,
  type PschedClock,
  readPschedClock,
  tbfParams,
} from "#net/link/tc.js";
import { NetNS } from "#net/netns.js";
import type { Link } from "#net/types.js";
import { parsePrevResult } from "#skel/conf.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig } from "#spec/errors.js";
import { type Result, type Result100, toCurrentResult } from "#spec/result/index.js";
import { CURRENT_VERSION } from "#spec/version.js";
import {
  BANDWIDTH_SCHEMA,
  type BandwidthLimits,
  hasEgressLimit,
  hasIngressLimit,
  ifbAlias,
  ifbName,
  loadBandwidthConf,
  loadNetworkOnly,
  parseIfbAlias,
} from "./config.js";
import { createIfb, deleteIfb, listIfbs } from "./ifb.js";

/**
 * The host end of the container's veth: the peer of `ifName` in the container, which must be a host
 * interface (no sandbox) of the prevResult. Only veth-based plugins (bridge, ptp) qualify.
 */
async function findHostVeth(ns: NetNS, ifName: string, result: Result100): Promise<Link> {
  if (!result.interfaces?.length) throw failure("no interfaces provided", "the prevResult lists no interfaces");
  const container = await ip.getLink(ns, ifName);
  if (!container) throw failure(`container interface ${ifName} has no veth peer`, `there is no ${ifName} in ${ns}`);
  if (container.kind !== "veth" || !container.peerIndex) {
    throw failure(`container interface ${ifName} has no veth peer`, `it is a ${container.kind ?? "device"}, not a veth`);
  }
  const host = (await ip.listLinks(NetNS.host)).find((l) => l.index === container.peerIndex && l.kind === "veth");
  if (!host) throw failure(`veth peer with index ${container.peerIndex} is not in host ns`);
  if (!result.interfaces.some((i) => !i.sandbox && i.name === host.name)) {
    throw failure("no veth peer of container interface found in host ns", `host veth ${host.name} is not an interface of the prevResult`);
  }
  return host;
}

const isZero = (l: BandwidthLimits): boolean => !l.ingressRate && !l.ingressBurst && !l.egressRate && !l.egressBurst;

/**
 * ADD: without limits, the prevResult goes through unchanged. Otherwise the tbf for ingress, then the IFB,
 * the redirect and the IFB's tbf for egress; the IFB is added to the result. A failure undoes what was done.
 */
async function add(args: CmdArgs): Promise<Result> {
  const n = loadBandwidthConf(args.stdinData);
  const prev = parsePrevResult(n.conf);
  if (!n.limits || isZero(n.limits)) return prev ?? ({ cniVersion: CURRENT_VERSION } satisfies Result100);
  if (!prev) throw invalidConfig("must be called as chained plugin", "the config has no prevResult");
  const result = toCurrentResult(prev);
  const limits = n.limits;
  const ns = await NetNS.open(args.netns);
  const host = await findHostVeth(ns, args.ifName, result);
  const clock = await readPschedClock();
  const undo: Array<() => Promise<unknown>> = [];
  try {
    if (hasIngressLimit(limits)) {
      await addRootTbf(NetNS.host, host.name, host.index, tbfParams(limits.ingressRate, limits.ingressBurst, clock), clock);
      undo.push(() => deleteRootQdisc(NetNS.host, host.name));
    }
    if (hasEgressLimit(limits)) {
      const name = ifbName(n.conf.name, args.containerID);
      const ifb = await createIfb(NetNS.host, name, { mtu: host.mtu, alias: ifbAlias(n.conf.name, args.containerID) });
      undo.push(() => deleteIfb(NetNS.host, name));
      result.interfaces!.push({ name, mac: ifb.mac });
      await addIngressRedirect(NetNS.host, host.name, name);
      undo.push(() => deleteIngressQdisc(NetNS.host, host.name));
      await addRootTbf(NetNS.host, name, ifb.index, tbfParams(limits.egressRate, limits.egressBurst, clock), clock);
    }
  } catch (e) {
    for (const step of undo.reverse()) await step().catch(() => undefined);
    throw e;
  }
  return result;
}

/** DEL: removes the attachment's IFB, if there is one. Needs neither the namespace nor a valid limit. */
async function del(args: CmdArgs): Promise<void> {
  const conf = loadNetworkOnly(args.stdinData);
  await deleteIfb(NetNS.host, ifbName(conf.name, args.containerID));
}

/** The root qdisc of `dev` must be a tbf for `rate`/`burst` (bits) as ADD would have made it. */
async function checkTbf(dev: string, what: string, rateBits: number, burstBits: number, clock: PschedClock): Promise<void> {
  const root = (await listQdiscs(NetNS.host, dev)).find((q) => q.root);
  if (!root?.tbf) throw failure(`${what}: no tbf qdisc on ${dev}`, `its root qdisc is ${root?.kind ?? "none"}`);
  const want = tbfParams(rateBits, burstBits, clock);
  const have = root.tbf;
  if (have.rate !== want.rate) throw failure(`${what}: the rate on ${dev} is ${have.rate} bytes/s, expected ${want.rate}`);
  if (have.limit !== want.limit) throw failure(`${what}: the limit on ${dev} is ${have.limit} bytes, expected ${want.limit}`);
  if (!acceptedTbfBuffers(want, clock).includes(have.buffer)) {
    throw failure(`${what}: the buffer on ${dev} is ${have.buffer} ticks, expected ${want.buffer}`);
  }
}

/**
 * CHECK: with an ingress limit, the host veth's root qdisc is the expected tbf; with an egress limit, the IFB
 * exists, the host veth's ingress is redirected to it and its root qdisc is the expected tbf.
 */
async function check(args: CmdArgs): Promise<void> {
  const n = loadBandwidthConf(args.stdinData);
  const prev = parsePrevResult(n.conf);
  if (!prev) throw invalidConfig("must be called as a chained plugin", "the config has no prevResult");
  const ns = await NetNS.open(args.netns);
  const host = await findHostVeth(ns, args.ifName, toCurrentResult(prev));
  const limits = n.limits;
  if (!limits) return;
  const clock = await readPschedClock();
  if (hasIngressLimit(limits)) await checkTbf(host.name, "ingress limit", limits.ingressRate, limits.ingressBurst, clock);
  if (hasEgressLimit(limits)) {
    const name = ifbName(n.conf.name, args.containerID);
    const ifb = await ip.getLink(NetNS.host, name);
    if (ifb?.kind !== "ifb") throw failure(`egress limit: ifb device ${name} does not exist`);
    if (!(await listIngressRedirects(NetNS.host, host.name)).includes(name)) {
      throw failure(`egress limit: traffic from ${host.name} is not redirected to ${name}`);
    }
    await checkTbf(name, "egress limit", limits.egressRate, limits.egressBurst, clock);
  }
}

/**
 * GC: deletes the IFBs this network's ADDs created (recognised by their alias) whose container is not among
 * `cni.dev/valid-attachments`. IFBs without our alias (made by the Go plugin) are left alone.
 */
async function gc(args: CmdArgs): Promise<void> {
  const conf = loadNetworkOnly(args.stdinData);
  const valid = new Set((conf.validAttachments ?? []).map((a) => a.containerID));
  const errors: string[] = [];
  for (const link of await listIfbs(NetNS.host)) {
    const owner = parseIfbAlias(link.alias);
    if (!owner || owner.network !== conf.name || link.name !== ifbName(owner.network, owner.containerID)) continue;
    if (valid.has(owner.containerID)) continue;
    await deleteIfb(NetNS.host, link.name).catch((e: Error) => errors.push(e.message));
  }
  if (errors.length) throw failure("bandwidth GC failed", errors.join("; "));
}

export const plugin: PluginModule = {
  funcs: { add, del, check, gc },
  config: { schema: BANDWIDTH_SCHEMA, parse: loadBandwidthConf },
};
