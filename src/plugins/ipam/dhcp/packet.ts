/**
 * The DHCPv4 wire format (RFC 2131 messages, RFC 2132 options, RFC 3396 long options) and the IPv4/UDP framing
 * the daemon's packet socket needs: encoding what the client sends and decoding what arrives. Decoding is
 * strict about what would make a message ambiguous (lengths, the magic cookie, options running past the end)
 * and throws a DhcpFormatError for anything malformed, which the client treats as "not a reply" — a bad packet
 * on the wire never reaches further than the receive loop. No npm DHCP library fits (the maintained ones are
 * servers or pull in raw-socket native addons), and the format is small.
 * @module
 */
import { Option } from "./option-codes.js";

/** BOOTP operation codes. */
export const BOOTREQUEST = 1;
export const BOOTREPLY = 2;

/** The BOOTP broadcast flag: asks the server to broadcast its replies. */
export const FLAG_BROADCAST = 0x8000;

/** Option 51/58/59 value meaning "forever". */
export const INFINITE_TIME = 0xffffffff;

const MAGIC_COOKIE = 0x63825363;
/** The fixed BOOTP header, up to the magic cookie. */
const HEADER_SIZE = 236;
/** The smallest BOOTP message relays must accept (RFC 1542); shorter requests are padded to it. */
const MIN_MESSAGE_SIZE = 300;

/** A packet that is not a well-formed DHCP message (or IPv4/UDP datagram). */
export class DhcpFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DhcpFormatError";
  }
}

/** One DHCP message. Options keep their order; a repeated option's values are joined (RFC 3396). */
export interface DhcpMessage {
  op: number;
  htype: number;
  hlen: number;
  hops: number;
  xid: number;
  secs: number;
  flags: number;
  ciaddr: string;
  yiaddr: string;
  siaddr: string;
  giaddr: string;
  /** The client hardware address: `hlen` bytes. */
  chaddr: Uint8Array;
  sname: string;
  file: string;
  options: Map<number, Uint8Array>;
}

// ---- addresses and option values ----------------------------------------------------------------------

/** The 4 bytes of a dotted-quad IPv4 address; throws when `text` is not one. */
export function ipv4Bytes(text: string): Uint8Array {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) {
    throw new DhcpFormatError(`not an IPv4 address: ${JSON.stringify(text)}`);
  }
  return Uint8Array.from(parts.map(Number));
}

/** The dotted-quad text of 4 bytes at `at`. */
export const ipv4Text = (b: Uint8Array, at = 0): string => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;

/** A 32-bit option value. */
export function u32Option(v: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0);
  return b;
}

/** Reads a 32-bit option value (undefined when absent or not 4 bytes). */
export function readU32(opt: Uint8Array | undefined): number | undefined {
  if (opt?.length !== 4) return undefined;
  return new DataView(opt.buffer, opt.byteOffset, 4).getUint32(0);
}

/** Reads a list of IPv4 addresses (undefined when absent or not a multiple of 4 bytes). */
export function readAddresses(opt: Uint8Array | undefined): string[] | undefined {
  if (!opt || opt.length === 0 || opt.length % 4 !== 0) return undefined;
  const out: string[] = [];
  for (let at = 0; at < opt.length; at += 4) out.push(ipv4Text(opt, at));
  return out;
}

/** Reads a text option (NUL padding at the end dropped), or undefined when absent. */
export function readText(opt: Uint8Array | undefined): string | undefined {
  if (!opt) return undefined;
  return Buffer.from(opt).toString("utf8").replace(/\0+$/, "");
}

/** The prefix length of a contiguous netmask, or undefined when the mask is not contiguous. */
export function maskPrefix(mask: Uint8Array): number | undefined {
  if (mask.length !== 4) return undefined;
  const inverse = ~new DataView(mask.buffer, mask.byteOffset, 4).getUint32(0) >>> 0;
  // Contiguous means the inverse is 2^k - 1: adding one clears every bit it has.
  if ((inverse & (inverse + 1)) !== 0) return undefined;
  return Math.clz32(inverse);
}

/** A route given by option 121 or 33: destination CIDR and router. */
export interface OptionRoute {
  dst: string;
  router: string;
}

/**
 * Option 121 (RFC 3442): for each route a prefix width, the significant octets of the destination, and the
 * router. Throws on a width over 32 or a route cut short (the RFC says to ignore such an option altogether).
 */
