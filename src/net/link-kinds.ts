/**
 * The kernel link kinds the main plugins make, by plugin type, each with the `ip link add` words that make one (on
 * the veth `pv0` where it needs a parent): what a probe runs to tell "this kernel lacks the module" from a plugin's
 * own failure. A type not here makes no link of its own kind (ptp and host-device move or pair veths, tap makes
 * tun devices, loopback makes nothing), so no kernel can lack it by name.
 * @module
 */

/** `ip link add` words by plugin type. */
export const LINK_KIND_PROBES: Readonly<Record<string, readonly string[]>> = {
  bridge: ["link", "add", "p0", "type", "bridge"],
  macvlan: ["link", "add", "p0", "link", "pv0", "type", "macvlan", "mode", "bridge"],
  ipvlan: ["link", "add", "p0", "link", "pv0", "type", "ipvlan", "mode", "l2"],
  vlan: ["link", "add", "p0", "link", "pv0", "type", "vlan", "id", "7"],
  dummy: ["link", "add", "p0", "type", "dummy"],
};
