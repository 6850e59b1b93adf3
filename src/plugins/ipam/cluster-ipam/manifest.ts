/** The cluster-ipam plugin, as the house knows it before loading it (plugins/manifest.ts). */
import { ALL_VERSIONS } from "#spec/versions.js";
import type { PluginManifest } from "../../manifest.js";

export const manifest: PluginManifest = {
  name: "cluster-ipam",
  versions: ALL_VERSIONS,
  load: () => import("./main.js"),
  commands: { admin: () => import("./admin.js") },
  toolCommands: {
    ipam: {
      description: "Inspect and repair a cluster-ipam pool in etcd: blocks, allocations, nodes, release-node",
      load: async () => (await import("./admin.js")).addAdminCommands,
    },
  },
};
