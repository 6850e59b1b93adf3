/**
 * The DHCPv6 wire format (RFC 8415 §8 and §21, RFC 3646 for DNS, RFC 4704 for the client's name, RFC 6355 for
 * DUID-UUID): the client/server message header, options as an ordered list (they may repeat: several IA_NA, several
 * addresses in one), the IA_NA, IA Address and Status Code options, DUIDs and the value formats the client reads.
 * Decoding is strict about lengths and throws a DhcpFormatError (the client takes such a packet for "not a reply");
 * relay messages are refused, as a client never receives them.
 * @module
 */

import { formatIPv6, parseIPBytes } from "#ip/ip.js";
import { concatBytes } from "#sys/bytes.js";
import { DhcpFormatError } from "./packet.js";

/** DHCPv6 message types (RFC 8415 §7.3). */
export const Message6 = {
  Solicit: 1,
  Advertise: 2,
  Request: 3,
  Confirm: 4,
  Renew: 5,
  Rebind: 6,
  Reply: 7,
  Release: 8,
  Decline: 9,
  Reconfigure: 10,
  InformationRequest: 11,
  RelayForw: 12,
  RelayRepl: 13,
} as const;

/** The names of message types, for logs and errors. */
export const MESSAGE6_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(Message6).map(([name, code]) => [code, name.toUpperCase()]),
);

/** The option codes this client reads or writes (RFC 8415 §21, RFC 3646, RFC 4704). */
export const Option6 = {
  ClientID: 1,
  ServerID: 2,
  IANA: 3,
  IAAddr: 5,
  ORO: 6,
  Preference: 7,
  ElapsedTime: 8,
  StatusCode: 13,
  RapidCommit: 14,
  DNSServers: 23,
  DomainList: 24,
  ClientFQDN: 39,
} as const;

/** Status codes (RFC 8415 §21.13). */
export const Status6 = { Success: 0, UnspecFail: 1, NoAddrsAvail: 2, NoBinding: 3, NotOnLink: 4, UseMulticast: 5 } as const;

/** The names of status codes, for logs and errors. */
export const STATUS6_NAMES: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(Status6).map(([name, code]) => [code, name]));

/** DUID types (RFC 8415 §11, RFC 6355). */
export const DuidType = { LLT: 1, EN: 2, LL: 3, UUID: 4 } as const;

/** A lifetime, T1 or T2 meaning "forever" (RFC 8415 §7.7). */
export const INFINITY6 = 0xffffffff;

/** One option: its code and value. */
export interface Opt6 {
  code: number;
  value: Uint8Array;
}

/** One client/server message: type, 24-bit transaction id and options in their order. */
export interface Dhcp6Message {
  type: number;
  xid: number;
  options: Opt6[];
}

/** An IA_NA option's contents (RFC 8415 §21.4). */
export interface IaNa {
  iaid: number;
  t1: number;
  t2: number;
  options: Opt6[];
}

/** An IA Address option's contents (RFC 8415 §21.6). */
export interface IaAddress {
  address: string;
  preferred: number;
  valid: number;
  options: Opt6[];
}

/** A Status Code option's contents (RFC 8415 §21.13). */
export interface StatusCode {
  code: number;
  message: string;
}

// ---- values ---------------------------------------------------------------------------------------------

/** The 16 bytes of an IPv6 address; throws DhcpFormatError when `text` is not one. */
export function ipv6Bytes(text: string): Uint8Array {
  const b = parseIPBytes(text);
  if (b?.length !== 16) throw new DhcpFormatError(`not an IPv6 address: ${JSON.stringify(text)}`);
  return b;
}

/** The RFC 5952 text of the 16 bytes at `at`. */
export const ipv6Text = (b: Uint8Array, at = 0): string => formatIPv6(b.subarray(at, at + 16));

const view = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** A 16-bit value's two bytes. */
export const u16Bytes = (v: number): Uint8Array => Uint8Array.of((v >> 8) & 0xff, v & 0xff);

// ---- options --------------------------------------------------------------------------------------------

/** Options in their wire format: code, length (both 16-bit) and value, in order. */
export function encodeOptions(options: readonly Opt6[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const o of options) {
    if (o.code < 0 || o.code > 0xffff) throw new DhcpFormatError(`option code ${o.code} does not fit 16 bits`);
    if (o.value.length > 0xffff) throw new DhcpFormatError(`option ${o.code} has ${o.value.length} bytes, over 65535`);
    parts.push(u16Bytes(o.code), u16Bytes(o.value.length), o.value);
  }
  return concatBytes(...parts);
}

