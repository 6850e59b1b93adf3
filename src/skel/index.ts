/**
 * tscni/skel: everything a plugin author needs for a plugin's main. A plugin is
 * `pluginMain({ add, del, check, status, gc }, pluginSupports(...ALL_VERSIONS), "about text")`; its handlers get
 * the CNI_* environment and stdin as CmdArgs, and `loadPluginConf` / `parsePrevResult` read the config.
 * @module
 */
export {
  pluginMain,
  pluginMainLoading,
  runPlugin,
  processIO,
  type CmdArgs,
  type Handler,
  type PluginFuncs,
  type PluginDefinition,
  type PluginModule,
  type PluginConfigReader,
  type PluginIO,
  type CallStderr,
  type CheckedFuncs,
  type LooseFuncs,
} from "./skel.js";
export { loadPluginConf, parsePrevResult, type LoadedConf } from "./conf.js";
