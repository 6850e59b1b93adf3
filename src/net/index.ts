/**
 * tscni/net: the network layer for plugin authors. Network namespaces (`NetNS`), links, addresses and routes
 * (`ip`, a facade over an rtnetlink and an iproute2 backend), veth pairs and interface configuration from a
 * result, sysctls, masquerading (iptables or nftables, with the Go plugins' names), and runners for iptables
 * and nftables. Every failure is an error that names the operation and carries the kernel's or tool's reason.
 * @module
 */

export { NetOpError } from "./errors.js";
export {
  type AttachmentRules,
  chooseFirewallKind,
  type FirewallKind,
  type FirewallProbes,
  firewallFor,
  liveFirewallProbes,
  type NetworkGarbage,
  onEveryEngine,
  type RuleEngines,
  withDefaultFirewall,
} from "./firewall/firewall-driver.js";
export { gcIPMasq, type IPMasqBackend, type IPMasqRules, type IPMasqTarget, ipMasqRules, setupIPMasq, teardownIPMasq } from "./firewall/ipmasq.js";
export { Iptables, iptablesFor } from "./firewall/iptables.js";
export { type NftListing, type NftRule, nftListRules, nftListTable, nftRun, nftUsable } from "./firewall/nftables.js";
export { type ContainerLinkSpec, createContainerLink, defaultRouteInterface } from "./link/container-link.js";
export { configureInterface, enableForwarding, setupVeth, type VethOptions, type VethPair, waitForDAD } from "./link/iface.js";
export { deleteLinkWithAddresses } from "./link/link-addresses.js";
export { IpBatch, ip, type LinkBackend, Links } from "./link/links.js";
export { hashWithPrefix, ipMasqChainName, randomMac, randomVethName } from "./names.js";
export { NetNS, NetnsNotFoundError } from "./netns.js";
export {
  readSysctl,
  readSysctls,
  type SysctlInput,
  type SysctlSetting,
  sysctlPath,
  writeSysctl,
  writeSysctls,
} from "./sysctl.js";
export type { Address, IpvlanMode, Link, LinkChange, MacvlanMode, NewLink, RouteSpec, ShownLink, VethSpec } from "./types.js";
