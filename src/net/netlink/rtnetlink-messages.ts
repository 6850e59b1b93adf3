/**
 * Link, address and route messages of route netlink, built and read as bytes (pure): the requests that
 * `ip link`, `ip addr` and `ip route` send for the steps in ip-ops.ts, and the RTM_NEWLINK / RTM_NEWADDR
 * messages of a get or dump read into the layer's types, as `ip -json -d` shows them; and the traffic-control
 * requests and replies that `tc` sends and reads for tc.ts. Formats are the kernel's (include/uapi/linux/
 * rtnetlink.h, if_link.h, if_addr.h, veth.h, pkt_sched.h, pkt_cls.h, tc_act/tc_mirred.h).
 * @module
 */
import { formatIPv6, isIPv4Mapped, parseIPBytes } from "#ip/ip.js";
import { concatBytes, hexOf } from "#sys/bytes.js";
import type { Address, BridgeSettings, IpvlanMode, Link, LinkChange, MacvlanMode, NewLink, Qdisc, RouteSpec, TbfSettings } from "../types.js";
import { NLM_F_APPEND, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, nlAttr, nlString, nlU8, nlU32, nlU64, parseAttrs } from "./rtnetlink.js";

export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;

const AF_INET = 2;
const AF_INET6 = 10;

const IFF_UP = 0x1;
const IFF_PROMISC = 0x100;
const IFF_ALLMULTI = 0x200;

const IFLA_ADDRESS = 1;
const IFLA_IFNAME = 3;
const IFLA_MTU = 4;
const IFLA_LINK = 5;
const IFLA_MASTER = 10;
const IFLA_TXQLEN = 13;
const IFLA_OPERSTATE = 16;
const IFLA_LINKINFO = 18;
const IFLA_IFALIAS = 20;
const IFLA_GROUP = 27;
const IFLA_NET_NS_FD = 28;
const IFLA_EXT_MASK = 29;
const IFLA_LINK_NETNSID = 37;
const IFLA_INFO_KIND = 1;
const IFLA_INFO_DATA = 2;
const IFLA_INFO_SLAVE_KIND = 4;
const IFLA_INFO_SLAVE_DATA = 5;
const VETH_INFO_PEER = 1;
const IFLA_BR_VLAN_FILTERING = 7;
const IFLA_BR_GROUP_FWD_MASK = 9;
const IFLA_BRPORT_MODE = 4;
const IFLA_BRPORT_ISOLATED = 33;
const IFLA_VRF_TABLE = 1;
const IFLA_MACVLAN_MODE = 1;
const IFLA_MACVLAN_BC_QUEUE_LEN = 7;
const IFLA_IPVLAN_MODE = 1;
const IFLA_IPVLAN_FLAGS = 2;
const IFLA_VLAN_ID = 1;
const IFLA_TUN_OWNER = 1;
const IFLA_TUN_GROUP = 2;
const IFLA_TUN_TYPE = 3;
const IFLA_TUN_PI = 4;
const IFLA_TUN_VNET_HDR = 5;
const IFLA_TUN_PERSIST = 6;
const IFLA_TUN_MULTI_QUEUE = 7;
/** MACVLAN_MODE_* (if_link.h). */
const MACVLAN_MODES: Record<MacvlanMode, number> = { private: 1, vepa: 2, bridge: 4, passthru: 8, source: 16 };
/** IPVLAN_MODE_* (if_link.h). */
const IPVLAN_MODES: Record<IpvlanMode, number> = { l2: 0, l3: 1, l3s: 2 };
/** IFF_TUN and IFF_TAP (if_tun.h), as IFLA_TUN_TYPE reports them. */
const TUN_TYPES: Record<number, string> = { 1: "tun", 2: "tap" };
/** RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS, as `ip` asks. */
const EXT_MASK = 0x9;

const IFA_ADDRESS = 1;
const IFA_LOCAL = 2;
const IFA_BROADCAST = 4;
const IFA_FLAGS = 8;
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

const RTA_DST = 1;
const RTA_OIF = 4;
const RTA_GATEWAY = 5;
const RTA_PRIORITY = 6;
const RTA_PREFSRC = 7;
const RTA_METRICS = 8;
const RTA_TABLE = 15;
const RTAX_MTU = 2;
const RTAX_ADVMSS = 8;
const RTPROT_BOOT = 3;
const RTN_UNICAST = 1;
const RT_TABLE_MAIN = 254;

const SCOPES: Record<string, number> = { global: 0, universe: 0, site: 200, link: 253, host: 254, nowhere: 255 };
const SCOPE_NAMES: Record<number, string> = { 0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere" };
const OPERSTATES = ["UNKNOWN", "NOTPRESENT", "DOWN", "LOWERLAYERDOWN", "TESTING", "DORMANT", "UP"];

/** A request: message type, flags beyond NLM_F_REQUEST/NLM_F_ACK, and body. */
export interface NlRequest {
  type: number;
  flags: number;
  body: Uint8Array;
}

/** An address as `ip` parses it: family and network-order bytes; undefined when it is not one. */
export function ipBytes(text: string): { family: 4 | 6; bytes: Uint8Array } | undefined {
  const bytes = parseIPBytes(text);
  return bytes && { family: bytes.length === 4 ? 4 : 6, bytes };
}

/** `addr/prefix` (a bare address is a host prefix); undefined when it is not one. */
export function cidrBytes(text: string): { family: 4 | 6; bytes: Uint8Array; prefix: number } | undefined {
  const [addr = "", prefixText, extra] = text.split("/");
  if (extra !== undefined) return undefined;
  const parsed = ipBytes(addr);
  if (!parsed) return undefined;
  const max = parsed.family === 4 ? 32 : 128;
  if (prefixText === undefined) return { ...parsed, prefix: max };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) return undefined;
  return { ...parsed, prefix: Number(prefixText) };
}

