/**
 * nf_tables over netlink (NETLINK_NETFILTER), for what the plugins' firewall code reads on every ADD and DEL
 * and deletes on every DEL: whether a table or chain exists, the rules of a few chains of an iptables-nft table
 * as `iptables -S` prints them (with each rule's handle), and the deletion of rules and chains by handle in one
 * batch. No process is started: on a node whose iptables is iptables-nft, `iptables -S` and `nft list` are this
 * same dump, rendered by a tool.
 *
 * The rendering knows the matches and targets CNI's plugins (ours and Go's) write: addresses (`-s`, `-d`, with
 * `!`), interfaces (`-i`, `-o`), `-p`, ports, `-m comment`, `-m conntrack --ctstate`, `-m addrtype`,
 * `-m multiport`, `-m mark`, and the verdicts and targets ACCEPT, DROP, RETURN, MASQUERADE, MARK, DNAT, jumps and
 * gotos. A rule with anything else is rendered as a line no rule of ours
 * equals (so it is never taken for one, never deleted as one). Everything here answers undefined when it
 * cannot (no FFI under Node, no netfilter socket): callers then run the tools.
 *
 * Encoding and rendering read one description of each thing they share: each expression kind's attributes
 * (EXPRESSIONS), what iptables-nft loads natively (META_LOADS, addressFields, PORT_FIELDS), and each xtables
 * match or target with its option and info struct (XT_EXTENSIONS); adding one is adding an entry there.
 * @module
 */

import { formatIPv6, tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { concatBytes } from "#sys/bytes.js";
import { kindOfErrno, NetOpError } from "../errors.js";
import { saveQuote } from "../firewall/iptables-save.js";
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

// ---- nf_tables expressions: one attribute layout per kind, for encoding and reading alike ----

const nest = (type: number, ...parts: Uint8Array[]) => nlAttr(type | NLA_F_NESTED, concatBytes(...parts));
const u32be = (type: number, v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, v, false);
  return nlAttr(type, b);
};

/** A verdict (NF_DROP 0, NF_ACCEPT 1, NFT_JUMP -3, NFT_GOTO -4, NFT_RETURN -5) and the chain a jump or goto names. */
interface Verdict {
  code: number;
  chain?: string;
}
/** NFTA_DATA_VALUE, NFTA_DATA_VERDICT, and NFTA_VERDICT_CODE and _CHAIN inside the latter. */
const DATA_VALUE = 1;
const DATA_VERDICT = 2;
const VERDICT_CODE = 1;
const VERDICT_CHAIN = 2;

/**
 * The payload types of expression attributes, each written and read by one codec: u32 and u64 in network order,
 * a NUL-terminated string, bytes as they are (an xtables info struct), data in an NFTA_DATA_VALUE, a verdict in
 * an NFTA_DATA_VERDICT.
 */
interface AttrValues {
  u32: number;
  u64: bigint;
  string: string;
  bytes: Uint8Array;
  value: Uint8Array;
  verdict: Verdict;
}
type AttrType = keyof AttrValues;
const ATTR_CODECS: { [T in AttrType]: { encode(attr: number, v: AttrValues[T]): Uint8Array; decode(b: Uint8Array): AttrValues[T] | undefined } } = {
  u32: { encode: u32be, decode: (b) => (b.length >= 4 ? be32(b) : undefined) },
  u64: {
    encode: (attr, v) => {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setBigUint64(0, v, false);
      return nlAttr(attr, b);
    },
    decode: (b) => (b.length >= 8 ? new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, false) : undefined),
  },
  string: { encode: nlString, decode: cString },
  bytes: { encode: nlAttr, decode: (b) => b },
  value: { encode: (attr, v) => nest(attr, nlAttr(DATA_VALUE, v)), decode: (b) => parseAttrs(b).get(DATA_VALUE) },
  verdict: {
    encode: (attr, { code, chain }) => nest(attr, nest(DATA_VERDICT, u32be(VERDICT_CODE, code), ...(chain ? [nlString(VERDICT_CHAIN, chain)] : []))),
    decode: (b) => {
      const v = parseAttrs(parseAttrs(b).get(DATA_VERDICT) ?? new Uint8Array());
      const code = v.get(VERDICT_CODE);
      if (!code || code.length < 4) return undefined;
      const chain = v.get(VERDICT_CHAIN);
      return { code: be32s(code), ...(chain ? { chain: cString(chain) } : {}) };
    },
  },
};

/**
 * The expressions iptables-nft writes, each with its attributes (field: NFTA_<KIND>_* number, linux/netfilter/
 * nf_tables.h, and payload type) in the order it sends them: the encoder writes them so, the renderer reads them by
 * number.
 */
