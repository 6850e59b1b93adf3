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
import { NetOpError } from "../sys/exec.js";
import { errnoText, NLM_F_ACK, NLM_F_DUMP, nlAttr, nlString, openNetlink, NETLINK_NETFILTER, parseAttrs, type RtnetlinkSocket } from "./rtnetlink.js";
import { saveQuote } from "./iptables-save.js";
import { formatIPv6, tryParseCIDR, tryParseIP } from "../spec/ip.js";

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
  for (let at = 0; at + 4 <= bytes.length;) {
    const len = view.getUint16(at, true);
    if (len < 4 || at + len > bytes.length) break;
    if ((view.getUint16(at + 2, true) & 0x3fff) === LIST_ELEM) items.push(bytes.subarray(at + 4, at + len));
    at += (len + 3) & ~3;
  }
  return items;
}

let socket: Promise<RtnetlinkSocket | null> | undefined;
/** The process's netfilter socket (one per process, in its own namespace), or null without FFI. */
function nfSocket(): Promise<RtnetlinkSocket | null> {
  return (socket ??= openNetlink(NETLINK_NETFILTER).catch(() => null));
}

/** Whether a table exists; undefined when netlink cannot tell. */
export async function nftTableExists(family: number, table: string): Promise<boolean | undefined> {
  const nl = await nfSocket();
  if (!nl) return undefined;
  const { error } = nl.exchange(msgType(MSG.GETTABLE), 0, nfBody(family, nlString(TABLE_NAME, table)), `look up nftables table ${table}`);
  if (!error) return true;
  return error.errno === ENOENT ? false : undefined;
}

/** Whether a chain exists (a missing table: no); undefined when netlink cannot tell. */
export async function nftChainExists(family: number, table: string, chain: string): Promise<boolean | undefined> {
  const nl = await nfSocket();
  if (!nl) return undefined;
  const { error } = nl.exchange(msgType(MSG.GETCHAIN), 0, nfBody(family, nlString(CHAIN_TABLE, table), nlString(CHAIN_NAME, chain)),
    `look up nftables chain ${table}/${chain}`);
  if (!error) return true;
  return error.errno === ENOENT ? false : undefined;
}

/** A rule as `iptables -S` prints it, and its handle. */
export interface SavedRule { chain: string; line: string; handle: bigint }

/** Some chains of an iptables-nft table: the names of all its chains, and the rules of those asked for. */
export interface IptablesNftListing { chains: string[]; rules: SavedRule[] }

/**
 * The chains of `table` (family NFPROTO_IPV4 or NFPROTO_IPV6, as iptables-nft keeps them) and the rules of
 * `chains` among them, rendered as `iptables -S` lines; a missing table lists nothing. Undefined when netlink
 * cannot tell.
 */
export async function listIptablesNft(family: number, table: string, chains: readonly string[]): Promise<IptablesNftListing | undefined> {
  const nl = await nfSocket();
  if (!nl) return undefined;
  const listed = nl.exchange(msgType(MSG.GETCHAIN), NLM_F_DUMP, nfBody(family, nlString(CHAIN_TABLE, table)), `list nftables chains of ${table}`);
  if (listed.error) return listed.error.errno === ENOENT ? { chains: [], rules: [] } : undefined;
  const names = listed.messages.flatMap((m) => {
    const attrs = parseAttrs(m.payload.subarray(4));
    const name = attrs.get(CHAIN_NAME);
    return attrs.get(CHAIN_TABLE) && cString(attrs.get(CHAIN_TABLE)!) === table && name ? [cString(name)] : [];
  });
  const rules: SavedRule[] = [];
  for (const chain of chains.filter((c) => names.includes(c))) {
    const dump = nl.exchange(msgType(MSG.GETRULE), NLM_F_DUMP, nfBody(family, nlString(RULE_TABLE, table), nlString(RULE_CHAIN, chain)),
      `list nftables rules of ${table}/${chain}`);
    if (dump.error) {
      if (dump.error.errno === ENOENT) continue;
      return undefined;
    }
    if (dump.interrupted) return undefined;
    for (const m of dump.messages) {
      const attrs = parseAttrs(m.payload.subarray(4));
      const handle = attrs.get(RULE_HANDLE);
      if (!handle || cString(attrs.get(RULE_CHAIN) ?? new Uint8Array()) !== chain) continue;
      const h = new DataView(handle.buffer, handle.byteOffset, handle.byteLength).getBigUint64(0, false);
      const words = renderRule(family, attrs.get(RULE_EXPRESSIONS));
      rules.push({ chain, handle: h, line: words ? ["-A", chain, ...words].join(" ") : `-A ${chain} <rule ${h} of a form tscni does not read>` });
    }
  }
  return { chains: names, rules };
}