/** A MAC `aa:bb:cc:dd:ee:ff` as bytes; undefined when it is not one. */
export function macBytes(text: string): Uint8Array | undefined {
  if (!/^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$/.test(text)) return undefined;
  return Uint8Array.from(text.split(":").map((h) => parseInt(h, 16)));
}

/** A route or address scope by name (`link`, `host`...) or number; undefined when `ip` would need its tables. */
export function scopeNumber(scope: string | number): number | undefined {
  if (typeof scope === "number") return Number.isInteger(scope) && scope >= 0 && scope <= 255 ? scope : undefined;
  if (/^\d+$/.test(scope)) return scopeNumber(Number(scope));
  return SCOPES[scope];
}

/** struct ifinfomsg: family, type, index, flags and the mask of flags to change. */
function ifinfomsg(index: number, flags = 0, change = 0): Uint8Array {
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setInt32(4, index, true);
  v.setUint32(8, flags, true);
  v.setUint32(12, change, true);
  return b;
}

/** struct ifaddrmsg. */
function ifaddrmsg(family: number, prefix: number, scope: number, index: number): Uint8Array {
  const b = new Uint8Array(8);
  b[0] = family;
  b[1] = prefix;
  b[3] = scope;
  new DataView(b.buffer).setUint32(4, index, true);
  return b;
}

const familyNumber = (f: 4 | 6): number => (f === 4 ? AF_INET : AF_INET6);

/** RTM_GETLINK for one link, by name (`ip` resolves names this way) or by index. */
export function getLinkRequest(link: string | number): NlRequest {
  const body =
    typeof link === "string"
      ? concatBytes(ifinfomsg(0), nlU32(IFLA_EXT_MASK, EXT_MASK), nlString(IFLA_IFNAME, link))
      : concatBytes(ifinfomsg(link), nlU32(IFLA_EXT_MASK, EXT_MASK));
  return { type: RTM_GETLINK, flags: 0, body };
}

/** RTM_GETLINK dump: every link, or the ports of one master. */
export const dumpLinksRequest = (masterIndex?: number): NlRequest => ({
  type: RTM_GETLINK,
  flags: NLM_F_DUMP,
  // With a master, the kernel sends only that device's ports (a filter it applies since Linux 4.x).
  body: concatBytes(ifinfomsg(0), nlU32(IFLA_EXT_MASK, EXT_MASK), ...(masterIndex !== undefined ? [nlU32(IFLA_MASTER, masterIndex)] : [])),
});

/** RTM_GETADDR dump: every address of both families. */
export const dumpAddressesRequest = (): NlRequest => ({ type: RTM_GETADDR, flags: NLM_F_DUMP, body: ifaddrmsg(0, 0, 0, 0) });

/** The interface flags (and which of them to change) for up/promisc/allmulti settings. */
function flagChange(c: { up?: boolean; promisc?: boolean; allmulti?: boolean }): [number, number] {
  let flags = 0;
  let change = 0;
  for (const [value, bit] of [
    [c.up, IFF_UP],
    [c.promisc, IFF_PROMISC],
    [c.allmulti, IFF_ALLMULTI],
  ] as const) {
    if (value === undefined) continue;
    change |= bit;
    if (value) flags |= bit;
  }
  return [flags, change];
}

/**
 * RTM_NEWLINK changing link `index` (`ip link set`); `masterIndex` is the index of `change.master` (0 takes
 * the link off its master). Every setting goes in one message, as `ip` sends it.
 */
export function setLinkRequest(index: number, change: LinkChange, masterIndex?: number): NlRequest {
  const [flags, mask] = flagChange(change);
  const attrs: Uint8Array[] = [];
  if (change.master !== undefined) attrs.push(nlU32(IFLA_MASTER, change.master === null ? 0 : (masterIndex ?? 0)));
  if (change.mtu !== undefined) attrs.push(nlU32(IFLA_MTU, change.mtu));
  if (change.mac !== undefined) attrs.push(nlAttr(IFLA_ADDRESS, macBytes(change.mac) ?? new Uint8Array()));
  if (change.txqlen !== undefined) attrs.push(nlU32(IFLA_TXQLEN, change.txqlen));
  // Without a terminating NUL, as `ip` sends it: the kernel stores the attribute's length as the alias length.
  if (change.alias !== undefined) attrs.push(nlAttr(IFLA_IFALIAS, new TextEncoder().encode(change.alias)));
  return { type: RTM_NEWLINK, flags: 0, body: concatBytes(ifinfomsg(index, flags, mask), ...attrs) };
}

