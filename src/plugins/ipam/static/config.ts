/**
 * static's configuration: the addresses to hand out, with Go's unusual precedence. `ipam.addresses` comes
 * first; CNI_ARGS `IP=` (comma-separated CIDRs) appends to it and CNI_ARGS `GATEWAY=` (comma-separated IPs)
 * sets the gateway of each CNI_ARGS address whose subnet contains it; then `args.cni.ips` replaces the whole
 * list, and `runtimeConfig.ips` replaces it again (both without gateways).
 * @module
 */
import { cidrContains, tryParseCIDR, tryParseIP, type IPAddress, type IPCidr } from "#ip/ip.js";
import { compactDNS, DNS_TYPE, type DNS, type Route } from "#spec/result/common.js";
import { NET_CONF_FIELDS } from "#spec/config.js";
import { list, ptr, string, struct, type Decoded } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { checkAddressesPerFamily, IPAM_ARGS_FIELD, loadIpamArgs, parseRoutes, requireIpam, ROUTES_FIELD, showValue } from "../ipam-config.js";
import { decodeConfig } from "../../common/keys.js";
import { invalidConfig, invalidEnv } from "#spec/errors.js";

const ADDRESS = struct("Address", { address: string, gateway: string });

/** static's Go config: Net with its IPAMConfig. */
export const STATIC_SCHEMA = struct("Net", {
  ...NET_CONF_FIELDS,
  ipam: ptr(struct("IPAMConfig", { name: string, type: string, routes: ROUTES_FIELD, addresses: list(ADDRESS), dns: DNS_TYPE })),
  runtimeConfig: struct("RuntimeConfig", { ips: list(string) }),
  args: IPAM_ARGS_FIELD,
});

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
function configAddresses(addresses: ReadonlyArray<Decoded<typeof ADDRESS>>): PendingAddress[] {
  return addresses.map((item, i) => {
    const where = `ipam.addresses[${i}]`;
    const entry: PendingAddress = { text: item.address ?? "", where: `${where}.address` };
    if (item.gateway) {
      const gateway = tryParseIP(item.gateway);
      if (!gateway) throw invalidConfig(`invalid gateway ${showValue(item.gateway)}: not an IP address (${where}.gateway)`);
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

/** CNI_ARGS `IP` entries appended to `addresses`, then `GATEWAY` applied to them. */
function applyCniArgs(addresses: PendingAddress[], cniArgs: string): PendingAddress[] {
  const env = loadIpamArgs<{ IP: string; GATEWAY: string }>(cniArgs, { IP: (v) => v, GATEWAY: (v) => v });
  const fromArgs: StaticAddress[] = [];
  if (env.IP) {
    for (const item of env.IP.split(",")) {
      const text = item.trim();
      const address = tryParseCIDR(text);
      if (!address) throw invalidEnv(`the 'ip' field is expected to be in CIDR notation, got: '${text}' (CNI_ARGS IP)`);
      fromArgs.push({ address });
    }
  }
  if (env.GATEWAY) {
    for (const item of env.GATEWAY.split(",")) {
      const gateway = tryParseIP(item.trim());
      if (!gateway) throw invalidEnv(`invalid gateway address: ${item} (CNI_ARGS GATEWAY)`);
      // Go compares against addresses it has parsed so far, which are only the CNI_ARGS ones.
      for (const a of fromArgs) if (cidrContains(a.address, gateway)) a.gateway = gateway;
    }
  }
  return [...addresses, ...fromArgs];
}

/** `args.cni.ips` or `runtimeConfig.ips` as a replacement list, or undefined when absent or empty. */
function replacementAddresses(ips: readonly string[] | undefined, where: string): StaticAddress[] | undefined {
  if (!ips?.length) return undefined;
  return ips.map((value, i) => {
    const address = tryParseCIDR(value);
    if (!address) throw invalidConfig(`an entry in the 'ips' field is NOT in CIDR notation, got: '${value}' (${where}[${i}])`);
    return { address };
  });
}

/** Parses static's config (invalid values are code 7; bad CNI_ARGS code 4). */
export function parseStaticConfig(stdin: Buffer, cniArgs: string): StaticConfig {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(STATIC_SCHEMA, raw);
  const ipam = requireIpam(c.ipam);
  const routes = parseRoutes(ipam.routes);
  let pending = applyCniArgs(configAddresses(ipam.addresses ?? []), cniArgs);
  pending = replacementAddresses(c.args?.cni?.ips, "args.cni.ips") ?? pending;
  pending = replacementAddresses(c.runtimeConfig?.ips, "runtimeConfig.ips") ?? pending;
  const addresses = pending.map(resolveAddress);
  checkAddressesPerFamily(
    conf.cniVersion,
    addresses.map((a) => a.address.ip.family),
  );
  return { name: conf.name, cniVersion: conf.cniVersion, addresses, routes, dns: compactDNS(ipam.dns) };
}
