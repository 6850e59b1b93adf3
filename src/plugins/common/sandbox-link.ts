/**
 * What the plugins whose whole job is one link in the container share (macvlan, ipvlan, vlan, dummy, tap):
 * finding the master (configured, or the interface of the default route), ADD (create the link, then
 * addresses from IPAM, from a prevResult, or none, undoing everything if a later step fails), DEL (IPAM,
 * then the link; a missing netns or link is success), CHECK (the prevResult's interface is that link, of the
 * right kind, on the right master, with its settings, MAC, addresses and routes), and STATUS and GC, which
 * only IPAM has anything for: these plugins keep no state on the host.
 * @module
 */

import { type ContainerLinkSpec, createContainerLink, defaultRouteInterface } from "#net/link/container-link.js";
import { configureInterface } from "#net/link/iface.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { type SysctlSetting, sysctlPath } from "#net/sysctl.js";
import type { Link } from "#net/types.js";
import type { CmdArgs } from "#skel/skel.js";
import type { PluginConf } from "#spec/config.js";
import { failure, invalidKey, pluginNotAvailable } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { CURRENT_VERSION } from "#spec/version.js";
import { checkInterfaceAddresses, checkRoutes, requirePrevResult } from "./check.js";
import { removeContainerLink } from "./del.js";
import { ipamAdd, ipamCheck, ipamDel, ipamGC, ipamStatus, ipamType } from "./ipam.js";
import { Rollback } from "./rollback.js";

/** Where a plugin looks for its master: the host, or the container (`linkInContainer`). */
interface MasterPlace {
  ns: NetNS;
  /** How messages name the place. */
  label: string;
}

/** The place of the master: the container's namespace with `linkInContainer`, else the host's. */
const masterPlace = (container: NetNS, linkInContainer: boolean): MasterPlace =>
  linkInContainer ? { ns: container, label: `the container namespace ${container}` } : { ns: NetNS.host, label: "the host namespace" };

/**
 * The master link: `master` when configured, else the interface of the first default route of the place.
 * Neither existing is an invalid config (code 7) naming the key.
 */
async function findMaster(master: string, place: MasterPlace): Promise<Link> {
  const name = master || (await defaultRouteInterface(place.ns));
  if (!name) throw invalidKey("master", master, `not set, and ${place.label} has no default route to take it from`);
  const link = await ip.getLink(place.ns, name);
  if (!link) {
    throw master
      ? invalidKey("master", master, `no such interface in ${place.label}`)
      : invalidKey("master", master, `not set, and the default route's interface "${name}" is gone from ${place.label}`);
  }
  return link;
}

/** What a link on a master needs to know of it: its name (empty: the default route's), where it is, the link's MTU. */
export interface MasterChoice {
  master: string;
  linkInContainer: boolean;
  mtu?: number;
}

/**
 * ADD's `create` for a link on a master (macvlan, ipvlan, vlan): finds the master, refuses an MTU larger than
 * the master's before creating anything (the kernel would refuse it with a less useful message; 0 or unset is
 * the master's), and creates the link in the container.
 */
export async function createOnMaster(
  container: NetNS,
  ifName: string,
  on: MasterChoice,
  spec: Omit<ContainerLinkSpec, "parent" | "mtu">,
): Promise<Link> {
  const place = masterPlace(container, on.linkInContainer);
  const master = await findMaster(on.master, place);
  if (on.mtu && on.mtu > master.mtu) {
    throw invalidKey("mtu", on.mtu, `want 0 for the master's MTU, or at most the MTU of master "${master.name}" (${master.mtu})`);
  }
  return createContainerLink(container, ifName, { ...spec, parent: master.name, mtu: on.mtu }, place.ns);
}

/** The notification sysctls the Go plugins set on the container interface before addressing it (failures ignored). */
export function notifySysctls(ifName: string, which: { arp?: boolean; ndisc?: boolean }): SysctlSetting[] {
  const out: SysctlSetting[] = [];
  if (which.arp) out.push({ path: sysctlPath("net", "ipv4", "conf", ifName, "arp_notify"), value: "1", optional: true });
  if (which.ndisc) out.push({ path: sysctlPath("net", "ipv6", "conf", ifName, "ndisc_notify"), value: "1", optional: true });
  return out;
}

/** How ADD addresses the link: from IPAM, from the addresses a prevResult gives (ipvlan chained), or not at all (L2). */
export type Addressing = { from: "ipam" } | { from: "prevResult"; result: Result100 } | { from: "none" };

/** One link plugin's ADD. */
export interface SandboxLinkAdd {
  conf: PluginConf;
  /** Creates the link `args.ifName` in the container and reads it back. */
  create: (container: NetNS) => Promise<Link>;
  addressing: Addressing;
  /** Set before the addresses (see notifySysctls). */
  sysctls?: SysctlSetting[];
  /** The result's DNS: the config's `dns` (even when empty, dropping IPAM's), or what IPAM returned. */
  dns: "conf" | "ipam";
}

/**
 * ADD of a one-link plugin: the link, then its addresses and routes; the result lists the link as interface
 * 0 and every address on it. If any step after the link fails, the link is deleted and IPAM released.
 */