/** RTM_NEWLINK setting bridge-port flags of link `index` (`ip link set dev X type bridge_slave ...`). */
export function bridgePortRequest(index: number, flags: { hairpin?: boolean; isolated?: boolean }): NlRequest {
  const data: Uint8Array[] = [];
  if (flags.hairpin !== undefined) data.push(nlU8(IFLA_BRPORT_MODE, flags.hairpin ? 1 : 0));
  if (flags.isolated !== undefined) data.push(nlU8(IFLA_BRPORT_ISOLATED, flags.isolated ? 1 : 0));
  const linkinfo = nlAttr(IFLA_LINKINFO, nlAttr(IFLA_INFO_SLAVE_DATA, concatBytes(...data)));
  return { type: RTM_NEWLINK, flags: 0, body: concatBytes(ifinfomsg(index), linkinfo) };
}

/** RTM_NEWLINK changing settings of bridge `index` (`ip link set dev X type bridge ...`), as `ip` sends it. */
export function bridgeSettingsRequest(index: number, settings: BridgeSettings): NlRequest {
  const data: Uint8Array[] = [];
  if (settings.groupFwdMask !== undefined) data.push(nlU16(IFLA_BR_GROUP_FWD_MASK, settings.groupFwdMask));
  const kind = nlAttr(IFLA_INFO_KIND, new TextEncoder().encode("bridge")); // no NUL, as `ip` sends it
  const linkinfo = nlAttr(IFLA_LINKINFO, concatBytes(kind, nlAttr(IFLA_INFO_DATA, concatBytes(...data))));
  return { type: RTM_NEWLINK, flags: 0, body: concatBytes(ifinfomsg(index), linkinfo) };
}

/**
 * The attributes a new link (or a veth's peer) shares: `ip link add [link P] name X mtu N address M
 * txqueuelen Q netns NS`, in the order `ip` sends them: what it reads before `type` in the order of
 * linkAddWords, then the parent's index and the name.
 */
function newLinkAttrs(l: { name: string; mtu?: number; mac?: string; txqlen?: number }, nsFd?: number, parentIndex?: number): Uint8Array[] {
  const attrs: Uint8Array[] = [];
  if (l.mtu) attrs.push(nlU32(IFLA_MTU, l.mtu));
  if (l.mac) attrs.push(nlAttr(IFLA_ADDRESS, macBytes(l.mac) ?? new Uint8Array()));
  if (l.txqlen !== undefined) attrs.push(nlU32(IFLA_TXQLEN, l.txqlen));
  if (nsFd !== undefined) attrs.push(nlU32(IFLA_NET_NS_FD, nsFd));
  if (parentIndex !== undefined) attrs.push(nlU32(IFLA_LINK, parentIndex));
  attrs.push(nlString(IFLA_IFNAME, l.name));
  return attrs;
}

/** A u16 attribute (host byte order). */
const nlU16 = (type: number, v: number): Uint8Array => {
  const b = new Uint8Array(2);
  new DataView(b.buffer).setUint16(0, v, true);
  return nlAttr(type, b);
};

/** IFLA_INFO_DATA of a new link, as `ip` encodes `type <kind> ...` (see kindWords in ip-ops.ts). */
function linkInfoData(l: NewLink, peerNsFd?: number): Uint8Array[] {
  const data: Uint8Array[] = [];
  switch (l.kind) {
    case "macvlan":
      // `ip` adds the queue length as it reads it and the mode once it has read every word.
      if (l.bcqueuelen !== undefined) data.push(nlU32(IFLA_MACVLAN_BC_QUEUE_LEN, l.bcqueuelen));
      if (l.macvlanMode) data.push(nlU32(IFLA_MACVLAN_MODE, MACVLAN_MODES[l.macvlanMode]));
      break;
    case "ipvlan":
      // With a mode, `ip` always sends the flags too (none: bridge, the kernel's default).
      if (l.ipvlanMode) data.push(nlU16(IFLA_IPVLAN_MODE, IPVLAN_MODES[l.ipvlanMode]), nlU16(IFLA_IPVLAN_FLAGS, 0));
      break;
    case "vlan":
      if (l.vlanId !== undefined) data.push(nlU16(IFLA_VLAN_ID, l.vlanId));
      break;
    default:
      if (l.vlanFiltering) data.push(nlU8(IFLA_BR_VLAN_FILTERING, 1));
      if (l.peer) data.push(nlAttr(VETH_INFO_PEER, concatBytes(ifinfomsg(0), ...newLinkAttrs(l.peer, peerNsFd))));
  }
  return data;
}

/** The open files and indexes a new link's request refers to. */
export interface NewLinkRefs {
  /** A veth's peer is created in the namespace this open namespace file refers to. */
  peerNsFd?: number;
  /** The link is created in the namespace this open namespace file refers to (`netns`). */
  netnsFd?: number;
  /** The index of `parent`, in the namespace the request is sent in. */
  parentIndex?: number;
}

/**
 * RTM_NEWLINK creating a link (`ip link add`), failing if the name is taken, byte for byte as `ip` sends it for
 * the words of linkAddWords.
 */
export function newLinkRequest(l: NewLink, refs: NewLinkRefs = {}): NlRequest {
  const [flags, mask] = flagChange(l);
  const data = linkInfoData(l, refs.peerNsFd);
  const info = [nlAttr(IFLA_INFO_KIND, new TextEncoder().encode(l.kind))]; // no NUL, as `ip` sends it
  if (data.length) info.push(nlAttr(IFLA_INFO_DATA, concatBytes(...data)));
  const attrs = newLinkAttrs(l, refs.netnsFd, refs.parentIndex);
  const body = concatBytes(ifinfomsg(0, flags, mask), ...attrs, nlAttr(IFLA_LINKINFO, concatBytes(...info)));
  return { type: RTM_NEWLINK, flags: NLM_F_CREATE | NLM_F_EXCL, body };
}

