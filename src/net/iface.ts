/**
 * The interface plumbing the main plugins share: a veth pair between a container and the host, putting a
 * result's addresses and routes on an interface (with the IPv6 details: disable_ipv6, keep_addr_on_down,
 * waiting out DAD), bridges, gateway addresses and forwarding.
 * @module
 */
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { CniError, ErrorCode } from "../spec/errors.js";
import { ipFamily, parseCIDR } from "../spec/ip.js";
import type { Result100 } from "../spec/result/index.js";
import { NetOpError } from "./exec.js";
import { ip } from "./iproute2.js";
import { randomVethName } from "./names.js";
import { NetNS } from "./netns.js";
import { readSysctls, sysctlPath, writeSysctls } from "./sysctl.js";
import type { Link, RouteSpec } from "./types.js";

export interface VethPair {
  host: Link;
  container: Link;
}

/**
 * Creates `ifName` in the container with its peer (a random `veth…` name) directly in the host namespace,
 * brings the host end up and turns off router advertisements on it. An existing `ifName` is an error.
 */
export async function setupVeth(container: NetNS, ifName: string, opts: { mtu?: number; mac?: string; host?: NetNS } = {}): Promise<VethPair> {
  const host = opts.host ?? NetNS.host;
  if (await ip.getLink(container, ifName)) {
    throw new CniError(ErrorCode.Internal, `container veth name provided (${ifName}) already exists`);
  }
  let hostName = "";
  for (let attempt = 0; ; attempt++) {
    hostName = randomVethName();
    try {
      await ip.addVeth({ name: ifName, ns: container, peerName: hostName, peerNs: host, mtu: opts.mtu, mac: opts.mac });
      break;
    } catch (e) {
      if (!(e instanceof NetOpError && e.isExists) || attempt >= 9) throw e;
      if (await ip.getLink(container, ifName)) throw new CniError(ErrorCode.Internal, `container veth name provided (${ifName}) already exists`);
    }
  }
  await writeSysctls(host, [[sysctlPath("net", "ipv6", "conf", hostName, "accept_ra"), "0"]]).catch(() => undefined);
  await ip.setLink(host, hostName, { up: true });
  const [hostLink, containerLink] = await Promise.all([ip.getLink(host, hostName), ip.getLink(container, ifName)]);
  if (!hostLink || !containerLink) throw new CniError(ErrorCode.Internal, `veth pair ${ifName}/${hostName} vanished right after creation`);
  return { host: hostLink, container: containerLink };
}

/** Waits until no address on `ifName` is tentative (IPv6 DAD), failing on a duplicate. */
export async function waitForDAD(ns: NetNS, ifName: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const addrs = await ip.listAddresses(ns, ifName);
    const failed = addrs.find((a) => a.dadFailed);
    if (failed) throw new CniError(ErrorCode.Internal, `IPv6 duplicate address detection failed for ${failed.cidr} on ${ifName}`);
    if (!addrs.some((a) => a.family === 6 && a.tentative)) return;
    if (Date.now() >= deadline) {
      const link = await ip.getLink(ns, ifName);
      if (link?.operstate === "UP") throw new CniError(ErrorCode.Internal, `timed out waiting for IPv6 DAD on ${ifName}`);
      return; // a link that is not up never finishes DAD; the addresses settle once it is
    }
    await sleep(50);
  }
}

/** The 1.1 route fields applied to a kernel route. */
function routeSpecFor(route: Result100["routes"] extends (infer R)[] | undefined ? R : never, dev: string, gw: string | undefined): RouteSpec {
  const spec: RouteSpec = { dst: parseCIDR(route.dst).text, dev };
  if (gw) spec.gw = gw;
  if (route.priority) spec.metric = route.priority;
  if (route.table !== undefined) spec.table = route.table;
  if (route.scope !== undefined) spec.scope = route.scope;
  if (route.mtu) spec.mtu = route.mtu;
  if (route.advmss) spec.advmss = route.advmss;
  return spec;
}

/**
 * Puts the result's addresses (those whose `interface` index names `ifName`) and routes on the interface
 * inside `ns`, and brings it up. A route without a gateway uses the first gateway of its family.
 */
