/**
 * nf_tables over netlink (NETLINK_NETFILTER), for what the plugins' firewall code reads on every ADD and DEL
 * and deletes on every DEL: whether a table or chain exists, the rules of a few chains of an iptables-nft table
 * as `iptables -S` prints them (with each rule's handle), and the deletion of rules and chains by handle in one
 * batch. No process is started: on a node whose iptables is iptables-nft, `iptables -S` and `nft list` are this
 * same dump, rendered by a tool.
 *
 * The rendering knows the matches and targets CNI's plugins (ours and Go's) write: addresses (`-s`, `-d`, with
 * `!`), interfaces (`-i`, `-o`), `-m comment`, `-m conntrack --ctstate`, and the verdicts and targets ACCEPT,
 * DROP, RETURN, MASQUERADE, jumps and gotos. A rule with anything else is rendered as a line no rule of ours
 * equals (so it is never taken for one, never deleted as one). Everything here answers undefined when it
 * cannot (no FFI under Node, no netfilter socket): callers then run the tools.
 * @module
 */

import { formatIPv6, tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { kindOfErrno, NetOpError } from "./errors.js";
import { saveQuote } from "./iptables-save.js";
import {
  errnoText,
  NETLINK_NETFILTER,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_EXCL,
  nlAttr,
  nlString,
  openNetlink,
  parseAttrs,
  type RtnetlinkSocket,
} from "./rtnetlink.js";

/** nf_tables families (NFPROTO_*). */
export const NFPROTO_INET = 1;
export const NFPROTO_IPV4 = 2;
export const NFPROTO_IPV6 = 10;

const NFNL_SUBSYS_NFTABLES = 10;
const NFNL_MSG_BATCH_BEGIN = 0x10;
const NFNL_MSG_BATCH_END = 0x11;
const MSG = { GETTABLE: 1, NEWCHAIN: 3, GETCHAIN: 4, DELCHAIN: 5, NEWRULE: 6, GETRULE: 7, DELRULE: 8, GETGEN: 16 } as const;
const NLM_F_CREATE = 0x400;
const NLM_F_APPEND = 0x800;
const NLA_F_NESTED = 0x8000;
const ENOENT = 2;

// Attribute numbers (linux/netfilter/nf_tables.h).
const TABLE_NAME = 1;
const CHAIN_TABLE = 1;
const CHAIN_NAME = 3;
const RULE_TABLE = 1;
const RULE_CHAIN = 2;
const RULE_HANDLE = 3;
const RULE_EXPRESSIONS = 4;
const RULE_COMPAT = 5;
const LIST_ELEM = 1;
const EXPR_NAME = 1;
const EXPR_DATA = 2;

const msgType = (m: number) => (NFNL_SUBSYS_NFTABLES << 8) | m;

/** struct nfgenmsg, then the attributes. */
function nfBody(family: number, ...attrs: Uint8Array[]): Uint8Array {
  const head = Uint8Array.of(family, 0, 0, 0);
  const out = new Uint8Array(head.length + attrs.reduce((n, a) => n + a.length, 0));
  out.set(head);
  attrs.reduce((at, a) => (out.set(a, at), at + a.length), head.length);
  return out;
}

const be32 = (b: Uint8Array): number => new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0, false);
const be32s = (b: Uint8Array): number => new DataView(b.buffer, b.byteOffset, b.byteLength).getInt32(0, false);
const cString = (b: Uint8Array): string => {
  const end = b.indexOf(0);
  return new TextDecoder().decode(end >= 0 ? b.subarray(0, end) : b);
};

/** Every attribute of a nested list, in order (parseAttrs keeps only the last of a type). */
function listItems(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const items: Uint8Array[] = [];
  for (let at = 0; at + 4 <= bytes.length; ) {
    const len = view.getUint16(at, true);
    if (len < 4 || at + len > bytes.length) break;
    if ((view.getUint16(at + 2, true) & 0x3fff) === LIST_ELEM) items.push(bytes.subarray(at + 4, at + len));
    at += (len + 3) & ~3;
  }
  return items;
}

let socket: Promise<RtnetlinkSocket | null> | undefined;
/**
 * The process's netfilter socket (one per process, in its own namespace: nf_tables here, ctnetlink in
 * conntrack.ts), or null without FFI.
 */
export function netfilterSocket(): Promise<RtnetlinkSocket | null> {
  return (socket ??= openNetlink(NETLINK_NETFILTER).catch(() => null));
}

/** Whether a table exists; undefined when netlink cannot tell. */
export async function nftTableExists(family: number, table: string): Promise<boolean | undefined> {
  const nl = await netfilterSocket();
  if (!nl) return undefined;
  const { error } = nl.exchange(msgType(MSG.GETTABLE), 0, nfBody(family, nlString(TABLE_NAME, table)), `look up nftables table ${table}`);
  if (!error) return true;
  return error.errno === ENOENT ? false : undefined;
}

/** A rule as `iptables -S` prints it, and its handle. */
export interface SavedRule {
  chain: string;
  line: string;
  handle: bigint;
  /** Whether `line` is the rule (false: a shape this module does not read, rendered as a line no rule equals). */
  readable: boolean;
  /** The chain the rule jumps or goes to, read even when the rest of the rule is not. */
  jump?: string;
}