export async function addSandboxLink(args: CmdArgs, plan: SandboxLinkAdd): Promise<Result100> {
  const ns = await NetNS.open(args.netns);
  const link = await plan.create(ns);
  const rollback = new Rollback();
  rollback.add(() => ip.deleteLink(ns, args.ifName));
  return rollback.guard(async () => {
    const result: Result100 = { cniVersion: CURRENT_VERSION, interfaces: [{ name: args.ifName, mac: link.mac, sandbox: args.netns }] };
    let addressed: Result100 | undefined;
    if (plan.addressing.from === "ipam") {
      addressed = await ipamAdd(plan.conf, args);
      rollback.add(() => ipamDel(plan.conf, args));
    } else if (plan.addressing.from === "prevResult") {
      addressed = plan.addressing.result;
    }
    if (addressed) {
      result.ips = (addressed.ips ?? []).map((ipc) => ({ ...ipc, interface: 0 }));
      result.routes = addressed.routes ? [...addressed.routes] : [];
      if (addressed.dns) result.dns = addressed.dns;
      await configureInterface(ns, args.ifName, result, { sysctls: plan.sysctls ?? [] });
    } else {
      await ip.setLink(ns, args.ifName, { up: true });
    }
    if (plan.dns === "conf") {
      delete result.dns;
      if (plan.conf.dns) result.dns = plan.conf.dns;
    }
    return result;
  });
}

/** DEL of a one-link plugin: IPAM first (when configured), then the link; a missing netns or link is success. */
export async function delSandboxLink(args: CmdArgs, conf: PluginConf): Promise<void> {
  if (ipamType(conf)) await ipamDel(conf, args);
  if (args.netns) await removeContainerLink(conf, args.netns, args.ifName);
}

/** What CHECK expects of the container's link. */
export interface SandboxLinkExpectation {
  /** The link kind (`macvlan`, `tun`...). */
  kind: string;
  /** The master the link must sit on (`master` as configured, found again: it must still exist). */
  master?: { name: string; linkInContainer: boolean };
  /** Kind-specific settings that must equal Link.info's (e.g. `{ mode: "bridge" }`). */
  info?: Record<string, unknown>;
  /**
   * The MTU, when the config sets one and the plugin's Go CHECK compares it (vlan's only: a later plugin of
   * the chain, like tuning, may change it legitimately).
   */
  mtu?: number;
  /** The bridge the link must be a port of (tap). */
  bridge?: string;
}

/** Whether `link` sits on `master`: by index when the master is in another namespace, by name in the same one. */
function sitsOn(link: Link, master: Link, sameNamespace: boolean): boolean {
  return sameNamespace ? link.peerName === master.name : link.peerIndex === master.index;
}

/**
 * CHECK of a one-link plugin: IPAM CHECK, then the prevResult's interface for `args.ifName` in this sandbox
 * must be the container's link, up, matching `want`, with the prevResult's MAC, addresses and routes.
 */
export async function checkSandboxLink(args: CmdArgs, conf: PluginConf, want: SandboxLinkExpectation): Promise<void> {
  if (ipamType(conf)) await ipamCheck(conf, args);
  const prev = requirePrevResult(conf);
  const ns = await NetNS.open(args.netns);
  const entry = prev.interfaces?.find((i) => i.name === args.ifName && i.sandbox === args.netns);
  if (!entry) throw failure(`prevResult has no interface "${args.ifName}" in sandbox ${args.netns}`);
  const place = want.master ? masterPlace(ns, want.master.linkInContainer) : undefined;
  const master = want.master && place ? await findMaster(want.master.name, place) : undefined;
  const link = await ip.getLink(ns, args.ifName);
  if (!link) throw failure(`container interface "${args.ifName}" does not exist in ${args.netns}`);
  const kind = link.kind ?? "device";
  if (kind !== want.kind) throw failure(`container interface "${args.ifName}" is a ${kind}, not a ${want.kind}`);
  if (master && place && !sitsOn(link, master, place.ns === ns)) {
    throw failure(`container interface "${args.ifName}" is not a ${want.kind} of master "${master.name}" in ${place.label}`);
  }
  for (const [key, value] of Object.entries(want.info ?? {})) {
    const have = link.info?.[key];
    if (have !== value)
      throw failure(`container ${want.kind} "${args.ifName}" has ${key} ${JSON.stringify(have ?? null)}, expected ${JSON.stringify(value)}`);
  }
  if (!link.up) throw failure(`container interface "${args.ifName}" is down`);
  if (want.mtu && link.mtu !== want.mtu) throw failure(`container interface "${args.ifName}" has MTU ${link.mtu}, expected ${want.mtu}`);
  if (want.bridge !== undefined && link.master !== want.bridge) {
    throw failure(
      `container interface "${args.ifName}" is ${link.master ? `a port of "${link.master}"` : "on no bridge"}, expected a port of "${want.bridge}"`,
    );
  }
  if (entry.mac && entry.mac !== link.mac) throw failure(`container interface "${args.ifName}" MAC is ${link.mac}, prevResult says ${entry.mac}`);
  await checkInterfaceAddresses(ns, args.ifName, prev);
  await checkRoutes(ns, prev);
}

/**
 * STATUS of a one-link plugin: code 50 when its `master` is named, lives in the host and is not there (an ADD
 * could not make its link: one netlink request); then IPAM's, when configured. A master in the container
 * (`linkInContainer`) or found at ADD time (a default route, a chained prevResult) is not looked for.
 */
export async function statusSandboxLink(args: CmdArgs, conf: PluginConf, master?: { name: string; inContainer: boolean }): Promise<void> {
  if (master?.name && !master.inContainer && !(await ip.getLink(NetNS.host, master.name))) {
    throw pluginNotAvailable(`${conf.type}: the master "${master.name}" does not exist here: an ADD could not create its link`);
  }
  if (ipamType(conf)) await ipamStatus(conf, args);
}

/** GC of a one-link plugin: IPAM's, when configured (the links go with their containers; no host state). */
export async function gcSandboxLink(args: CmdArgs, conf: PluginConf): Promise<void> {
  if (ipamType(conf)) await ipamGC(conf, args);
}
