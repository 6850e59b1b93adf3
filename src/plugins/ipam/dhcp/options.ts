/**
 * What the dhcp plugin asks for and what it makes of the answer: option names as the config spells them,
 * the client identifier, the options every request carries, and the CNI result built from a DHCPACK
 * (address, gateway, routes from option 121 or 33, DNS from options 6, 15 and 119).
 * @module
 */
import { failure } from "#spec/errors.js";
import type { DNS, Route } from "#spec/result/common.js";
import { IMPLEMENTED_100, type Result100 } from "#spec/result/types100.js";
import { Option } from "./option-codes.js";
import {
  DhcpFormatError,
  type DhcpMessage,
  maskPrefix,
  type OptionRoute,
  parseClasslessRoutes,
  parseDomainSearch,
  parseStaticRoutes,
  readAddresses,
  readText,
} from "./packet.js";

/** The lease's key and identifier: `containerID/netName/ifName`, cut to 254 bytes as upstream does. */
export function clientIdOf(containerID: string, netName: string, ifName: string): string {
  const full = Buffer.from(`${containerID}/${netName}/${ifName}`, "utf8");
  return full.length > 254 ? full.subarray(0, 254).toString("utf8") : full.toString("utf8");
}

/** Option 61 as sent: type 0 (not a hardware address) and the client id's bytes. */
export function clientIdOption(clientId: string): Uint8Array {
  return Uint8Array.from([0, ...Buffer.from(clientId, "utf8").subarray(0, 254)]);
}

/** Routes of a lease: option 121 when the server sent a valid one (RFC 3442: then 3 and 33 are ignored), else 33 and the router. */
function leaseRoutes(ack: DhcpMessage, gateway: string | undefined): Route[] {
  const classless = ack.options.get(Option.ClasslessStaticRoutes);
  if (classless && classless.length > 0) {
    try {
      // A route without a router (0.0.0.0) is on-link: scope link (253), as upstream marks it.
      return parseClasslessRoutes(classless).map(
        (r: OptionRoute): Route => (r.router === "0.0.0.0" ? { dst: r.dst, scope: 253 } : { dst: r.dst, gw: r.router }),
      );
    } catch (e) {
      if (!(e instanceof DhcpFormatError)) throw e; // a malformed option 121 is ignored, as the RFC says
    }
  }
  const routes: Route[] = [];
  const statics = ack.options.get(Option.StaticRoutes);
  if (statics) routes.push(...parseStaticRoutes(statics).map((r): Route => ({ dst: r.dst, gw: r.router })));
  if (gateway) routes.push({ dst: "0.0.0.0/0", gw: gateway });
  return routes;
}

/** DNS settings from options 6 (servers), 15 (domain) and 119 (search list). */
function leaseDNS(ack: DhcpMessage): DNS {
  const dns: DNS = {};
  const servers = readAddresses(ack.options.get(Option.DomainNameServer));
  if (servers) dns.nameservers = servers;
  const domain = readText(ack.options.get(Option.DomainName));
  if (domain) dns.domain = domain;
  const search = ack.options.get(Option.DomainSearch);
  if (search) {
    try {
      const names = parseDomainSearch(search);
      if (names.length) dns.search = names;
    } catch (e) {
      if (!(e instanceof DhcpFormatError)) throw e;
    }
  }
  return dns;
}

/** The prefix length a DHCPACK gives its address (option 1); throws when it gives none, as upstream does. */
export function leasePrefix(ack: DhcpMessage): number {
  const mask = ack.options.get(Option.SubnetMask);
  if (!mask) throw failure("DHCP option Subnet Mask not found in DHCPACK");
  const prefix = maskPrefix(mask);
  if (prefix === undefined) throw failure(`the DHCPACK's subnet mask ${[...mask].join(".")} is not contiguous`);
  return prefix;
}

/** The IPAM result of a lease; `priority` (when not 0) becomes every route's metric, as upstream. */
export function leaseResult(ack: DhcpMessage, priority: number): Result100 {
  const gateway = readAddresses(ack.options.get(Option.Router))?.[0];
  const ip = gateway ? { address: `${ack.yiaddr}/${leasePrefix(ack)}`, gateway } : { address: `${ack.yiaddr}/${leasePrefix(ack)}` };
  const routes = leaseRoutes(ack, gateway).map((r) => (priority ? { ...r, priority } : r));
  const result: Result100 = { cniVersion: IMPLEMENTED_100, ips: [ip], routes };
  const dns = leaseDNS(ack);
  if (Object.keys(dns).length) result.dns = dns;
  return result;
}
