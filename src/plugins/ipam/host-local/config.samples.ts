/** Valid configs of host-local using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, ROUTES, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "bridge",
      ipam: {
        type: "host-local",
        name: "x",
        subnet: "10.2.0.0/24",
        rangeStart: "10.2.0.10",
        rangeEnd: "10.2.0.20",
        gateway: "10.2.0.1",
        ranges: [[{ subnet: "10.3.0.0/24", rangeStart: "10.3.0.5", rangeEnd: "10.3.0.9", gateway: "10.3.0.1" }], [{ subnet: "fd00:3::/64" }]],
        routes: ROUTES,
        dataDir: "/run/tscni-sample",
        resolvConf: "/etc/resolv.conf",
      },
      runtimeConfig: {
        ipRanges: [[{ subnet: "10.4.0.0/24", rangeStart: "10.4.0.2", rangeEnd: "10.4.0.3", gateway: "10.4.0.1" }]],
        ips: ["10.4.0.2"],
      },
      args: { cni: { ips: ["10.3.0.5"] } },
    },
    cniArgs: "IgnoreUnknown=1;IP=10.2.0.11",
  },
];
