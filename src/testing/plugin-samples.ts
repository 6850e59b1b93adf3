/**
 * Valid configs of every plugin in the registry, using every key of each plugin's schema (config-decoding.test.ts
 * checks that), for the tests that respell or mutate them (cli/config-decoding.test.ts, cli/bad-input.test.ts).
 * @module
 */
import type { JsonValue } from "#go-json/json.js";

export type Sample = { config: Record<string, JsonValue>; cniArgs?: string };

export const PREV_RESULT: JsonValue = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "br0" }, { name: "veth1", mac: "0a:58:0a:01:00:01" }, { name: "eth0", mac: "0a:58:0a:01:00:02", sandbox: "/run/netns/x" }],
  ips: [{ address: "10.1.0.2/24", gateway: "10.1.0.1", interface: 2 }],
  routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }],
};
export const COMMON = {
  cniVersion: "1.0.0",
  name: "samplenet",
  capabilities: { portMappings: true, mac: true },
  dns: { nameservers: ["10.1.0.53"], domain: "example.test", search: ["example.test"], options: ["ndots:2"] },
  "cni.dev/valid-attachments": [{ containerID: "c1", ifname: "eth0" }],
  ipam: { type: "" },
  prevResult: PREV_RESULT,
};
const ROUTES: JsonValue = [{ dst: "10.9.0.0/16", gw: "10.1.0.254", mtu: 1400, advmss: 1360, priority: 5, table: 100, scope: 0 }];

export const SAMPLES: Record<string, Sample[]> = {
  loopback: [{ config: { ...COMMON, type: "loopback" } }],
  bridge: [
    {
      config: {
        ...COMMON,
        type: "bridge",
        bridge: "brsample",
        isGateway: true,
        isDefaultGateway: true,
        forceAddress: true,
        ipMasq: true,
        ipMasqBackend: "nftables",
        mtu: 1400,
        hairpinMode: true,
        vlan: 10,
        vlanTrunk: [{ id: 20 }, { minID: 30, maxID: 32 }],
        preserveDefaultVlan: true,
        macspoofchk: true,
        enabledad: true,
        portIsolation: true,
        ipam: { type: "host-local" },
        args: { cni: { mac: "0a:58:0a:01:00:07" } },
        runtimeConfig: { mac: "0a:58:0a:01:00:08" },
      },
      cniArgs: "IgnoreUnknown=1;MAC=0a:58:0a:01:00:09",
    },
    { config: { ...COMMON, type: "bridge", promiscMode: true, disableContainerInterface: true, groupFwdMask: 16392, uplinkInterface: "eth1" } },
  ],
  ptp: [{ config: { ...COMMON, type: "ptp", ipMasq: true, ipMasqBackend: "iptables", mtu: 1450, ipam: { type: "host-local" } } }],
  "host-local": [
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
  ],
  static: [
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
  ],
  dhcp: [
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
  ],
  portmap: [
    {
      config: {
        ...COMMON,
        type: "portmap",
        snat: false,
        masqAll: true,
        markMasqBit: 12,
        conditionsV4: ["-d", "10.8.0.1"],
        conditionsV6: ["!", "-d", "fd00::1"],
        backend: "iptables",
        dataDir: "/run/tscni-sample",
        runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp", hostIP: "127.0.0.1" }] },
      },
    },
    { config: { ...COMMON, type: "portmap", externalSetMarkChain: "KUBE-MARK-MASQ" } },
  ],
  tuning: [
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
  ],
  bandwidth: [
    { config: { ...COMMON, type: "bandwidth", ingressRate: 8000, ingressBurst: 16000, egressRate: 8000, egressBurst: 16000 } },
    {
      config: {
        ...COMMON,
        type: "bandwidth",
        runtimeConfig: { bandwidth: { ingressRate: 1000000, ingressBurst: 2000000, egressRate: 500000, egressBurst: 1000000 } },
      },
    },
  ],
  firewall: [
    {
      config: {
        ...COMMON,
        type: "firewall",
        backend: "iptables",
        iptablesAdminChainName: "SAMPLE-ADMIN",
        firewalldZone: "trusted",
        ingressPolicy: "same-bridge",
        dataDir: "/run/tscni-sample",
      },
    },
  ],
  sbr: [{ config: { ...COMMON, type: "sbr", table: 100, gateways: ["10.1.0.1"], addSourceHints: true } }],
  vrf: [{ config: { ...COMMON, type: "vrf", vrfname: "vrfsample", table: 1001 } }],
  mptcp: [
    {
      config: {
        ...COMMON,
        type: "mptcp",
        endpoints: { signal: true, subflow: true, backup: true, fullmesh: false },
        limits: { subflows: 2, addAddrAccepted: 1 },
      },
    },
    { config: { ...COMMON, type: "mptcp", endpoints: { subflow: true, fullmesh: true } } },
  ],
  macvlan: [
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
  ],
  ipvlan: [
    { config: { ...COMMON, type: "ipvlan", master: "eth0", mode: "l3s", mtu: 1400, linkInContainer: true, ipam: { type: "host-local" } } },
    {
      config: {
        ...COMMON,
        type: "ipvlan",
        mode: "l3",
        prevResult: { cniVersion: "1.0.0", interfaces: [{ name: "host0" }], ips: [{ address: "10.1.0.9/24", interface: 0 }] },
      },
    },
  ],
  vlan: [{ config: { ...COMMON, type: "vlan", master: "eth0", vlanId: 100, mtu: 1400, linkInContainer: true, ipam: { type: "host-local" } } }],
  dummy: [{ config: { ...COMMON, type: "dummy", ipam: { type: "host-local" } } }],
  tap: [
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
  ],
  "host-device": [
    { config: { ...COMMON, type: "host-device", device: "eth1", DPDKMode: false, dataDir: "/run/tscni-sample", ipam: { type: "host-local" } } },
    { config: { ...COMMON, type: "host-device", hwaddr: "0a:58:0a:01:00:0d" } },
    { config: { ...COMMON, type: "host-device", kernelpath: "/sys/devices/pci0000:00/0000:00:19.0" } },
    { config: { ...COMMON, type: "host-device", pciBusID: "0000:03:00.1" } },
    { config: { ...COMMON, type: "host-device", runtimeConfig: { deviceID: "0000:03:00.2" } } },
  ],
  flannel: [
    {
      config: {
        ...COMMON,
        type: "flannel",
        subnetFile: "/run/tscni-sample/subnet.env",
        dataDir: "/run/tscni-sample",
        delegate: { type: "bridge", bridge: "cni0", isDefaultGateway: true },
        ipam: { routes: [{ dst: "10.96.0.0/12" }] },
        runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] },
      },
    },
  ],
  "cluster-ipam": [
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
  ],
  dnsname: [
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
  ],
};