/** RTM_NEWLINK renaming link `index` (`ip link set dev X name NEW`). */
export const renameLinkRequest = (index: number, newName: string): NlRequest => ({
  type: RTM_NEWLINK,
  flags: 0,
  body: concatBytes(ifinfomsg(index), nlString(IFLA_IFNAME, newName)),
});

/** RTM_NEWLINK moving link `index` to the namespace of an open namespace file (`ip link set dev X netns NS`). */
export const moveLinkRequest = (index: number, netnsFd: number): NlRequest => ({
  type: RTM_NEWLINK,
  flags: 0,
  body: concatBytes(ifinfomsg(index), nlU32(IFLA_NET_NS_FD, netnsFd)),
});

/** RTM_DELLINK for link `index`. */
export const deleteLinkRequest = (index: number): NlRequest => ({ type: RTM_DELLINK, flags: 0, body: ifinfomsg(index) });

const RTM_GETNSID = 90;
export const RTM_NEWNSID = 88;
const NETNSA_NSID = 1;
const NETNSA_FD = 3;

/** RTM_GETNSID: the id this namespace gives the namespace open as `fd` (`ip netns list-id` asks it this way). */
export const getNsidRequest = (fd: number): NlRequest => ({
  type: RTM_GETNSID,
  flags: 0,
  body: concatBytes(new Uint8Array(4), nlU32(NETNSA_FD, fd)),
});

/** The id of an RTM_NEWNSID answer (-1: none assigned). */
export const decodeNsid = (payload: Uint8Array): number | undefined => s32(parseAttrs(payload.subarray(4)).get(NETNSA_NSID));

/** RTM_NEWLINK putting link `index` in device group `group` (`ip link set dev X group G`). */
export const setGroupRequest = (index: number, group: number): NlRequest => ({
  type: RTM_NEWLINK,
  flags: 0,
  body: concatBytes(ifinfomsg(index), nlU32(IFLA_GROUP, group)),
});

/** RTM_DELLINK of every link in device group `group` (`ip link delete group G`): one unregistration for them all. */
export const deleteGroupRequest = (group: number): NlRequest => ({
  type: RTM_DELLINK,
  flags: 0,
  body: concatBytes(ifinfomsg(0), nlU32(IFLA_GROUP, group)),
});

/**
 * RTM_NEWADDR / RTM_DELADDR for `cidr` on link `index`, as `ip addr add|replace|del CIDR [brd +] dev X` sends
 * it: local and address both the address; for IPv4 additions the broadcast address when the prefix leaves
 * room for one (`brd +`), and host scope for 127.0.0.0/8. Undefined when `cidr` is not an address.
 */
export function addressRequest(action: "add" | "replace" | "del", index: number, cidr: string): NlRequest | undefined {
  const c = cidrBytes(cidr);
  if (!c) return undefined;
  const scope = action !== "del" && c.family === 4 && c.bytes[0] === 127 ? SCOPES["host"]! : 0;
  const attrs = [nlAttr(IFA_LOCAL, c.bytes), nlAttr(IFA_ADDRESS, c.bytes)];
  if (action !== "del" && c.family === 4 && c.prefix <= 30) {
    const brd = new Uint8Array(c.bytes);
    for (let bit = c.prefix; bit < 32; bit++) brd[bit >> 3]! |= 0x80 >> (bit & 7);
    attrs.push(nlAttr(IFA_BROADCAST, brd));
  }
  const body = concatBytes(ifaddrmsg(familyNumber(c.family), c.prefix, scope, index), ...attrs);
  if (action === "del") return { type: RTM_DELADDR, flags: 0, body };
  return { type: RTM_NEWADDR, flags: NLM_F_CREATE | (action === "add" ? NLM_F_EXCL : NLM_F_REPLACE), body };
}

/**
 * RTM_NEWROUTE / RTM_DELROUTE as `ip route add|append|replace|del` sends it: a unicast "boot" route in the
 * main table unless told otherwise; an IPv4 route without a gateway is link-scoped unless a scope is given;
 * a delete matches any protocol, type and scope. `oif` is the index of `r.dev`. Undefined when an address or
 * the scope is not something this encoder reads as `ip` would (the caller uses `ip` then).
 */
