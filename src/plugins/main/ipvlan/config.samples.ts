/** Valid configs of ipvlan using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  { config: { ...COMMON, type: "ipvlan", master: "eth0", mode: "l3s", mtu: 1400, linkInContainer: true, ipam: { type: "host-local" } } },
  {
    config: {
      ...COMMON,
      type: "ipvlan",
      mode: "l3",
      prevResult: { cniVersion: "1.0.0", interfaces: [{ name: "host0" }], ips: [{ address: "10.1.0.9/24", interface: 0 }] },
    },
  },
];
