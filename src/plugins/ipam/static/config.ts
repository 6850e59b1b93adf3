/**
 * static's configuration: the addresses to hand out, with Go's unusual precedence. `ipam.addresses` comes
 * first; CNI_ARGS `IP=` (comma-separated CIDRs) appends to it and CNI_ARGS `GATEWAY=` (comma-separated IPs)
 * sets the gateway of each CNI_ARGS address whose subnet contains it; then `args.cni.ips` replaces the whole
 * list, and `runtimeConfig.ips` replaces it again (both without gateways).
 * @module
 */
import { cidrContains, tryParseCIDR, tryParseIP, type IPAddress, type IPCidr } from "../../../spec/ip.js";
import { decodeDNS, type DNS, type Route } from "../../../spec/result/common.js";
import {
  checkAddressesPerFamily, expectObject, invalidConfig, loadIpamArgs, loadIpamEnvelope, optionalArray, optionalObject,
  optionalString, optionalStringList, parseRoutes, showValue,
} from "../ipam-config.js";
import { CniError, ErrorCode } from "../../../spec/errors.js";

/** An address to return: host bits kept (`10.0.0.5/24`), with an optional gateway. */
export interface StaticAddress {
  address: IPCidr;
  gateway?: IPAddress;
}

export interface StaticConfig {
  name: string;
  cniVersion: string;
  addresses: StaticAddress[];
  routes: Route[];
  dns: DNS;
}

/** An address as read: config addresses keep their text until the end, as Go parses them last. */
type PendingAddress = StaticAddress | { text: string; where: string; gateway?: IPAddress };

/** `ipam.addresses`: each `{address: CIDR, gateway?: IP}`; gateways are checked now (Go decodes them with the JSON). */
function configAddresses(ipam: ReturnType<typeof loadIpamEnvelope>["ipam"]): PendingAddress[] {
  return (optionalArray(ipam, "addresses", "ipam.addresses") ?? []).map((item, i) => {
    const where = `ipam.addresses[${i}]`;
    const obj = expectObject(item, where);
    const entry: PendingAddress = { text: optionalString(obj, "address", `${where}.address`) ?? "", where: `${where}.address` };
    const gwText = optionalString(obj, "gateway", `${where}.gateway`);
    if (gwText) {
      const gateway = tryParseIP(gwText);
      if (!gateway) throw invalidConfig(`invalid gateway ${showValue(gwText)}: not an IP address (${where}.gateway)`);
      entry.gateway = gateway;
    }
    return entry;
  });
}

function resolveAddress(a: PendingAddress): StaticAddress {
  if ("address" in a) return a;
  const address = tryParseCIDR(a.text);
  if (!address) throw invalidConfig(`the 'address' field is expected to be in CIDR notation, got: '${a.text}' (${a.where})`);
  return a.gateway ? { address, gateway: a.gateway } : { address };
}

/** Bad CNI_ARGS values are code 4, like every CNI_ARGS error. */
const invalidArgs = (msg: string): CniError => new CniError(ErrorCode.InvalidEnvironmentVariables, msg);

/** CNI_ARGS `IP` entries appended to `addresses`, then `GATEWAY` applied to them. */
function applyCniArgs(addresses: PendingAddress[], cniArgs: string): PendingAddress[] {
  const env = loadIpamArgs<{ IP: string; GATEWAY: string }>(cniArgs, { IP: (v) => v, GATEWAY: (v) => v });
  const fromArgs: StaticAddress[] = [];
  if (env.IP) {
    for (const item of env.IP.split(",")) {
      const text = item.trim();
      const address = tryParseCIDR(text);
      if (!address) throw invalidArgs(`the 'ip' field is expected to be in CIDR notation, got: '${text}' (CNI_ARGS IP)`);
      fromArgs.push({ address });
    }
  }
  if (env.GATEWAY) {
    for (const item of env.GATEWAY.split(",")) {
      const gateway = tryParseIP(item.trim());
      if (!gateway) throw invalidArgs(`invalid gateway address: ${item} (CNI_ARGS GATEWAY)`);
      // Go compares against addresses it has parsed so far, which are only the CNI_ARGS ones.
      for (const a of fromArgs) if (cidrContains(a.address, gateway)) a.gateway = gateway;
    }
  }
  return [...addresses, ...fromArgs];
}

/** `args.cni.ips` or `runtimeConfig.ips` as a replacement list, or undefined when absent or empty. */
function replacementAddresses(obj: ReturnType<typeof loadIpamEnvelope>["raw"] | undefined, where: string): StaticAddress[] | undefined {
  const list = obj && optionalStringList(obj, "ips", where);
  if (!list?.length) return undefined;
  return list.map(({ value, where: at }) => {
    const address = tryParseCIDR(value);
    if (!address) throw invalidConfig(`an entry in the 'ips' field is NOT in CIDR notation, got: '${value}' (${at})`);
    return { address };
  });
}

/** Parses static's config (invalid values are code 7; bad CNI_ARGS code 4). */
export function parseStaticConfig(stdin: Buffer, cniArgs: string): StaticConfig {
  const envelope = loadIpamEnvelope(stdin);
  const { ipam } = envelope;
  const routes = parseRoutes(ipam);
  const dnsObj = optionalObject(ipam, "dns", "ipam.dns");
  const dns = dnsObj ? decodeDnsOrThrow(dnsObj) : {};
  let pending = applyCniArgs(configAddresses(ipam), cniArgs);
  pending = replacementAddresses(envelope.argsCni, "args.cni.ips") ?? pending;
  pending = replacementAddresses(envelope.runtimeConfig, "runtimeConfig.ips") ?? pending;
  const addresses = pending.map(resolveAddress);
  checkAddressesPerFamily(envelope.cniVersion, addresses.map((a) => a.address.ip.family));
  return { name: envelope.name, cniVersion: envelope.cniVersion, addresses, routes, dns };
}

function decodeDnsOrThrow(obj: Parameters<typeof decodeDNS>[0]): DNS {
  try {
    return decodeDNS(obj);
  } catch (e) {
    throw invalidConfig(`invalid ipam.dns: ${(e as Error).message}`);
  }
}
