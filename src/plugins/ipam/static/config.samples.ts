/** Valid configs of static using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, ROUTES, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "bridge",
      ipam: {
        type: "static",
        name: "x",
        routes: ROUTES,
        addresses: [{ address: "10.5.0.2/24", gateway: "10.5.0.1" }],
        dns: { nameservers: ["10.5.0.53"], domain: "d", search: ["s"], options: ["o"] },
      },
    },
  },
  { config: { ...COMMON, type: "bridge", ipam: { type: "static" }, args: { cni: { ips: ["10.6.0.2/24"] } } } },
  { config: { ...COMMON, type: "bridge", ipam: { type: "static" }, runtimeConfig: { ips: ["10.7.0.2/24"] } } },
];
