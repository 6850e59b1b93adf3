/**
 * tscni/libcni: the runtime library. Load network configs from a directory, run them for an attachment
 * (ADD/CHECK/DEL/STATUS/GC), and share the result cache with Go runtimes.
 * @module
 */
export * from "./api.js";
export * from "./conf.js";
export * from "./cache.js";
export type { NetworkConfigList, PluginConfig, PluginConf, GCAttachment } from "../spec/config.js";
export type { Result } from "../spec/result/index.js";