export function routeRequest(action: "add" | "append" | "replace" | "del", r: RouteSpec, oif?: number): NlRequest | undefined {
  const dst = cidrBytes(r.dst);
  const gw = r.gw === undefined ? undefined : ipBytes(r.gw);
  const src = r.src === undefined ? undefined : ipBytes(r.src);
  if (!dst || (r.gw !== undefined && gw?.family !== dst.family) || (r.src !== undefined && src?.family !== dst.family)) return undefined;
  const explicitScope = r.scope === undefined ? undefined : scopeNumber(r.scope);
  if (r.scope !== undefined && explicitScope === undefined) return undefined;
  const del = action === "del";
  let scope = explicitScope;
  if (scope === undefined) scope = del ? 255 : dst.family === 4 && !gw ? SCOPES["link"]! : 0;
  const table = r.table ?? RT_TABLE_MAIN;
  const msg = new Uint8Array(12);
  msg.set([familyNumber(dst.family), dst.prefix, 0, 0, table < 256 ? table : 0, del ? 0 : RTPROT_BOOT, scope, del ? 0 : RTN_UNICAST]);
  const attrs = [nlAttr(RTA_DST, dst.bytes)];
  if (gw) attrs.push(nlAttr(RTA_GATEWAY, gw.bytes));
  if (src) attrs.push(nlAttr(RTA_PREFSRC, src.bytes));
  if (table >= 256) attrs.push(nlU32(RTA_TABLE, table));
  if (r.metric !== undefined) attrs.push(nlU32(RTA_PRIORITY, r.metric));
  if (oif !== undefined) attrs.push(nlU32(RTA_OIF, oif));
  const metrics: Uint8Array[] = [];
  if (r.mtu) metrics.push(nlU32(RTAX_MTU, r.mtu));
  if (r.advmss) metrics.push(nlU32(RTAX_ADVMSS, r.advmss));
  if (metrics.length) attrs.push(nlAttr(RTA_METRICS, concatBytes(...metrics)));
  const body = concatBytes(msg, ...attrs);
  if (del) return { type: RTM_DELROUTE, flags: 0, body };
  const flags = NLM_F_CREATE | (action === "add" ? NLM_F_EXCL : action === "append" ? NLM_F_APPEND : NLM_F_REPLACE);
  return { type: RTM_NEWROUTE, flags, body };
}

export const RTM_GETROUTE = 26;

/** RTM_GETROUTE for one address (`ip route get ADDRESS`): the route the kernel would take to it. */
export function getRouteRequest(address: string): NlRequest | undefined {
  const ip = ipBytes(address);
  if (!ip) return undefined;
  const msg = new Uint8Array(12);
  msg.set([familyNumber(ip.family), ip.bytes.length * 8]);
  return { type: RTM_GETROUTE, flags: 0, body: concatBytes(msg, nlAttr(RTA_DST, ip.bytes)) };
}

/** The output interface index of an RTM_NEWROUTE answer (undefined: none, e.g. a multipath or blackhole route). */
export const decodeRouteOif = (payload: Uint8Array): number | undefined => u32(parseAttrs(payload.subarray(12)).get(RTA_OIF));

const u32 = (b: Uint8Array | undefined): number | undefined =>
  b && b.length >= 4 ? new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0, true) : undefined;
const s32 = (b: Uint8Array | undefined): number | undefined =>
  b && b.length >= 4 ? new DataView(b.buffer, b.byteOffset, b.byteLength).getInt32(0, true) : undefined;
const str = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b).replace(/\0[\s\S]*$/, "") : undefined);

/** An address as `ip` prints it (inet_ntop: IPv4-mapped IPv6 with a dotted tail). */
export function ipText(b: Uint8Array): string {
  if (b.length === 4) return b.join(".");
  if (isIPv4Mapped(b)) return `::ffff:${b.subarray(12).join(".")}`;
  return formatIPv6(b);
}

/** A link-layer address as `ip` prints it: colon hex, or an IP address for IP tunnels. */
function linkAddressText(ifiType: number, b: Uint8Array): string {
  const ipv4Tunnel = ifiType === 768 || ifiType === 776 || ifiType === 778; // ARPHRD_TUNNEL, _SIT, _IPGRE
  const ipv6Tunnel = ifiType === 769 || ifiType === 823; // ARPHRD_TUNNEL6, _IP6GRE
  if ((ipv4Tunnel && b.length === 4) || (ipv6Tunnel && b.length === 16)) return ipText(b);
  return hexOf(b, ":");
}

/** A link read from RTM_NEWLINK, with its master and its same-namespace peer as indexes (the caller names them). */
export interface DecodedLink {
  link: Link;
  masterIndex?: number;
  /** The link it is tied to (IFLA_LINK), when that is in the same namespace (`ip` shows its name). */
  peerLinkIndex?: number;
  /** The id, in this namespace, of the namespace `link.peerIndex` is in (IFLA_LINK_NETNSID). */
  peerNetnsId?: number;
}

const u8 = (b: Uint8Array | undefined): number | undefined => b?.[0];
const u16 = (b: Uint8Array | undefined): number | undefined =>
  b && b.length >= 2 ? new DataView(b.buffer, b.byteOffset, b.byteLength).getUint16(0, true) : undefined;