/**
 * Deletes rules (by handle) and then chains (flushed, then removed) of one table in one nf_tables transaction:
 * all of it or nothing. A failure (a rule another process deleted meanwhile: ENOENT) is a NetOpError naming
 * `operation`; false when netlink cannot be used.
 */
export async function nftDelete(family: number, table: string, rules: ReadonlyArray<{ chain: string; handle: bigint }>, chains: readonly string[], operation: string): Promise<boolean> {
  const nl = await nfSocket();
  if (!nl) return false;
  const handle = (h: bigint) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, h, false);
    return nlAttr(RULE_HANDLE, b);
  };
  const t = nlString(RULE_TABLE, table);
  await transaction(nl, [
    ...rules.map((r) => ({ type: msgType(MSG.DELRULE), flags: NLM_F_ACK, body: nfBody(family, t, nlString(RULE_CHAIN, r.chain), handle(r.handle)) })),
    ...chains.flatMap((c) => [
      { type: msgType(MSG.DELRULE), flags: NLM_F_ACK, body: nfBody(family, t, nlString(RULE_CHAIN, c)) },
      { type: msgType(MSG.DELCHAIN), flags: NLM_F_ACK, body: nfBody(family, nlString(CHAIN_TABLE, table), nlString(CHAIN_NAME, c)) },
    ]),
  ], operation);
  return true;
}

/** Runs `requests` as one nf_tables transaction; a refusal of any is a NetOpError and undoes them all. */
async function transaction(nl: RtnetlinkSocket, requests: ReadonlyArray<{ type: number; flags: number; body: Uint8Array }>, operation: string): Promise<void> {
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
    throw new NetOpError(operation, e.message ? `${e.message} (${errnoText(e.errno)})` : errnoText(e.errno), 1);
  }
}

/** A rule to add: its chain, its words as iptables takes them after `-A <chain>`, at the chain's head or end. */
export interface RuleToAdd { chain: string; args: readonly string[]; first?: boolean }

/**
 * Creates the user chains `chains` (left as they are when another process made them meanwhile) and adds `rules`,
 * in one nf_tables transaction, encoded exactly as iptables-nft 1.8 encodes them (so iptables -S, -C and -D and
 * the Go plugins see the rules iptables-restore would have made). False, with nothing done, when a rule has a
 * word the encoder does not know or netlink cannot be used: the caller runs iptables-restore then.
 */
