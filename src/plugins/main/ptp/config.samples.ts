/** Valid configs of ptp using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  { config: { ...COMMON, type: "ptp", ipMasq: true, ipMasqBackend: "iptables", mtu: 1450, ipam: { type: "host-local" } } },
];
