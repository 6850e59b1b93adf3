/**
 * Linux bridges in the host namespace: creating one (an existing bridge is used as it is, but for its
 * `group_fwd_mask`), its uplink port, its gateway addresses (VLANs on its ports: net/bridge-vlans) and waiting
 * for a port to forward.
 * @module
 */
import { cidrContains, networkOf, parseCIDR } from "#ip/ip.js";
import { NetOpError } from "#net/errors.js";
import { ip } from "#net/link/links.js";
import { randomMac } from "#net/names.js";
import { NetNS } from "#net/netns.js";
import { sysctlPath, writeSysctls } from "#net/sysctl.js";
import type { Address, Link, NewLink } from "#net/types.js";
import { failure, invalidKey } from "#spec/errors.js";
import { pauseFor } from "#sys/pause.js";

export interface BridgeOptions {
  /** MTU of a new bridge (an existing one keeps its own). */
  mtu?: number;
  /** Turn promiscuous mode on (never turned off). */
  promisc?: boolean;
  /** Create the bridge with VLAN filtering on (an existing one is not changed). */
  vlanFiltering?: boolean;
  /**
   * Give a new bridge a MAC of its own (random, like the kernel's) that it keeps, instead of taking its lowest
   * port's: the state a gateway bridge ends up in anyway, set at creation so that concurrent first ADDs
   * cannot see (and report) different MACs.
   */
  pinMac?: boolean;
  /** The bridge's `group_fwd_mask`, set on a new or existing bridge alike; 0 or absent leaves it as it is. */
  groupFwdMask?: number;
}

/** A bridge as read at the start of an ADD: the link and its addresses. */
export interface BridgeState {
  link: Link;
  addresses: Address[];
}

/** Reads a link with its addresses (`ip -d addr show`); undefined when it does not exist. */
async function readBridge(name: string): Promise<BridgeState | undefined> {
  try {
    const [shown] = await ip.batch(NetNS.host).showAddresses(name).runShow(`read bridge ${name}`);
    return shown;
  } catch (e) {
    if (e instanceof NetOpError && e.kind === "not-found") return undefined;
    throw e;
  }
}

/**
 * Creates the bridge, already up (a bridge without ports cannot receive router advertisements before they
 * are turned off), and reads it back; undefined when someone else created it in between.
 */
async function createBridge(name: string, opts: BridgeOptions): Promise<BridgeState | undefined> {
  const bridge: NewLink = { name, kind: "bridge", mtu: opts.mtu, promisc: opts.promisc, up: true, vlanFiltering: opts.vlanFiltering };
  if (opts.pinMac) bridge.mac = randomMac();
  try {
    return (await ip.batch(NetNS.host).addLink(bridge).showAddresses(name).runShow(`create bridge ${name}`))[0];
  } catch (e) {
    if (e instanceof NetOpError && e.kind === "exists") return undefined;
    throw e;
  }
}

/**
 * Makes sure bridge `name` exists, is a bridge and is up (promiscuous if asked); a new one gets the MTU and
 * VLAN filtering asked for, an existing one is not reconfigured. Router advertisements are turned off on it.
 * Returns the bridge (and its addresses) as it was before any port of this ADD joined it.
 */
export async function ensureBridge(name: string, opts: BridgeOptions = {}): Promise<BridgeState> {
  const state = (await readBridge(name)) ?? (await createBridge(name, opts)) ?? (await readBridge(name));
  if (!state) throw failure(`could not create bridge "${name}"`, "it vanished right after creation");
  const { link } = state;
  if (link.kind !== "bridge") {
    throw failure(
      `failed to create bridge "${name}": a link of that name exists and is not a bridge`,
      `its kind is ${link.kind ?? "a physical device"}`,
    );
  }
  await writeSysctls(NetNS.host, [{ path: sysctlPath("net", "ipv6", "conf", name, "accept_ra"), value: "0", optional: true }]);
  if (!link.up || (opts.promisc && !link.promisc)) {
    await ip.setLink(NetNS.host, name, { up: true, ...(opts.promisc ? { promisc: true } : {}) });
    state.link = { ...link, up: true, promisc: link.promisc || !!opts.promisc };
  }
  if (opts.groupFwdMask) await ip.batch(NetNS.host).setBridge(name, { groupFwdMask: opts.groupFwdMask }).run(`set group_fwd_mask of bridge ${name}`);
  return state;
}

/**
 * The bridge's uplink as `uplinkInterface` names it: a link of the host that is a port of `bridge`; code 7
 * naming the key when it is missing or a port of something else (checked before anything is changed).
 */