export function parseClasslessRoutes(opt: Uint8Array): OptionRoute[] {
  const routes: OptionRoute[] = [];
  for (let at = 0; at < opt.length; ) {
    const width = opt[at]!;
    if (width > 32) throw new DhcpFormatError(`option 121: prefix width ${width} is over 32`);
    const octets = Math.ceil(width / 8);
    if (at + 1 + octets + 4 > opt.length) throw new DhcpFormatError("option 121: a route is cut short");
    const dst = new Uint8Array(4);
    dst.set(opt.subarray(at + 1, at + 1 + octets));
    routes.push({ dst: `${ipv4Text(dst)}/${width}`, router: ipv4Text(opt, at + 1 + octets) });
    at += 1 + octets + 4;
  }
  return routes;
}

/** Encodes routes as option 121 (the inverse of parseClasslessRoutes). */
export function encodeClasslessRoutes(routes: readonly OptionRoute[]): Uint8Array {
  const parts: number[] = [];
  for (const r of routes) {
    const [addr, widthText] = r.dst.split("/");
    const width = Number(widthText);
    parts.push(width, ...ipv4Bytes(addr!).subarray(0, Math.ceil(width / 8)), ...ipv4Bytes(r.router));
  }
  return Uint8Array.from(parts);
}

/** The classful prefix of an address (what option 33 destinations imply); undefined for class D and E. */
function classfulPrefix(firstOctet: number): number | undefined {
  if (firstOctet < 128) return 8;
  if (firstOctet < 192) return 16;
  if (firstOctet < 224) return 24;
  return undefined;
}

/** Option 33: pairs of classful destination and router (class D/E destinations are skipped). */
export function parseStaticRoutes(opt: Uint8Array): OptionRoute[] {
  const routes: OptionRoute[] = [];
  for (let at = 0; at + 8 <= opt.length; at += 8) {
    const prefix = classfulPrefix(opt[at]!);
    if (prefix === undefined) continue;
    routes.push({ dst: `${ipv4Text(opt, at)}/${prefix}`, router: ipv4Text(opt, at + 4) });
  }
  return routes;
}

/**
 * Option 119 (RFC 3397): domain names in DNS wire format, where a name may end in a pointer to an earlier
 * offset of the (joined) option. Throws on a label or pointer that runs out of the option or loops.
 */
export function parseDomainSearch(opt: Uint8Array): string[] {
  const names: string[] = [];
  const readName = (start: number): { name: string; next: number } => {
    const labels: string[] = [];
    let at = start;
    let next = -1;
    for (let hops = 0; ; hops++) {
      if (hops > opt.length) throw new DhcpFormatError("option 119: compression pointers loop");
      if (at >= opt.length) throw new DhcpFormatError("option 119: a name runs past the option");
      const len = opt[at]!;
      if (len === 0) {
        if (next < 0) next = at + 1;
        break;
      }
      if ((len & 0xc0) === 0xc0) {
        if (at + 1 >= opt.length) throw new DhcpFormatError("option 119: a pointer is cut short");
        if (next < 0) next = at + 2;
        const target = ((len & 0x3f) << 8) | opt[at + 1]!;
        if (target >= at) throw new DhcpFormatError("option 119: a pointer points forward");
        at = target;
        continue;
      }
      if (len > 63 || at + 1 + len > opt.length) throw new DhcpFormatError("option 119: a label runs past the option");
      labels.push(Buffer.from(opt.subarray(at + 1, at + 1 + len)).toString("latin1"));
      at += 1 + len;
    }
    return { name: labels.join("."), next };
  };
  for (let at = 0; at < opt.length; ) {
    const { name, next } = readName(at);
    if (name) names.push(name);
    at = next;
  }
  return names;
}

/** Encodes domain names for option 119 without compression. */
export function encodeDomainSearch(names: readonly string[]): Uint8Array {
  const out: number[] = [];
  for (const name of names) {
    for (const label of name.split(".").filter(Boolean)) out.push(label.length, ...Buffer.from(label, "latin1"));
    out.push(0);
  }
  return Uint8Array.from(out);
}

// ---- messages -----------------------------------------------------------------------------------------

/** A fresh request message with everything zero but what is given. */
export function newRequest(fields: { xid: number; chaddr: Uint8Array; flags?: number; secs?: number; ciaddr?: string }): DhcpMessage {
  return {
    op: BOOTREQUEST,
    htype: 1,
    hlen: fields.chaddr.length,
    hops: 0,
    xid: fields.xid >>> 0,
    secs: fields.secs ?? 0,
    flags: fields.flags ?? 0,
    ciaddr: fields.ciaddr ?? "0.0.0.0",
    yiaddr: "0.0.0.0",
    siaddr: "0.0.0.0",
    giaddr: "0.0.0.0",
    chaddr: fields.chaddr,
    sname: "",
    file: "",
    options: new Map(),
  };
}

