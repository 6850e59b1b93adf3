/**
 * What the network layer reports and accepts: links, addresses, routes, qdiscs. Plain data, independent of the
 * backend that reads or changes the kernel.
 * @module
 */
import type { NetNS } from "./netns.js";

/** A network interface as read back from the kernel. */
export interface Link {
  index: number;
  name: string;
  mtu: number;
  mac: string;
  /** Administratively up. */
  up: boolean;
  /** Operational state as the kernel reports it (UP, DOWN, UNKNOWN, LOWERLAYERDOWN...). */
  operstate: string;
  /** Link kind (veth, bridge, macvlan...); undefined for physical devices. */
  kind?: string;
  /** The bridge (or other master) this link is enslaved to. */
  master?: string;
  /**
   * The link this one is tied to (a veth's peer, the parent of a macvlan, ipvlan or vlan) when that is in
   * another namespace: its interface index there (`ip`'s `link_index`).
   */
  peerIndex?: number;
  /** The same link when it is in this namespace: its name (`ip`'s `link`; `if<N>` when it has none). */
  peerName?: string;
  promisc: boolean;
  /** The ALLMULTI flag. */
  allmulti?: boolean;
  /** Transmit queue length. */
  txqlen?: number;
  alias?: string;
  /** Bridge-port flags, when the link is a bridge port. */
  bridgePort?: { hairpin: boolean; isolated: boolean };
  /**
   * Kind-specific attributes, named as `ip -json -d` names them: a vrf's `table`; a macvlan's `mode` (and
   * `bcqueuelen`), an ipvlan's `mode`, a vlan's `id`; a tun/tap's `type`, `pi`, `vnet_hdr`, `multi_queue`,
   * `persist` and, when set, its owner `user` and `group` as numeric ids.
   */
  info?: Record<string, unknown>;
}

/** An address of an interface as read back from the kernel. */
export interface Address {
  /** `addr/prefix`. */
  cidr: string;
  family: 4 | 6;
  scope: string;
  tentative: boolean;
  dadFailed: boolean;
}

/** A route, to add or as read back (`ip route` terms). */
export interface RouteSpec {
  /** Destination `addr/prefix` (`0.0.0.0/0` for the default route). */
  dst: string;
  gw?: string;
  dev?: string;
  src?: string;
  /** `link`, `host`, `global`, or a number. */
  scope?: string | number;
  table?: number;
  metric?: number;
  mtu?: number;
  advmss?: number;
  /** `kernel` etc., read only. */
  protocol?: string;
}

/** A veth pair to create: each end's name, namespace and settings. */
export interface VethSpec {
  /** The end created in `ns`. */
  name: string;
  ns: NetNS;
  /** The other end, created directly in `peerNs`. */
  peerName: string;
  peerNs: NetNS;
  mtu?: number;
  /** MAC of the `name` end. */
  mac?: string;
}

/** Settings of an existing bridge (`ip link set dev X type bridge ...`; only the fields given are changed). */
export interface BridgeSettings {
  /**
   * Which link-local groups 01:80:C2:00:00:0X the bridge forwards, bit X (`group_fwd_mask`): bits 0 to 2 (STP,
   * pause frames, LACP) the kernel refuses.
   */
  groupFwdMask?: number;
}

/** Changes to an existing link (only the fields given are changed). */
export interface LinkChange {
  up?: boolean;
  mtu?: number;
  mac?: string;
  /** Enslave to this bridge; null removes the master. */
  master?: string | null;
  promisc?: boolean;
  allmulti?: boolean;
  txqlen?: number;
  alias?: string;
}

/** The modes of a macvlan (`ip link add ... type macvlan mode M`). */
export type MacvlanMode = "private" | "vepa" | "bridge" | "passthru" | "source";

/** The modes of an ipvlan (`ip link add ... type ipvlan mode M`). */
export type IpvlanMode = "l2" | "l3" | "l3s";

/** A link to create: its kind and the settings `ip link add` takes for it. */
export interface NewLink {
  name: string;
  kind: "veth" | "bridge" | "ifb" | "dummy" | "macvlan" | "ipvlan" | "vlan";
  mtu?: number;
  promisc?: boolean;
  mac?: string;
  txqlen?: number;
  /** Created up. */
  up?: boolean;
  /** bridge: VLAN filtering on. */
  vlanFiltering?: boolean;
  /** veth: the other end, created directly in `ns`. */
  peer?: { name: string; mtu?: number; txqlen?: number; ns: NetNS };
  /**
   * macvlan, ipvlan, vlan: the link it is made on (`ip link add link DEV`), looked up in the namespace the
   * request runs in.
   */
  parent?: string;
  /** Created directly in this namespace (`ip link add ... netns PATH`) rather than in the one the request runs in. */
  netns?: NetNS;
  /** macvlan: the mode (required for a macvlan). */
  macvlanMode?: MacvlanMode;
  /** macvlan: the broadcast queue length. */
  bcqueuelen?: number;
  /** ipvlan: the mode (required for an ipvlan). */
  ipvlanMode?: IpvlanMode;
  /** vlan: the VLAN ID, 0 to 4094 (required for a vlan). */
  vlanId?: number;
}

/** A link as read back, with its addresses (empty when they were not asked for). */
export interface ShownLink {
  link: Link;
  addresses: Address[];
}

/** A token bucket in the kernel's units: rate in bytes per second, limit in bytes, buffer in scheduler ticks. */
export interface TbfSettings {
  rate: number;
  limit: number;
  buffer: number;
}

/** A qdisc as `tc -raw -json qdisc show` shows it; `tbf` holds the token-bucket numbers of a tbf. */
export interface Qdisc {
  kind: string;
  /** `1:`, `ffff:`... */
  handle: string;
  root: boolean;
  parent?: string;
  tbf?: TbfSettings;
}
