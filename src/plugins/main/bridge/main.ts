/**
 * bridge: connects the container to a host bridge with a veth pair, gets addresses from IPAM, and can make
 * the bridge the gateway, masquerade, isolate ports, check MAC spoofing, tag VLANs (on the container's port and
 * on the bridge's uplink) and set which link-local groups the bridge forwards.
 * @module
 */

import { ipFamily, networkOf, parseCIDR } from "#ip/ip.js";
import { nextIP } from "#ip/ip-math.js";
import type { IPMasqTarget } from "#net/firewall/ipmasq.js";
import { addTaggedVlans, readPortVlans, setPortVlans, vlanIdsOf } from "#net/link/bridge-vlans.js";
import { configureInterface, enableForwarding, setupVeth } from "#net/link/iface.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { type SysctlSetting, sysctlPath } from "#net/sysctl.js";
import type { Link } from "#net/types.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, pluginNotAvailable } from "#spec/errors.js";
import { isDNSEmpty, type Result100, type Route } from "#spec/result/index.js";
import { CURRENT_VERSION } from "#spec/version.js";
import { checkInterfaceAddresses, checkRoutes, requirePrevResult } from "../../common/check.js";
import { removeContainerLink } from "../../common/del.js";
import { ipamAdd, ipamCheck, ipamDel, ipamGC, ipamStatus, ipamType } from "../../common/ipam.js";
import { Rollback } from "../../common/rollback.js";
import {
  type BridgeState,
  bridgePortRefusal,
  ensureBridge,
  ensureGatewayAddresses,
  readHostLinks,
  requireUplinkPort,
  waitPortUp,
} from "./bridge-link.js";
import { BRIDGE_SCHEMA, type BridgeConf, containerPortVlans, loadBridgeConf, uplinkVlans } from "./config.js";

/** Masquerading and the MAC spoof check, loaded by the calls that use them: most bridges have neither (docs/startup.md). */
const ipMasq = () => import("#net/firewall/ipmasq.js");
const spoofCheck = () => import("./spoofcheck.js");

/** Index of the container interface in bridge results: interfaces are `[bridge, host veth, container]`. */
const CONTAINER_INDEX = 2;
const ZERO_MAC = "00:00:00:00:00:00";

const refIdOf = (args: CmdArgs) => `${args.containerID}-${args.ifName}`;
const masqTarget = (n: BridgeConf, args: CmdArgs, addresses: string[]): IPMasqTarget => ({
  addresses,
  network: n.conf.name,
  ifName: args.ifName,
  containerID: args.containerID,
});

/** The container sysctls the Go plugin sets before addressing (failures ignored, as there). */
function containerSysctls(n: BridgeConf, ifName: string): SysctlSetting[] {
  const set = (path: string, value: string): SysctlSetting => ({ path, value, optional: true });
  const v6 = (key: string) => sysctlPath("net", "ipv6", "conf", ifName, key);
  return [
    ...(n.enabledad ? [set(v6("enhanced_dad"), "1"), set(v6("accept_dad"), "1")] : [set(v6("accept_dad"), "0")]),
    set(sysctlPath("net", "ipv4", "conf", ifName, "arp_notify"), "1"),
  ];
}

/**
 * Gateways per IPAM address (the IPAM gateway, or network+1 with isGateway) and, with isDefaultGateway, a
 * default route per family unless IPAM already gave one with a gateway. Returns the bridge's gateway
 * addresses (`gw/prefix of the subnet`), in order, without duplicates.
 */
function applyGateways(n: BridgeConf, result: Result100): string[] {
  const gateways = new Set<string>();
  for (const ipc of result.ips ?? []) {
    if (!ipc.gateway && n.isGateway) ipc.gateway = nextIP(networkOf(parseCIDR(ipc.address)).ip)!.text;
    if (n.isGateway && ipc.gateway) gateways.add(`${ipc.gateway}/${parseCIDR(ipc.address).prefix}`);
  }
  if (n.isDefaultGateway) {
    result.routes ??= [];
    for (const family of [4, 6] as const) {
      const gw = result.ips?.find((i) => ipFamily(i.address) === family)?.gateway;
      const hasDefault = result.routes.some((r) => r.gw && ipFamily(r.dst) === family && parseCIDR(r.dst).prefix === 0);
      if (gw && !hasDefault) result.routes.push({ dst: family === 4 ? "0.0.0.0/0" : "::/0", gw } satisfies Route);
    }
  }
  return [...gateways];
}

/** With `vlan`, the gateway lives on `<bridge>.<vlan>`: a host veth whose peer is an untagged port of that VLAN. */
async function ensureVlanGateway(n: BridgeConf, bridge: Link): Promise<Link> {
  const name = `${n.bridge}.${n.vlan}`;
  const existing = await ip.getLink(NetNS.host, name);
  if (existing) return existing;
  const pair = await setupVeth(NetNS.host, name, { mtu: bridge.mtu, hostChange: { master: n.bridge } });
  await setPortVlans(pair.host.name, { pvid: n.vlan, tagged: [], preserveExisting: n.preserveDefaultVlan });
  await ip.setLink(NetNS.host, name, { up: true });
  return pair.container;
}

