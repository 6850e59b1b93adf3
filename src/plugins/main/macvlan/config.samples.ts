/** Valid configs of macvlan using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "macvlan",
      master: "eth0",
      mode: "private",
      mtu: 1400,
      mac: "0a:58:0a:01:00:0d",
      linkInContainer: true,
      bcqueuelen: 100,
      ipam: { type: "host-local" },
      args: { cni: { mac: "0a:58:0a:01:00:0e" } },
      runtimeConfig: { mac: "0a:58:0a:01:00:0f" },
    },
    cniArgs: "IgnoreUnknown=1;MAC=0a:58:0a:01:00:10",
  },
];
