/**
 * The first step of DEL for plugins that put a veth in the container: delete it and learn the addresses it had,
 * adding those of the cached result (prevResult), so host-side rules keyed by address can still be removed
 * when the container or its interface is already gone. A missing netns or link is not an error.
 * @module
 */

import { parseCIDR } from "#ip/ip.js";
import { deleteLinkWithAddresses } from "#net/link/link-addresses.js";
import { NetNS } from "#net/netns.js";
import { parsePrevResult } from "#skel/conf.js";
import type { PluginConf } from "#spec/config.js";
import { toCurrentResult } from "#spec/result/index.js";

export async function removeContainerLink(conf: PluginConf, netns: string, ifName: string): Promise<string[]> {
  const addresses = new Set<string>();
  const ns = await NetNS.openIfThere(netns); // (a container that is gone took its interface with it)
  if (ns) for (const a of (await deleteLinkWithAddresses(ns, ifName)) ?? []) addresses.add(parseCIDR(a).text);
  try {
    const prev = parsePrevResult(conf);
    for (const ipc of (prev ? toCurrentResult(prev).ips : undefined) ?? []) addresses.add(parseCIDR(ipc.address).text);
  } catch {
    // an unreadable prevResult only means fewer addresses to look for
  }
  return [...addresses];
}
