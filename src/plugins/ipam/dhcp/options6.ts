/**
 * What the DHCPv6 client asks for and how it names itself (the DUID of a container interface, the IAID, the client's
 * name), the CNI result of a DHCPv6 lease (the address and DNS from options 23 and 24), and the one result of an
 * attachment that holds leases of both families.
 * @module
 */
import { createHash } from "node:crypto";
import type { DNS } from "#spec/result/common.js";
import { IMPLEMENTED_100, type Result100 } from "#spec/result/types100.js";
import type { DuidSource, SendSpec6 } from "./client6.js";
import type { DuidKind } from "./config.js";
import { Option } from "./option-codes.js";
import { DhcpFormatError, parseDomainSearch } from "./packet.js";
import { clientFqdn, type Dhcp6Message, decodeMessage6, duidLL, duidLLT, duidUUID, firstOption, Option6, readAddresses6 } from "./packet6.js";

/** The options a DHCPv6 client asks for: DNS servers and the domain search list. */
export const DEFAULT_ORO6: readonly number[] = [Option6.DNSServers, Option6.DomainList];

/** ARPHRD_ETHER: the hardware type a DUID names when the interface reports none. */
const ARPHRD_ETHER = 1;

const digest = (clientID: string): Buffer => createHash("sha256").update(clientID).digest();

/** The IAID of an attachment's IA_NA: the first 4 bytes of a SHA-256 of its client id, so it is stable and differs between attachments. */
export const iaidOf = (clientID: string): number => digest(clientID).readUInt32BE(0);

/** A version 8 (RFC 9562, name-based by our own hash) UUID of an attachment: the same client id gives the same UUID. */
export function attachmentUuid(clientID: string): Uint8Array {
  const b = Uint8Array.from(digest(`tscni-dhcp6/${clientID}`).subarray(0, 16));
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return b;
}

/**
 * The DUID of an attachment, by `kind`: DUID-LL or DUID-LLT from the interface's hardware address (made when the
 * interface is open; an interface without one, such as a tun device, gets DUID-UUID instead), or DUID-UUID from
 * the client id. Whichever it is, it is stored with the lease and reused for its renewals and release.
 */
export function duidSource(kind: DuidKind, clientID: string, now: () => number): DuidSource {
  if (kind === "uuid") return duidUUID(attachmentUuid(clientID));
  return ({ hwType, mac }) => {
    if (mac.length === 0 || mac.every((b) => b === 0)) return duidUUID(attachmentUuid(clientID));
    const type = hwType || ARPHRD_ETHER;
    return kind === "llt" ? duidLLT(type, mac, now()) : duidLL(type, mac);
  };
}

/** What an attachment's DHCPv6 messages carry, but its DUID: the IAID, the request list, the name (from option 12 of the DHCPv4 options, when set). */
export function sendSpec6(clientID: string, sendOptions: ReadonlyMap<number, Uint8Array>): Omit<SendSpec6, "duid"> {
  const hostName = sendOptions.get(Option.HostName);
  const fqdn = hostName ? clientFqdn(Buffer.from(hostName).toString("utf8")) : undefined;
  return { iaid: iaidOf(clientID), oro: [...DEFAULT_ORO6], ...(fqdn ? { fqdn } : {}) };
}

/** DNS settings of a REPLY: option 23 (servers) and option 24 (the search list; a malformed one is ignored). */
function leaseDNS6(reply: Dhcp6Message): DNS {
  const dns: DNS = {};
  const servers = readAddresses6(firstOption(reply.options, Option6.DNSServers));
  if (servers) dns.nameservers = servers;
  const list = firstOption(reply.options, Option6.DomainList);
  if (list) {
    try {
      const names = parseDomainSearch(list);
      if (names.length) dns.search = names;
    } catch (e) {
      if (!(e instanceof DhcpFormatError)) throw e;
    }
  }
  return dns;
}

/**
 * The IPAM result of a DHCPv6 lease: the address as /128 — DHCPv6 gives no prefix length nor routes (RFC 8415
 * §21.6; the on-link prefix and the default router come from router advertisements, which the container's kernel
 * takes) — and DNS from the REPLY.
 */
export function leaseResult6(reply: Uint8Array, address: string): Result100 {
  const result: Result100 = { cniVersion: IMPLEMENTED_100, ips: [{ address: `${address}/128` }], routes: [] };
  const dns = leaseDNS6(decodeMessage6(reply));
  if (Object.keys(dns).length) result.dns = dns;
  return result;
}

const unique = (items: readonly string[]): string[] => [...new Set(items)];

/**
 * One attachment's result from its leases' (IPv4 first): addresses and routes in order, nameservers and search
 * domains joined without repeats, the domain of the first that names one.
 */
export function combineResults(results: readonly Result100[]): Result100 {
  if (results.length === 1) return results[0]!;
  const out: Result100 = { cniVersion: IMPLEMENTED_100, ips: results.flatMap((r) => r.ips ?? []), routes: results.flatMap((r) => r.routes ?? []) };
  const dns: DNS = {};
  const nameservers = unique(results.flatMap((r) => r.dns?.nameservers ?? []));
  if (nameservers.length) dns.nameservers = nameservers;
  const domain = results.find((r) => r.dns?.domain)?.dns?.domain;
  if (domain) dns.domain = domain;
  const search = unique(results.flatMap((r) => r.dns?.search ?? []));
  if (search.length) dns.search = search;
  if (Object.keys(dns).length) out.dns = dns;
  return out;
}
