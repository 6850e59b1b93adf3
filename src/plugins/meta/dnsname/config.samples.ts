/** Valid configs of dnsname using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "dnsname",
      domainName: "dns.sample",
      capabilities: { aliases: true },
      runtimeConfig: { aliases: { samplenet: ["db", "cache.internal", "my_alias"] } },
    },
    cniArgs: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1",
  },
  {
    config: {
      ...COMMON,
      type: "dnsname",
      prevResult: {
        cniVersion: COMMON.cniVersion,
        interfaces: [{ name: "cni-podman1" }, { name: "veth2" }, { name: "eth0", sandbox: "/run/netns/y" }],
        ips: [
          { version: "4", address: "10.89.0.5/24", gateway: "10.89.0.1", interface: 2 },
          { version: "6", address: "fd00:89::5/64", interface: 2 },
        ],
      },
    },
    cniArgs: "K8S_POD_NAME=exciting_chebyshev",
  },
];
