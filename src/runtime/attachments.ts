/**
 * Attachments as the result cache records them: the network each was added with (the cached config, which
 * outlives the config file), the runtime arguments it was added with, its addresses, and removing it with exactly
 * that config — what teardown, GC and `cnitool network rm --force` do.
 * @module
 */
import { confListFromConf, parseConfList, parsePluginConfig, type NetworkConfigList } from "../spec/config.js";
import { isJsonObject, parseJson } from "../spec/json.js";
import { createResult, toCurrentResult } from "../spec/result/index.js";
import type { CallOptions, CNIConfig, RuntimeConf } from "../libcni/api.js";
import type { CachedAttachment } from "../libcni/cache.js";

/** The network a cache entry was added with (a conflist, or a single plugin config turned into one). */
export function cachedNetwork(entry: CachedAttachment): NetworkConfigList {
  const raw = parseJson(entry.config);
  return isJsonObject(raw) && "plugins" in raw ? parseConfList(entry.config) : confListFromConf(parsePluginConfig(entry.config));
}

/** The runtime arguments an attachment was added with; `netns` (when given) replaces the cached path. */
export function cachedRuntimeConf(entry: CachedAttachment, netns?: string): RuntimeConf {
  const rt: RuntimeConf = { containerID: entry.containerID, netNS: netns || entry.netns || "", ifName: entry.ifName, args: entry.cniArgs ?? [] };
  if (entry.capabilityArgs) rt.capabilityArgs = entry.capabilityArgs;
  return rt;
}

/** The addresses of an attachment's cached result. */
export function cachedAddresses(entry: CachedAttachment): string[] {
  if (!entry.result) return [];
  const version = entry.result["cniVersion"];
  const result = createResult(typeof version === "string" && version ? version : "1.1.0", entry.result);
  return (toCurrentResult(result).ips ?? []).map((i) => i.address);
}

/** DEL of an attachment with the config and arguments it was added with (its cache entry goes with it). */
export function removeCachedAttachment(cni: CNIConfig, entry: CachedAttachment, opts: { netns?: string; callOptions?: CallOptions } = {}): Promise<void> {
  return cni.delNetworkList(cachedNetwork(entry), cachedRuntimeConf(entry, opts.netns), opts.callOptions);
}