/** Some chains of an iptables-nft table: the names of all its chains, and the rules of those asked for. */
export interface IptablesNftListing {
  chains: string[];
  rules: SavedRule[];
}

/**
 * The chains of `table` (family NFPROTO_IPV4 or NFPROTO_IPV6, as iptables-nft keeps them) and the rules of
 * `chains` among them (or of every chain, in one dump), rendered as `iptables -S` lines; a missing table lists
 * nothing. Undefined when netlink cannot tell.
 */
export async function listIptablesNft(family: number, table: string, chains: readonly string[] | "all"): Promise<IptablesNftListing | undefined> {
  const nl = await netfilterSocket();
  if (!nl) return undefined;
  const listed = nl.exchange(msgType(MSG.GETCHAIN), NLM_F_DUMP, nfBody(family, nlString(CHAIN_TABLE, table)), `list nftables chains of ${table}`);
  if (listed.error) return listed.error.errno === ENOENT ? { chains: [], rules: [] } : undefined;
  const names = listed.messages.flatMap((m) => {
    const attrs = parseAttrs(m.payload.subarray(4));
    const name = attrs.get(CHAIN_NAME);
    return attrs.get(CHAIN_TABLE) && cString(attrs.get(CHAIN_TABLE)!) === table && name ? [cString(name)] : [];
  });
  const rules: SavedRule[] = [];
  // The whole table in one dump, or the rules of each chain asked for.
  const wanted = chains === "all" ? [undefined] : chains.filter((c) => names.includes(c));
  for (const chain of wanted) {
    const dump = nl.exchange(
      msgType(MSG.GETRULE),
      NLM_F_DUMP,
      nfBody(family, nlString(RULE_TABLE, table), ...(chain ? [nlString(RULE_CHAIN, chain)] : [])),
      `list nftables rules of ${table}${chain ? `/${chain}` : ""}`,
    );
    if (dump.error) {
      if (dump.error.errno === ENOENT) continue;
      return undefined;
    }
    if (dump.interrupted) return undefined;
    for (const m of dump.messages) {
      const attrs = parseAttrs(m.payload.subarray(4));
      const handle = attrs.get(RULE_HANDLE);
      const ruleChain = cString(attrs.get(RULE_CHAIN) ?? new Uint8Array());
      if (!handle || (chain ? ruleChain !== chain : !names.includes(ruleChain))) continue;
      const h = new DataView(handle.buffer, handle.byteOffset, handle.byteLength).getBigUint64(0, false);
      const words = renderRule(family, attrs.get(RULE_EXPRESSIONS));
      const jump = ruleJump(attrs.get(RULE_EXPRESSIONS));
      rules.push({
        chain: ruleChain,
        handle: h,
        readable: words !== undefined,
        ...(jump ? { jump } : {}),
        line: words ? ["-A", ruleChain, ...words].join(" ") : `-A ${ruleChain} <rule ${h} of a form tscni does not read>`,
      });
    }
  }
  return { chains: names, rules };
}

/**
 * Deletes rules (by handle) and then chains (flushed, then removed) of one table in one nf_tables transaction:
 * all of it or nothing. A failure (a rule another process deleted meanwhile: ENOENT) is a NetOpError naming
 * `operation`; false when netlink cannot be used.
 */
export async function nftDelete(
  family: number,
  table: string,
  rules: ReadonlyArray<{ chain: string; handle: bigint }>,
  chains: readonly string[],
  operation: string,
): Promise<boolean> {
  const nl = await netfilterSocket();
  if (!nl) return false;
  const handle = (h: bigint) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, h, false);
    return nlAttr(RULE_HANDLE, b);
  };
  const t = nlString(RULE_TABLE, table);
  await transaction(
    nl,
    [
      ...rules.map((r) => ({
        type: msgType(MSG.DELRULE),
        flags: NLM_F_ACK,
        body: nfBody(family, t, nlString(RULE_CHAIN, r.chain), handle(r.handle)),
      })),
      ...chains.flatMap((c) => [
        { type: msgType(MSG.DELRULE), flags: NLM_F_ACK, body: nfBody(family, t, nlString(RULE_CHAIN, c)) },
        { type: msgType(MSG.DELCHAIN), flags: NLM_F_ACK, body: nfBody(family, nlString(CHAIN_TABLE, table), nlString(CHAIN_NAME, c)) },
      ]),
    ],
    operation,
  );
  return true;
}

/** Runs `requests` as one nf_tables transaction; a refusal of any is a NetOpError and undoes them all. */
async function transaction(
  nl: RtnetlinkSocket,
  requests: ReadonlyArray<{ type: number; flags: number; body: Uint8Array }>,
  operation: string,
): Promise<void> {
  const batch = [
    { type: NFNL_MSG_BATCH_BEGIN, flags: 0, body: Uint8Array.of(0, 0, 0, NFNL_SUBSYS_NFTABLES) },
    ...requests,
    { type: NFNL_MSG_BATCH_END, flags: 0, body: Uint8Array.of(0, 0, 0, NFNL_SUBSYS_NFTABLES) },
  ];
  // The kernel handles a datagram as it is sent: once the request sent after the batch is answered, every
  // error of the batch has come in.
  const errors = nl.exchangeMany([batch, [{ type: msgType(MSG.GETGEN), flags: NLM_F_ACK, body: nfBody(0) }]], operation);
  if (errors.length) {
    const e = errors[0]!;
    throw new NetOpError(operation, e.message ? `${e.message} (${errnoText(e.errno)})` : errnoText(e.errno), 1, undefined, kindOfErrno(e.errno));
  }
}