/** IPAM, gateways on the bridge, forwarding and masquerading; undo steps go to `rollback`. */
async function addLayer3(
  n: BridgeConf,
  args: CmdArgs,
  ns: NetNS,
  bridge: BridgeState,
  pinMac: string,
  result: Result100,
  rollback: Rollback,
): Promise<void> {
  const ipam = await ipamAdd(n.conf, args);
  rollback.add(() => ipamDel(n.conf, args));
  result.ips = ipam.ips!.map((ipc) => ({ ...ipc, interface: CONTAINER_INDEX }));
  result.routes = ipam.routes ? [...ipam.routes] : [];
  result.dns = ipam.dns;
  const gateways = applyGateways(n, result);
  await configureInterface(ns, args.ifName, result, { sysctls: containerSysctls(n, args.ifName) });
  if (gateways.length) {
    if (n.vlan) {
      const vlanGw = await ensureVlanGateway(n, bridge.link);
      result.interfaces!.push({ name: vlanGw.name, mac: vlanGw.mac });
      await ensureGatewayAddresses(vlanGw.name, gateways, { forceAddress: n.forceAddress });
    } else {
      await ensureGatewayAddresses(n.bridge, gateways, { forceAddress: n.forceAddress, pinMac, current: bridge.addresses });
    }
    await enableForwarding(new Set(gateways.map((g) => ipFamily(g))));
  }
  if (n.ipMasq) {
    const target = masqTarget(
      n,
      args,
      result.ips.map((i) => i.address),
    );
    rollback.add(async () => (await ipMasq()).teardownIPMasq(target));
    await (await ipMasq()).setupIPMasq(target, n.ipMasqBackend);
  }
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadBridgeConf(args.stdinData, args.args);
  const ns = await NetNS.open(args.netns);
  if (n.uplinkInterface) await requireUplinkPort(n.bridge, n.uplinkInterface);
  const bridgeState = await ensureBridge(n.bridge, {
    mtu: n.mtu,
    promisc: n.promiscMode,
    vlanFiltering: n.vlanFiltering,
    pinMac: n.isGateway && !n.vlan,
    groupFwdMask: n.groupFwdMask,
  });
  const bridge = bridgeState.link;
  const veth = await setupVeth(ns, args.ifName, {
    mtu: n.mtu,
    mac: n.mac,
    hostChange: { master: n.bridge },
    bridgePort: { hairpin: n.hairpinMode, isolated: n.portIsolation },
  });
  const rollback = new Rollback();
  rollback.add(() => ip.deleteLink(ns, args.ifName));
  return rollback.guard(async () => {
    const vlans = containerPortVlans(n);
    if (vlans) await setPortVlans(veth.host.name, vlans);
    // The uplink keeps them after DEL: other containers of the VLAN may use them (as Go's).
    if (n.uplinkInterface) await addTaggedVlans(n.uplinkInterface, uplinkVlans(n));
    const result: Result100 = {
      cniVersion: CURRENT_VERSION,
      interfaces: [
        { name: bridge.name, mac: bridge.mac },
        { name: veth.host.name, mac: veth.host.mac },
        { name: args.ifName, mac: veth.container.mac, sandbox: args.netns },
      ],
    };
    if (n.macspoofchk) {
      rollback.add(async () => (await spoofCheck()).teardownSpoofCheck(refIdOf(args)));
      await (await spoofCheck()).setupSpoofCheck(veth.host.name, veth.container.mac, refIdOf(args));
    }
    if (ipamType(n.conf)) {
      // Once it has an address, the bridge keeps its own MAC from before this ADD's port joined, instead of
      // following the lowest port MAC. A bridge whose ports all left has none (all zeros): it keeps the one
      // it took from our port.
      const pinMac = bridge.mac === ZERO_MAC ? veth.host.mac : bridge.mac;
      await addLayer3(n, args, ns, bridgeState, pinMac, result, rollback);
    } else if (!n.disableContainerInterface) {
      await ip.setLink(ns, args.ifName, { up: true });
    }

    // The MACs may have changed since: the bridge takes its lowest port's MAC unless pinned.
    const [port, br] = n.disableContainerInterface ? await readHostLinks([veth.host.name, n.bridge]) : await waitPortUp(veth.host.name, [n.bridge]);
    result.interfaces![0]!.mac = br!.mac;
    result.interfaces![1]!.mac = port!.mac;
    if (n.conf.dns && !isDNSEmpty(n.conf.dns)) result.dns = n.conf.dns;
    return result;
  });
}

/**
 * DEL: the container interface (its addresses are remembered for ipMasq, as are those of the cached result),
 * then IPAM, the spoof check and masquerading. Everything missing is fine; the bridge itself stays.
 */