/** Reads options filling `bytes` exactly; throws when one runs past the end or a header is cut short. */
export function decodeOptions(bytes: Uint8Array, where: string): Opt6[] {
  const out: Opt6[] = [];
  const v = view(bytes);
  for (let at = 0; at < bytes.length; ) {
    if (at + 4 > bytes.length) throw new DhcpFormatError(`an option header in ${where} is cut short`);
    const code = v.getUint16(at);
    const len = v.getUint16(at + 2);
    if (at + 4 + len > bytes.length) throw new DhcpFormatError(`option ${code} in ${where} runs past its end (${len} bytes)`);
    out.push({ code, value: Uint8Array.from(bytes.subarray(at + 4, at + 4 + len)) });
    at += 4 + len;
  }
  return out;
}

/** The first option `code`'s value, or undefined. */
export const firstOption = (options: readonly Opt6[], code: number): Uint8Array | undefined => options.find((o) => o.code === code)?.value;

/** Every option `code`'s value, in order. */
export const allOptions = (options: readonly Opt6[], code: number): Uint8Array[] => options.filter((o) => o.code === code).map((o) => o.value);

export function encodeIaNa(ia: IaNa): Uint8Array {
  const head = new Uint8Array(12);
  const v = view(head);
  v.setUint32(0, ia.iaid >>> 0);
  v.setUint32(4, ia.t1 >>> 0);
  v.setUint32(8, ia.t2 >>> 0);
  return concatBytes(head, encodeOptions(ia.options));
}

export function decodeIaNa(value: Uint8Array): IaNa {
  if (value.length < 12) throw new DhcpFormatError(`an IA_NA option has at least 12 bytes, this one ${value.length}`);
  const v = view(value);
  return { iaid: v.getUint32(0), t1: v.getUint32(4), t2: v.getUint32(8), options: decodeOptions(value.subarray(12), "an IA_NA") };
}

export function encodeIaAddress(a: IaAddress): Uint8Array {
  const head = new Uint8Array(24);
  head.set(ipv6Bytes(a.address), 0);
  const v = view(head);
  v.setUint32(16, a.preferred >>> 0);
  v.setUint32(20, a.valid >>> 0);
  return concatBytes(head, encodeOptions(a.options));
}

export function decodeIaAddress(value: Uint8Array): IaAddress {
  if (value.length < 24) throw new DhcpFormatError(`an IA Address option has at least 24 bytes, this one ${value.length}`);
  const v = view(value);
  return {
    address: ipv6Text(value, 0),
    preferred: v.getUint32(16),
    valid: v.getUint32(20),
    options: decodeOptions(value.subarray(24), "an IA Address"),
  };
}

export function encodeStatus(s: StatusCode): Uint8Array {
  return concatBytes(u16Bytes(s.code), Buffer.from(s.message, "utf8"));
}

export function decodeStatus(value: Uint8Array): StatusCode {
  if (value.length < 2) throw new DhcpFormatError(`a Status Code option has at least 2 bytes, this one ${value.length}`);
  return { code: view(value).getUint16(0), message: Buffer.from(value.subarray(2)).toString("utf8") };
}

/** The status in `options` (Success when there is no Status Code option, RFC 8415 §21.13). */
export function statusOf(options: readonly Opt6[]): StatusCode {
  const s = firstOption(options, Option6.StatusCode);
  return s ? decodeStatus(s) : { code: Status6.Success, message: "" };
}

/** A status for messages: its name and the server's words. */
export const statusText = (s: StatusCode): string => `${STATUS6_NAMES[s.code] ?? `status ${s.code}`}${s.message ? ` (${s.message})` : ""}`;

/** The Option Request option's value: 16-bit codes. */
export const encodeOro = (codes: readonly number[]): Uint8Array => concatBytes(...codes.map(u16Bytes));

export function decodeOro(value: Uint8Array): number[] {
  if (value.length % 2) throw new DhcpFormatError(`an Option Request option of ${value.length} bytes is not a list of 16-bit codes`);
  const v = view(value);
  return Array.from({ length: value.length / 2 }, (_, i) => v.getUint16(i * 2));
}

