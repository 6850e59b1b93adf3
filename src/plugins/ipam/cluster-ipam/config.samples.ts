/** Valid configs of cluster-ipam using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, ROUTES, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "bridge",
      ipam: {
        type: "cluster-ipam",
        name: "x",
        nodeName: "node-1",
        blockSize: 28,
        blockSizeV6: 120,
        exclude: ["10.10.0.0/28", "10.10.0.99"],
        lockDir: "/run/tscni-sample",
        nodeGraceSeconds: 3600,
        routes: ROUTES,
        dns: { nameservers: ["10.10.0.53"], domain: "d", search: ["s"], options: ["o"] },
        ranges: [[{ subnet: "10.10.0.0/24", rangeStart: "10.10.0.5", rangeEnd: "10.10.0.200", gateway: "10.10.0.1" }], [{ subnet: "fd10::/64" }]],
        etcd: {
          endpoints: ["https://127.0.0.1:2379", "https://127.0.0.2:2379"],
          certFile: "/etc/tscni/etcd.crt",
          keyFile: "/etc/tscni/etcd.key",
          caFile: "/etc/tscni/ca.crt",
          username: "cni",
          password: "secret",
          prefix: "/sample/ipam",
          dialTimeoutMs: 500,
          requestTimeoutMs: 3000,
          callTimeoutMs: 60000,
        },
      },
      runtimeConfig: { ips: ["10.10.0.7"] },
      args: { cni: { ips: ["fd10::7"] } },
    },
    cniArgs: "IgnoreUnknown=1;IP=10.10.0.8",
  },
];
