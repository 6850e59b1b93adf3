/**
 * IP addresses and CIDRs as CNI writes them: Go's net package canonical forms (RFC 5952 IPv6, IPv4-mapped
 * addresses printed as IPv4, host bits kept in `addr/prefix`), and its error texts.
 * @module
 */
import ipaddr from "ipaddr.js";

/** An IP version. */
export type IPFamily = 4 | 6;

/** A parsed address: `bytes` is 4 or 16 long; `family` is 4 for IPv4 and IPv4-mapped IPv6. */
export interface IPAddress { readonly family: IPFamily; readonly bytes: Uint8Array; readonly text: string }
/** A parsed `addr/prefix` with the host bits kept (Go's types.IPNet / net.ParseCIDR's ip+mask). */
export interface IPCidr { readonly ip: IPAddress; readonly prefix: number; readonly text: string }

function toAddress(addr: ipaddr.IPv4 | ipaddr.IPv6): IPAddress {
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
  }
  if (addr.kind() === "ipv4") {
    return { family: 4, bytes: Uint8Array.from(addr.toByteArray()), text: addr.toString() };
  }
  return { family: 6, bytes: Uint8Array.from(addr.toByteArray()), text: (addr as ipaddr.IPv6).toRFC5952String() };
}

/** A dotted-quad IPv4 as Go accepts it (no leading zeros), or undefined. */
function parseIPv4(text: string): ipaddr.IPv4 | undefined {
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
  if (text.split(".").some((p) => p.length > 1 && p.startsWith("0"))) return undefined; // Go rejects leading zeros
  return ipaddr.IPv4.parse(text);
}

/**
 * Rewrites the dotted IPv4 tail of an IPv6 text (`::1.2.3.4`) as two hex groups, because ipaddr.js would
 * read `::1.2.3.4` as the IPv4-mapped `::ffff:1.2.3.4`. Undefined when the tail is not a valid IPv4.
 */
function ipv4TailToHex(text: string): string | undefined {
  const m = /^(.*:)([^:]*)$/.exec(text);
  if (!m || !m[2]!.includes(".")) return text;
  const v4 = parseIPv4(m[2]!)?.toByteArray();
  if (!v4) return undefined;
  return m[1] + ((v4[0]! << 8) | v4[1]!).toString(16) + ":" + ((v4[2]! << 8) | v4[3]!).toString(16);
}

/** Parses an IP address as Go's net.ParseIP does; returns undefined when it is not one. */
export function tryParseIP(text: string): IPAddress | undefined {
  const v4 = parseIPv4(text);
  if (v4) return toAddress(v4);
  if (!text.includes(":") || text.includes("%")) return undefined;
  const v6 = ipv4TailToHex(text);
  return v6 !== undefined && ipaddr.IPv6.isValid(v6) ? toAddress(ipaddr.IPv6.parse(v6)) : undefined;
}

/** Parses an IP address (throws when `text` is not one). */
export function parseIP(text: string): IPAddress {
  const ip = tryParseIP(text);
  if (!ip) throw new Error(`invalid IP address: ${text}`);
  return ip;
}

/** Parses `addr/prefix` keeping the host bits, as CNI's types.ParseCIDR does. */
export function parseCIDR(text: string): IPCidr {
  const slash = text.indexOf("/");
  const bad = () => new Error(`invalid CIDR address: ${text}`);
  if (slash < 0) throw bad();
  const addrText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,10}$/.test(prefixText)) throw bad(); // Go's dtoi: decimal digits, leading zeros allowed
  const isV6Text = addrText.includes(":");
  const ip = tryParseIP(addrText);
  const prefix = Number(prefixText);
  if (!ip || prefix > (isV6Text ? 128 : 32)) throw bad();
  // An IPv4-mapped address written in IPv6 form keeps an IPv6 mask; Go prints it as IPv4 with the low 32 bits
  // of that mask, i.e. prefix-96 (0 when the prefix is shorter than 96).
  const effective = isV6Text && ip.family === 4 ? Math.max(0, prefix - 96) : prefix;
  return { ip, prefix: effective, text: `${ip.text}/${effective}` };
}

/** Parses `addr/prefix`, keeping the host bits; undefined when `text` is not one. */
export function tryParseCIDR(text: string): IPCidr | undefined {
  try {
    return parseCIDR(text);
  } catch {
    return undefined;
  }
}

/** The canonical text of an IP (throws `invalid IP address` when it is not one). */
export const canonicalIP = (text: string): string => parseIP(text).text;
/** The canonical text of an `addr/prefix` (throws `invalid CIDR address`). */
export const canonicalCIDR = (text: string): string => parseCIDR(text).text;

/** The address family of an IP or CIDR text (4 for IPv4-mapped IPv6, as Go's To4). */
export function ipFamily(text: string): IPFamily {
  return (text.includes("/") ? parseCIDR(text).ip : parseIP(text)).family;
}

/** The network (host bits zeroed) of a CIDR, as `addr/prefix`. */
export function networkOf(cidr: IPCidr): IPCidr {
  const bytes = Uint8Array.from(cidr.ip.bytes);
  for (let bit = cidr.prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  const ip = toAddress(ipaddr.fromByteArray([...bytes]));
  return { ip, prefix: cidr.prefix, text: `${ip.text}/${cidr.prefix}` };
}

/** An address from raw bytes (4 or 16). */
export function ipFromBytes(bytes: Uint8Array): IPAddress {
  return toAddress(ipaddr.fromByteArray([...bytes]));
}

/** Whether `ip` lies inside `cidr`'s network. */
export function cidrContains(cidr: IPCidr, ip: IPAddress): boolean {
  if (cidr.ip.family !== ip.family) return false;
  const a = cidr.ip.bytes;
  const b = ip.bytes;
  for (let bit = 0; bit < cidr.prefix; bit++) {
    const mask = 0x80 >> (bit & 7);
    if ((a[bit >> 3]! & mask) !== (b[bit >> 3]! & mask)) return false;
  }
  return true;
}