export async function nftAddRules(family: number, table: string, chains: readonly string[], rules: readonly RuleToAdd[], operation: string): Promise<boolean> {
  const encoded = rules.map((r) => encodeRule(family, r.args));
  if (encoded.some((e) => e === undefined)) return false;
  const nl = await nfSocket();
  if (!nl) return false;
  const t = nlString(RULE_TABLE, table);
  await transaction(nl, [
    ...chains.map((c) => ({ type: msgType(MSG.NEWCHAIN), flags: NLM_F_CREATE | NLM_F_ACK, body: nfBody(family, nlString(CHAIN_TABLE, table), nlString(CHAIN_NAME, c)) })),
    ...rules.map((r, i) => ({
      type: msgType(MSG.NEWRULE), flags: NLM_F_CREATE | NLM_F_ACK | (r.first ? 0 : NLM_F_APPEND),
      body: nfBody(family, t, nlString(RULE_CHAIN, r.chain), nlAttr(RULE_EXPRESSIONS | NLA_F_NESTED, encoded[i]!)),
    })),
  ], operation);
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
const payloadExpr = (offset: number, len: number) => expression("payload", u32be(1, 1), u32be(2, 1), u32be(3, offset), u32be(4, len));
const cmpExpr = (negate: boolean, value: Uint8Array) => expression("cmp", u32be(1, 1), u32be(2, negate ? 1 : 0), dataValue(3, value));
const bitwiseExpr = (mask: Uint8Array) => expression("bitwise", u32be(1, 1), u32be(2, 1), u32be(3, mask.length), dataValue(4, mask), dataValue(5, new Uint8Array(mask.length)));
const metaExpr = (key: number) => expression("meta", u32be(2, key), u32be(1, 1));
const counterExpr = () => expression("counter", nlAttr(1, new Uint8Array(8)), nlAttr(2, new Uint8Array(8)));
const xtExpr = (kind: "match" | "target", name: string, revision: number, info: Uint8Array) =>
  expression(kind, nlString(1, name), u32be(2, revision), nlAttr(3, info));
const verdictExpr = (code: number, chain?: string) =>
  expression("immediate", u32be(1, 0), nest(2, nest(2, u32be(1, code), ...(chain ? [nlString(2, chain)] : []))));

const VERDICTS: Record<string, number> = { ACCEPT: 1, DROP: 0, RETURN: -5 };
/** The chains the plugins jump to (another name may be an extension target, which the encoder leaves to iptables). */
const CNI_CHAIN = /^CNI-[A-Za-z0-9_.-]{1,24}$/;

/**
 * The expressions of a rule given as iptables words (after `-A <chain>`), in iptables-nft's order: interfaces,
 * addresses, the matches as given, a counter, the verdict or target. Undefined for a word outside what the
 * plugins write.
 */
export function encodeRule(family: number, args: readonly string[]): Uint8Array | undefined {
  const iface: Partial<Record<"i" | "o", Uint8Array[]>> = {};
  const addr: Partial<Record<"s" | "d", Uint8Array[]>> = {};
  const matches: Uint8Array[] = [];
  let verdict: Uint8Array | undefined;
  const v6 = family === NFPROTO_IPV6;
  for (let i = 0; i < args.length; i++) {
    const negate = args[i] === "!";
    if (negate) i++;
    const [word, value] = [args[i], args[i + 1]];
    if (value === undefined) return undefined;
    i++;
    if ((word === "-s" || word === "-d") && !addr[word[1] as "s"]) {
      const cidr = tryParseCIDR(value.includes("/") ? value : `${value}/${v6 ? 128 : 32}`);
      const ip = tryParseIP(value.split("/")[0]!);
      if (!cidr || !ip || cidr.ip.family !== (v6 ? 6 : 4) || cidr.prefix === 0) return undefined;
      const size = v6 ? 16 : 4;
      const offset = word === "-s" ? (v6 ? 8 : 12) : (v6 ? 24 : 16);
      if (cidr.prefix % 8 === 0) {
        addr[word[1] as "s"] = [payloadExpr(offset, cidr.prefix / 8), cmpExpr(negate, ip.bytes.slice(0, cidr.prefix / 8))];
      } else {
        const mask = new Uint8Array(size).map((_, b) => (b < cidr.prefix >> 3 ? 0xff : b === cidr.prefix >> 3 ? (0xff << (8 - (cidr.prefix & 7))) & 0xff : 0));
        addr[word[1] as "s"] = [payloadExpr(offset, size), bitwiseExpr(mask), cmpExpr(negate, ip.bytes.map((x, b) => x & mask[b]!))];
      }
    } else if ((word === "-i" || word === "-o") && !iface[word[1] as "i"]) {
      const wildcard = value.endsWith("+");
      const name = wildcard ? value.slice(0, -1) : value;
      if (!/^[^\s"'\/+]{1,15}$/.test(name)) return undefined;
      const bytes = new TextEncoder().encode(name);
      iface[word[1] as "i"] = [metaExpr(word === "-i" ? 6 : 7), cmpExpr(negate, wildcard ? bytes : concat([bytes, Uint8Array.of(0)]))];
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
    } else if ((word === "-j" || word === "-g") && !negate && !verdict) {
      if (word === "-j" && VERDICTS[value] !== undefined) verdict = verdictExpr(VERDICTS[value]!);
      else if (word === "-j" && value === "MASQUERADE") {
        // IPv4: struct nf_nat_ipv4_multi_range_compat, one empty range (24 bytes); IPv6: struct nf_nat_range (40).
        const info = new Uint8Array(v6 ? 40 : 24);
        if (!v6) new DataView(info.buffer).setUint32(0, 1, true);
        verdict = xtExpr("target", "MASQUERADE", 0, info);
      } else if (CNI_CHAIN.test(value)) {
        verdict = verdictExpr(word === "-j" ? -3 : -4, value);
      } else {
        return undefined;
      }
    } else {
      return undefined;
    }
  }
  return concat([...(iface.i ?? []), ...(iface.o ?? []), ...(addr.s ?? []), ...(addr.d ?? []), ...matches, counterExpr(), ...(verdict ? [verdict] : [])]);
}

// ---- rendering a rule as iptables -S prints it ----

interface Expr { name: string; data: Map<number, Uint8Array> }

/** The words after `-A <chain>` of a rule, or undefined when it holds something this does not render. */
export function renderRule(family: number, expressions: Uint8Array | undefined): string[] | undefined {
  if (!expressions) return [];
  const exprs: Expr[] = listItems(expressions).map((item) => {
    const a = parseAttrs(item);
    return { name: cString(a.get(EXPR_NAME) ?? new Uint8Array()), data: parseAttrs(a.get(EXPR_DATA) ?? new Uint8Array()) };
  });
  const fields: { s?: string; d?: string; i?: string; o?: string } = {};
  const matches: string[] = [];
  let verdict: string[] = [];
  // A load into a register, waiting for the bitwise and cmp that complete it.
  let loaded: { what: "s" | "d" | "i" | "o"; len: number; mask?: Uint8Array } | undefined;
  for (const e of exprs) {
    switch (e.name) {
      case "payload": {
        if (be32(e.data.get(2) ?? Uint8Array.of(0, 0, 0, 0)) !== 1) return undefined; // network header only
        const offset = be32(e.data.get(3)!);
        const len = be32(e.data.get(4)!);
        const [src, dst, size] = family === NFPROTO_IPV6 ? [8, 24, 16] : [12, 16, 4];
        if ((offset !== src && offset !== dst) || len > size) return undefined;
        loaded = { what: offset === src ? "s" : "d", len };
        break;
      }
      case "meta": {
        const key = be32(e.data.get(2)!);
        if (key !== 6 && key !== 7) return undefined; // iifname, oifname
        loaded = { what: key === 6 ? "i" : "o", len: 16 };
        break;
      }
      case "bitwise": {
        if (!loaded || loaded.what === "i" || loaded.what === "o") return undefined;
        const mask = parseAttrs(e.data.get(4) ?? new Uint8Array()).get(1);
        const xor = parseAttrs(e.data.get(5) ?? new Uint8Array()).get(1);
        if (!mask || (xor && xor.some((b) => b !== 0))) return undefined;
        loaded.mask = mask;
        break;
      }
      case "cmp": {
        if (!loaded) return undefined;
        const op = be32(e.data.get(2)!);
        const value = parseAttrs(e.data.get(3) ?? new Uint8Array()).get(1);
        if ((op !== 0 && op !== 1) || !value) return undefined;
        const text = loaded.what === "i" || loaded.what === "o" ? interfaceText(value) : addressText(family, value, loaded.mask, loaded.len);
        if (text === undefined) return undefined;
        fields[loaded.what] = `${op === 1 ? "! " : ""}-${loaded.what} ${text}`;
        loaded = undefined;
        break;
      }
      case "counter":
        break;
      case "match": {
        const words = matchWords(cString(e.data.get(1)!), be32(e.data.get(2)!), e.data.get(3) ?? new Uint8Array());
        if (!words) return undefined;
        matches.push(...words);
        break;
      }
      case "target": {
        const name = cString(e.data.get(1)!);
        const info = e.data.get(3) ?? new Uint8Array();
        // MASQUERADE without options: a range count of 1 and nothing else set.
        if (name !== "MASQUERADE" || info.length < 4 || info.subarray(4).some((b) => b !== 0)) return undefined;
        verdict = ["-j", name];
        break;
      }
      case "immediate": {
        const v = parseAttrs(parseAttrs(e.data.get(2) ?? new Uint8Array()).get(2) ?? new Uint8Array());
        const code = be32s(v.get(1) ?? Uint8Array.of(0, 0, 0, 0x7f));
        const chain = v.get(2) ? cString(v.get(2)!) : "";
        const named: Record<number, string[]> = { 1: ["-j", "ACCEPT"], 0: ["-j", "DROP"], [-5]: ["-j", "RETURN"], [-3]: ["-j", chain], [-4]: ["-g", chain] };
        if (!named[code] || ((code === -3 || code === -4) && !chain)) return undefined;
        verdict = named[code]!;
        break;
      }
      default:
        return undefined;
    }
  }
  if (loaded) return undefined;
  // iptables -S: addresses, interfaces, then matches, then the target.
  return [fields.s, fields.d, fields.i, fields.o].filter((w): w is string => w !== undefined).join(" ").split(" ").filter(Boolean)
    .concat(matches, verdict);
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
const CT_STATES: Array<[string, number]> = [["INVALID", 1], ["NEW", 8], ["RELATED", 4], ["ESTABLISHED", 2], ["UNTRACKED", 1 << 8], ["SNAT", 1 << 9], ["DNAT", 1 << 10]];

const KNOWN_CT_STATES = CT_STATES.reduce((m, [, bit]) => m | bit, 0);

/** The words of an xtables match iptables-nft keeps as a compat expression, when this renders it. */
function matchWords(name: string, revision: number, info: Uint8Array): string[] | undefined {
  if (name === "comment" && revision === 0) return ["-m", "comment", "--comment", saveQuote(cString(info))];
  if (name === "conntrack" && revision === 3 && info.length >= 154) {
    // struct xt_conntrack_mtinfo3: 8 addresses/masks (128), expires (8), l4proto and 4 ports (10), then the
    // match and invert flags and the state mask (u16 each, host order).
    const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
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
