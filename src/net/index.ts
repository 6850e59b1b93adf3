/**
 * tscni/net: the network layer for plugin authors. Network namespaces (`NetNS`), links, addresses and routes
 * (`ip`, a facade over an rtnetlink and an iproute2 backend), veth pairs and interface configuration from a
 * result, sysctls, masquerading (iptables or nftables, with the Go plugins' names), and runners for iptables
 * and nftables. Every failure is an error that names the operation and carries the kernel's or tool's reason.
 * @module
 */
export { NetNS, NetnsNotFoundError } from "./netns.js";
export { ip, Links, IpBatch, type LinkBackend } from "./links.js";
export type { Link, Address, RouteSpec, LinkChange, NewLink, VethSpec, ShownLink, MacvlanMode, IpvlanMode } from "./types.js";
export { setupVeth, configureInterface, enableForwarding, waitForDAD, type VethPair, type VethOptions } from "./iface.js";
export { deleteLinkWithAddresses } from "./link-addresses.js";
export {
  sysctlPath,
  readSysctl,
  readSysctls,
  writeSysctl,
  writeSysctls,
  type SysctlSetting,
  type SysctlInput,
} from "./sysctl.js";
export { setupIPMasq, teardownIPMasq, gcIPMasq, ipMasqRules, type IPMasqBackend, type IPMasqRules, type IPMasqTarget } from "./ipmasq.js";
export {
  chooseFirewallKind,
  firewallFor,
  onEveryEngine,
  withDefaultFirewall,
  liveFirewallProbes,
  type AttachmentRules,
  type FirewallKind,
  type FirewallProbes,
  type NetworkGarbage,
  type RuleEngines,
} from "./firewall-driver.js";
export { Iptables, iptablesFor } from "./iptables.js";
export { nftRun, nftListRules, nftListTable, nftUsable, type NftRule, type NftListing } from "./nftables.js";
export { hashWithPrefix, ipMasqChainName, randomVethName, randomMac } from "./names.js";
export { NetOpError } from "./errors.js";
export { createContainerLink, defaultRouteInterface, type ContainerLinkSpec } from "./container-link.js";
