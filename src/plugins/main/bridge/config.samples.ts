/** Valid configs of bridge using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
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
];