/** A rule to add: its chain, its words as iptables takes them after `-A <chain>`, at the chain's head or end. */
export interface RuleToAdd {
  chain: string;
  args: readonly string[];
  first?: boolean;
}

/**
 * Creates the user chains `chains` (left as they are when another process made them meanwhile; with
 * `exclusive`, such a chain fails the whole transaction instead, as `iptables -N` does) and adds `rules`, in one
 * nf_tables transaction, encoded exactly as iptables-nft 1.8 encodes them (so iptables -S, -C and -D and the Go
 * plugins see the rules iptables-restore would have made). False, with nothing done, when a rule has a word the
 * encoder does not know or netlink cannot be used: the caller runs iptables-restore then.
 */
export async function nftAddRules(
  family: number,
  table: string,
  chains: readonly string[],
  rules: readonly RuleToAdd[],
  operation: string,
  exclusive = false,
): Promise<boolean> {
  const encoded = rules.map((r) => encodeRule(family, r.args));
  if (encoded.some((e) => e === undefined)) return false;
  const nl = await netfilterSocket();
  if (!nl) return false;
  const t = nlString(RULE_TABLE, table);
  await transaction(
    nl,
    [
      ...chains.map((c) => ({
        type: msgType(MSG.NEWCHAIN),
        flags: NLM_F_CREATE | NLM_F_ACK | (exclusive ? NLM_F_EXCL : 0),
        body: nfBody(family, nlString(CHAIN_TABLE, table), nlString(CHAIN_NAME, c)),
      })),
      ...rules.map((r, i) => ({
        type: msgType(MSG.NEWRULE),
        flags: NLM_F_CREATE | NLM_F_ACK | (r.first ? 0 : NLM_F_APPEND),
        body: nfBody(family, t, nlString(RULE_CHAIN, r.chain), nlAttr(RULE_EXPRESSIONS | NLA_F_NESTED, encoded[i]!), compatAttr(r.args)),
      })),
    ],
    operation,
  );
  return true;
}

// ---- encoding a rule as iptables-nft does ----

const nest = (type: number, ...parts: Uint8Array[]) => nlAttr(type | NLA_F_NESTED, concat(parts));
const u32be = (type: number, v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, v, false);
  return nlAttr(type, b);
};
function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}
const expression = (name: string, ...data: Uint8Array[]) => nest(LIST_ELEM, nlString(EXPR_NAME, name), nest(EXPR_DATA, ...data));
const dataValue = (type: number, bytes: Uint8Array) => nest(type, nlAttr(1, bytes));
/** A load from a header (base 1: network, 2: transport) into register 1. */
const payloadExpr = (base: 1 | 2, offset: number, len: number) => expression("payload", u32be(1, 1), u32be(2, base), u32be(3, offset), u32be(4, len));
const cmpExpr = (negate: boolean, value: Uint8Array) => expression("cmp", u32be(1, 1), u32be(2, negate ? 1 : 0), dataValue(3, value));
const bitwiseExpr = (mask: Uint8Array) =>
  expression("bitwise", u32be(1, 1), u32be(2, 1), u32be(3, mask.length), dataValue(4, mask), dataValue(5, new Uint8Array(mask.length)));
const metaExpr = (key: number) => expression("meta", u32be(2, key), u32be(1, 1));
const counterExpr = () => expression("counter", nlAttr(1, new Uint8Array(8)), nlAttr(2, new Uint8Array(8)));
const xtExpr = (kind: "match" | "target", name: string, revision: number, info: Uint8Array) =>
  expression(kind, nlString(1, name), u32be(2, revision), nlAttr(3, info));
const verdictExpr = (code: number, chain?: string) =>
  expression("immediate", u32be(1, 0), nest(2, nest(2, u32be(1, code), ...(chain ? [nlString(2, chain)] : []))));

const VERDICTS: Record<string, number> = { ACCEPT: 1, DROP: 0, RETURN: -5 };
/** The chains the plugins jump to (another name may be an extension target, which the encoder leaves to iptables). */
const CNI_CHAIN = /^CNI-[A-Za-z0-9_.-]{1,24}$/;
/** The protocols `-p` takes here, with their numbers (iptables -S prints these names). */
const PROTOCOLS: Record<string, number> = { tcp: 6, udp: 17, sctp: 132 };
const PROTOCOL_NAMES = new Map(Object.entries(PROTOCOLS).map(([name, n]) => [n, name]));
const META_MARK = 3;
const META_IIFNAME = 6;
const META_OIFNAME = 7;
const META_L4PROTO = 16;
/** XT_ADDRTYPE_LOCAL in struct xt_addrtype_info_v1. */
const ADDRTYPE_LOCAL = 4;
/** NF_NAT_RANGE_MAP_IPS and NF_NAT_RANGE_PROTO_SPECIFIED. */
const NAT_MAP_IPS = 1;
const NAT_PROTO_SPECIFIED = 2;