/** The Elapsed Time option's value: hundredths of a second since the exchange began, 0xffff at most. */
export const elapsedTime = (ms: number): Uint8Array => u16Bytes(Math.min(0xffff, Math.max(0, Math.floor(ms / 10))));

/** A list of IPv6 addresses (option 23); undefined when absent, empty or not a multiple of 16 bytes. */
export function readAddresses6(value: Uint8Array | undefined): string[] | undefined {
  if (!value || value.length === 0 || value.length % 16) return undefined;
  return Array.from({ length: value.length / 16 }, (_, i) => ipv6Text(value, i * 16));
}

/**
 * Option 39 (RFC 4704) naming the client: the flags byte (0: the server is not asked to update the AAAA record) and
 * the name in DNS wire format — one label without the terminating zero (a partial name, which the server completes),
 * or several labels ending in it (a fully qualified name). Undefined when the name cannot be one (an empty label,
 * one over 63 bytes, over 255 bytes in all).
 */
export function clientFqdn(hostName: string): Uint8Array | undefined {
  const labels = hostName
    .replace(/\.$/, "")
    .split(".")
    .map((l) => Buffer.from(l, "utf8"));
  if (labels.some((l) => l.length === 0 || l.length > 63)) return undefined;
  const name = concatBytes(...labels.flatMap((l) => [Uint8Array.of(l.length), l]), labels.length > 1 ? Uint8Array.of(0) : new Uint8Array());
  return name.length > 255 ? undefined : concatBytes(Uint8Array.of(0), name);
}

// ---- DUIDs ----------------------------------------------------------------------------------------------

/** Seconds between the Unix epoch and 2000-01-01 00:00 UTC, where DUID-LLT's time counts from. */
const DUID_EPOCH_S = 946_684_800;

/** DUID-LL (RFC 8415 §11.4): type 3, the hardware type (ARPHRD) and the link-layer address. */
export const duidLL = (hwType: number, mac: Uint8Array): Uint8Array => concatBytes(u16Bytes(DuidType.LL), u16Bytes(hwType), mac);

/** DUID-LLT (RFC 8415 §11.2): type 1, the hardware type, the time (seconds since 2000, mod 2^32) and the address. */
export function duidLLT(hwType: number, mac: Uint8Array, epochMs: number): Uint8Array {
  const t = new Uint8Array(4);
  view(t).setUint32(0, (Math.floor(epochMs / 1000) - DUID_EPOCH_S) >>> 0);
  return concatBytes(u16Bytes(DuidType.LLT), u16Bytes(hwType), t, mac);
}

/** DUID-UUID (RFC 6355): type 4 and the 16 bytes of a UUID. */
export function duidUUID(uuid: Uint8Array): Uint8Array {
  if (uuid.length !== 16) throw new DhcpFormatError(`a UUID has 16 bytes, not ${uuid.length}`);
  return concatBytes(u16Bytes(DuidType.UUID), uuid);
}

// ---- messages -------------------------------------------------------------------------------------------

/** Encodes a client/server message (RFC 8415 §8): type, 24-bit transaction id, options. */
export function encodeMessage6(m: Dhcp6Message): Uint8Array {
  if (m.type < 1 || m.type > 255 || m.type === Message6.RelayForw || m.type === Message6.RelayRepl)
    throw new DhcpFormatError(`message type ${m.type} is not a client/server message`);
  if (m.xid < 0 || m.xid > 0xffffff) throw new DhcpFormatError(`transaction id ${m.xid} does not fit 24 bits`);
  return concatBytes(Uint8Array.of(m.type, (m.xid >> 16) & 0xff, (m.xid >> 8) & 0xff, m.xid & 0xff), encodeOptions(m.options));
}

/** Decodes a client/server message; throws DhcpFormatError for anything shorter than its header, a relay message, or options that overrun. */
export function decodeMessage6(buf: Uint8Array): Dhcp6Message {
  if (buf.length < 4) throw new DhcpFormatError(`a DHCPv6 message has at least 4 bytes, this one ${buf.length}`);
  const type = buf[0]!;
  if (type === 0 || type === Message6.RelayForw || type === Message6.RelayRepl)
    throw new DhcpFormatError(`message type ${type} is not a client/server message`);
  return { type, xid: (buf[1]! << 16) | (buf[2]! << 8) | buf[3]!, options: decodeOptions(buf.subarray(4), "the message") };
}
