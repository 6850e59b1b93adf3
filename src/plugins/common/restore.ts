/**
 * Restoring a plugin's host firewall state after a firewall reload or flush (`cnitool reload`, the resident
 * server's self-repair). A plugin that leaves rules, chains, tables or firewalld sources on the host exports a
 * Restorer beside its rule code: `restore` puts back what its ADD made for one attachment, adding only what is
 * missing and never touching the container; `marks` names the objects whose absence shows that state was lost.
 * @module
 */

import { type FirewallKind, type FirewallProbes, firewallFor, type RuleEngines } from "#net/firewall/firewall-driver.js";
import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { type IPFamilyNum, iptablesFor } from "#net/firewall/iptables.js";
import { nftUsable } from "#net/firewall/nftables.js";
import { parsePrevResult } from "#skel/conf.js";
import type { PluginConf } from "#spec/config.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";

/** One plugin of one cached attachment: the request its ADD got, rebuilt from the result cache. */
export interface RestoreRequest {
  /** The plugin's stdin as libcni builds it (name, cniVersion, runtimeConfig), with the attachment's cached result as prevResult. */
  stdin: Buffer;
  containerID: string;
  ifName: string;
  /** The container's network namespace as cached (may be empty); only named, never entered. */
  netns: string;
  /** CNI_ARGS of the ADD (`K=V;K2=V2`). */
  args: string;
  /** Where host-side settings come from, as at ADD: XDG_RUNTIME_DIR (dnsname), DBUS_SYSTEM_BUS_ADDRESS (firewalld). */
  env: Readonly<Record<string, string | undefined>>;
  /** A probe shared by every attachment of one pass (e.g. which backend works here), run at most once per key. */
  once<T>(key: string, probe: () => Promise<T>): Promise<T>;
}

export interface Restorer {
  /** Puts back what is missing of the attachment's state; resolves what it put back (empty: everything was there). */
  restore(req: RestoreRequest): Promise<string[]>;
  /** The marks of that state (empty when ADD left none for this attachment). */
  marks(req: RestoreRequest): Promise<FirewallMark[]>;
  /**
   * Removes what `restore` put back, as the plugin's DEL would on the host (never in the container, never its
   * IPAM): for an attachment that was deleted while it was being restored, whose DEL may have run before the
   * restore. Missing state is fine.
   */
  undo(req: RestoreRequest): Promise<void>;
}

/** The attachment's cached result (given as prevResult), in the current version; undefined when there is none. */
export function cachedResultOf(conf: PluginConf): Result100 | undefined {
  const prev = parsePrevResult(conf);
  return prev && toCurrentResult(prev);
}

/** Whether iptables (IPv4, or ip6tables) works here, asked once per pass (the key other restorers share). */
export const iptablesUsableOnce = (req: RestoreRequest, family: IPFamilyNum = 4): Promise<boolean> =>
  req.once(family === 4 ? "iptables usable" : "ip6tables usable", () => iptablesFor(family).usable());
/** Whether nftables works here, asked once per pass. */
export const nftablesUsableOnce = (req: RestoreRequest): Promise<boolean> => req.once("nftables usable", nftUsable);

/** The engine probes of one pass: each asked at most once, whichever restorer asks first. */
export const firewallProbesOnce = (req: RestoreRequest): FirewallProbes => ({
  iptables: () => iptablesUsableOnce(req),
  nftables: () => nftablesUsableOnce(req),
});

/** The implementation of `engines` the attachment's ADD used: the configured engine, else the default here. */
export const firewallOnce = <R>(req: RestoreRequest, engines: RuleEngines<R>, configured: FirewallKind | undefined): Promise<R> =>
  firewallFor(engines, configured, firewallProbesOnce(req));