const le32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return b;
};
/** A port, as iptables reads it (a decimal 0–65535). */
const portNumber = (text: string): number | undefined => (/^\d{1,5}$/.test(text) && Number(text) <= 65535 ? Number(text) : undefined);
/** A mark and its mask (`V` or `V/M`, hex or decimal, as strtoul reads them); the mask defaults to all ones. */
function markPair(text: string): { value: number; mask: number } | undefined {
  const m = /^(0x[0-9a-f]{1,8}|\d{1,10})(?:\/(0x[0-9a-f]{1,8}|\d{1,10}))?$/i.exec(text);
  if (!m) return undefined;
  const [value, mask] = [Number(m[1]), m[2] === undefined ? 0xffffffff : Number(m[2])];
  return value <= 0xffffffff && mask <= 0xffffffff ? { value, mask } : undefined;
}

/** struct nf_nat_range2 (revision 2 of DNAT, both families): one address and, optionally, one port. */
function natRange(family: number, text: string): Uint8Array | undefined {
  const v6 = family === NFPROTO_IPV6;
  const m = v6 ? /^(?:\[([0-9a-f:.]+)\]|([0-9a-f:.]+))(?::(\d+))?$/i.exec(text) : /^([0-9.]+)(?::(\d+))?$/.exec(text);
  if (!m) return undefined;
  const ip = tryParseIP((v6 ? (m[1] ?? m[2]) : m[1])!);
  const portText = v6 ? (m[1] !== undefined ? m[3] : undefined) : m[2];
  const port = portText === undefined ? undefined : portNumber(portText);
  if (!ip || ip.family !== (v6 ? 6 : 4) || (portText !== undefined && (port === undefined || port === 0))) return undefined;
  const info = new Uint8Array(44);
  const view = new DataView(info.buffer);
  view.setUint32(0, NAT_MAP_IPS | (port === undefined ? 0 : NAT_PROTO_SPECIFIED), true);
  info.set(ip.bytes, 4);
  info.set(ip.bytes, 20);
  if (port !== undefined) {
    view.setUint16(36, port, false);
    view.setUint16(38, port, false);
  }
  return info;
}

/**
 * NFTA_RULE_COMPAT, as iptables-nft sends it with every rule: the `-p` protocol, which xtables matches bound to
 * one (multiport, sctp) are checked against.
 */
function compatAttr(args: readonly string[]): Uint8Array {
  const p = args.findIndex((w, k) => w === "-p" && args[k - 1] !== "!");
  return nest(RULE_COMPAT, u32be(1, p >= 0 ? (PROTOCOLS[args[p + 1]!] ?? 0) : 0), u32be(2, 0));
}

/** A match whose options come later in the words (`-m multiport ... --dports`, `-m tcp ... --dport`). */
interface PendingMatch {
  pending: "multiport" | "port";
  protocol?: string;
}

/**
 * The expressions of a rule given as iptables words (after `-A <chain>`), in iptables-nft's order: interfaces,
 * protocol, addresses, the matches as given, a counter, the verdict or target. Undefined for a word outside what
 * the plugins write.
 */
