/**
 * The steps of an `ip` batch as data: each link, address and route change or read, and the `ip` words that
 * carry it out; and the interface of a backend that carries steps out. The iproute2 backend runs the words,
 * the rtnetlink backend the data (naming a failed step by its words too, so errors read the same either way).
 * @module
 */
import type { NetNS } from "../netns.js";
import type { Address, BridgeSettings, Link, LinkChange, NewLink, RouteSpec, ShownLink, VethSpec } from "../types.js";

export type IpOp =
  | { kind: "link-add"; link: NewLink }
  | { kind: "link-set"; name: string; change: LinkChange }
  | { kind: "bridge-port"; name: string; flags: { hairpin?: boolean; isolated?: boolean } }
  /** `ip link set dev NAME type bridge ...`: settings of a bridge. */
  | { kind: "bridge-set"; name: string; settings: BridgeSettings }
  | { kind: "link-del"; name: string }
  /** `ip link set dev NAME name NEW`. */
  | { kind: "link-rename"; name: string; newName: string }
  /** `ip link set dev NAME netns PATH`. */
  | { kind: "link-move"; name: string; to: NetNS }
  | { kind: "addr-add" | "addr-replace" | "addr-del"; dev: string; cidr: string }
  | { kind: "route-add" | "route-append" | "route-replace" | "route-del"; route: RouteSpec }
  | { kind: "show-link" | "show-addresses"; name: string }
  /** Anything else: `ip` words only, which sends its whole batch down the iproute2 path. */
  | { kind: "words"; words: string[] };

/**
 * One way of carrying out link, address and route steps. Each method resolves to undefined when this backend
 * cannot do the work here (the next backend then does); failures are NetOpErrors in `ip`'s words.
 */
export interface LinkBackend {
  readonly name: "rtnetlink" | "iproute2";
  /** Runs `ops` in order in `ns`; resolves with what the show steps read, in order. */
  run(ns: NetNS, ops: readonly IpOp[], operation: string): Promise<ShownLink[] | undefined>;
  /** Every link of `ns`, or only the ports of `master` (a missing master is a NetOpError whose `isNotFound` is true). */
  listLinks(ns: NetNS, operation: string, master?: string): Promise<Link[] | undefined>;
  /** A link by name; a missing one is a NetOpError whose `isNotFound` is true. */
  getLink(ns: NetNS, name: string, operation: string): Promise<Link | undefined>;
  /** The addresses of link `name` in `ns`. */
  listAddresses(ns: NetNS, name: string, operation: string): Promise<Address[] | undefined>;
  /** Routes of one family (all tables with "all", the main table when `table` is undefined). */
  listRoutes(ns: NetNS, family: 4 | 6, table: number | "all" | undefined, operation: string): Promise<RouteSpec[] | undefined>;
  /** The interface the kernel would send a packet to `address` out of (`ip route get`); `dev` absent: no route. */
  routeDevice(ns: NetNS, address: string, operation: string): Promise<{ dev?: string } | undefined>;
}

/**
 * How `ip ... netns <X>` names a namespace: always a path (iproute2 takes a word without `/` as a name under
 * /run/netns), /proc/<our pid>/ns/net for this process's own.
 */
export const nsTarget = (ns: NetNS): string => ns.path ?? `/proc/${process.pid}/ns/net`;

/** `brd +` for IPv4 (the broadcast address, as the Go plugins' netlink library sets it); nothing for IPv6. */
export const broadcastWords = (cidr: string): string[] => (cidr.includes(":") ? [] : ["brd", "+"]);

/** `ip route` words for a route. */
export function routeWords(r: RouteSpec): string[] {
  const w = [r.dst];
  if (r.gw) w.push("via", r.gw);
  if (r.dev) w.push("dev", r.dev);
  if (r.src) w.push("src", r.src);
  if (r.scope !== undefined) w.push("scope", String(r.scope));
  if (r.table !== undefined) w.push("table", String(r.table));
  if (r.metric !== undefined) w.push("metric", String(r.metric));
  if (r.mtu) w.push("mtu", String(r.mtu));
  if (r.advmss) w.push("advmss", String(r.advmss));
  return w;
}

/** The link to create for a veth pair: both ends get txqueuelen 0, as the Go plugins' veths have. */
export const vethLink = (spec: VethSpec): NewLink => ({
  name: spec.name,
  kind: "veth",
  mtu: spec.mtu,
  mac: spec.mac,
  txqlen: 0,
  peer: { name: spec.peerName, mtu: spec.mtu, txqlen: 0, ns: spec.peerNs },
});

