/** The loopback plugin, as the house knows it before loading it (plugins/manifest.ts). */
import { ALL_VERSIONS } from "#spec/versions.js";
import type { PluginManifest } from "../../manifest.js";

export const manifest: PluginManifest = {
  name: "loopback",
  versions: ALL_VERSIONS,
  load: () => import("./main.js"),
};
