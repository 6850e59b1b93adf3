/**
 * ptp: connects the container to the host with a veth pair and routes it point-to-point: every container
 * address reaches its subnet and the world through a gateway that sits (as a /32 or /128) on the host end,
 * the host reaches the container through a host route, and `ipMasq` can masquerade what leaves.
 * @module
 */

import { ipFamily, networkOf, parseCIDR } from "#ip/ip.js";
import { gcIPMasq, type IPMasqTarget, setupIPMasq, teardownIPMasq } from "#net/firewall/ipmasq.js";
import { configureInterface, enableForwarding, setupVeth } from "#net/link/iface.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig } from "#spec/errors.js";
import { isDNSEmpty, type Result100 } from "#spec/result/index.js";
import { CURRENT_VERSION } from "#spec/version.js";
import { checkInterfaceAddresses, checkRoutes, RoutesFrom, requirePrevResult } from "../../common/check.js";
import { removeContainerLink } from "../../common/del.js";
import { ipamAdd, ipamCheck, ipamDel, ipamGC, ipamStatus } from "../../common/ipam.js";
import { Rollback } from "../../common/rollback.js";
import { loadPtpConf, PTP_SCHEMA, type PtpConf } from "./config.js";
import { type PointToPointAddress, pointToPointRoutes, routeContainerThroughGateway, routeHostToContainer } from "./routing.js";

/** Index of the container interface in ptp results: interfaces are `[host veth, container veth]`. */
const CONTAINER_INDEX = 1;

const ipMasqTarget = (n: PtpConf, args: CmdArgs, addresses: string[]): IPMasqTarget => ({
  addresses,
  network: n.conf.name,
  ifName: args.ifName,
  containerID: args.containerID,
});

/** Every IPAM address with its gateway; ptp cannot route an address that has none. */
function pointToPointAddresses(result: Result100): PointToPointAddress[] {
  return (result.ips ?? []).map((ipc) => {
    if (!ipc.gateway) {
      throw invalidConfig(
        `IPAM returned ${ipc.address} without a gateway`,
        "ptp routes every address through its gateway; configure one in the IPAM ranges",
      );
    }
    return { address: ipc.address, gateway: ipc.gateway };
  });
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadPtpConf(args.stdinData);
  const ns = await NetNS.open(args.netns);
  const rollback = new Rollback();
  return rollback.guard(async () => {
    const ipam = await ipamAdd(n.conf, args);
    rollback.add(() => ipamDel(n.conf, args));
    const addresses = pointToPointAddresses(ipam);
    await enableForwarding(new Set(addresses.map((a) => ipFamily(a.address))));

    const veth = await setupVeth(ns, args.ifName, { mtu: n.mtu });
    rollback.add(() => ip.deleteLink(ns, args.ifName));
    const result: Result100 = {
      cniVersion: CURRENT_VERSION,
      interfaces: [
        { name: veth.host.name, mac: veth.host.mac },
        { name: args.ifName, mac: veth.container.mac, sandbox: args.netns },
      ],
      ips: ipam.ips!.map((ipc) => ({ ...ipc, interface: CONTAINER_INDEX })),
      routes: ipam.routes ? [...ipam.routes] : [],
    };
    if (ipam.dns) result.dns = ipam.dns;

    // Every address has a gateway, so configureInterface waits out IPv6 DAD: the kernel refuses a tentative
    // address as the source of the point-to-point routes.
    await configureInterface(ns, args.ifName, result);
    await routeContainerThroughGateway(ns, args.ifName, addresses);
    await routeHostToContainer(veth.host.name, addresses);

    if (n.ipMasq) {
      const target = ipMasqTarget(
        n,
        args,
        addresses.map((a) => a.address),
      );
      rollback.add(() => teardownIPMasq(target));
      await setupIPMasq(target, n.ipMasqBackend);
    }
    if (n.conf.dns && !isDNSEmpty(n.conf.dns)) result.dns = n.conf.dns;
    return result;
  });
}

async function del(args: CmdArgs): Promise<void> {
  const n = loadPtpConf(args.stdinData);
  await ipamDel(n.conf, args);

  const addresses = await removeContainerLink(n.conf, args.netns, args.ifName);
  if (!n.ipMasq) return;
  await teardownIPMasq(ipMasqTarget(n, args, addresses));
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadPtpConf(args.stdinData);
  const ns = await NetNS.open(args.netns);
  await ipamCheck(n.conf, args);
  const prev = requirePrevResult(n.conf);

  const entry = prev.interfaces?.find((i) => i.name === args.ifName && i.sandbox === args.netns);
  if (!entry) {
    throw failure(`prevResult has no interface "${args.ifName}" in sandbox ${args.netns}`);
  }
  const link = await ip.getLink(ns, args.ifName);
  if (!link) throw failure(`container interface "${args.ifName}" from prevResult does not exist in ${args.netns}`);
  if (link.kind !== "veth") throw failure(`container interface "${args.ifName}" is a ${link.kind ?? "device"}, not a veth`);
  if (entry.mac && entry.mac !== link.mac) {
    throw failure(`container interface "${args.ifName}" MAC is ${link.mac}, prevResult says ${entry.mac}`);
  }

  await checkInterfaceAddresses(ns, args.ifName, prev);
  await checkPointToPointRoutes(ns, args.ifName, prev);
  await checkRoutes(ns, prev);
}

/** The gateway and subnet routes ADD put in the container, for every address on the interface. */
async function checkPointToPointRoutes(ns: NetNS, ifName: string, prev: Result100): Promise<void> {
  const view = new RoutesFrom(
    ns,
    (prev.ips ?? []).map((i) => i.address),
  );
  for (const ipc of prev.ips ?? []) {
    if (!ipc.gateway || ipc.interface === undefined || prev.interfaces?.[ipc.interface]?.name !== ifName) continue;
    for (const want of pointToPointRoutes(ifName, { address: ipc.address, gateway: ipc.gateway })) {
      const dst = parseCIDR(want.dst).text;
      const found = await view.has(ipFamily(ipc.address), (r) => r.dev === ifName && parseCIDR(r.dst).text === dst && r.gw === want.gw);
      if (!found) {
        throw failure(
          `route ${want.dst}${want.gw ? ` via ${want.gw}` : ""} dev ${ifName} is missing`,
          `ptp routes ${networkOf(parseCIDR(ipc.address)).text} through ${ipc.gateway}`,
        );
      }
    }
  }
}

async function status(args: CmdArgs): Promise<void> {
  const n = loadPtpConf(args.stdinData);
  await ipamStatus(n.conf, args);
}

async function gc(args: CmdArgs): Promise<void> {
  const n = loadPtpConf(args.stdinData);
  const errors: string[] = [];
  if (n.ipMasq) await gcIPMasq(n.conf.name, n.conf.validAttachments ?? []).catch((e: Error) => errors.push(e.message));
  await ipamGC(n.conf, args).catch((e: Error) => errors.push(e.message));
  if (errors.length) throw failure("ptp GC failed", errors.join("; "));
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: PTP_SCHEMA, parse: loadPtpConf },
};
