/**
 * The interface plumbing the main plugins share: a veth pair between a container and the host, putting a
 * result's addresses and routes on an interface (with the IPv6 details: disable_ipv6, keep_addr_on_down,
 * waiting out DAD), and forwarding. Each step is one `ip -batch` per namespace (or, under the standalone build, no
 * process at all: see links.ts), so an ADD costs few processes.
 * @module
 */
import { ipFamily, networkOf, parseCIDR } from "#ip/ip.js";
import { failure } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { pauseFor } from "#sys/pause.js";
import { NetOpError } from "../errors.js";
import { randomVethName } from "../names.js";
import { NetNS } from "../netns.js";
import { type SysctlInput, sysctlPath, writeSysctls } from "../sysctl.js";
import type { Link, LinkChange, RouteSpec } from "../types.js";
import { vethLink } from "./ip-ops.js";
import { ip } from "./links.js";

/** Both ends of a veth pair as created. */
export interface VethPair {
  host: Link;
  container: Link;
}

/** How setupVeth creates the pair and what it changes on the host end. */
export interface VethOptions {
  mtu?: number;
  /** MAC of the container end (the kernel picks a random one otherwise). */
  mac?: string;
  /** Namespace of the host end; this process's own by default. */
  host?: NetNS;
  /** Applied to the host end together with bringing it up, e.g. `{ master: "cni0" }`. */
  hostChange?: LinkChange;
  /** Bridge-port flags of the host end (with `hostChange.master`); only flags set to true are written. */
  bridgePort?: { hairpin?: boolean; isolated?: boolean };
}

const MAX_NAME_ATTEMPTS = 10;

/** The container end of a new pair, or undefined when the random host name was taken (try another). */
async function createVeth(container: NetNS, ifName: string, hostName: string, host: NetNS, opts: VethOptions): Promise<Link | undefined> {
  const batch = ip
    .batch(container)
    .addLink(vethLink({ name: ifName, ns: container, peerName: hostName, peerNs: host, mtu: opts.mtu, mac: opts.mac }))
    .showLink(ifName);
  try {
    const [shown] = await batch.runShow(`create veth pair ${ifName}/${hostName}`);
    return shown!.link;
  } catch (e) {
    if (!(e instanceof NetOpError && e.isExists)) throw e;
    if (await ip.getLink(container, ifName)) {
      throw failure(`container veth name provided (${ifName}) already exists`, `an interface named "${ifName}" exists in ${container}`);
    }
    return undefined;
  }
}

/**
 * Creates `ifName` in the container with its peer (a random `veth…` name) directly in the host namespace
 * (so no name can clash in between), turns off router advertisements on the host end and brings it up with
 * `hostChange` applied. An existing `ifName` is an error; if a later step fails the pair is removed.
 */
export async function setupVeth(container: NetNS, ifName: string, opts: VethOptions = {}): Promise<VethPair> {
  const host = opts.host ?? NetNS.host;
  let hostName = "";
  let containerLink: Link | undefined;
  for (let attempt = 0; !containerLink; attempt++) {
    if (attempt >= MAX_NAME_ATTEMPTS) throw failure("failed to find a unique veth name", `${MAX_NAME_ATTEMPTS} random names were taken`);
    hostName = randomVethName();
    containerLink = await createVeth(container, ifName, hostName, host, opts);
  }
  try {
    await writeSysctls(host, [{ path: sysctlPath("net", "ipv6", "conf", hostName, "accept_ra"), value: "0", optional: true }]);
    const batch = ip.batch(host).setLink(hostName, { ...opts.hostChange, up: true });
    const port = opts.bridgePort ?? {};
    if (port.hairpin || port.isolated) {
      batch.setBridgePort(hostName, { ...(port.hairpin ? { hairpin: true } : {}), ...(port.isolated ? { isolated: true } : {}) });
    }
    const [shown] = await batch.showLink(hostName).runShow(`set up host end ${hostName} of ${ifName}`);
    return { host: shown!.link, container: containerLink };
  } catch (e) {
    await ip.deleteLink(container, ifName).catch(() => undefined);
    throw e;
  }
}

