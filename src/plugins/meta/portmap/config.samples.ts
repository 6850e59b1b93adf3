/** Valid configs of portmap using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "portmap",
      snat: false,
      masqAll: true,
      markMasqBit: 12,
      conditionsV4: ["-d", "10.8.0.1"],
      conditionsV6: ["!", "-d", "fd00::1"],
      backend: "iptables",
      dataDir: "/run/tscni-sample",
      runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp", hostIP: "127.0.0.1" }] },
    },
  },
  { config: { ...COMMON, type: "portmap", externalSetMarkChain: "KUBE-MARK-MASQ" } },
];