async function del(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, args.args);
  const addresses = await removeContainerLink(n.conf, args.netns, args.ifName);
  if (ipamType(n.conf)) await ipamDel(n.conf, args);
  if (n.macspoofchk) {
    await spoofCheck()
      .then((m) => m.teardownSpoofCheck(refIdOf(args)))
      .catch((e: Error) => args.stderr.write(`bridge: ${e.message}\n`));
  }
  if (ipamType(n.conf) && n.ipMasq) await (await ipMasq()).teardownIPMasq(masqTarget(n, args, addresses));
}

/**
 * CHECK: the bridge, the container veth, its host peer on the bridge, the uplink's VLANs, and the result's
 * addresses and routes. Not `groupFwdMask`: networks sharing a bridge may set different masks, the last ADD wins.
 */
async function check(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, args.args);
  if (ipamType(n.conf)) await ipamCheck(n.conf, args);
  const prev = requirePrevResult(n.conf);
  const ns = await NetNS.open(args.netns);
  const hostLinks = await ip.listLinks(NetNS.host);

  const br = hostLinks.find((l) => l.name === n.bridge);
  if (!br) throw failure(`bridge "${n.bridge}" does not exist`);
  if (br.kind !== "bridge") throw failure(`"${n.bridge}" is not a bridge`);
  if (br.promisc !== n.promiscMode)
    throw failure(`bridge "${n.bridge}" promiscuous mode is ${br.promisc ? "on" : "off"}, expected ${n.promiscMode ? "on" : "off"}`);
  // Only a gateway bridge has its MAC pinned; otherwise the kernel moves it as ports come and go.
  const brEntry = prev.interfaces?.find((i) => i.name === n.bridge);
  if (n.isGateway && brEntry?.mac && brEntry.mac !== br.mac) throw failure(`bridge "${n.bridge}" MAC is ${br.mac}, expected ${brEntry.mac}`);

  const contEntry = prev.interfaces?.find((i) => i.name === args.ifName && i.sandbox === args.netns);
  if (!contEntry) throw failure(`prevResult has no interface "${args.ifName}" in ${args.netns}`);
  const cont = await ip.getLink(ns, args.ifName);
  if (!cont) throw failure(`container interface "${args.ifName}" does not exist`);
  if (cont.kind !== "veth") throw failure(`container interface "${args.ifName}" is a ${cont.kind ?? "device"}, not a veth`);
  if (contEntry.mac && contEntry.mac !== cont.mac)
    throw failure(`container interface "${args.ifName}" MAC is ${cont.mac}, expected ${contEntry.mac}`);

  const hostPeer = hostLinks.find((l) => l.index === cont.peerIndex && prev.interfaces?.some((i) => i.name === l.name && !i.sandbox));
  if (!hostPeer) throw failure(`no host veth of the prevResult is the peer of "${args.ifName}"`);
  if (hostPeer.master !== n.bridge) throw failure(`host veth "${hostPeer.name}" is not attached to bridge "${n.bridge}"`);
  const hostEntry = prev.interfaces!.find((i) => i.name === hostPeer.name);
  if (hostEntry?.mac && hostEntry.mac !== hostPeer.mac)
    throw failure(`host veth "${hostPeer.name}" MAC is ${hostPeer.mac}, expected ${hostEntry.mac}`);

  if (n.uplinkInterface) await checkUplink(n);
  await checkInterfaceAddresses(ns, args.ifName, prev);
  await checkRoutes(ns, prev);
}

/** CHECK of `uplinkInterface`: still a port of the bridge, with this network's VLANs. */
async function checkUplink(n: BridgeConf): Promise<void> {
  const uplink = await ip.getLink(NetNS.host, n.uplinkInterface);
  if (!uplink) throw failure(`uplink "${n.uplinkInterface}" of bridge "${n.bridge}" does not exist`);
  if (uplink.master !== n.bridge) throw failure(`uplink "${n.uplinkInterface}" is not a port of bridge "${n.bridge}"`);
  const have = new Set(vlanIdsOf(await readPortVlans(n.uplinkInterface)));
  const missing = uplinkVlans(n).filter((id) => !have.has(id));
  if (missing.length) throw failure(`uplink "${n.uplinkInterface}" of bridge "${n.bridge}" lacks VLAN ${missing.join(", ")}`);
}

/** STATUS: code 50 when the bridge exists and cannot take a port (not a bridge, or full); then IPAM's. */
async function status(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, "");
  const refusal = await bridgePortRefusal(n.bridge);
  if (refusal) throw pluginNotAvailable(`bridge: an ADD cannot attach to "${n.bridge}": ${refusal}`);
  if (ipamType(n.conf)) await ipamStatus(n.conf, args);
}

async function gc(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, "");
  const errors: string[] = [];
  if (n.ipMasq)
    await ipMasq()
      .then((m) => m.gcIPMasq(n.conf.name, n.conf.validAttachments ?? []))
      .catch((e: Error) => errors.push(e.message));
  if (ipamType(n.conf)) await ipamGC(n.conf, args).catch((e: Error) => errors.push(e.message));
  if (errors.length) throw failure("bridge GC failed", errors.join("; "));
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: BRIDGE_SCHEMA, parse: loadBridgeConf },
};
