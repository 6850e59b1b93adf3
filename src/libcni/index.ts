/**
 * tscni/libcni: the runtime library. Load network configs from a directory, run them for an attachment
 * (ADD/CHECK/DEL/STATUS/GC), and share the result cache with Go runtimes (Go libcni's on-disk format).
 * @module
 */

export type { GCAttachment, NetworkConfigList, PluginConf, PluginConfig } from "#spec/config.js";
export type { Result } from "#spec/result/index.js";
export type { TraceContext } from "#spec/trace-context.js";
export {
  type CallOptions,
  CheckNotSupportedError,
  CNIConfig,
  type CNIConfigOptions,
  type GCArgs,
  JoinedError,
  type RuntimeConf,
} from "./api.js";
export {
  type CachedAttachment,
  type CacheKey,
  cacheFilePath,
  DEFAULT_CACHE_DIR,
  isValidCacheKey,
  listCachedAttachments,
  readCachedAttachment,
  readCachedResult,
  validateCacheKey,
} from "./cache.js";
export {
  confFiles,
  confFromFile,
  confListFromFile,
  type LoadedNetwork,
  loadAllNetworks,
  loadConf,
  loadConfList,
  NoConfigsFoundError,
  NotFoundError,
} from "./conf.js";