export async function configureInterface(ns: NetNS, ifName: string, result: Result100): Promise<void> {
  const addresses: string[] = [];
  for (const ipc of result.ips ?? []) {
    if (ipc.interface === undefined) continue;
    const target = result.interfaces?.[ipc.interface];
    if (!target || target.name !== ifName) {
      throw new CniError(ErrorCode.Internal, `failed to add IP addr ${ipc.address} to "${ifName}": invalid interface index ${ipc.interface}`);
    }
    addresses.push(ipc.address);
  }
  if (addresses.some((a) => ipFamily(a) === 6)) {
    const paths = [sysctlPath("net", "ipv6", "conf", "lo", "disable_ipv6"), sysctlPath("net", "ipv6", "conf", ifName, "disable_ipv6")];
    const current = await readSysctls(ns, paths);
    const writes: Array<[string, string]> = paths.filter((_, i) => current[i] !== "0").map((p) => [p, "0"]);
    writes.push([sysctlPath("net", "ipv6", "conf", ifName, "keep_addr_on_down"), "1"]);
    await writeSysctls(ns, writes);
  }
  const batch = ip.batch(ns);
  for (const cidr of addresses) batch.addAddress(ifName, cidr);
  batch.setLink(ifName, { up: true });

  const gateways = { 4: undefined as string | undefined, 6: undefined as string | undefined };
  for (const ipc of result.ips ?? []) {
    if (ipc.gateway) gateways[ipFamily(ipc.gateway)] ??= ipc.gateway;
  }
  const routes = (result.routes ?? []).map((r) => routeSpecFor(r, ifName, r.gw ?? gateways[ipFamily(r.dst)]));
  if (gateways[6] !== undefined && routes.length > 0) {
    await batch.run(`configure ${ifName} in ${ns}`);
    await waitForDAD(ns, ifName);
    const routeBatch = ip.batch(ns);
    for (const r of routes) routeBatch.addRoute(r);
    await routeBatch.run(`add routes to ${ifName} in ${ns}`);
  } else {
    for (const r of routes) batch.addRoute(r);
    await batch.run(`configure ${ifName} in ${ns}`);
  }
}

/** Creates the bridge if missing (an existing one is not reconfigured) and brings it up. */
export async function ensureBridge(name: string, opts: { mtu?: number; promisc?: boolean; vlanFiltering?: boolean } = {}): Promise<Link> {
  let link = await ip.getLink(NetNS.host, name);
  if (!link) {
    try {
      await ip.addLink(NetNS.host, name, opts.vlanFiltering ? ["bridge", "vlan_filtering", "1"] : ["bridge"], { mtu: opts.mtu });
    } catch (e) {
      if (!(e instanceof NetOpError && e.isExists)) throw e;
    }
    link = await ip.getLink(NetNS.host, name);
  }
  if (!link) throw new CniError(ErrorCode.Internal, `could not create bridge "${name}"`);
  if (link.kind !== "bridge") throw new CniError(ErrorCode.InvalidNetworkConfig, `"${name}" already exists but is not a bridge`, `its kind is ${link.kind ?? "a physical device"}`);
  await writeSysctls(NetNS.host, [[sysctlPath("net", "ipv6", "conf", name, "accept_ra"), "0"]]).catch(() => undefined);
  const change = { up: true, ...(opts.promisc ? { promisc: true } : {}) };
  await ip.setLink(NetNS.host, name, change);
  return { ...link, up: true };
}

/** Turns on IPv4 and/or IPv6 forwarding in the host namespace (written only when not already on). */
export async function enableForwarding(families: Iterable<4 | 6>): Promise<void> {
  const paths = new Set<string>();
  for (const f of families) paths.add(f === 4 ? "/proc/sys/net/ipv4/ip_forward" : "/proc/sys/net/ipv6/conf/all/forwarding");
  const list = [...paths];
  const current = await readSysctls(NetNS.host, list);
  await writeSysctls(NetNS.host, list.filter((_, i) => current[i] !== "1").map((p) => [p, "1"] as [string, string]));
}

/** Waits until a host link is operationally up (bridge ports take a moment), with the Go plugins' schedule. */
export async function waitOperUp(name: string): Promise<void> {
  for (const delay of [0, 50, 500, 1000, 1000]) {
    if (delay) await sleep(delay);
    const state = await readFile(`/sys/class/net/${name}/operstate`, "utf8").then((s) => s.trim(), () => "missing");
    if (state === "up") return;
  }
  throw new CniError(ErrorCode.Internal, "bridge port in error state", `${name} did not come up`);
}

/** The MAC of a host link, read from sysfs. */
export async function hostLinkMac(name: string): Promise<string> {
  return (await readFile(`/sys/class/net/${name}/address`, "utf8")).trim();
}