/** The kind-specific data `ip -json -d` shows, for the kinds whose data is read (see Link.info). */
function kindInfo(kind: string, data: Map<number, Uint8Array>): Record<string, unknown> | undefined {
  const named = <T>(table: Record<string, number>, value: number | undefined): T | string | undefined =>
    value === undefined ? undefined : ((Object.entries(table).find(([, v]) => v === value)?.[0] as T | undefined) ?? String(value));
  switch (kind) {
    case "vrf": {
      const table = u32(data.get(IFLA_VRF_TABLE));
      return table === undefined ? undefined : { table };
    }
    case "macvlan": {
      const mode = named<MacvlanMode>(MACVLAN_MODES, u32(data.get(IFLA_MACVLAN_MODE)));
      const bcqueuelen = u32(data.get(IFLA_MACVLAN_BC_QUEUE_LEN));
      return { ...(mode !== undefined ? { mode } : {}), ...(bcqueuelen !== undefined ? { bcqueuelen } : {}) };
    }
    case "ipvlan": {
      const mode = named<IpvlanMode>(IPVLAN_MODES, u16(data.get(IFLA_IPVLAN_MODE)));
      return mode === undefined ? {} : { mode };
    }
    case "vlan": {
      const id = u16(data.get(IFLA_VLAN_ID));
      return id === undefined ? {} : { id };
    }
    case "tun": {
      const flag = (attr: number) => u8(data.get(attr)) === 1;
      const type = u8(data.get(IFLA_TUN_TYPE));
      const info: Record<string, unknown> = {
        type: type === undefined ? "unknown" : (TUN_TYPES[type] ?? String(type)),
        pi: flag(IFLA_TUN_PI),
        vnet_hdr: flag(IFLA_TUN_VNET_HDR),
        multi_queue: flag(IFLA_TUN_MULTI_QUEUE),
        persist: flag(IFLA_TUN_PERSIST),
      };
      const user = u32(data.get(IFLA_TUN_OWNER));
      const group = u32(data.get(IFLA_TUN_GROUP));
      if (user !== undefined) info["user"] = user;
      if (group !== undefined) info["group"] = group;
      return info;
    }
    default:
      return undefined;
  }
}

/**
 * Reads an RTM_NEWLINK message into a Link, as linkFromJson reads `ip -json -d link show`: the peer index when
 * the peer is in another namespace (a same-namespace peer is returned as an index for the caller to name, as
 * `ip` names it), kind-specific data for the kinds Link.info lists.
 */
export function decodeLink(payload: Uint8Array): DecodedLink {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const ifiType = view.getUint16(2, true);
  const index = view.getInt32(4, true);
  const flags = view.getUint32(8, true);
  const a = parseAttrs(payload.subarray(16));
  const address = a.get(IFLA_ADDRESS);
  const operstate = a.get(IFLA_OPERSTATE)?.[0];
  const link: Link = {
    index,
    name: str(a.get(IFLA_IFNAME)) ?? "",
    mtu: u32(a.get(IFLA_MTU)) ?? 0,
    mac: address ? linkAddressText(ifiType, address) : "",
    up: (flags & IFF_UP) !== 0,
    operstate: operstate === undefined ? "UNKNOWN" : (OPERSTATES[operstate] ?? String(operstate)),
    promisc: (flags & IFF_PROMISC) !== 0,
    allmulti: (flags & IFF_ALLMULTI) !== 0,
    txqlen: u32(a.get(IFLA_TXQLEN)) ?? 0,
  };
  const info = parseAttrs(a.get(IFLA_LINKINFO) ?? new Uint8Array());
  const kind = str(info.get(IFLA_INFO_KIND));
  if (kind) link.kind = kind;
  const data = kind ? kindInfo(kind, parseAttrs(info.get(IFLA_INFO_DATA) ?? new Uint8Array())) : undefined;
  if (data) link.info = data;
  const peer = u32(a.get(IFLA_LINK));
  let peerLinkIndex: number | undefined;
  let peerNetnsId: number | undefined;
  if (peer && a.has(IFLA_LINK_NETNSID)) {
    link.peerIndex = peer;
    peerNetnsId = s32(a.get(IFLA_LINK_NETNSID));
  } else if (peer && peer !== index) peerLinkIndex = peer;
  const alias = str(a.get(IFLA_IFALIAS));
  if (alias) link.alias = alias;
  const slaveData = info.get(IFLA_INFO_SLAVE_DATA);
  if (str(info.get(IFLA_INFO_SLAVE_KIND)) === "bridge" && slaveData) {
    const port = parseAttrs(slaveData);
    link.bridgePort = { hairpin: port.get(IFLA_BRPORT_MODE)?.[0] === 1, isolated: port.get(IFLA_BRPORT_ISOLATED)?.[0] === 1 };
  }
  const master = u32(a.get(IFLA_MASTER));
  return {
    link,
    ...(master ? { masterIndex: master } : {}),
    ...(peerLinkIndex !== undefined ? { peerLinkIndex } : {}),
    ...(peerNetnsId !== undefined ? { peerNetnsId } : {}),
  };
}

/** Reads an RTM_NEWADDR message: the link it is on and the address as `ip -json addr show` reports it. */
export function decodeAddress(payload: Uint8Array): { index: number; address: Address } {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const family = payload[0] === AF_INET6 ? 6 : 4;
  const a = parseAttrs(payload.subarray(8));
  const local = a.get(IFA_LOCAL) ?? a.get(IFA_ADDRESS) ?? new Uint8Array(family === 4 ? 4 : 16);
  const flags = u32(a.get(IFA_FLAGS)) ?? payload[2]!;
  const scope = payload[3]!;
  return {
    index: view.getUint32(4, true),
    address: {
      cidr: `${ipText(local)}/${payload[1]}`,
      family,
      scope: SCOPE_NAMES[scope] ?? String(scope),
      tentative: (flags & IFA_F_TENTATIVE) !== 0,
      dadFailed: (flags & IFA_F_DADFAILED) !== 0,
    },
  };
}

// ---- traffic control: qdiscs and filters (pkt_sched.h, pkt_cls.h, tc_act/tc_mirred.h) --------------------