const EXPRESSIONS = {
  payload: { dreg: [1, "u32"], base: [2, "u32"], offset: [3, "u32"], len: [4, "u32"] },
  cmp: { sreg: [1, "u32"], op: [2, "u32"], data: [3, "value"] },
  bitwise: { sreg: [1, "u32"], dreg: [2, "u32"], len: [3, "u32"], mask: [4, "value"], xor: [5, "value"] },
  meta: { key: [2, "u32"], dreg: [1, "u32"] },
  counter: { bytes: [1, "u64"], packets: [2, "u64"] },
  match: { name: [1, "string"], rev: [2, "u32"], info: [3, "bytes"] },
  target: { name: [1, "string"], rev: [2, "u32"], info: [3, "bytes"] },
  immediate: { dreg: [1, "u32"], data: [2, "verdict"] },
} as const satisfies Record<string, Record<string, readonly [attr: number, type: AttrType]>>;
type ExprKind = keyof typeof EXPRESSIONS;
type ExprFields<K extends ExprKind> = {
  [F in keyof (typeof EXPRESSIONS)[K]]: AttrValues[(typeof EXPRESSIONS)[K][F] extends readonly [number, infer T extends AttrType] ? T : never];
};
/** An expression as read: its kind and those of its attributes that came. */
type Expr = { [K in ExprKind]: { kind: K } & Partial<ExprFields<K>> }[ExprKind];

/** An expression of a rule's NFTA_RULE_EXPRESSIONS, its attributes in its layout's order. */
function encodeExpr<K extends ExprKind>(kind: K, fields: ExprFields<K>): Uint8Array {
  const values: Readonly<Record<string, unknown>> = fields;
  const layout: Readonly<Record<string, readonly [number, AttrType]>> = EXPRESSIONS[kind];
  const data = Object.entries(layout).map(([field, [attr, type]]) =>
    (ATTR_CODECS[type].encode as (attr: number, v: unknown) => Uint8Array)(attr, values[field]),
  );
  return nest(LIST_ELEM, nlString(EXPR_NAME, kind), nest(EXPR_DATA, ...data));
}

/** An expression read back by its kind's layout; undefined for a kind iptables-nft's rules of ours do not hold. */
function decodeExpr(item: Uint8Array): Expr | undefined {
  const a = parseAttrs(item);
  const kind = cString(a.get(EXPR_NAME) ?? new Uint8Array());
  if (!Object.hasOwn(EXPRESSIONS, kind)) return undefined;
  const data = parseAttrs(a.get(EXPR_DATA) ?? new Uint8Array());
  const expr: Record<string, unknown> = { kind };
  const layout: Readonly<Record<string, readonly [number, AttrType]>> = EXPRESSIONS[kind as ExprKind];
  for (const [field, [attr, type]] of Object.entries(layout)) {
    const raw = data.get(attr);
    const value = raw && ATTR_CODECS[type].decode(raw);
    if (value !== undefined) expr[field] = value;
  }
  return expr as Expr;
}

// ---- what iptables-nft loads natively, and how it compares ----

/** iptables-nft's register: every load goes to it, every bitwise and cmp reads it. */
const REG = 1;
/** NFT_PAYLOAD_NETWORK_HEADER and NFT_PAYLOAD_TRANSPORT_HEADER. */
const NETWORK_HEADER = 1;
const TRANSPORT_HEADER = 2;
/** Where `-s` and `-d` load from in the network header, and an address's size. */
const addressFields = (family: number) => (family === NFPROTO_IPV6 ? { s: 8, d: 24, size: 16 } : { s: 12, d: 16, size: 4 });
/** Where a tcp or udp `--sport` and `--dport` load from in the transport header (2 bytes, network order). */
const PORT_FIELDS = { sport: 0, dport: 2 } as const;
/** The meta keys (NFT_META_*) of `-i`, `-o`, `-p` and `-m mark`, and how many bytes each loads. */
const META_LOADS = { i: { key: 6, len: 16 }, o: { key: 7, len: 16 }, p: { key: 16, len: 1 }, mark: { key: 3, len: 4 } } as const;
/** NFT_CMP_EQ and NFT_CMP_NEQ. */
const CMP_EQ = 0;
const CMP_NEQ = 1;