function writeText(out: Uint8Array, at: number, size: number, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length >= size) throw new DhcpFormatError(`a ${size}-byte header field cannot hold ${JSON.stringify(text)}`);
  out.set(bytes, at);
}

/**
 * Encodes a message: the BOOTP header, the magic cookie, the message type first and the other options in
 * their order (values over 255 bytes split into several instances, RFC 3396), End, padded to 300 bytes.
 */
export function encodeMessage(m: DhcpMessage): Uint8Array {
  if (m.chaddr.length > 16) throw new DhcpFormatError(`chaddr of ${m.chaddr.length} bytes does not fit 16`);
  const opts: number[] = [];
  const type = m.options.get(Option.MessageType);
  const ordered = [...(type ? [[Option.MessageType, type] as const] : []), ...[...m.options].filter(([c]) => c !== Option.MessageType)];
  for (const [code, value] of ordered) {
    if (code === Option.Pad || code === Option.End || code < 0 || code > 255) throw new DhcpFormatError(`option code ${code} cannot carry a value`);
    if (value.length === 0) {
      opts.push(code, 0);
      continue;
    }
    for (let at = 0; at < value.length; at += 255) {
      const part = value.subarray(at, at + 255);
      opts.push(code, part.length, ...part);
    }
  }
  opts.push(Option.End);
  const out = new Uint8Array(Math.max(MIN_MESSAGE_SIZE, HEADER_SIZE + 4 + opts.length));
  const view = new DataView(out.buffer);
  out[0] = m.op;
  out[1] = m.htype;
  out[2] = m.hlen;
  out[3] = m.hops;
  view.setUint32(4, m.xid >>> 0);
  view.setUint16(8, m.secs);
  view.setUint16(10, m.flags);
  out.set(ipv4Bytes(m.ciaddr), 12);
  out.set(ipv4Bytes(m.yiaddr), 16);
  out.set(ipv4Bytes(m.siaddr), 20);
  out.set(ipv4Bytes(m.giaddr), 24);
  out.set(m.chaddr, 28);
  writeText(out, 44, 64, m.sname);
  writeText(out, 108, 128, m.file);
  view.setUint32(HEADER_SIZE, MAGIC_COOKIE);
  out.set(opts, HEADER_SIZE + 4);
  return out;
}

/** Reads options from `bytes` into `into` (joining repeats) until End or the end of the bytes. */
function readOptions(bytes: Uint8Array, into: Map<number, Uint8Array>, where: string): void {
  for (let at = 0; at < bytes.length; ) {
    const code = bytes[at]!;
    if (code === Option.End) return;
    if (code === Option.Pad) {
      at++;
      continue;
    }
    if (at + 1 >= bytes.length) throw new DhcpFormatError(`option ${code} in the ${where} has no length`);
    const len = bytes[at + 1]!;
    if (at + 2 + len > bytes.length) throw new DhcpFormatError(`option ${code} in the ${where} runs past its end (${len} bytes)`);
    const value = Uint8Array.from(bytes.subarray(at + 2, at + 2 + len));
    const earlier = into.get(code);
    into.set(code, earlier ? Uint8Array.from([...earlier, ...value]) : value);
    at += 2 + len;
  }
}

const fieldText = (b: Uint8Array): string => {
  const nul = b.indexOf(0);
  return Buffer.from(nul < 0 ? b : b.subarray(0, nul)).toString("utf8");
};

/**
 * Decodes a message; throws DhcpFormatError for anything shorter than the header and cookie, a wrong
 * cookie, an impossible hardware address length, or options that overrun. Option overload (52) is honoured:
 * options in the file and sname fields are read after the main ones, and those fields then read as empty.
 */
