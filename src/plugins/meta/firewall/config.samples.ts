/** Valid configs of firewall using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "firewall",
      backend: "iptables",
      iptablesAdminChainName: "SAMPLE-ADMIN",
      firewalldZone: "trusted",
      ingressPolicy: "same-bridge",
      dataDir: "/run/tscni-sample",
    },
  },
];