export function encodeRule(family: number, args: readonly string[]): Uint8Array | undefined {
  const iface: Partial<Record<"i" | "o", Uint8Array[]>> = {};
  const addr: Partial<Record<"s" | "d", Uint8Array[]>> = {};
  let protocol: { name: string; exprs: Uint8Array[] } | undefined;
  const matches: Array<Uint8Array | PendingMatch> = [];
  let verdict: Uint8Array | undefined;
  const v6 = family === NFPROTO_IPV6;
  /** Fills the latest pending match of `kind`, or (a port with `-p` given) adds it where iptables loads it implicitly. */
  const fill = (kind: PendingMatch["pending"], encoded: Uint8Array): boolean => {
    for (let m = matches.length - 1; m >= 0; m--) {
      const p = matches[m]!;
      if (!(p instanceof Uint8Array) && p.pending === kind) {
        matches[m] = encoded;
        return true;
      }
    }
    if (kind !== "port") return false;
    matches.push(encoded);
    return true;
  };
  for (let i = 0; i < args.length; i++) {
    const negate = args[i] === "!";
    if (negate) i++;
    const [word, value] = [args[i], args[i + 1]];
    if (value === undefined) return undefined;
    i++;
    if ((word === "-s" || word === "-d") && !addr[word[1] as "s"]) {
      const cidr = tryParseCIDR(value.includes("/") ? value : `${value}/${v6 ? 128 : 32}`);
      const ip = tryParseIP(value.split("/")[0]!);
      if (!cidr || !ip || cidr.ip.family !== (v6 ? 6 : 4)) return undefined;
      const size = v6 ? 16 : 4;
      const offset = word === "-s" ? (v6 ? 8 : 12) : v6 ? 24 : 16;
      if (cidr.prefix === 0) {
        if (negate) return undefined;
        addr[word[1] as "s"] = []; // "anywhere": iptables matches nothing
      } else if (cidr.prefix % 8 === 0) {
        addr[word[1] as "s"] = [payloadExpr(1, offset, cidr.prefix / 8), cmpExpr(negate, ip.bytes.slice(0, cidr.prefix / 8))];
      } else {
        const mask = new Uint8Array(size).map((_, b) =>
          b < cidr.prefix >> 3 ? 0xff : b === cidr.prefix >> 3 ? (0xff << (8 - (cidr.prefix & 7))) & 0xff : 0,
        );
        addr[word[1] as "s"] = [
          payloadExpr(1, offset, size),
          bitwiseExpr(mask),
          cmpExpr(
            negate,
            ip.bytes.map((x, b) => x & mask[b]!),
          ),
        ];
      }
    } else if ((word === "-i" || word === "-o") && !iface[word[1] as "i"]) {
      const wildcard = value.endsWith("+");
      const name = wildcard ? value.slice(0, -1) : value;
      if (!/^[^\s"'/+]{1,15}$/.test(name)) return undefined;
      const bytes = new TextEncoder().encode(name);
      iface[word[1] as "i"] = [
        metaExpr(word === "-i" ? META_IIFNAME : META_OIFNAME),
        cmpExpr(negate, wildcard ? bytes : concat([bytes, Uint8Array.of(0)])),
      ];
    } else if (word === "-p" && !negate && !protocol && PROTOCOLS[value] !== undefined) {
      protocol = { name: value, exprs: [metaExpr(META_L4PROTO), cmpExpr(false, Uint8Array.of(PROTOCOLS[value]!))] };
    } else if (word === "-m" && !negate && value === "comment" && args[i + 1] === "--comment" && args[i + 2] !== undefined) {
      const text = new TextEncoder().encode(args[i + 2]);
      if (text.length > 255 || text.includes(0)) return undefined;
      const info = new Uint8Array(256);
      info.set(text);
      matches.push(xtExpr("match", "comment", 0, info));
      i += 2;
    } else if (word === "-m" && !negate && value === "conntrack" && args[i + 1] === "--ctstate" && args[i + 2] !== undefined) {
      let mask = 0;
      for (const s of args[i + 2]!.split(",")) {
        const bit = CT_STATES.find(([n]) => n === s)?.[1];
        if (bit === undefined) return undefined;
        mask |= bit;
      }
      // struct xt_conntrack_mtinfo3 (168 bytes as iptables sends it): the match flags (XT_CONNTRACK_STATE) and
      // the state mask, host order.
      const info = new Uint8Array(168);
      const view = new DataView(info.buffer);
      view.setUint16(146, 1, true);
      view.setUint16(150, mask, true);
      matches.push(xtExpr("match", "conntrack", 3, info));
      i += 2;
    } else if (word === "-m" && !negate && value === "addrtype" && args[i + 1] === "--dst-type" && args[i + 2] === "LOCAL") {
      // struct xt_addrtype_info_v1: source and destination types (u16, host order), then flags.
      matches.push(xtExpr("match", "addrtype", 1, Uint8Array.of(0, 0, ADDRTYPE_LOCAL, 0, 0, 0, 0, 0)));
      i += 2;
    } else if (word === "-m" && !negate && value === "mark" && args[i + 1] === "--mark" && args[i + 2] !== undefined) {
      // Native in iptables-nft: the packet's mark (host order), masked when the mask is not all ones.
      const mark = markPair(args[i + 2]!);
      if (!mark) return undefined;
      matches.push(
        concat([
          metaExpr(META_MARK),
          ...(mark.mask === 0xffffffff ? [] : [bitwiseExpr(le32(mark.mask))]),
          cmpExpr(false, le32(mark.value & mark.mask)),
        ]),
      );
      i += 2;
    } else if (word === "-m" && !negate && value === "multiport") {
      matches.push({ pending: "multiport" });
    } else if (word === "-m" && !negate && PROTOCOLS[value] !== undefined) {
      if (protocol?.name !== value) return undefined; // iptables wants `-p` first
      matches.push({ pending: "port", protocol: value });
    } else if (word === "--dport" && !negate && protocol) {
      const port = portNumber(value);
      if (port === undefined) return undefined;
      let encoded: Uint8Array;
      if (protocol.name === "sctp") {
        // struct xt_sctp_info (296 bytes): destination ports (u16 min, max, host order), source ports, the chunk
        // map, match type, four flag slots whose chunk type is -1, flag count, flags (XT_SCTP_DEST_PORTS), inverse.
        const info = new Uint8Array(296);
        const view = new DataView(info.buffer);
        view.setUint16(0, port, true);
        view.setUint16(2, port, true);
        for (let f = 0; f < 4; f++) info[268 + 3 * f] = 0xff;
        view.setUint32(284, 2, true);
        encoded = xtExpr("match", "sctp", 0, info);
      } else {
        // Native in iptables-nft: the transport header's destination port, network order.
        const be = Uint8Array.of(port >> 8, port & 0xff);
        encoded = concat([payloadExpr(2, 2, 2), cmpExpr(false, be)]);
      }
      if (!fill("port", encoded)) return undefined;
    } else if ((word === "--dports" || word === "--destination-ports") && !negate && protocol) {
      const ports = value.split(",").map(portNumber);
      if (ports.length > 15 || ports.some((p) => p === undefined)) return undefined;
      // struct xt_multiport_v1 (48 bytes): flags (XT_MULTIPORT_DESTINATION), count, 15 ports (host order),
      // 15 range flags, invert.
      const info = new Uint8Array(48);
      const view = new DataView(info.buffer);
      info[0] = 1;
      info[1] = ports.length;
      ports.forEach((p, k) => view.setUint16(2 + 2 * k, p!, true));
      if (!fill("multiport", xtExpr("match", "multiport", 1, info))) return undefined;
    } else if ((word === "-j" || word === "-g") && !negate && !verdict) {
      if (word === "-j" && VERDICTS[value] !== undefined) verdict = verdictExpr(VERDICTS[value]!);
      else if (word === "-j" && value === "MASQUERADE") {
        // IPv4: struct nf_nat_ipv4_multi_range_compat, one empty range (24 bytes); IPv6: struct nf_nat_range (40).
        const info = new Uint8Array(v6 ? 40 : 24);
        if (!v6) new DataView(info.buffer).setUint32(0, 1, true);
        verdict = xtExpr("target", "MASQUERADE", 0, info);
      } else if (word === "-j" && value === "MARK" && args[i + 1] === "--set-xmark" && args[i + 2] !== undefined) {
        // struct xt_mark_tginfo2: mark and mask, host order.
        const mark = markPair(args[i + 2]!);
        if (!mark) return undefined;
        verdict = xtExpr("target", "MARK", 2, concat([le32(mark.value), le32(mark.mask)]));
        i += 2;
      } else if (word === "-j" && value === "DNAT" && args[i + 1] === "--to-destination" && args[i + 2] !== undefined) {
        const info = natRange(family, args[i + 2]!);
        if (!info) return undefined;
        verdict = xtExpr("target", "DNAT", 2, info);
        i += 2;
      } else if (CNI_CHAIN.test(value)) {
        verdict = verdictExpr(word === "-j" ? -3 : -4, value);
      } else {
        return undefined;
      }
    } else {
      return undefined;
    }
  }
  if (matches.some((m) => !(m instanceof Uint8Array))) return undefined; // `-m multiport` without its ports
  return concat([
    ...(iface.i ?? []),
    ...(iface.o ?? []),
    ...(protocol?.exprs ?? []),
    ...(addr.s ?? []),
    ...(addr.d ?? []),
    ...(matches as Uint8Array[]),
    counterExpr(),
    ...(verdict ? [verdict] : []),
  ]);
}

// ---- rendering a rule as iptables -S prints it ----

interface Expr {
  name: string;
  data: Map<number, Uint8Array>;
}

/** The words after `-A <chain>` of a rule, or undefined when it holds something this does not render. */
export function renderRule(family: number, expressions: Uint8Array | undefined): string[] | undefined {
  if (!expressions) return [];
  const exprs: Expr[] = listItems(expressions).map((item) => {
    const a = parseAttrs(item);
    return { name: cString(a.get(EXPR_NAME) ?? new Uint8Array()), data: parseAttrs(a.get(EXPR_DATA) ?? new Uint8Array()) };
  });
  const fields: { s?: string; d?: string; i?: string; o?: string; p?: string } = {};
  let protocol: string | undefined;
  const matches: string[] = [];
  let verdict: string[] = [];
  // A load into a register, waiting for the bitwise and cmp that complete it.
  let loaded: { what: "s" | "d" | "i" | "o" | "p" | "dport" | "sport" | "mark"; len: number; mask?: Uint8Array } | undefined;
  for (const e of exprs) {
    switch (e.name) {
      case "payload": {
        const base = be32(e.data.get(2) ?? Uint8Array.of(0, 0, 0, 0));
        const offset = be32(e.data.get(3)!);
        const len = be32(e.data.get(4)!);
        if (base === 2) {
          // A tcp or udp port, native in iptables-nft.
          if ((offset !== 0 && offset !== 2) || len !== 2 || (protocol !== "tcp" && protocol !== "udp")) return undefined;
          loaded = { what: offset === 2 ? "dport" : "sport", len };
          break;
        }
        if (base !== 1) return undefined;
        const [src, dst, size] = family === NFPROTO_IPV6 ? [8, 24, 16] : [12, 16, 4];
        if ((offset !== src && offset !== dst) || len > size) return undefined;
        loaded = { what: offset === src ? "s" : "d", len };
        break;
      }
      case "meta": {
        const key = be32(e.data.get(2)!);
        const what = ({ [META_IIFNAME]: "i", [META_OIFNAME]: "o", [META_L4PROTO]: "p", [META_MARK]: "mark" } as const)[key];
        if (!what) return undefined;
        loaded = { what, len: what === "p" ? 1 : what === "mark" ? 4 : 16 };
        break;
      }
      case "bitwise": {
        if (!loaded || (loaded.what !== "s" && loaded.what !== "d" && loaded.what !== "mark")) return undefined;
        const mask = parseAttrs(e.data.get(4) ?? new Uint8Array()).get(1);
        const xor = parseAttrs(e.data.get(5) ?? new Uint8Array()).get(1);
        if (!mask || xor?.some((b) => b !== 0)) return undefined;
        loaded.mask = mask;
        break;
      }
      case "cmp": {
        if (!loaded) return undefined;
        const op = be32(e.data.get(2)!);
        const value = parseAttrs(e.data.get(3) ?? new Uint8Array()).get(1);
        if ((op !== 0 && op !== 1) || !value) return undefined;
        const what = loaded.what;
        if (what === "p") {
          protocol = value.length === 1 ? PROTOCOL_NAMES.get(value[0]!) : undefined;
          if (!protocol) return undefined;
          fields.p = `${op === 1 ? "! " : ""}-p ${protocol}`;
        } else if (what === "dport" || what === "sport") {
          if (op !== 0 || value.length !== 2) return undefined;
          matches.push("-m", protocol!, `--${what}`, String((value[0]! << 8) | value[1]!));
        } else if (what === "mark") {
          const mask = loaded.mask ? leU32(loaded.mask) : 0xffffffff;
          if (op !== 0 || value.length !== 4 || mask === undefined) return undefined;
          matches.push("-m", "mark", "--mark", `0x${leU32(value)!.toString(16)}${mask === 0xffffffff ? "" : `/0x${mask.toString(16)}`}`);
        } else {
          const text = what === "i" || what === "o" ? interfaceText(value) : addressText(family, value, loaded.mask, loaded.len);
          if (text === undefined) return undefined;
          fields[what] = `${op === 1 ? "! " : ""}-${what} ${text}`;
        }
        loaded = undefined;
        break;
      }
      case "counter":
        break;
      case "match": {
        const words = matchWords(cString(e.data.get(1)!), be32(e.data.get(2)!), e.data.get(3) ?? new Uint8Array(), protocol);
        if (!words) return undefined;
        matches.push(...words);
        break;
      }
      case "target": {
        const words = targetWords(family, cString(e.data.get(1)!), be32(e.data.get(2) ?? new Uint8Array(4)), e.data.get(3) ?? new Uint8Array());
        if (!words) return undefined;
        verdict = words;
        break;
      }
      case "immediate": {
        const { code, chain } = immediateVerdict(e.data);
        const named: Record<number, string[]> = {
          1: ["-j", "ACCEPT"],
          0: ["-j", "DROP"],
          [-5]: ["-j", "RETURN"],
          [-3]: ["-j", chain],
          [-4]: ["-g", chain],
        };
        if (!named[code] || ((code === -3 || code === -4) && !chain)) return undefined;
        verdict = named[code]!;
        break;
      }
      default:
        return undefined;
    }
  }
  if (loaded) return undefined;
  // iptables -S: addresses, interfaces, the protocol, then matches, then the target.
  return [fields.s, fields.d, fields.i, fields.o, fields.p]
    .filter((w): w is string => w !== undefined)
    .join(" ")
    .split(" ")
    .filter(Boolean)
    .concat(matches, verdict);
}

/** The chain a rule jumps or goes to, read from its verdict whatever else it holds; undefined for none. */
export function ruleJump(expressions: Uint8Array | undefined): string | undefined {
  for (const item of listItems(expressions ?? new Uint8Array())) {
    const a = parseAttrs(item);
    if (cString(a.get(EXPR_NAME) ?? new Uint8Array()) !== "immediate") continue;
    const { code, chain } = immediateVerdict(parseAttrs(a.get(EXPR_DATA) ?? new Uint8Array()));
    if ((code === -3 || code === -4) && chain) return chain;
  }
  return undefined;
}

/** An immediate expression's verdict: its code (NF_ACCEPT, NFT_JUMP...) and the chain a jump or goto names ("" for none). */
function immediateVerdict(data: Map<number, Uint8Array>): { code: number; chain: string } {
  const v = parseAttrs(parseAttrs(data.get(2) ?? new Uint8Array()).get(2) ?? new Uint8Array());
  return { code: be32s(v.get(1) ?? Uint8Array.of(0, 0, 0, 0x7f)), chain: v.get(2) ? cString(v.get(2)!) : "" };
}

/** A u32 in host (little-endian) order, as marks are kept; undefined unless 4 bytes. */
const leU32 = (b: Uint8Array): number | undefined => (b.length === 4 ? new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true) : undefined);

/** The words of an xtables target iptables-nft keeps as a compat expression, when this renders it. */
function targetWords(family: number, name: string, revision: number, info: Uint8Array): string[] | undefined {
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  // MASQUERADE without options: a range count of 1 (IPv4) and nothing else set.
  if (name === "MASQUERADE") return info.length >= 4 && !info.subarray(4).some((b) => b !== 0) ? ["-j", name] : undefined;
  if (name === "MARK" && revision === 2 && info.length >= 8) {
    return ["-j", "MARK", "--set-xmark", `0x${view.getUint32(0, true).toString(16)}/0x${view.getUint32(4, true).toString(16)}`];
  }
  if (name === "DNAT" && (revision === 1 || revision === 2) && info.length >= 40) {
    // struct nf_nat_range(2): flags, min and max address, min and max port (network order)[, base port].
    const flags = view.getUint32(0, true);
    const size = family === NFPROTO_IPV6 ? 16 : 4;
    const [min, max] = [info.subarray(4, 4 + size), info.subarray(20, 20 + size)];
    const [pmin, pmax] = [view.getUint16(36, false), view.getUint16(38, false)];
    if ((flags !== NAT_MAP_IPS && flags !== (NAT_MAP_IPS | NAT_PROTO_SPECIFIED)) || min.some((b, k) => b !== max[k]) || pmin !== pmax)
      return undefined;
    const address = family === NFPROTO_IPV6 ? formatIPv6(min) : [...min].join(".");
    if (!(flags & NAT_PROTO_SPECIFIED)) return ["-j", "DNAT", "--to-destination", address];
    return ["-j", "DNAT", "--to-destination", family === NFPROTO_IPV6 ? `[${address}]:${pmin}` : `${address}:${pmin}`];
  }
  return undefined;
}

/** An address and prefix from a compared value (`len` bytes loaded, masked by `mask` when shorter than a byte boundary). */
function addressText(family: number, value: Uint8Array, mask: Uint8Array | undefined, len: number): string | undefined {
  const size = family === NFPROTO_IPV6 ? 16 : 4;
  const bytes = new Uint8Array(size);
  bytes.set(value.subarray(0, Math.min(len, size)));
  let prefix = len * 8;
  if (mask) {
    prefix = 0;
    let ended = false;
    for (const b of mask.subarray(0, len)) {
      for (let bit = 7; bit >= 0; bit--) {
        if (b & (1 << bit)) {
          if (ended) return undefined; // not a prefix
          prefix++;
        } else {
          ended = true;
        }
      }
    }
  }
  if (family !== NFPROTO_IPV6) return `${[...bytes].join(".")}/${prefix}`;
  return `${formatIPv6(bytes)}/${prefix}`;
}

/** An interface name compared by iptables-nft: with its NUL an exact name, without one a `+` wildcard. */
function interfaceText(value: Uint8Array): string | undefined {
  const end = value.indexOf(0);
  const name = new TextDecoder().decode(end >= 0 ? value.subarray(0, end) : value);
  if (!/^[^\s"'\\]+$/.test(name)) return undefined;
  return end >= 0 ? name : `${name}+`;
}

/** conntrack states in the order iptables prints them, with their bits (XT_CONNTRACK_STATE_BIT and the rest). */
const CT_STATES: Array<[string, number]> = [
  ["INVALID", 1],
  ["NEW", 8],
  ["RELATED", 4],
  ["ESTABLISHED", 2],
  ["UNTRACKED", 1 << 8],
  ["SNAT", 1 << 9],
  ["DNAT", 1 << 10],
];

const KNOWN_CT_STATES = CT_STATES.reduce((m, [, bit]) => m | bit, 0);

/** The words of an xtables match iptables-nft keeps as a compat expression, when this renders it. */
function matchWords(name: string, revision: number, info: Uint8Array, protocol: string | undefined): string[] | undefined {
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  if (name === "comment" && revision === 0) return ["-m", "comment", "--comment", saveQuote(cString(info))];
  if (name === "addrtype" && revision === 1 && info.length >= 8) {
    // struct xt_addrtype_info_v1: a destination type of LOCAL alone, no inversion or interface limit.
    return view.getUint16(0, true) === 0 && view.getUint16(2, true) === ADDRTYPE_LOCAL && view.getUint32(4, true) === 0
      ? ["-m", "addrtype", "--dst-type", "LOCAL"]
      : undefined;
  }
  if (name === "multiport" && revision === 1 && info.length >= 48 && protocol) {
    // struct xt_multiport_v1: destination ports only, no ranges, not inverted.
    const count = info[1]!;
    if (info[0] !== 1 || count < 1 || count > 15 || info.subarray(32, 48).some((b) => b !== 0)) return undefined;
    return ["-m", "multiport", "--dports", Array.from({ length: count }, (_, k) => view.getUint16(2 + 2 * k, true)).join(",")];
  }
  if (name === "sctp" && revision === 0 && info.length >= 292 && protocol === "sctp") {
    // struct xt_sctp_info: one destination port, no chunk or flag matches, not inverted.
    const [min, max] = [view.getUint16(0, true), view.getUint16(2, true)];
    if (view.getUint32(284, true) !== 2 || view.getUint32(288, true) !== 0 || min !== max) return undefined;
    return ["-m", "sctp", "--dport", String(min)];
  }
  if (name === "conntrack" && revision === 3 && info.length >= 154) {
    // struct xt_conntrack_mtinfo3: 8 addresses/masks (128), expires (8), l4proto and 4 ports (10), then the
    // match and invert flags and the state mask (u16 each, host order).
    const matchFlags = view.getUint16(146, true);
    const invertFlags = view.getUint16(148, true);
    const stateMask = view.getUint16(150, true);
    if (matchFlags !== 1 || invertFlags !== 0) return undefined; // --ctstate alone
    const states = CT_STATES.filter(([, bit]) => stateMask & bit).map(([s]) => s);
    if (!states.length || stateMask & ~KNOWN_CT_STATES) return undefined;
    return ["-m", "conntrack", "--ctstate", states.join(",")];
  }
  return undefined;
}