const payloadExpr = (base: number, offset: number, len: number) => encodeExpr("payload", { dreg: REG, base, offset, len });
const metaExpr = (what: keyof typeof META_LOADS) => encodeExpr("meta", { key: META_LOADS[what].key, dreg: REG });
const cmpExpr = (negate: boolean, data: Uint8Array) => encodeExpr("cmp", { sreg: REG, op: negate ? CMP_NEQ : CMP_EQ, data });
const bitwiseExpr = (mask: Uint8Array) => encodeExpr("bitwise", { sreg: REG, dreg: REG, len: mask.length, mask, xor: new Uint8Array(mask.length) });
const counterExpr = () => encodeExpr("counter", { bytes: 0n, packets: 0n });
const verdictExpr = (data: Verdict) => encodeExpr("immediate", { dreg: 0, data });

/** The verdicts `-j` names, by their codes; NFT_JUMP and NFT_GOTO name a chain. */
const VERDICTS: Record<string, number> = { ACCEPT: 1, DROP: 0, RETURN: -5 };
const NFT_JUMP = -3;
const NFT_GOTO = -4;
/** The chains the plugins jump to (another name may be an extension target, which the encoder leaves to iptables). */
const CNI_CHAIN = /^CNI-[A-Za-z0-9_.-]{1,24}$/;
/** The protocols `-p` takes here, with their numbers (iptables -S prints these names). */
const PROTOCOLS: Record<string, number> = { tcp: 6, udp: 17, sctp: 132 };
const PROTOCOL_NAMES = new Map(Object.entries(PROTOCOLS).map(([name, n]) => [n, name]));

const le32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return b;
};
/** A u32 in host (little-endian) order, as marks are kept; undefined unless 4 bytes. */
const leU32 = (b: Uint8Array): number | undefined => (b.length === 4 ? new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true) : undefined);
/** A port, as iptables reads it (a decimal 0–65535). */
const portNumber = (text: string): number | undefined => (/^\d{1,5}$/.test(text) && Number(text) <= 65535 ? Number(text) : undefined);
/** A mark and its mask (`V` or `V/M`, hex or decimal, as strtoul reads them); the mask defaults to all ones. */
function markPair(text: string): { value: number; mask: number } | undefined {
  const m = /^(0x[0-9a-f]{1,8}|\d{1,10})(?:\/(0x[0-9a-f]{1,8}|\d{1,10}))?$/i.exec(text);
  if (!m) return undefined;
  const [value, mask] = [Number(m[1]), m[2] === undefined ? 0xffffffff : Number(m[2])];
  return value <= 0xffffffff && mask <= 0xffffffff ? { value, mask } : undefined;
}

// ---- the values native matches compare, each encoded and rendered in one place ----

/**
 * A `-s` or `-d` value as iptables-nft compares it: a prefix's whole bytes are loaded and compared; one ending
 * inside a byte loads the whole address and masks it; /0 ("anywhere") compares nothing.
 */
const addressValue = {
  encode(family: number, text: string): { len: number; mask?: Uint8Array; data: Uint8Array } | "anywhere" | undefined {
    const v6 = family === NFPROTO_IPV6;
    const cidr = tryParseCIDR(text.includes("/") ? text : `${text}/${v6 ? 128 : 32}`);
    const ip = tryParseIP(text.split("/")[0]!);
    if (!cidr || !ip || cidr.ip.family !== (v6 ? 6 : 4)) return undefined;
    const { prefix } = cidr;
    if (prefix === 0) return "anywhere";
    if (prefix % 8 === 0) return { len: prefix / 8, data: ip.bytes.slice(0, prefix / 8) };
    const { size } = addressFields(family);
    const mask = new Uint8Array(size).map((_, b) => (b < prefix >> 3 ? 0xff : b === prefix >> 3 ? (0xff << (8 - (prefix & 7))) & 0xff : 0));
    return { len: size, mask, data: ip.bytes.map((x, b) => x & mask[b]!) };
  },
  /** The address and prefix of a compared value (`len` bytes loaded, masked by `mask`); undefined for a mask that is no prefix. */
  render(family: number, data: Uint8Array, mask: Uint8Array | undefined, len: number): string | undefined {
    const bytes = new Uint8Array(addressFields(family).size);
    bytes.set(data.subarray(0, Math.min(len, bytes.length)));
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
    return `${family === NFPROTO_IPV6 ? formatIPv6(bytes) : [...bytes].join(".")}/${prefix}`;
  },
};