/** The words after `type <kind>` that say what a macvlan, ipvlan or vlan is. */
function kindWords(l: NewLink): string[] {
  switch (l.kind) {
    case "macvlan":
      return [...(l.macvlanMode ? ["mode", l.macvlanMode] : []), ...(l.bcqueuelen !== undefined ? ["bcqueuelen", String(l.bcqueuelen)] : [])];
    case "ipvlan":
      return l.ipvlanMode ? ["mode", l.ipvlanMode] : [];
    case "vlan":
      return l.vlanId !== undefined ? ["id", String(l.vlanId)] : [];
    default:
      return l.vlanFiltering ? ["vlan_filtering", "1"] : [];
  }
}

/**
 * `ip link add` words for a new link. The order matters for what `ip` sends: the settings it reads before
 * `type` (mtu, address, txqueuelen, netns) go into the request in the order given, then the parent, the
 * name and the kind (rtnetlink-messages.ts builds the same order).
 */
export function linkAddWords(l: NewLink): string[] {
  const words = ["link", "add"];
  if (l.parent !== undefined) words.push("link", l.parent);
  words.push("name", l.name);
  if (l.mtu) words.push("mtu", String(l.mtu));
  if (l.promisc) words.push("promisc", "on");
  if (l.mac) words.push("address", l.mac);
  if (l.txqlen !== undefined) words.push("txqueuelen", String(l.txqlen));
  if (l.netns) words.push("netns", nsTarget(l.netns));
  if (l.up) words.push("up");
  words.push("type", l.kind, ...kindWords(l));
  if (l.peer) {
    words.push("peer", "name", l.peer.name);
    if (l.peer.mtu) words.push("mtu", String(l.peer.mtu));
    if (l.peer.txqlen !== undefined) words.push("txqueuelen", String(l.peer.txqlen));
    words.push("netns", nsTarget(l.peer.ns));
  }
  return words;
}

/** `ip link add` words for a veth pair (see vethLink). */
export const vethAddWords = (spec: VethSpec): string[] => linkAddWords(vethLink(spec));

/** `ip link set` words for a change (master first: enslaving a link may reset its state). */
export function linkSetWords(name: string, c: LinkChange): string[] {
  const w = ["link", "set", "dev", name];
  if (c.master !== undefined) w.push(...(c.master === null ? ["nomaster"] : ["master", c.master]));
  if (c.mtu !== undefined) w.push("mtu", String(c.mtu));
  if (c.mac !== undefined) w.push("address", c.mac);
  if (c.promisc !== undefined) w.push("promisc", c.promisc ? "on" : "off");
  if (c.allmulti !== undefined) w.push("allmulticast", c.allmulti ? "on" : "off");
  if (c.txqlen !== undefined) w.push("txqueuelen", String(c.txqlen));
  if (c.alias !== undefined) w.push("alias", c.alias);
  if (c.up !== undefined) w.push(c.up ? "up" : "down");
  return w;
}

/** The `ip` words of a step. */
export function opWords(op: IpOp): string[] {
  switch (op.kind) {
    case "link-add":
      return linkAddWords(op.link);
    case "link-set":
      return linkSetWords(op.name, op.change);
    case "bridge-port": {
      const w = ["link", "set", "dev", op.name, "type", "bridge_slave"];
      if (op.flags.hairpin !== undefined) w.push("hairpin", op.flags.hairpin ? "on" : "off");
      if (op.flags.isolated !== undefined) w.push("isolated", op.flags.isolated ? "on" : "off");
      return w;
    }
    case "bridge-set": {
      const w = ["link", "set", "dev", op.name, "type", "bridge"];
      if (op.settings.groupFwdMask !== undefined) w.push("group_fwd_mask", String(op.settings.groupFwdMask));
      return w;
    }
    case "link-del":
      return ["link", "del", "dev", op.name];
    case "link-rename":
      return ["link", "set", "dev", op.name, "name", op.newName];
    case "link-move":
      return ["link", "set", "dev", op.name, "netns", nsTarget(op.to)];
    case "addr-add":
      return ["addr", "add", op.cidr, ...broadcastWords(op.cidr), "dev", op.dev];
    case "addr-replace":
      return ["addr", "replace", op.cidr, ...broadcastWords(op.cidr), "dev", op.dev];
    case "addr-del":
      return ["addr", "del", op.cidr, "dev", op.dev];
    case "route-add":
    case "route-append":
    case "route-replace":
    case "route-del":
      return ["route", op.kind.slice("route-".length), ...routeWords(op.route)];
    case "show-link":
      return ["link", "show", "dev", op.name];
    case "show-addresses":
      return ["addr", "show", "dev", op.name];
    case "words":
      return op.words;
  }
}
