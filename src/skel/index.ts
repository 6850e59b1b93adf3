/**
 * tscni/skel: everything a plugin author needs for a plugin's main. A plugin is
 * `pluginMain({ add, del, check, status, gc }, pluginSupports(...ALL_VERSIONS), "about text")`; its handlers get
 * the CNI_* environment and stdin as CmdArgs, and `loadPluginConf` / `parsePrevResult` read the config.
 * @module
 */

export { type LoadedConf, loadPluginConf, parsePrevResult } from "./conf.js";
export {
  type CallStderr,
  type CheckedFuncs,
  type CmdArgs,
  type Handler,
  type LooseFuncs,
  type PluginConfigReader,
  type PluginDefinition,
  type PluginFuncs,
  type PluginIO,
  type PluginModule,
  pluginMain,
  pluginMainLoading,
  processIO,
  runPlugin,
} from "./skel.js";