export const RTM_NEWQDISC = 36;
const RTM_DELQDISC = 37;
const RTM_GETQDISC = 38;
export const RTM_NEWTFILTER = 44;
const RTM_GETTFILTER = 46;
const TC_H_ROOT = 0xffffffff;
/** The parent of an ingress qdisc (TC_H_INGRESS, also TC_H_CLSACT). */
const TC_H_INGRESS = 0xfffffff1;
/** The ingress hook's filters, as `tc filter show dev X ingress` asks for them: TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS). */
const TC_H_INGRESS_FILTERS = 0xfffffff2;
const TBF_ROOT_HANDLE = 0x10000; // 1:
const INGRESS_HANDLE = 0xffff0000; // ffff:
const TCA_KIND = 1;
const TCA_OPTIONS = 2;
const TCA_TBF_PARMS = 1;
const TCA_TBF_RATE64 = 4;
const NLA_F_NESTED = 0x8000;
/** ETH_P_ALL in network byte order, as a filter's protocol (`protocol all`). */
const ETH_P_ALL_BE = 0x0300;
const TCA_U32_CLASSID = 1;
const TCA_U32_SEL = 5;
const TCA_U32_ACT = 7;
const TCA_MATCHALL_ACT = 2;
const TC_U32_TERMINAL = 1;
const TCA_ACT_KIND = 1;
const TCA_ACT_OPTIONS = 2;
const TCA_MIRRED_PARMS = 2;
const TC_ACT_STOLEN = 4;
const TCA_EGRESS_REDIR = 1;
/** The attribute holding a filter's actions, by filter kind (the kinds whose actions are read). */
const FILTER_ACTIONS: Record<string, number> = { u32: TCA_U32_ACT, matchall: TCA_MATCHALL_ACT };

/** struct tcmsg: interface, handle, parent, and (for a filter) priority and protocol. */
function tcmsg(ifindex: number, handle: number, parent: number, info = 0): Uint8Array {
  const b = new Uint8Array(20);
  const v = new DataView(b.buffer);
  v.setInt32(4, ifindex, true);
  v.setUint32(8, handle, true);
  v.setUint32(12, parent, true);
  v.setUint32(16, info, true);
  return b;
}

/**
 * RTM_NEWQDISC for a root tbf (handle 1:) on interface `ifindex`, laid out exactly as Go's netlink library
 * sends it: tc_tbf_qopt with the rate's low 32 bits, limit and buffer (no peak rate, no link layer), plus a
 * 64-bit rate attribute when the rate needs one.
 */
export function rootTbfRequest(ifindex: number, tbf: TbfSettings): NlRequest {
  const qopt = new Uint8Array(36); // tc_ratespec rate (12), tc_ratespec peakrate (12), limit, buffer, mtu
  const q = new DataView(qopt.buffer);
  q.setUint32(8, tbf.rate >>> 0, true);
  q.setUint32(24, tbf.limit, true);
  q.setUint32(28, tbf.buffer, true);
  const options = [nlAttr(TCA_TBF_PARMS, qopt)];
  if (tbf.rate >= 2 ** 32) options.push(nlU64(TCA_TBF_RATE64, BigInt(tbf.rate)));
  const body = concatBytes(tcmsg(ifindex, TBF_ROOT_HANDLE, TC_H_ROOT), nlString(TCA_KIND, "tbf"), nlAttr(TCA_OPTIONS, concatBytes(...options)));
  return { type: RTM_NEWQDISC, flags: NLM_F_CREATE | NLM_F_EXCL, body };
}

/** The ingress qdisc (ffff:) of interface `ifindex`, as `tc qdisc add|del dev X handle ffff: ingress` names it. */
const ingressQdisc = (ifindex: number): Uint8Array => concatBytes(tcmsg(ifindex, INGRESS_HANDLE, TC_H_INGRESS), nlString(TCA_KIND, "ingress"));

/** RTM_NEWQDISC adding an ingress qdisc to interface `ifindex` (failing if it has one), as `tc` sends it. */
export const ingressQdiscRequest = (ifindex: number): NlRequest => ({
  type: RTM_NEWQDISC,
  flags: NLM_F_CREATE | NLM_F_EXCL,
  body: ingressQdisc(ifindex),
});

/**
 * RTM_DELQDISC as `tc qdisc del dev X root|ingress` sends it. The kernel answers ENOENT when the root qdisc is
 * the device's default (handle 0) and EINVAL ("Invalid handle") or ENOENT when there is no ingress qdisc.
 */
export const deleteQdiscRequest = (ifindex: number, which: "root" | "ingress"): NlRequest => ({
  type: RTM_DELQDISC,
  flags: 0,
  body: which === "root" ? tcmsg(ifindex, 0, TC_H_ROOT) : ingressQdisc(ifindex),
});

/**
 * RTM_NEWTFILTER redirecting everything that arrives on interface `ifindex` to the egress of `targetIndex`, byte
 * for byte as `tc filter add dev X parent ffff: protocol all prio 1 u32 match u32 0 0 flowid 1:1 action mirred
 * egress redirect dev T` sends it (the Go plugin's filter): a u32 selector with one key matching any value
 * (mask 0) and a mirred action stealing the packet for the target's egress.
 */
