/**
 * portmap's two backends behind net/firewall-driver's contract, and the one choice between them for a call.
 * @module
 */

import { chooseFirewallKind, type FirewallProbes, type RuleEngines } from "#net/firewall/firewall-driver.js";
import { invalidConfig } from "#spec/errors.js";
import { backendSpecificKeys, type PortForwarding, type PortMapBackend, type PortMapConf } from "./config.js";
import { iptablesForwarding } from "./iptables.js";
import { nftablesForwarding } from "./nftables.js";

/** Port forwarding in each backend. */
export const portForwarding: RuleEngines<PortForwarding> = { iptables: iptablesForwarding, nftables: nftablesForwarding };

/**
 * The backend to use (net/firewall-driver's one choice): the configured one, or iptables unless iptables does
 * not work here and nftables does. Keys that only the other backend understands are an error.
 */
export async function chooseBackend(n: PortMapConf, probes?: FirewallProbes): Promise<PortMapBackend> {
  const backend = await chooseFirewallKind(n.backend, probes);
  const other: PortMapBackend = backend === "iptables" ? "nftables" : "iptables";
  const wrong = backendSpecificKeys(n)[other];
  if (wrong.length) {
    throw invalidConfig(
      `${backend} backend was requested but configuration contains ${other}-specific options [${wrong.join(" ")}]`,
      n.backend ? "" : `"backend" is not set and ${backend} is the default here; set "backend": "${other}" to use these options`,
    );
  }
  return backend;
}

/** The backend a call uses (see {@link chooseBackend}). */
export const portForwardingFor = async (n: PortMapConf, probes?: FirewallProbes): Promise<PortForwarding> =>
  portForwarding[await chooseBackend(n, probes)];
