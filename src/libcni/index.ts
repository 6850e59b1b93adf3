/**
 * tscni/libcni: the runtime library. Load network configs from a directory, run them for an attachment
 * (ADD/CHECK/DEL/STATUS/GC), and share the result cache with Go runtimes (Go libcni's on-disk format).
 * @module
 */
export {
  CNIConfig,
  CheckNotSupportedError,
  JoinedError,
  type RuntimeConf,
  type GCArgs,
  type CNIConfigOptions,
  type CallOptions,
} from "./api.js";
export {
  loadConf,
  loadConfList,
  loadAllNetworks,
  confFromFile,
  confListFromFile,
  confFiles,
  NotFoundError,
  NoConfigsFoundError,
  type LoadedNetwork,
} from "./conf.js";
export {
  DEFAULT_CACHE_DIR,
  readCachedResult,
  readCachedAttachment,
  listCachedAttachments,
  cacheFilePath,
  validateCacheKey,
  isValidCacheKey,
  type CacheKey,
  type CachedAttachment,
} from "./cache.js";
export type { NetworkConfigList, PluginConfig, PluginConf, GCAttachment } from "#spec/config.js";
export type { Result } from "#spec/result/index.js";
export type { TraceContext } from "#spec/trace-context.js";
