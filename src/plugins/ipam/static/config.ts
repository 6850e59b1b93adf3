/**
 * static's configuration: the addresses to hand out, with Go's unusual precedence. `ipam.addresses` comes
 * first; CNI_ARGS `IP=` (comma-separated CIDRs) appends to it and CNI_ARGS `GATEWAY=` (comma-separated IPs)
 * sets the gateway of each CNI_ARGS address whose subnet contains it; then `args.cni.ips` replaces the whole
 * list, and `runtimeConfig.ips` replaces it again (both without gateways).
 * @module
 */

import { type Decoded, list, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { cidrContains, type IPAddress, type IPCidr, tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS } from "#spec/config.js";
import { invalidConfig, invalidEnv } from "#spec/errors.js";
import { compactDNS, type DNS, DNS_TYPE } from "#spec/result/common.js";
import { decodeConfig } from "../../common/keys.js";
import { checkAddressesPerFamily, ipamArgsField, loadIpamArgs, ROUTES_KEY, requireIpam, showValue } from "../ipam-config.js";

/** An address to return: host bits kept (`10.0.0.5/24`), with an optional gateway. */
export interface StaticAddress {
  address: IPCidr;
  gateway?: IPAddress;
}

/** An address as read: config addresses keep their text until the end, as Go parses them last. */
type PendingAddress = StaticAddress | { text: string; where: string; gateway?: IPAddress };

/**
 * An `ipam.addresses` item, `{address: CIDR, gateway?: IP}`: the gateway is checked as it is decoded (as Go
 * decodes it with the JSON), the address only when it is used (a replaced address is never parsed, as in Go).
 */
const ADDRESS = refine(struct("Address", { address: string, gateway: string }), (item, at): PendingAddress => {
  const entry: PendingAddress = { text: item.address ?? "", where: `${at}.address` };
  if (item.gateway) {
    const gateway = tryParseIP(item.gateway);
    if (!gateway) throw invalidConfig(`invalid gateway ${showValue(item.gateway)}: not an IP address (${at}.gateway)`);
    entry.gateway = gateway;
  }
  return entry;
});

/** `args.cni.ips` or `runtimeConfig.ips`: addresses in CIDR notation (host bits kept), without gateways. */
const CIDR_LIST = refine(list(string), (ips, at): StaticAddress[] =>
  ips.map((value, i) => {
    const address = tryParseCIDR(value);
    if (!address) throw invalidConfig(`an entry in the 'ips' field is NOT in CIDR notation, got: '${value}' (${at}[${i}])`);
    return { address };
  }),
);

/** static's IPAMConfig: each key with its default and the values it takes. */
const STATIC_IPAM = struct("IPAMConfig", {
  name: string,
  type: string,
  routes: ROUTES_KEY,
  addresses: withDefault(list(ADDRESS), []),
  // Compacted by the loader rather than refined: two spellings of `dns` merge, as Go decodes them.
  dns: DNS_TYPE,
});

/** static's Go config: Net with its IPAMConfig. */
export const STATIC_SCHEMA = struct("Net", {
  ...NET_CONF_FIELDS,
  ipam: ptr(STATIC_IPAM),
  runtimeConfig: struct("RuntimeConfig", { ips: CIDR_LIST }),
  args: ipamArgsField(CIDR_LIST),
});

/** static's config: the addresses that the precedence rules leave, and the `ipam` keys as the schema reads them. */
export type StaticConfig = Pick<Decoded<typeof STATIC_IPAM>, "routes"> & {
  name: string;
  cniVersion: string;
  addresses: StaticAddress[];
  dns: DNS;
};

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

/** A replacement list (`args.cni.ips`, `runtimeConfig.ips`), or undefined when absent or empty (it replaces nothing then). */
const replacement = (ips: StaticAddress[] | undefined): StaticAddress[] | undefined => (ips?.length ? ips : undefined);

/** Parses static's config (invalid values are code 7; bad CNI_ARGS code 4). */
export function parseStaticConfig(stdin: Buffer, cniArgs: string): StaticConfig {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(STATIC_SCHEMA, raw);
  const ipam = requireIpam(c.ipam);
  let pending = applyCniArgs(ipam.addresses, cniArgs);
  pending = replacement(c.args?.cni?.ips) ?? pending;
  pending = replacement(c.runtimeConfig?.ips) ?? pending;
  const addresses = pending.map(resolveAddress);
  checkAddressesPerFamily(
    conf.cniVersion,
    addresses.map((a) => a.address.ip.family),
  );
  return { name: conf.name, cniVersion: conf.cniVersion, addresses, routes: ipam.routes, dns: compactDNS(ipam.dns) };
}
