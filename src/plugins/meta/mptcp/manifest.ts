/** The mptcp plugin, as the house knows it before loading it (plugins/manifest.ts). */
import { versionsStartingFrom } from "#spec/versions.js";
import type { PluginManifest } from "../../manifest.js";

export const manifest: PluginManifest = {
  name: "mptcp",
  versions: versionsStartingFrom("0.3.1"),
  load: () => import("./main.js"),
};
