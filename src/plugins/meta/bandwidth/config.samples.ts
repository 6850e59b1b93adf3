/** Valid configs of bandwidth using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  { config: { ...COMMON, type: "bandwidth", ingressRate: 8000, ingressBurst: 16000, egressRate: 8000, egressBurst: 16000 } },
  {
    config: {
      ...COMMON,
      type: "bandwidth",
      runtimeConfig: { bandwidth: { ingressRate: 1000000, ingressBurst: 2000000, egressRate: 500000, egressBurst: 1000000 } },
    },
  },
];
