/**
 * IP addresses and CIDRs as CNI writes them: Go's net package canonical forms (RFC 5952 IPv6, IPv4-mapped
 * addresses printed as IPv4, host bits kept in `addr/prefix`), and its error texts.
 * @module
 */
/** An IP version. */
export type IPFamily = 4 | 6;

/** A parsed address: `bytes` is 4 or 16 long; `family` is 4 for IPv4 and IPv4-mapped IPv6. */
export interface IPAddress {
  readonly family: IPFamily;
  readonly bytes: Uint8Array;
  readonly text: string;
}
/** A parsed `addr/prefix` with the host bits kept (Go's types.IPNet / net.ParseCIDR's ip+mask). */
export interface IPCidr {
  readonly ip: IPAddress;
  readonly prefix: number;
  readonly text: string;
}

// The parsers and the printer below follow Go's net/netip (ParseAddr, Addr.String) rule for rule, written out
// rather than taken from a library built on regular expressions: they run in every IPAM call, which would compile
// those expressions first (docs/startup.md).

/** Dotted-quad IPv4 in `s[start, end)` as Go reads it (four decimal fields, each <= 255, no leading zeros). */
function parseIPv4Fields(s: string, start: number, end: number): number[] | undefined {
  const fields: number[] = [];
  let value = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (digits === 1 && value === 0) return undefined; // a leading zero
      value = value * 10 + (c - 0x30);
      digits++;
      if (value > 255) return undefined;
    } else if (c === 0x2e && digits > 0 && fields.length < 3) {
      fields.push(value);
      value = 0;
      digits = 0;
    } else {
      return undefined;
    }
  }
  if (digits === 0 || fields.length !== 3) return undefined;
  fields.push(value);
  return fields;
}

/** A hex digit's value, or -1. */
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** IPv6 text (no zone) as Go's netip reads it: at most one "::", fields of 1-4 hex digits, an IPv4 tail. */
function parseIPv6Bytes(s: string): Uint8Array | undefined {
  const ip = new Uint8Array(16);
  let pos = 0;
  let ellipsis = -1;
  if (s.length >= 2 && s.charCodeAt(0) === 0x3a && s.charCodeAt(1) === 0x3a) {
    ellipsis = 0;
    pos = 2;
    if (pos === s.length) return ip;
  }
  let i = 0;
  while (i < 16) {
    let off = pos;
    let acc = 0;
    for (; off < s.length; off++) {
      const h = hexValue(s.charCodeAt(off));
      if (h < 0) break;
      if (off - pos > 3) return undefined; // more than 4 digits
      acc = acc * 16 + h;
    }
    if (off === pos) return undefined; // a field without digits
    if (off < s.length && s.charCodeAt(off) === 0x2e) {
      // the IPv4 tail: the last 32 bits
      if ((ellipsis < 0 && i !== 12) || i + 4 > 16) return undefined;
      const v4 = parseIPv4Fields(s, pos, s.length);
      if (!v4) return undefined;
      ip.set(v4, i);
      i += 4;
      pos = s.length;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    pos = off;
    if (pos === s.length) break;
    if (s.charCodeAt(pos) !== 0x3a || pos + 1 === s.length) return undefined;
    pos++;
    if (s.charCodeAt(pos) === 0x3a) {
      if (ellipsis >= 0) return undefined; // a second "::"
      ellipsis = i;
      pos++;
      if (pos === s.length) break;
    }
  }
  if (pos !== s.length) return undefined;
  if (i < 16) {
    if (ellipsis < 0) return undefined;
    const n = 16 - i;
    ip.copyWithin(ellipsis + n, ellipsis, i);
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    return undefined; // "::" must stand for at least one zero field
  }
  return ip;
}

/**
 * The bytes of an IP address as written: 4 for dotted IPv4, 16 for IPv6 (IPv4-mapped included), as Go's
 * netip.ParseAddr reads them; undefined when `text` is not one, or has a zone (which net.ParseIP refuses).
 */
export function parseIPBytes(text: string): Uint8Array | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) {
      const v4 = parseIPv4Fields(text, 0, text.length);
      return v4 ? new Uint8Array(v4) : undefined;
    }
    if (c === 0x3a) return parseIPv6Bytes(text);
    if (c === 0x25) return undefined;
  }
  return undefined;
}

/** Whether 16 bytes are an IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
export const isIPv4Mapped = (b: Uint8Array): boolean =>
  b.length === 16 && b[10] === 0xff && b[11] === 0xff && b.subarray(0, 10).every((x) => x === 0);

/** 16 bytes as RFC 5952 (and Go) write IPv6: the leftmost longest run of two or more zero fields as "::". */
export function formatIPv6(b: Uint8Array): string {
  const fields: number[] = [];
  for (let i = 0; i < 16; i += 2) fields.push((b[i]! << 8) | b[i + 1]!);
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && fields[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    fields
      .slice(from, to)
      .map((f) => f.toString(16))
      .join(":");
  return bestStart < 0 ? hex(0, 8) : `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

/** An address from its 4 or 16 bytes, IPv4-mapped IPv6 taken as IPv4 (Go's To4). */
function toAddress(bytes: Uint8Array): IPAddress {
  const b = isIPv4Mapped(bytes) ? bytes.slice(12) : new Uint8Array(bytes);
  return b.length === 4 ? { family: 4, bytes: b, text: b.join(".") } : { family: 6, bytes: b, text: formatIPv6(b) };
}

/** Parses an IP address as Go's net.ParseIP does; returns undefined when it is not one. */
export function tryParseIP(text: string): IPAddress | undefined {
  const bytes = parseIPBytes(text);
  return bytes ? toAddress(bytes) : undefined;
}

/** Parses an IP address (throws when `text` is not one). */
export function parseIP(text: string): IPAddress {
  const ip = tryParseIP(text);
  if (!ip) throw new Error(`invalid IP address: ${text}`);
  return ip;
}

/** `s` as Go's dtoi reads a whole string: decimal digits (leading zeros allowed), below 0xFFFFFF; else undefined. */
function decimalValue(s: string): number | undefined {
  if (s.length === 0) return undefined;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
    n = n * 10 + (c - 0x30);
    if (n >= 0xffffff) return undefined;
  }
  return n;
}

/** Parses `addr/prefix` keeping the host bits, as CNI's types.ParseCIDR does. */
export function parseCIDR(text: string): IPCidr {
  const slash = text.indexOf("/");
  const bad = () => new Error(`invalid CIDR address: ${text}`);
  if (slash < 0) throw bad();
  const addrText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const prefix = decimalValue(prefixText);
  if (prefix === undefined) throw bad();
  const isV6Text = addrText.includes(":");
  const ip = tryParseIP(addrText);
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
  const bytes = new Uint8Array(cidr.ip.bytes);
  for (let bit = cidr.prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  const ip = toAddress(bytes);
  return { ip, prefix: cidr.prefix, text: `${ip.text}/${cidr.prefix}` };
}

/** An address from raw bytes (4 or 16). */
export function ipFromBytes(bytes: Uint8Array): IPAddress {
  if (bytes.length !== 4 && bytes.length !== 16) throw new Error(`an IP address has 4 or 16 bytes, not ${bytes.length}`);
  return toAddress(bytes);
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
