/**
 * bridge: connects the container to a host bridge with a veth pair, gets addresses from IPAM, and can make
 * the bridge the gateway, masquerade, isolate ports, check MAC spoofing and tag VLANs.
 * @module
 */
import { CniError, ErrorCode } from "../../../spec/errors.js";
import { cidrContains, ipFamily, networkOf, parseCIDR, ipFromBytes } from "../../../spec/ip.js";
import { isDNSEmpty, type Result100, type Route } from "../../../spec/result/index.js";
import { ALL_VERSIONS, CURRENT_VERSION, VersionInfo } from "../../../spec/version.js";
import { runTool } from "../../../net/exec.js";
import { configureInterface, enableForwarding, ensureBridge, hostLinkMac, setupVeth, waitOperUp } from "../../../net/iface.js";
import { gcIPMasq, setupIPMasq, teardownIPMasq } from "../../../net/ipmasq.js";
import { ip } from "../../../net/iproute2.js";
import { NetNS, NetnsNotFoundError } from "../../../net/netns.js";
import { setupSpoofCheck, teardownSpoofCheck } from "../../../net/spoofcheck.js";
import { sysctlPath, writeSysctls } from "../../../net/sysctl.js";
import { pluginMain, type CmdArgs } from "../../../skel/skel.js";
import { checkInterfaceAddresses, checkRoutes, requirePrevResult } from "../../common/check.js";
import { ipamAdd, ipamCheck, ipamDel, ipamGC, ipamStatus, ipamType, withIpamRollback } from "../../common/ipam.js";
import { loadBridgeConf, type BridgeConf } from "./config.js";

/** The first address of a subnet (network + 1), the default gateway when IPAM names none. */
function firstHost(cidr: string): string {
  const net = networkOf(parseCIDR(cidr));
  const bytes = Uint8Array.from(net.ip.bytes);
  for (let i = bytes.length - 1; i >= 0; i--) {
    bytes[i] = (bytes[i]! + 1) & 0xff;
    if (bytes[i] !== 0) break;
  }
  return ipFromBytes(bytes).text;
}

/** Puts `gw/prefix` on the bridge unless it is there; a conflicting address fails unless forceAddress. */
async function ensureBridgeAddress(n: BridgeConf, dev: string, gwCidr: string): Promise<void> {
  const wanted = parseCIDR(gwCidr);
  for (const a of await ip.listAddresses(NetNS.host, dev)) {
    if (a.family !== wanted.ip.family || a.scope === "link") continue;
    const have = parseCIDR(a.cidr);
    if (have.text === wanted.text) return;
    const overlaps = cidrContains(networkOf(have), wanted.ip) || cidrContains(networkOf(wanted), have.ip);
    if (wanted.ip.family === 4 || overlaps) {
      if (!n.forceAddress) {
        if (wanted.ip.family === 6 && !overlaps) continue;
        throw new CniError(ErrorCode.Internal, `"${dev}" already has an IP address different from ${wanted.text}`, `it has ${have.text}; set forceAddress to replace it`);
      }
      await ip.deleteAddress(NetNS.host, dev, have.text);
    }
  }
  await ip.addAddress(NetNS.host, dev, wanted.text);
  // Pin the bridge MAC so it stops following the lowest port's MAC.
  await ip.setLink(NetNS.host, dev, { mac: await hostLinkMac(dev) });
}

