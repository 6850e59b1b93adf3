/** The firewall plugin, as the house knows it before loading it (plugins/manifest.ts). */
import { versionsStartingFrom } from "#spec/versions.js";
import type { PluginManifest } from "../../manifest.js";

export const manifest: PluginManifest = {
  name: "firewall",
  versions: versionsStartingFrom("0.4.0"),
  load: () => import("./main.js"),
  restorer: () => import("./restore.js"),
};