export async function requireUplinkPort(bridge: string, uplink: string): Promise<void> {
  const link = await ip.getLink(NetNS.host, uplink);
  if (!link) throw invalidKey("uplinkInterface", uplink, "no link of that name in the host namespace");
  if (link.master !== bridge) {
    throw invalidKey(
      "uplinkInterface",
      uplink,
      `it is not a port of bridge "${bridge}" (${link.master ? `its master is "${link.master}"` : "it has no master"})`,
    );
  }
}

/** The kernel's limit of ports per bridge (BR_MAX_PORTS is 1024, and port number 0 is never given). */
export const BRIDGE_MAX_PORTS = 1023;

/**
 * Why bridge `name` could not take an ADD's port now, or undefined when it could (a bridge that does not exist
 * yet is made by the ADD): a link of that name that is not a bridge, or a bridge at the kernel's port limit.
 * Two netlink requests: the link, and a dump of its ports alone.
 */
export async function bridgePortRefusal(name: string): Promise<string | undefined> {
  const link = await ip.getLink(NetNS.host, name);
  if (!link) return undefined;
  if (link.kind !== "bridge") return `a link named "${name}" exists and is not a bridge (its kind is ${link.kind ?? "a physical device"})`;
  const ports = await ip.listPorts(NetNS.host, name);
  if (ports.length >= BRIDGE_MAX_PORTS) return `bridge "${name}" has ${ports.length} ports, the kernel's limit`;
  return undefined;
}

export interface GatewayAddressOptions {
  /** Replace a conflicting address instead of failing. */
  forceAddress: boolean;
  /**
   * The MAC to pin on the device once it has an address, so it stops following the lowest port MAC (the
   * bridge's own MAC from before the ports of this ADD joined, as the Go plugin does).
   */
  pinMac?: string;
  /** The device's addresses when already known (read at the start of the ADD); read here otherwise. */
  current?: readonly Address[];
}

/**
 * Puts gateway addresses (`gw/prefix`) on a bridge, in order, as the Go plugin does: an address already there
 * is kept; another IPv4 address, or an overlapping IPv6 one, is a conflict, which fails unless forceAddress
 * (then it is deleted). At most one read and one change batch.
 */
export async function ensureGatewayAddresses(dev: string, gateways: readonly string[], opts: GatewayAddressOptions): Promise<void> {
  const current = opts.current ?? (await readBridge(dev))?.addresses ?? [];
  const have = current.map((a) => parseCIDR(a.cidr));
  const batch = ip.batch(NetNS.host);
  for (const gw of gateways) {
    const wanted = parseCIDR(gw);
    if (have.some((a) => a.text === wanted.text)) continue;
    for (const a of [...have]) {
      if (a.ip.family !== wanted.ip.family) continue;
      const overlaps = cidrContains(networkOf(a), wanted.ip) || cidrContains(networkOf(wanted), a.ip);
      if (wanted.ip.family === 6 && !overlaps) continue;
      if (!opts.forceAddress) {
        throw failure(
          `failed to set bridge addr: "${dev}" already has an IP address different from ${wanted.text}`,
          `it has ${a.text}; set "forceAddress": true to replace it`,
        );
      }
      batch.deleteAddress(dev, a.text);
      have.splice(have.indexOf(a), 1);
    }
    batch.replaceAddress(dev, wanted.text); // "replace": a concurrent ADD may have just added it
    have.push(wanted);
  }
  if (batch.size === 0) return;
  if (opts.pinMac) batch.setLink(dev, { mac: opts.pinMac });
  await batch.run(`set gateway addresses of ${dev}`);
}

/** The links `names` in the host namespace, read in one process; a missing one is an error. */
export async function readHostLinks(names: readonly string[]): Promise<Link[]> {
  const batch = ip.batch(NetNS.host);
  for (const n of names) batch.showLink(n);
  return (await batch.runShow(`read links ${names.join(", ")}`)).map((shown) => shown.link);
}

/**
 * Waits until a bridge port is operationally up (forwarding), with the Go plugin's schedule (0, 50, 500,
 * 1000, 1000 ms); returns it and `others`, read in the same call.
 */
export async function waitPortUp(port: string, others: readonly string[] = []): Promise<Link[]> {
  let links: Link[] = [];
  for (const delay of [0, 50, 500, 1000, 1000]) {
    if (delay) await pauseFor(delay);
    links = await readHostLinks([port, ...others]);
    if (links[0]!.operstate === "UP") return links;
  }
  throw failure(`bridge port in error state: ${links[0]?.operstate ?? "unknown"}`, `${port} did not come up`);
}
