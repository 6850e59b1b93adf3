/**
 * Point-to-point routing over a veth (the ptp plugin): the container reaches everything, even its own
 * subnet, through one gateway that lives on the host end of its veth, and the host reaches the container
 * through a /32 (/128) route. Every host veth carries the same gateway address.
 * @module
 */
import { networkOf, parseCIDR } from "#ip/ip.js";
import { NetOpError } from "#net/errors.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import type { RouteSpec } from "#net/types.js";

/** One container address and the gateway it reaches the world through. */
export interface PointToPointAddress {
  /** `addr/prefix` as IPAM returned it. */
  address: string;
  gateway: string;
}

const hostPrefix = (family: 4 | 6): number => (family === 4 ? 32 : 128);

/**
 * The container's routes for one address: the gateway as an on-link host route, and the address's own
 * subnet through that gateway (so neighbours on the subnet are reached through the host, too).
 */
export function pointToPointRoutes(ifName: string, a: PointToPointAddress): RouteSpec[] {
  const cidr = parseCIDR(a.address);
  const subnet = networkOf(cidr).text;
  return [
    { dst: `${a.gateway}/${hostPrefix(cidr.ip.family)}`, dev: ifName, scope: "link", src: cidr.ip.text },
    { dst: subnet, gw: a.gateway, dev: ifName, src: cidr.ip.text },
  ];
}

/**
 * Inside the container: replaces the kernel's connected route of each address (`<subnet> dev <if>`) with
 * the point-to-point routes. The addresses must already be on the (up) interface and, for IPv6, past DAD:
 * the kernel refuses a tentative address as a route's source.
 */
export async function routeContainerThroughGateway(ns: NetNS, ifName: string, addresses: readonly PointToPointAddress[]): Promise<void> {
  const batch = ip.batch(ns);
  for (const a of addresses) {
    batch.route("del", { dst: networkOf(parseCIDR(a.address)).text, dev: ifName });
    for (const r of pointToPointRoutes(ifName, a)) batch.route("add", r);
  }
  await batch.run(`set up point-to-point routes on ${ifName} in ${ns}`);
}

/** The host end's addresses (each gateway as /32 or /128). */
export function hostGatewayAddresses(addresses: readonly PointToPointAddress[]): string[] {
  return [...new Set(addresses.map((a) => `${a.gateway}/${hostPrefix(parseCIDR(a.address).ip.family)}`))];
}

/** The host's routes to the container: each container address as a host-scope /32 (/128) on the veth. */
export function hostContainerRoutes(hostVeth: string, addresses: readonly PointToPointAddress[]): RouteSpec[] {
  return addresses.map((a) => {
    const cidr = parseCIDR(a.address);
    return { dst: `${cidr.ip.text}/${hostPrefix(cidr.ip.family)}`, dev: hostVeth, scope: "host" };
  });
}

/**
 * On the host: puts the gateways on the host veth and routes each container address to it. A route that
 * already exists is left alone (as the Go plugin does).
 */
export async function routeHostToContainer(hostVeth: string, addresses: readonly PointToPointAddress[], host: NetNS = NetNS.host): Promise<void> {
  const routes = hostContainerRoutes(hostVeth, addresses);
  const gateways = hostGatewayAddresses(addresses);
  const batch = ip.batch(host);
  for (const cidr of gateways) batch.addAddress(hostVeth, cidr);
  for (const r of routes) batch.route("add", r);
  try {
    await batch.run(`set up host side of ${hostVeth}`);
  } catch (e) {
    // The batch stops at the first failure; addresses come first, so an existing route means they are done.
    if (!(e instanceof NetOpError && e.kind === "exists" && e.step !== undefined && e.step >= gateways.length)) throw e;
    for (const r of routes.slice(e.step - gateways.length)) {
      try {
        await ip.batch(host).route("add", r).run(`add host route to ${r.dst} on ${hostVeth}`);
      } catch (err) {
        if (!(err instanceof NetOpError && err.kind === "exists")) throw err;
      }
    }
  }
}
