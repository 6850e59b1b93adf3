/** Valid configs of flannel using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "flannel",
      subnetFile: "/run/tscni-sample/subnet.env",
      dataDir: "/run/tscni-sample",
      delegate: { type: "bridge", bridge: "cni0", isDefaultGateway: true },
      ipam: { routes: [{ dst: "10.96.0.0/12" }] },
      runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] },
    },
  },
];
