/**
 * IP arithmetic: addresses as integers, the next/previous address, ordering, and the first/last address of a
 * CIDR. Pure helpers over the parsed forms of ip.ts; IPv4 works in 32 bits and IPv6 in 128, as Go's
 * plugins/pkg/ip does.
 * @module
 */
import { type IPAddress, type IPCidr, type IPFamily, ipFromBytes } from "./ip.js";

/** The number of bits of an address of `family`. */
export const addressBits = (family: IPFamily): number => (family === 4 ? 32 : 128);

/** An address as an unsigned integer. */
export function ipToBigInt(ip: IPAddress): bigint {
  let n = 0n;
  const bytes = ip.bytes;
  for (let i = 0; i < bytes.length; i++) n = (n << 8n) | BigInt(bytes[i]!);
  return n;
}

/** The address of `family` whose integer value is `n`; undefined when `n` does not fit. */
export function ipFromBigInt(n: bigint, family: IPFamily): IPAddress | undefined {
  const length = family === 4 ? 4 : 16;
  if (n < 0n || n >> BigInt(length * 8) !== 0n) return undefined;
  const bytes = new Uint8Array(length);
  for (let i = length - 1; i >= 0; i--) {
    bytes[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return ipFromBytes(bytes);
}

/** The address after `ip`, or undefined after the last address of its family. */
export const nextIP = (ip: IPAddress): IPAddress | undefined => ipFromBigInt(ipToBigInt(ip) + 1n, ip.family);

/** The address before `ip`, or undefined before the first address of its family. */
export const prevIP = (ip: IPAddress): IPAddress | undefined => ipFromBigInt(ipToBigInt(ip) - 1n, ip.family);

/** Whether two addresses are the same (same family and value). */
export function ipEqual(a: IPAddress | undefined, b: IPAddress | undefined): boolean {
  if (!a || !b || a.family !== b.family) return false;
  return a.bytes.every((byte, i) => byte === b.bytes[i]);
}

/** Orders two addresses of the same family (negative, 0, positive); throws when the families differ. */
export function compareIP(a: IPAddress, b: IPAddress): number {
  if (a.family !== b.family) throw new Error(`cannot compare IPv${a.family} ${a.text} with IPv${b.family} ${b.text}`);
  const x = ipToBigInt(a);
  const y = ipToBigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The host-bits mask of a prefix, as an integer. */
const hostMask = (cidr: IPCidr): bigint => (1n << BigInt(addressBits(cidr.ip.family) - cidr.prefix)) - 1n;

/** The first address of a CIDR (host bits zero). */
export function firstAddress(cidr: IPCidr): IPAddress {
  return ipFromBigInt(ipToBigInt(cidr.ip) & ~hostMask(cidr), cidr.ip.family)!;
}

/** The last address of a CIDR (host bits one): the IPv4 broadcast address. */
export function lastAddress(cidr: IPCidr): IPAddress {
  return ipFromBigInt(ipToBigInt(cidr.ip) | hostMask(cidr), cidr.ip.family)!;
}

/** Whether a CIDR's address has host bits set (i.e. is not its network address). */
export const hasHostBits = (cidr: IPCidr): boolean => (ipToBigInt(cidr.ip) & hostMask(cidr)) !== 0n;

/** Whether the inclusive intervals [aStart, aEnd] and [bStart, bEnd] (one family) share an address. */
export function intervalsOverlap(aStart: IPAddress, aEnd: IPAddress, bStart: IPAddress, bEnd: IPAddress): boolean {
  if (aStart.family !== bStart.family) return false;
  return compareIP(aStart, bEnd) <= 0 && compareIP(bStart, aEnd) <= 0;
}
