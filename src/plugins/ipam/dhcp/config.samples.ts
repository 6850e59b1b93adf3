/** Valid configs of dhcp using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "macvlan",
      ipam: {
        type: "dhcp",
        daemonSocketPath: "/run/tscni-sample/dhcp.sock",
        priority: 10,
        provide: [
          { option: "host-name", value: "sample" },
          { option: "user-class", fromArg: "CLASS" },
        ],
        request: [{ option: "121" }, { option: "routers", skipDefault: true }],
        families: ["ipv4", "ipv6"],
        duidType: "uuid",
      },
    },
    cniArgs: "IgnoreUnknown=1;CLASS=gold",
  },
];
