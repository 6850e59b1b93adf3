/** Valid configs of vlan using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  { config: { ...COMMON, type: "vlan", master: "eth0", vlanId: 100, mtu: 1400, linkInContainer: true, ipam: { type: "host-local" } } },
];
