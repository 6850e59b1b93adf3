/** Valid configs of tap using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "tap",
      multiQueue: true,
      mtu: 1400,
      mac: "0a:58:0a:01:00:11",
      owner: 1000,
      group: 100,
      selinuxContext: "system_u:system_r:container_t:s0",
      bridge: "br0",
      args: { cni: { mac: "0a:58:0a:01:00:12" } },
      runtimeConfig: { mac: "0a:58:0a:01:00:13" },
    },
    cniArgs: "IgnoreUnknown=1;MAC=0a:58:0a:01:00:14",
  },
];