export function ingressRedirectRequest(ifindex: number, targetIndex: number): NlRequest {
  const sel = new Uint8Array(32); // struct tc_u32_sel (16 bytes) and one struct tc_u32_key (mask, val, off, offmask: all 0)
  sel[0] = TC_U32_TERMINAL;
  sel[2] = 1; // nkeys
  const parms = new Uint8Array(28); // struct tc_mirred: index, capab, action, refcnt, bindcnt, eaction, ifindex
  const p = new DataView(parms.buffer);
  p.setInt32(8, TC_ACT_STOLEN, true);
  p.setInt32(20, TCA_EGRESS_REDIR, true);
  p.setUint32(24, targetIndex, true);
  const mirred = concatBytes(nlString(TCA_ACT_KIND, "mirred"), nlAttr(TCA_ACT_OPTIONS | NLA_F_NESTED, nlAttr(TCA_MIRRED_PARMS, parms)));
  const options = concatBytes(
    nlU32(TCA_U32_CLASSID, 0x10001), // flowid 1:1
    nlAttr(TCA_U32_ACT, nlAttr(1, mirred)), // the first (and only) action
    nlAttr(TCA_U32_SEL, sel),
  );
  const prio = 1;
  const body = concatBytes(tcmsg(ifindex, 0, INGRESS_HANDLE, (prio << 16) | ETH_P_ALL_BE), nlString(TCA_KIND, "u32"), nlAttr(TCA_OPTIONS, options));
  return { type: RTM_NEWTFILTER, flags: NLM_F_CREATE | NLM_F_EXCL, body };
}

/** RTM_GETQDISC dump as `tc qdisc show dev X` sends it (the kernel sends every device's: the caller keeps `ifindex`'s). */
export const dumpQdiscsRequest = (ifindex: number): NlRequest => ({ type: RTM_GETQDISC, flags: NLM_F_DUMP, body: tcmsg(ifindex, 0, 0) });

/** RTM_GETTFILTER dump of the ingress filters of interface `ifindex` (`tc filter show dev X ingress`). */
export const dumpIngressFiltersRequest = (ifindex: number): NlRequest => ({
  type: RTM_GETTFILTER,
  flags: NLM_F_DUMP,
  body: tcmsg(ifindex, 0, TC_H_INGRESS_FILTERS),
});

/** A parent that is neither the root nor none, as `tc` prints it: `ffff:fff1`, `1:`, `:1`. */
function tcParentText(h: number): string {
  const [major, minor] = [h >>> 16, h & 0xffff];
  if (!major) return `:${minor.toString(16)}`;
  return minor ? `${major.toString(16)}:${minor.toString(16)}` : `${major.toString(16)}:`;
}

/**
 * Reads an RTM_NEWQDISC message: the interface it is on and the qdisc as `tc -raw -json qdisc show` reports it
 * (a root qdisc has no parent; a tbf's rate from its 64-bit attribute when the kernel sent one).
 */
export function decodeQdisc(payload: Uint8Array): { index: number; qdisc: Qdisc } {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const handle = view.getUint32(8, true);
  const parent = view.getUint32(12, true);
  const a = parseAttrs(payload.subarray(20));
  // tc prints a handle's major alone ("0:" for the default qdisc), whatever its minor.
  const qdisc: Qdisc = { kind: str(a.get(TCA_KIND)) ?? "", handle: `${(handle >>> 16).toString(16)}:`, root: parent === TC_H_ROOT };
  if (!qdisc.root && parent !== 0) qdisc.parent = tcParentText(parent);
  const options = parseAttrs(a.get(TCA_OPTIONS) ?? new Uint8Array());
  const parms = options.get(TCA_TBF_PARMS);
  if (qdisc.kind === "tbf" && parms && parms.length >= 32) {
    const p = new DataView(parms.buffer, parms.byteOffset, parms.byteLength);
    const rate64 = options.get(TCA_TBF_RATE64);
    const rate =
      rate64 && rate64.length >= 8 ? Number(new DataView(rate64.buffer, rate64.byteOffset, 8).getBigUint64(0, true)) : p.getUint32(8, true);
    qdisc.tbf = { rate, limit: p.getUint32(24, true), buffer: p.getUint32(28, true) };
  }
  return { index: view.getInt32(4, true), qdisc };
}

/**
 * Reads an RTM_NEWTFILTER message: the interface it is on and the interfaces its mirred actions redirect
 * traffic to the egress of, in the actions' order (filters of kinds FILTER_ACTIONS lacks have none).
 */
export function decodeFilterRedirects(payload: Uint8Array): { index: number; targets: number[] } {
  const index = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getInt32(4, true);
  const a = parseAttrs(payload.subarray(20));
  const actionsAttr = FILTER_ACTIONS[str(a.get(TCA_KIND)) ?? ""];
  const actions = actionsAttr === undefined ? undefined : parseAttrs(a.get(TCA_OPTIONS) ?? new Uint8Array()).get(actionsAttr);
  const targets: number[] = [];
  // The actions are numbered by their order (1, 2...): the kernel sends them in that order.
  for (const action of parseAttrs(actions ?? new Uint8Array()).values()) {
    const act = parseAttrs(action);
    if (str(act.get(TCA_ACT_KIND)) !== "mirred") continue;
    const parms = parseAttrs(act.get(TCA_ACT_OPTIONS) ?? new Uint8Array()).get(TCA_MIRRED_PARMS);
    if (!parms || parms.length < 28) continue;
    const p = new DataView(parms.buffer, parms.byteOffset, parms.byteLength);
    if (p.getInt32(20, true) === TCA_EGRESS_REDIR) targets.push(p.getUint32(24, true));
  }
  return { index, targets };
}
