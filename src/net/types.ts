/**
 * What the network layer reports and accepts: links, addresses, routes. Plain data, independent of the
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
  /** For a veth: the interface index of its peer (in the peer's namespace). */
  peerIndex?: number;
  promisc: boolean;
  /** The ALLMULTI flag. */
  allmulti?: boolean;
  /** Transmit queue length. */
  txqlen?: number;
  alias?: string;
  /** Bridge-port flags, when the link is a bridge port. */
  bridgePort?: { hairpin: boolean; isolated: boolean };
  /** Kind-specific attributes (macvlan mode, vlan id...). */
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

/** A link to create, of a kind that needs no other settings than these. */
export interface NewLink {
  name: string;
  kind: "veth" | "bridge" | "ifb" | "dummy";
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
}

/** A link as read back, with its addresses (empty when they were not asked for). */
export interface ShownLink {
  link: Link;
  addresses: Address[];
}
