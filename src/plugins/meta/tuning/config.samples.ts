/** Valid configs of tuning using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "tuning",
      sysctl: { "net.ipv4.conf.IFNAME.rp_filter": "1" },
      mac: "0a:58:0a:01:00:0a",
      promisc: true,
      mtu: 1300,
      allmulti: true,
      txQLen: 500,
      dataDir: "/run/tscni-sample",
      runtimeConfig: { mac: "0a:58:0a:01:00:0b" },
      args: {
        cni: {
          sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1" },
          mac: "0a:58:0a:01:00:0c",
          promisc: false,
          mtu: 1280,
          allmulti: false,
          txQLen: 100,
        },
      },
    },
  },
];
