/**
 * tscni/skel: everything a plugin author needs for a plugin's main. A plugin is
 * `pluginMain({ add, del, check, status, gc }, pluginSupports(...ALL_VERSIONS), "about text")`.
 * @module
 */
export * from "./skel.js";
export * from "./conf.js";
