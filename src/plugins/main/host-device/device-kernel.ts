/**
 * What host-device asks of the kernel, in one place: the host's links, a link and its addresses, moving a device
 * between namespaces (renamed, with an alias, in one request), bringing it up, renaming it in the host, putting its
 * settings back, configuring and checking its addresses and routes. Each is one kernel request, whole or not done.
 * @module
 */
import { parseCIDR } from "#ip/ip.js";
import { configureInterface } from "#net/link/iface.js";
import { nsTarget } from "#net/link/ip-ops.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import type { Link } from "#net/types.js";
import type { Result100 } from "#spec/result/index.js";
import { checkInterfaceAddresses, checkRoutes } from "../../common/check.js";

/** The settings DEL puts back on a device returned to the host (those that differ, and every address). */
export interface DeviceSettings {
  mtu?: number;
  alias?: string;
  addresses: readonly string[];
  up?: boolean;
}

export interface DeviceKernel {
  /** Where selection reads sysfs (the model's has no devices: none is PCI). */
  sysfsRoot: string;
  hostLinks(): Promise<Link[]>;
  getLink(ns: NetNS, name: string): Promise<Link | undefined>;
  /** The link's addresses (`addr/prefix`), IPv6 link-local ones aside (the kernel makes those again). */
  addresses(ns: NetNS, name: string): Promise<string[]>;
  /** Moves `name` from `from` to `to`, renamed `newName`, with alias `alias` (its addresses stay behind). */
  move(from: NetNS, name: string, to: NetNS, newName: string, alias: string): Promise<void>;
  /** Brings the link up; the link as it is then. */
  bringUp(ns: NetNS, name: string): Promise<Link>;
  /** Renames a host link (brought down first: the kernel renames only a link that is down). */
  renameLink(name: string, newName: string): Promise<void>;
  /** Sets a host link's settings back. */
  restore(name: string, settings: DeviceSettings): Promise<void>;
  /** Puts the result's addresses and routes on the link in the container. */
  configure(ns: NetNS, ifName: string, result: Result100): Promise<void>;
  /** Fails when the link in the container lacks an address or a route of the result. */
  checkConfigured(ns: NetNS, ifName: string, result: Result100): Promise<void>;
}

/** IPv6 link-local addresses come back by themselves; every other address must be put back. */
const isIPv6LinkLocal = (cidr: string): boolean => {
  const { ip: addr } = parseCIDR(cidr);
  return addr.family === 6 && addr.bytes[0] === 0xfe && (addr.bytes[1]! & 0xc0) === 0x80;
};

const realKernel: DeviceKernel = {
  sysfsRoot: "/sys",
  hostLinks: () => ip.listLinks(NetNS.host),
  getLink: (ns, name) => ip.getLink(ns, name),
  addresses: async (ns, name) => (await ip.listAddresses(ns, name)).map((a) => a.cidr).filter((cidr) => !isIPv6LinkLocal(cidr)),
  move: (from, name, to, newName, alias) =>
    ip
      .batch(from)
      .add("link", "set", "dev", name, "netns", nsTarget(to), "name", newName, "alias", alias)
      .run(`move ${name} from ${from} to ${to} as ${newName}`),
  bringUp: async (ns, name) => {
    const [shown] = await ip.batch(ns).setLink(name, { up: true }).showLink(name).runShow(`bring up ${name} in ${ns}`);
    return shown!.link;
  },
  renameLink: (name, newName) =>
    ip.batch(NetNS.host).setLink(name, { up: false }).add("link", "set", "dev", name, "name", newName).run(`rename ${name} back to ${newName}`),
  restore: async (name, s) => {
    const batch = ip.batch(NetNS.host);
    if (s.mtu !== undefined) batch.setLink(name, { mtu: s.mtu });
    if (s.alias !== undefined) batch.setLink(name, { alias: s.alias });
    for (const cidr of s.addresses) batch.replaceAddress(name, cidr);
    if (s.up) batch.setLink(name, { up: true });
    await batch.run(`restore ${name} in the host namespace`);
  },
  configure: (ns, ifName, result) => configureInterface(ns, ifName, result),
  checkConfigured: async (ns, ifName, result) => {
    await checkInterfaceAddresses(ns, ifName, result);
    await checkRoutes(ns, result);
  },
};

/**
 * The crash simulator's kernel model (src/testing/crash/stores.ts): while set, every kernel request goes to it, so
 * the plugin's own ADD, CHECK, DEL and GC run over links the simulator can crash. Nothing in the product sets it.
 */
let model: DeviceKernel | undefined;
export function useKernelModel(m: DeviceKernel | undefined): void {
  model = m;
}

/** The kernel host-device works on: the real one, unless the crash simulator set its model. */
export const deviceKernel = (): DeviceKernel => model ?? realKernel;
