/** The ipvlan plugin, as the house knows it before loading it (plugins/manifest.ts). */
import { ALL_VERSIONS } from "#spec/versions.js";
import type { PluginManifest } from "../../manifest.js";

export const manifest: PluginManifest = {
  name: "ipvlan",
  versions: ALL_VERSIONS,
  load: () => import("./main.js"),
  linkKindProbe: ["link", "add", "p0", "link", "pv0", "type", "ipvlan", "mode", "l2"],
};