/** VLAN membership of the host port (needs bridge VLAN filtering in the kernel). */
async function setupPortVlans(n: BridgeConf, port: string): Promise<void> {
  if (!n.vlan && n.vlanTrunk.length === 0) return;
  const bridgeVlan = (args: string[]) => runTool("bridge", ["vlan", ...args], `configure VLANs of ${port}`);
  if (!n.preserveDefaultVlan) await bridgeVlan(["del", "dev", port, "vid", "1"]).catch(() => undefined);
  if (n.vlan) await bridgeVlan(["add", "dev", port, "vid", String(n.vlan), "pvid", "untagged", "master"]);
  if (n.vlanTrunk.length) {
    if (!n.vlan) await bridgeVlan(["add", "dev", port, "vid", "1", "pvid", "untagged", "master"]);
    for (const id of n.vlanTrunk) await bridgeVlan(["add", "dev", port, "vid", String(id), "master"]);
  }
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadBridgeConf(args.stdinData, args.args);
  const ns = await NetNS.open(args.netns);
  const br = await ensureBridge(n.bridge, { mtu: n.mtu, promisc: n.promiscMode, vlanFiltering: n.vlan !== 0 || n.vlanTrunk.length > 0 });
  const veth = await setupVeth(ns, args.ifName, { mtu: n.mtu, mac: n.mac });
  const undoVeth = () => ip.deleteLink(ns, args.ifName).then(() => undefined);

  const configure = async (): Promise<Result100> => {
    await ip.setLink(NetNS.host, veth.host.name, { master: n.bridge });
    await ip.setBridgePort(NetNS.host, veth.host.name, { hairpin: n.hairpinMode || undefined, isolated: n.portIsolation || undefined });
    await setupPortVlans(n, veth.host.name);

    const result: Result100 = {
      cniVersion: CURRENT_VERSION,
      interfaces: [
        { name: br.name, mac: br.mac },
        { name: veth.host.name, mac: veth.host.mac },
        { name: args.ifName, mac: veth.container.mac, sandbox: args.netns },
      ],
    };
    const refId = `${args.containerID}-${args.ifName}`;
    if (n.macspoofchk) await setupSpoofCheck(veth.host.name, veth.container.mac, refId);

    if (ipamType(n.conf)) {
      const ipam = await ipamAdd(n.conf, args.stdinData);
      await withIpamRollback(n.conf, args.stdinData, async () => {
        result.ips = ipam.ips!.map((ipc) => ({ ...ipc, interface: 2 }));
        result.routes = ipam.routes ? [...ipam.routes] : [];
        result.dns = ipam.dns;
        const gateways = new Map<string, string>(); // gateway IP -> subnet prefix length
        for (const ipc of result.ips) {
          if (!ipc.gateway && n.isGateway) ipc.gateway = firstHost(ipc.address);
          if (ipc.gateway) gateways.set(ipc.gateway, `${ipc.gateway}/${parseCIDR(ipc.address).prefix}`);
        }
        if (n.isDefaultGateway) {
          for (const family of [4, 6] as const) {
            const gw = result.ips.find((i) => i.gateway && ipFamily(i.gateway) === family)?.gateway;
            const hasDefault = result.routes.some((r) => r.gw && ipFamily(r.dst) === family && parseCIDR(r.dst).prefix === 0);
            if (gw && !hasDefault) result.routes.push({ dst: family === 4 ? "0.0.0.0/0" : "::/0", gw } satisfies Route);
          }
        }
        const sysctls: Array<[string, string]> = [[sysctlPath("net", "ipv4", "conf", args.ifName, "arp_notify"), "1"]];
        if (result.ips.some((i) => ipFamily(i.address) === 6)) {
          if (n.enabledad) {
            sysctls.push([sysctlPath("net", "ipv6", "conf", args.ifName, "enhanced_dad"), "1"]);
            sysctls.push([sysctlPath("net", "ipv6", "conf", args.ifName, "accept_dad"), "1"]);
          } else {
            sysctls.push([sysctlPath("net", "ipv6", "conf", args.ifName, "accept_dad"), "0"]);
          }
        }
        await writeSysctls(ns, sysctls);
        await configureInterface(ns, args.ifName, result);
        if (n.isGateway) {
          const gwDev = n.vlan ? await ensureVlanGateway(n, result) : n.bridge;
          for (const cidr of gateways.values()) await ensureBridgeAddress(n, gwDev, cidr);
          await enableForwarding([...gateways.keys()].map(ipFamily));
        }
        if (n.ipMasq) {
          await setupIPMasq({ addresses: result.ips.map((i) => i.address), network: n.conf.name, ifName: args.ifName, containerID: args.containerID }, n.ipMasqBackend);
        }
      }, async () => {
        if (n.macspoofchk) await teardownSpoofCheck(refId).catch(() => undefined);
      });
    } else if (!n.disableContainerInterface) {
      await ip.setLink(ns, args.ifName, { up: true });
    }
    if (!n.disableContainerInterface) await waitOperUp(veth.host.name);
    result.interfaces![0]!.mac = await hostLinkMac(n.bridge);
    result.interfaces![1]!.mac = await hostLinkMac(veth.host.name);
    if (n.conf.dns && !isDNSEmpty(n.conf.dns)) result.dns = n.conf.dns;
    return result;
  };
  try {
    return await configure();
  } catch (e) {
    await undoVeth().catch(() => undefined);
    throw e;
  }
}

/** With `vlan`, the gateway lives on `<bridge>.<vlan>`, a veth whose peer is a tagged bridge port. */
async function ensureVlanGateway(n: BridgeConf, result: Result100): Promise<string> {
  const name = `${n.bridge}.${n.vlan}`;
  if (!(await ip.getLink(NetNS.host, name))) {
    const peer = `${n.bridge}.${n.vlan}p`.slice(0, 15);
    await ip.addVeth({ name, ns: NetNS.host, peerName: peer, peerNs: NetNS.host, mtu: n.mtu });
    await ip.setLink(NetNS.host, peer, { master: n.bridge, up: true });
    await runTool("bridge", ["vlan", "add", "dev", peer, "vid", String(n.vlan), "pvid", "untagged", "master"], `tag ${peer} with VLAN ${n.vlan}`);
    await ip.setLink(NetNS.host, name, { up: true });
  }
  result.interfaces!.push({ name, mac: await hostLinkMac(name) });
  return name;
}

