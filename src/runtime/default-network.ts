/**
 * The embedded default network: what a runtime built on tscni attaches containers to when nothing else is
 * configured. A bridge with host-local addresses, the bridge as gateway and masquerading to the outside, then
 * the meta plugins podman's default list has: published ports (portmap), forwarding rules (firewall),
 * sysctls (tuning), and rate limits on request (bandwidth).
 * @module
 */

/** The default network's name. */
export const DEFAULT_NETWORK_NAME = "tscni";
/** The default network's bridge. */
export const DEFAULT_BRIDGE = "tscni0";
/** The default network's address range. */
export const DEFAULT_SUBNET = "10.99.0.0/16";

/**
 * The default network's conflist (a fresh copy each call). `stateDir` keeps every plugin's on-disk state (the
 * IPAM store, firewall and portmap records, tuning backups) under one directory instead of the system defaults.
 */
export function defaultNetworkConfList(options: { stateDir?: string } = {}): Record<string, unknown> {
  const ipam: Record<string, unknown> = {
    type: "host-local",
    ranges: [[{ subnet: DEFAULT_SUBNET }]],
    routes: [{ dst: "0.0.0.0/0" }],
  };
  const state = (name: string) => (options.stateDir ? { dataDir: `${options.stateDir}/${name}` } : {});
  Object.assign(ipam, state("ipam"));
  return {
    cniVersion: "1.1.0",
    name: DEFAULT_NETWORK_NAME,
    plugins: [
      { type: "bridge", bridge: DEFAULT_BRIDGE, isGateway: true, ipMasq: true, hairpinMode: true, ipam },
      { type: "portmap", capabilities: { portMappings: true }, ...state("portmap") },
      { type: "firewall", ...state("firewall") },
      { type: "tuning", sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1" }, ...state("tuning") },
      { type: "bandwidth", capabilities: { bandwidth: true } },
    ],
  };
}
