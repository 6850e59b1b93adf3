/**
 * Attachments as the result cache records them: the network each was added with (the cached config, which
 * outlives the config file), the runtime arguments it was added with, its addresses, and removing it with exactly
 * that config — what teardown, GC and `cnitool network rm --force` do.
 * @module
 */

import { lstat } from "node:fs/promises";
import { isJsonObject, parseJson } from "#go-json/json.js";
import type { CallOptions, CNIConfig, RuntimeConf } from "#libcni/api.js";
import { type CachedAttachment, type CacheKey, cacheFilePath, listCachedAttachments } from "#libcni/cache.js";
import { confListFromConf, type NetworkConfigList, parseConfList, parsePluginConfig } from "#spec/config.js";
import { createResult, getResultAsVersion, type Result, toCurrentResult } from "#spec/result/index.js";

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

/**
 * An attachment's cached result, in `version` when given (the network's, as libcni gives it to CHECK and DEL);
 * undefined when the cache holds none. A result without its own cniVersion is read as the newest.
 */
export function cachedResult(entry: CachedAttachment, version?: string): Result | undefined {
  if (!entry.result) return undefined;
  const own = entry.result["cniVersion"];
  const result = createResult(typeof own === "string" && own ? own : "1.1.0", entry.result);
  return version ? getResultAsVersion(result, version) : result;
}

/** The addresses of an attachment's cached result. */
export function cachedAddresses(entry: CachedAttachment): string[] {
  const result = cachedResult(entry);
  return result ? (toCurrentResult(result).ips ?? []).map((i) => i.address) : [];
}

/** A cached attachment and the time its cache file was written (its ADD). */
export interface AgedAttachment {
  entry: CachedAttachment;
  mtimeMs: number;
}

/** Every valid cached attachment with the time its file was written; one that goes while being read is skipped. */
export async function cachedWithAge(cacheDir: string): Promise<AgedAttachment[]> {
  const out: AgedAttachment[] = [];
  for (const entry of await listCachedAttachments(cacheDir)) {
    const st = await lstat(cacheFilePath(cacheDir, entry)).catch(() => undefined);
    if (st) out.push({ entry, mtimeMs: st.mtimeMs });
  }
  return out;
}

/** DEL of an attachment with the config and arguments it was added with (its cache entry goes with it). */
export function removeCachedAttachment(
  cni: CNIConfig,
  entry: CachedAttachment,
  opts: { netns?: string; callOptions?: CallOptions } = {},
): Promise<void> {
  return cni.delNetworkList(cachedNetwork(entry), cachedRuntimeConf(entry, opts.netns), opts.callOptions);
}

/**
 * DEL of the attachment an unreadable cache file names (libcni/cache.ts listUnreadableCacheEntries), with the
 * network's current config: libcni's DEL drops the unreadable file and runs every plugin without a prevResult (each
 * releases by container ID and interface), then removes the file.
 */
export function removeUnreadableAttachment(cni: CNIConfig, list: NetworkConfigList, key: CacheKey, callOptions?: CallOptions): Promise<void> {
  return cni.delNetworkList(list, { containerID: key.containerID, ifName: key.ifName, netNS: "", args: [] }, callOptions);
}