export function decodeMessage(buf: Uint8Array): DhcpMessage {
  if (buf.length < HEADER_SIZE + 4) throw new DhcpFormatError(`a DHCP message has at least ${HEADER_SIZE + 4} bytes, this one ${buf.length}`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const op = buf[0]!;
  if (op !== BOOTREQUEST && op !== BOOTREPLY) throw new DhcpFormatError(`unknown BOOTP op ${op}`);
  const hlen = buf[2]!;
  if (hlen > 16) throw new DhcpFormatError(`hardware address length ${hlen} is over 16`);
  if (view.getUint32(HEADER_SIZE) !== MAGIC_COOKIE) throw new DhcpFormatError("no DHCP magic cookie");
  const options = new Map<number, Uint8Array>();
  readOptions(buf.subarray(HEADER_SIZE + 4), options, "options field");
  const sname = buf.subarray(44, 108);
  const file = buf.subarray(108, 236);
  const overload = options.get(Option.Overload)?.[0] ?? 0;
  if (overload & 1) readOptions(file, options, "file field");
  if (overload & 2) readOptions(sname, options, "sname field");
  return {
    op,
    htype: buf[1]!,
    hlen,
    hops: buf[3]!,
    xid: view.getUint32(4),
    secs: view.getUint16(8),
    flags: view.getUint16(10),
    ciaddr: ipv4Text(buf, 12),
    yiaddr: ipv4Text(buf, 16),
    siaddr: ipv4Text(buf, 20),
    giaddr: ipv4Text(buf, 24),
    chaddr: Uint8Array.from(buf.subarray(28, 28 + hlen)),
    sname: overload & 2 ? "" : fieldText(sname),
    file: overload & 1 ? "" : fieldText(file),
    options,
  };
}

/** The message type (option 53), or undefined. */
export const messageType = (m: DhcpMessage): number | undefined => {
  const t = m.options.get(Option.MessageType);
  return t?.length === 1 ? t[0] : undefined;
};

// ---- IPv4 and UDP -------------------------------------------------------------------------------------

/** The Internet checksum (RFC 1071) of `parts`, as if concatenated. */
function checksum(...parts: Uint8Array[]): number {
  let sum = 0;
  let odd: number | undefined;
  for (const p of parts) {
    for (const byte of p) {
      if (odd === undefined) odd = byte;
      else {
        sum += (odd << 8) | byte;
        odd = undefined;
      }
    }
  }
  if (odd !== undefined) sum += odd << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** A UDP datagram inside an IPv4 packet (what the packet socket sends, the kernel adding the link header). */
export function encodeIpUdp(payload: Uint8Array, src: string, dst: string, srcPort: number, dstPort: number): Uint8Array {
  const out = new Uint8Array(20 + 8 + payload.length);
  const view = new DataView(out.buffer);
  out[0] = 0x45; // IPv4, 5-word header
  view.setUint16(2, out.length);
  out[8] = 64; // TTL
  out[9] = 17; // UDP
  out.set(ipv4Bytes(src), 12);
  out.set(ipv4Bytes(dst), 16);
  view.setUint16(10, checksum(out.subarray(0, 20)));
  view.setUint16(20, srcPort);
  view.setUint16(22, dstPort);
  view.setUint16(24, 8 + payload.length);
  out.set(payload, 28);
  const pseudo = new Uint8Array(12);
  pseudo.set(out.subarray(12, 20));
  pseudo[9] = 17;
  new DataView(pseudo.buffer).setUint16(10, 8 + payload.length);
  view.setUint16(26, checksum(pseudo, out.subarray(20)) || 0xffff);
  return out;
}

/** A decoded IPv4/UDP datagram. */
export interface UdpDatagram {
  src: string;
  dst: string;
  srcPort: number;
  dstPort: number;
  payload: Uint8Array;
}

/**
 * Decodes an IPv4 packet holding a whole UDP datagram; throws DhcpFormatError otherwise (a fragment, another
 * protocol, lengths that disagree, a bad header checksum). The UDP checksum is not checked: on veth and
 * virtio links a packet socket sees datagrams whose checksum the sender left to "hardware" that never
 * computes it, the reason DHCP clients that verify it drop valid replies there.
 */
export function decodeIpUdp(packet: Uint8Array): UdpDatagram {
  if (packet.length < 28) throw new DhcpFormatError(`${packet.length} bytes are too short for IPv4 and UDP headers`);
  const view = new DataView(packet.buffer, packet.byteOffset, packet.byteLength);
  if (packet[0]! >> 4 !== 4) throw new DhcpFormatError("not an IPv4 packet");
  const ihl = (packet[0]! & 0x0f) * 4;
  const total = view.getUint16(2);
  if (ihl < 20 || total < ihl + 8 || total > packet.length) throw new DhcpFormatError("IPv4 lengths do not add up");
  if (checksum(packet.subarray(0, ihl)) !== 0) throw new DhcpFormatError("bad IPv4 header checksum");
  if (packet[9] !== 17) throw new DhcpFormatError(`IP protocol ${packet[9]} is not UDP`);
  if (view.getUint16(6) & 0x3fff) throw new DhcpFormatError("an IPv4 fragment");
  const udpLen = view.getUint16(ihl + 4);
  if (udpLen < 8 || ihl + udpLen > total) throw new DhcpFormatError("UDP length does not fit the packet");
  return {
    src: ipv4Text(packet, 12),
    dst: ipv4Text(packet, 16),
    srcPort: view.getUint16(ihl),
    dstPort: view.getUint16(ihl + 2),
    payload: Uint8Array.from(packet.subarray(ihl + 8, ihl + udpLen)),
  };
}