/** An `-i` or `-o` name as iptables-nft compares it: with its NUL an exact name, without one (`veth+`) a prefix. */
const interfaceValue = {
  encode(text: string): Uint8Array | undefined {
    const wildcard = text.endsWith("+");
    const name = wildcard ? text.slice(0, -1) : text;
    if (!/^[^\s"'/+]{1,15}$/.test(name)) return undefined;
    const bytes = new TextEncoder().encode(name);
    return wildcard ? bytes : concatBytes(bytes, Uint8Array.of(0));
  },
  render(data: Uint8Array): string | undefined {
    const end = data.indexOf(0);
    const name = new TextDecoder().decode(end >= 0 ? data.subarray(0, end) : data);
    if (!/^[^\s"'\\]+$/.test(name)) return undefined;
    return end >= 0 ? name : `${name}+`;
  },
};

/** A `-m mark --mark` value: the mark (masked) and, when not all ones, the mask, both in host order. */
const markValue = {
  encode(text: string): { data: Uint8Array; mask?: Uint8Array } | undefined {
    const mark = markPair(text);
    return mark && { data: le32(mark.value & mark.mask), ...(mark.mask === 0xffffffff ? {} : { mask: le32(mark.mask) }) };
  },
  /** As iptables -S prints it: `0xV`, or `0xV/0xM`. */
  render(data: Uint8Array, mask: Uint8Array | undefined): string | undefined {
    const [value, bits] = [leU32(data), mask ? leU32(mask) : 0xffffffff];
    if (value === undefined || bits === undefined) return undefined;
    return `0x${value.toString(16)}${bits === 0xffffffff ? "" : `/0x${bits.toString(16)}`}`;
  },
};

/** A tcp or udp port as compared: 2 bytes, network order. */
const portValue = {
  encode: (port: number) => Uint8Array.of(port >> 8, port & 0xff),
  render: (data: Uint8Array) => (data.length === 2 ? String((data[0]! << 8) | data[1]!) : undefined),
};

/** A `-p` protocol as compared: its number, one byte. */
const protocolValue = {
  encode: (name: string) => (Object.hasOwn(PROTOCOLS, name) ? Uint8Array.of(PROTOCOLS[name]!) : undefined),
  render: (data: Uint8Array) => (data.length === 1 ? PROTOCOL_NAMES.get(data[0]!) : undefined),
};

// ---- xtables extensions: one entry per match or target, its info struct encoded and rendered ----

/** What an extension's info depends on beyond its value: the family, and the rule's `-p` protocol. */
interface XtContext {
  family: number;
  protocol: string | undefined;
}

/**
 * An xtables match or target iptables-nft keeps as a compat expression: the revision it sends, the option its
 * value follows (none for a target without options), and its info struct both ways: `encode` from the value as
 * iptables takes it (undefined for one it refuses), `render` to the value as iptables -S prints it (undefined for
 * a struct this does not read).
 */
interface XtExtension {
  kind: "match" | "target";
  revision: number;
  /** The revisions read (default: `revision`). */
  reads?: (revision: number) => boolean;
  option?: string;
  encode(value: string, ctx: XtContext): Uint8Array | undefined;
  render(info: Uint8Array, view: DataView, ctx: XtContext): string | undefined;
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
/** Every state bit CT_STATES names (made when a rule is rendered: no top-level work, docs/startup.md). */
const knownCtStates = (): number => CT_STATES.reduce((m, [, bit]) => m | bit, 0);
/** struct xt_conntrack_mtinfo3: 8 addresses/masks (128), expires (8), l4proto and 4 ports (10), then the match and invert flags and the state mask (u16 each, host order). */
const CONNTRACK = { size: 168, matchFlags: 146, invertFlags: 148, stateMask: 150, STATE: 1 } as const;
/** XT_ADDRTYPE_LOCAL in struct xt_addrtype_info_v1. */
const ADDRTYPE_LOCAL = 4;
/** struct xt_sctp_info: destination ports, source ports, the chunk map, match type, 4 flag slots, flag count, flags, inverse flags. */
const SCTP = { size: 296, flagSlots: 268, flags: 284, invflags: 288, DEST_PORTS: 2 } as const;
/**
 * struct nf_nat_range2 (revision 1 reads its first 40 bytes, struct nf_nat_range): flags (NF_NAT_RANGE_MAP_IPS,
 * _PROTO_SPECIFIED), min and max address (16 bytes each), min and max port (network order), base port.
 */
const NAT_RANGE = { size: 44, flags: 0, minAddr: 4, maxAddr: 20, minPort: 36, maxPort: 38, MAP_IPS: 1, PROTO_SPECIFIED: 2 } as const;
/** struct xt_multiport_v1: flags (XT_MULTIPORT_DESTINATION), count, 15 ports (host order), 15 range flags, invert. */
const MULTIPORT = { size: 48, flags: 0, count: 1, ports: 2, rangeFlags: 32, DESTINATION: 1 } as const;

const XT_EXTENSIONS: Record<string, XtExtension> = {
  comment: {
    kind: "match",
    revision: 0,
    option: "--comment",
    // struct xt_comment_info: the text, NUL-padded to 256 bytes.
    encode: (value) => {
      const text = new TextEncoder().encode(value);
      if (text.length > 255 || text.includes(0)) return undefined;
      const info = new Uint8Array(256);
      info.set(text);
      return info;
    },
    render: (info) => saveQuote(cString(info)),
  },
  conntrack: {
    kind: "match",
    revision: 3,
    option: "--ctstate",
    // --ctstate alone: the match flags XT_CONNTRACK_STATE, not inverted.
    encode: (value) => {
      let mask = 0;
      for (const s of value.split(",")) {
        const bit = CT_STATES.find(([n]) => n === s)?.[1];
        if (bit === undefined) return undefined;
        mask |= bit;
      }
      const info = new Uint8Array(CONNTRACK.size);
      const view = new DataView(info.buffer);
      view.setUint16(CONNTRACK.matchFlags, CONNTRACK.STATE, true);
      view.setUint16(CONNTRACK.stateMask, mask, true);
      return info;
    },
    render: (info, view) => {
      if (info.length < 154) return undefined;
      const stateMask = view.getUint16(CONNTRACK.stateMask, true);
      if (view.getUint16(CONNTRACK.matchFlags, true) !== CONNTRACK.STATE || view.getUint16(CONNTRACK.invertFlags, true) !== 0) return undefined;
      const states = CT_STATES.filter(([, bit]) => stateMask & bit).map(([s]) => s);
      return states.length && !(stateMask & ~knownCtStates()) ? states.join(",") : undefined;
    },
  },
  addrtype: {
    kind: "match",
    revision: 1,
    option: "--dst-type",
    // struct xt_addrtype_info_v1: source and destination types (u16, host order), then flags: a destination
    // type of LOCAL alone, no inversion or interface limit.
    encode: (value) => (value === "LOCAL" ? Uint8Array.of(0, 0, ADDRTYPE_LOCAL, 0, 0, 0, 0, 0) : undefined),
    render: (info, view) =>
      info.length >= 8 && view.getUint16(0, true) === 0 && view.getUint16(2, true) === ADDRTYPE_LOCAL && view.getUint32(4, true) === 0
        ? "LOCAL"
        : undefined,
  },
  multiport: {
    kind: "match",
    revision: 1,
    option: "--dports",
    // Destination ports only, no ranges, not inverted.
    encode: (value) => {
      const ports = value.split(",").map(portNumber);
      if (ports.length > 15 || ports.some((p) => p === undefined)) return undefined;
      const info = new Uint8Array(MULTIPORT.size);
      const view = new DataView(info.buffer);
      info[MULTIPORT.flags] = MULTIPORT.DESTINATION;
      info[MULTIPORT.count] = ports.length;
      ports.forEach((p, k) => view.setUint16(MULTIPORT.ports + 2 * k, p!, true));
      return info;
    },
    render: (info, view, { protocol }) => {
      if (info.length < MULTIPORT.size || !protocol) return undefined;
      const count = info[MULTIPORT.count]!;
      if (
        info[MULTIPORT.flags] !== MULTIPORT.DESTINATION ||
        count < 1 ||
        count > 15 ||
        info.subarray(MULTIPORT.rangeFlags, MULTIPORT.size).some((b) => b !== 0)
      )
        return undefined;
      return Array.from({ length: count }, (_, k) => view.getUint16(MULTIPORT.ports + 2 * k, true)).join(",");
    },
  },
  sctp: {
    kind: "match",
    revision: 0,
    option: "--dport",
    // One destination port (u16 min and max, host order), no chunk or flag matches (the flag slots' chunk
    // type -1), not inverted.
    encode: (value) => {
      const port = portNumber(value);
      if (port === undefined) return undefined;
      const info = new Uint8Array(SCTP.size);
      const view = new DataView(info.buffer);
      view.setUint16(0, port, true);
      view.setUint16(2, port, true);
      for (let f = 0; f < 4; f++) info[SCTP.flagSlots + 3 * f] = 0xff;
      view.setUint32(SCTP.flags, SCTP.DEST_PORTS, true);
      return info;
    },
    render: (info, view, { protocol }) => {
      if (info.length < 292 || protocol !== "sctp") return undefined;
      const [min, max] = [view.getUint16(0, true), view.getUint16(2, true)];
      return view.getUint32(SCTP.flags, true) === SCTP.DEST_PORTS && view.getUint32(SCTP.invflags, true) === 0 && min === max
        ? String(min)
        : undefined;
    },
  },
  MASQUERADE: {
    kind: "target",
    revision: 0,
    reads: () => true,
    // IPv4: struct nf_nat_ipv4_multi_range_compat, one empty range (24 bytes); IPv6: struct nf_nat_range (40):
    // no options, nothing set but the range count.
    encode: (_, { family }) => {
      const info = new Uint8Array(family === NFPROTO_IPV6 ? 40 : 24);
      if (family !== NFPROTO_IPV6) new DataView(info.buffer).setUint32(0, 1, true);
      return info;
    },
    render: (info) => (info.length >= 4 && !info.subarray(4).some((b) => b !== 0) ? "" : undefined),
  },
  MARK: {
    kind: "target",
    revision: 2,
    option: "--set-xmark",
    // struct xt_mark_tginfo2: mark and mask, host order.
    encode: (value) => {
      const mark = markPair(value);
      return mark && concatBytes(le32(mark.value), le32(mark.mask));
    },
    render: (info, view) => (info.length >= 8 ? `0x${view.getUint32(0, true).toString(16)}/0x${view.getUint32(4, true).toString(16)}` : undefined),
  },
  DNAT: {
    kind: "target",
    revision: 2,
    reads: (revision) => revision === 1 || revision === 2,
    option: "--to-destination",
    // One address and, optionally, one port.
    encode: (value, { family }) => {
      const v6 = family === NFPROTO_IPV6;
      const m = v6 ? /^(?:\[([0-9a-f:.]+)\]|([0-9a-f:.]+))(?::(\d+))?$/i.exec(value) : /^([0-9.]+)(?::(\d+))?$/.exec(value);
      if (!m) return undefined;
      const ip = tryParseIP((v6 ? (m[1] ?? m[2]) : m[1])!);
      const portText = v6 ? (m[1] !== undefined ? m[3] : undefined) : m[2];
      const port = portText === undefined ? undefined : portNumber(portText);
      if (!ip || ip.family !== (v6 ? 6 : 4) || (portText !== undefined && (port === undefined || port === 0))) return undefined;
      const info = new Uint8Array(NAT_RANGE.size);
      const view = new DataView(info.buffer);
      view.setUint32(NAT_RANGE.flags, NAT_RANGE.MAP_IPS | (port === undefined ? 0 : NAT_RANGE.PROTO_SPECIFIED), true);
      info.set(ip.bytes, NAT_RANGE.minAddr);
      info.set(ip.bytes, NAT_RANGE.maxAddr);
      if (port !== undefined) {
        view.setUint16(NAT_RANGE.minPort, port, false);
        view.setUint16(NAT_RANGE.maxPort, port, false);
      }
      return info;
    },
    render: (info, view, { family }) => {
      if (info.length < 40) return undefined;
      const flags = view.getUint32(NAT_RANGE.flags, true);
      const size = family === NFPROTO_IPV6 ? 16 : 4;
      const [min, max] = [info.subarray(NAT_RANGE.minAddr, NAT_RANGE.minAddr + size), info.subarray(NAT_RANGE.maxAddr, NAT_RANGE.maxAddr + size)];
      const [pmin, pmax] = [view.getUint16(NAT_RANGE.minPort, false), view.getUint16(NAT_RANGE.maxPort, false)];
      const { MAP_IPS, PROTO_SPECIFIED } = NAT_RANGE;
      if ((flags !== MAP_IPS && flags !== (MAP_IPS | PROTO_SPECIFIED)) || min.some((b, k) => b !== max[k]) || pmin !== pmax) return undefined;
      const address = family === NFPROTO_IPV6 ? formatIPv6(min) : [...min].join(".");
      if (!(flags & PROTO_SPECIFIED)) return address;
      return family === NFPROTO_IPV6 ? `[${address}]:${pmin}` : `${address}:${pmin}`;
    },
  },
};

/** The compat expression of extension `name` with `value` as its option's value; undefined when it refuses the value. */
function xtExpr(name: string, value: string, ctx: XtContext): Uint8Array | undefined {
  const ext = XT_EXTENSIONS[name]!;
  const info = ext.encode(value, ctx);
  return info && encodeExpr(ext.kind, { name, rev: ext.revision, info });
}

/** The words of a compat expression (`-m NAME OPTION VALUE`, `-j NAME [OPTION VALUE]`), when this reads it. */
function xtWords({ kind, name, rev, info = new Uint8Array() }: Extract<Expr, { kind: "match" | "target" }>, ctx: XtContext): string[] | undefined {
  const ext = name !== undefined && Object.hasOwn(XT_EXTENSIONS, name) ? XT_EXTENSIONS[name]! : undefined;
  if (!ext || ext.kind !== kind || rev === undefined || !(ext.reads ?? ((r) => r === ext.revision))(rev)) return undefined;
  const value = ext.render(info, new DataView(info.buffer, info.byteOffset, info.byteLength), ctx);
  if (value === undefined) return undefined;
  return [kind === "match" ? "-m" : "-j", name!, ...(ext.option ? [ext.option, value] : [])];
}

// ---- encoding a rule as iptables-nft does ----

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
  const ctx = (): XtContext => ({ family, protocol: protocol?.name });
  /** Fills the latest pending match of `kind`, or (a port with `-p` given) adds it where iptables loads it implicitly. */
  const fill = (kind: PendingMatch["pending"], encoded: Uint8Array | undefined): boolean => {
    if (!encoded) return false;
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
    const xt = Object.hasOwn(XT_EXTENSIONS, value) ? XT_EXTENSIONS[value] : undefined;
    if ((word === "-s" || word === "-d") && !addr[word[1] as "s"]) {
      const v = addressValue.encode(family, value);
      if (!v || (v === "anywhere" && negate)) return undefined;
      const offset = addressFields(family)[word[1] as "s"];
      // "anywhere": iptables matches nothing
      addr[word[1] as "s"] =
        v === "anywhere" ? [] : [payloadExpr(NETWORK_HEADER, offset, v.len), ...(v.mask ? [bitwiseExpr(v.mask)] : []), cmpExpr(negate, v.data)];
    } else if ((word === "-i" || word === "-o") && !iface[word[1] as "i"]) {
      const data = interfaceValue.encode(value);
      if (!data) return undefined;
      iface[word[1] as "i"] = [metaExpr(word[1] as "i"), cmpExpr(negate, data)];
    } else if (word === "-p" && !negate && !protocol && protocolValue.encode(value)) {
      protocol = { name: value, exprs: [metaExpr("p"), cmpExpr(false, protocolValue.encode(value)!)] };
    } else if (word === "-m" && !negate && value === "mark" && args[i + 1] === "--mark" && args[i + 2] !== undefined) {
      // Native in iptables-nft: the packet's mark, masked when the mask is not all ones.
      const v = markValue.encode(args[i + 2]!);
      if (!v) return undefined;
      matches.push(concatBytes(metaExpr("mark"), ...(v.mask ? [bitwiseExpr(v.mask)] : []), cmpExpr(false, v.data)));
      i += 2;
    } else if (word === "-m" && !negate && value === "multiport") {
      matches.push({ pending: "multiport" });
    } else if (word === "-m" && !negate && PROTOCOLS[value] !== undefined) {
      if (protocol?.name !== value) return undefined; // iptables wants `-p` first
      matches.push({ pending: "port", protocol: value });
    } else if (word === "-m" && !negate && xt?.kind === "match" && args[i + 1] === xt.option && args[i + 2] !== undefined) {
      const encoded = xtExpr(value, args[i + 2]!, ctx());
      if (!encoded) return undefined;
      matches.push(encoded);
      i += 2;
    } else if (word === "--dport" && !negate && protocol) {
      const port = portNumber(value);
      if (port === undefined) return undefined;
      // Native in iptables-nft for tcp and udp: the transport header's destination port, network order.
      const encoded =
        protocol.name === "sctp"
          ? xtExpr("sctp", value, ctx())
          : concatBytes(payloadExpr(TRANSPORT_HEADER, PORT_FIELDS.dport, 2), cmpExpr(false, portValue.encode(port)));
      if (!fill("port", encoded)) return undefined;
    } else if ((word === "--dports" || word === "--destination-ports") && !negate && protocol) {
      if (!fill("multiport", xtExpr("multiport", value, ctx()))) return undefined;
    } else if ((word === "-j" || word === "-g") && !negate && !verdict) {
      const target = word === "-j" && xt?.kind === "target" ? xt : undefined;
      if (word === "-j" && Object.hasOwn(VERDICTS, value)) verdict = verdictExpr({ code: VERDICTS[value]! });
      else if (target && !target.option) verdict = xtExpr(value, "", ctx());
      else if (target && args[i + 1] === target.option && args[i + 2] !== undefined) {
        verdict = xtExpr(value, args[i + 2]!, ctx());
        if (!verdict) return undefined;
        i += 2;
      } else if (CNI_CHAIN.test(value)) {
        verdict = verdictExpr({ code: word === "-j" ? NFT_JUMP : NFT_GOTO, chain: value });
      } else {
        return undefined;
      }
    } else {
      return undefined;
    }
  }
  if (matches.some((m) => !(m instanceof Uint8Array))) return undefined; // `-m multiport` without its ports
  return concatBytes(
    ...(iface.i ?? []),
    ...(iface.o ?? []),
    ...(protocol?.exprs ?? []),
    ...(addr.s ?? []),
    ...(addr.d ?? []),
    ...(matches as Uint8Array[]),
    counterExpr(),
    ...(verdict ? [verdict] : []),
  );
}

// ---- rendering a rule as iptables -S prints it ----

/** The words after `-A <chain>` of a rule, or undefined when it holds something this does not render. */
export function renderRule(family: number, expressions: Uint8Array | undefined): string[] | undefined {
  if (!expressions) return [];
  const fields: { s?: string; d?: string; i?: string; o?: string; p?: string } = {};
  let protocol: string | undefined;
  const matches: string[] = [];
  let verdict: string[] = [];
  // A load into the register, waiting for the bitwise and cmp that complete it.
  let loaded: { what: "s" | "d" | keyof typeof META_LOADS | keyof typeof PORT_FIELDS; len: number; mask?: Uint8Array } | undefined;
  for (const item of listItems(expressions)) {
    const e = decodeExpr(item);
    if (!e) return undefined;
    switch (e.kind) {
      case "payload": {
        const { base = 0, offset, len } = e;
        if (offset === undefined || len === undefined) return undefined;
        if (base === TRANSPORT_HEADER) {
          // A tcp or udp port, native in iptables-nft.
          const what = offset === PORT_FIELDS.dport ? "dport" : offset === PORT_FIELDS.sport ? "sport" : undefined;
          if (!what || len !== 2 || (protocol !== "tcp" && protocol !== "udp")) return undefined;
          loaded = { what, len };
          break;
        }
        if (base !== NETWORK_HEADER) return undefined;
        const at = addressFields(family);
        if ((offset !== at.s && offset !== at.d) || len > at.size) return undefined;
        loaded = { what: offset === at.s ? "s" : "d", len };
        break;
      }
      case "meta": {
        const what = (Object.keys(META_LOADS) as Array<keyof typeof META_LOADS>).find((w) => META_LOADS[w].key === e.key);
        if (!what) return undefined;
        loaded = { what, len: META_LOADS[what].len };
        break;
      }
      case "bitwise": {
        if (!loaded || (loaded.what !== "s" && loaded.what !== "d" && loaded.what !== "mark")) return undefined;
        if (!e.mask || e.xor?.some((b) => b !== 0)) return undefined;
        loaded.mask = e.mask;
        break;
      }
      case "cmp": {
        if (!loaded) return undefined;
        const { op, data: value } = e;
        if ((op !== CMP_EQ && op !== CMP_NEQ) || !value) return undefined;
        const what = loaded.what;
        const not = op === CMP_NEQ ? "! " : "";
        if (what === "p") {
          protocol = protocolValue.render(value);
          if (!protocol) return undefined;
          fields.p = `${not}-p ${protocol}`;
        } else if (what === "dport" || what === "sport") {
          const port = op === CMP_EQ ? portValue.render(value) : undefined;
          if (port === undefined) return undefined;
          matches.push("-m", protocol!, `--${what}`, port);
        } else if (what === "mark") {
          const mark = op === CMP_EQ ? markValue.render(value, loaded.mask) : undefined;
          if (mark === undefined) return undefined;
          matches.push("-m", "mark", "--mark", mark);
        } else {
          const text = what === "i" || what === "o" ? interfaceValue.render(value) : addressValue.render(family, value, loaded.mask, loaded.len);
          if (text === undefined) return undefined;
          fields[what] = `${not}-${what} ${text}`;
        }
        loaded = undefined;
        break;
      }
      case "counter":
        break;
      case "match": {
        const words = xtWords(e, { family, protocol });
        if (!words) return undefined;
        matches.push(...words);
        break;
      }
      case "target": {
        const words = xtWords(e, { family, protocol });
        if (!words) return undefined;
        verdict = words;
        break;
      }
      case "immediate": {
        const { code, chain } = e.data ?? {};
        const name = Object.keys(VERDICTS).find((v) => VERDICTS[v] === code);
        if (name) verdict = ["-j", name];
        else if ((code === NFT_JUMP || code === NFT_GOTO) && chain) verdict = [code === NFT_JUMP ? "-j" : "-g", chain];
        else return undefined;
        break;
      }
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
    const e = decodeExpr(item);
    if (e?.kind !== "immediate") continue;
    const { code, chain } = e.data ?? {};
    if ((code === NFT_JUMP || code === NFT_GOTO) && chain) return chain;
  }
  return undefined;
}