/** Waits until no address on `ifName` is tentative (IPv6 DAD), failing on a duplicate. */
export async function waitForDAD(ns: NetNS, ifName: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const addrs = await ip.listAddresses(ns, ifName);
    const failed = addrs.find((a) => a.dadFailed);
    if (failed) throw failure(`IPv6 duplicate address detection failed for ${failed.cidr} on ${ifName}`);
    if (!addrs.some((a) => a.family === 6 && a.tentative)) return;
    if (Date.now() >= deadline) {
      const link = await ip.getLink(ns, ifName);
      if (link?.operstate === "UP") throw failure(`timed out waiting for IPv6 DAD on ${ifName}`);
      return; // a link that is not up never finishes DAD; the addresses settle once it is
    }
    await pauseFor(50);
  }
}

type ResultRoute = NonNullable<Result100["routes"]>[number];

/** The kernel route for a result route (1.1 fields included) on `dev`. */
function routeSpecFor(route: ResultRoute, dev: string, gw: string | undefined): RouteSpec {
  const spec: RouteSpec = { dst: networkOf(parseCIDR(route.dst)).text, dev };
  if (gw) spec.gw = gw;
  if (route.priority) spec.metric = route.priority;
  if (route.table !== undefined) spec.table = route.table;
  if (route.scope !== undefined) spec.scope = route.scope;
  if (route.mtu) spec.mtu = route.mtu;
  if (route.advmss) spec.advmss = route.advmss;
  return spec;
}

/** The sysctls an interface needs before it gets IPv6 addresses. */
const ipv6Sysctls = (ifName: string): SysctlInput[] => [
  [sysctlPath("net", "ipv6", "conf", "lo", "disable_ipv6"), "0"],
  [sysctlPath("net", "ipv6", "conf", ifName, "disable_ipv6"), "0"],
  [sysctlPath("net", "ipv6", "conf", ifName, "keep_addr_on_down"), "1"],
];

/**
 * Puts the result's addresses (those whose `interface` index names `ifName`) and routes on the interface
 * inside `ns`, and brings it up. A route without a gateway uses the first gateway of its family; with an IPv6
 * gateway, routes wait until DAD is over. `sysctls` are set first (with the IPv6 ones, in one process).
 */
export async function configureInterface(
  ns: NetNS,
  ifName: string,
  result: Result100,
  opts: { sysctls?: readonly SysctlInput[] } = {},
): Promise<void> {
  const addresses: string[] = [];
  const gateways: { 4?: string; 6?: string } = {};
  for (const ipc of result.ips ?? []) {
    if (ipc.interface === undefined) continue;
    const target = result.interfaces?.[ipc.interface];
    if (!target || target.name !== ifName) {
      throw failure(`failed to add IP addr ${ipc.address} to "${ifName}": invalid interface index ${ipc.interface}`);
    }
    addresses.push(ipc.address);
    if (ipc.gateway) gateways[ipFamily(ipc.gateway)] ??= ipc.gateway;
  }
  const sysctls = [...(opts.sysctls ?? [])];
  if (addresses.some((a) => ipFamily(a) === 6)) sysctls.push(...ipv6Sysctls(ifName));
  await writeSysctls(ns, sysctls);

  const batch = ip.batch(ns);
  for (const cidr of addresses) batch.addAddress(ifName, cidr);
  batch.setLink(ifName, { up: true });
  const routes = (result.routes ?? []).map((r) => routeSpecFor(r, ifName, r.gw ?? gateways[ipFamily(r.dst)]));
  if (gateways[6] === undefined) {
    for (const r of routes) batch.addRoute(r);
    await batch.run(`configure ${ifName} in ${ns}`);
    return;
  }
  await batch.run(`configure ${ifName} in ${ns}`);
  await waitForDAD(ns, ifName);
  const routeBatch = ip.batch(ns);
  for (const r of routes) routeBatch.addRoute(r);
  await routeBatch.run(`add routes to ${ifName} in ${ns}`);
}

/** Turns on IPv4 and/or IPv6 forwarding in the host namespace (written only when not already on). */
export async function enableForwarding(families: Iterable<4 | 6>): Promise<void> {
  const paths = new Set<string>();
  for (const f of families) paths.add(f === 4 ? "/proc/sys/net/ipv4/ip_forward" : "/proc/sys/net/ipv6/conf/all/forwarding");
  await writeSysctls(
    NetNS.host,
    [...paths].map((p) => [p, "1"] as const),
  );
}