async function del(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, args.args);
  const addresses = new Set<string>();
  if (args.netns) {
    try {
      const ns = await NetNS.open(args.netns);
      for (const a of await ip.listAddresses(ns, args.ifName).catch(() => [])) {
        if (a.scope === "global") addresses.add(parseCIDR(a.cidr).text);
      }
      await ip.deleteLink(ns, args.ifName);
    } catch (e) {
      if (!(e instanceof NetnsNotFoundError)) throw e; // the container is gone: release what we can
    }
  }
  // The cached result knows the addresses even when the interface is already gone.
  for (const ipc of (n.conf.prevResult?.["ips"] as Array<{ address?: string }> | undefined) ?? []) {
    if (typeof ipc.address === "string") addresses.add(parseCIDR(ipc.address).text);
  }
  if (ipamType(n.conf)) await ipamDel(n.conf, args.stdinData);
  if (n.macspoofchk) {
    await teardownSpoofCheck(`${args.containerID}-${args.ifName}`).catch((e: Error) => process.stderr.write(`bridge: ${e.message}\n`));
  }
  if (n.ipMasq) {
    await teardownIPMasq({ addresses: [...addresses], network: n.conf.name, ifName: args.ifName, containerID: args.containerID });
  }
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, args.args);
  if (ipamType(n.conf)) await ipamCheck(n.conf, args.stdinData);
  const prev = requirePrevResult(n.conf);
  const ns = await NetNS.open(args.netns);
  const br = await ip.getLink(NetNS.host, n.bridge);
  if (!br) throw new CniError(ErrorCode.Internal, `bridge "${n.bridge}" does not exist`);
  if (br.kind !== "bridge") throw new CniError(ErrorCode.Internal, `"${n.bridge}" is not a bridge`);
  if (br.promisc !== n.promiscMode) throw new CniError(ErrorCode.Internal, `bridge "${n.bridge}" promiscuous mode is ${br.promisc ? "on" : "off"}, expected ${n.promiscMode ? "on" : "off"}`);
  const brEntry = prev.interfaces?.find((i) => i.name === n.bridge);
  if (brEntry?.mac && brEntry.mac !== br.mac) throw new CniError(ErrorCode.Internal, `bridge "${n.bridge}" MAC is ${br.mac}, expected ${brEntry.mac}`);

  const contEntry = prev.interfaces?.find((i) => i.name === args.ifName && i.sandbox === args.netns);
  if (!contEntry) throw new CniError(ErrorCode.Internal, `prevResult has no interface "${args.ifName}" in ${args.netns}`);
  const cont = await ip.getLink(ns, args.ifName);
  if (!cont) throw new CniError(ErrorCode.Internal, `container interface "${args.ifName}" does not exist`);
  if (cont.kind !== "veth") throw new CniError(ErrorCode.Internal, `container interface "${args.ifName}" is a ${cont.kind ?? "device"}, not a veth`);
  if (contEntry.mac && contEntry.mac !== cont.mac) throw new CniError(ErrorCode.Internal, `container interface "${args.ifName}" MAC is ${cont.mac}, expected ${contEntry.mac}`);

  const hostLinks = await ip.listLinks(NetNS.host);
  const hostPeer = hostLinks.find((l) => l.index === cont.peerIndex && prev.interfaces?.some((i) => i.name === l.name && !i.sandbox));
  if (!hostPeer) throw new CniError(ErrorCode.Internal, `no host veth of the prevResult is the peer of "${args.ifName}"`);
  if (hostPeer.master !== n.bridge) throw new CniError(ErrorCode.Internal, `host veth "${hostPeer.name}" is not attached to bridge "${n.bridge}"`);
  const hostEntry = prev.interfaces!.find((i) => i.name === hostPeer.name);
  if (hostEntry?.mac && hostEntry.mac !== hostPeer.mac) throw new CniError(ErrorCode.Internal, `host veth "${hostPeer.name}" MAC is ${hostPeer.mac}, expected ${hostEntry.mac}`);

  await checkInterfaceAddresses(ns, args.ifName, prev);
  await checkRoutes(ns, prev);
}

async function status(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, "");
  if (ipamType(n.conf)) await ipamStatus(n.conf, args.stdinData);
}

async function gc(args: CmdArgs): Promise<void> {
  const n = loadBridgeConf(args.stdinData, "");
  const errors: string[] = [];
  if (n.ipMasq) await gcIPMasq(n.conf.name, n.conf.validAttachments ?? []).catch((e: Error) => errors.push(e.message));
  if (ipamType(n.conf)) await ipamGC(n.conf, args.stdinData).catch((e: Error) => errors.push(e.message));
  if (errors.length) throw new CniError(ErrorCode.Internal, "bridge GC failed", errors.join("; "));
}

export function main(): Promise<void> {
  return pluginMain({ add, del, check, status, gc }, new VersionInfo(ALL_VERSIONS), "CNI bridge plugin (tscni)");
}

