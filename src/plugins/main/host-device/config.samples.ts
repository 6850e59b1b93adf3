/** Valid configs of host-device using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  { config: { ...COMMON, type: "host-device", device: "eth1", DPDKMode: false, dataDir: "/run/tscni-sample", ipam: { type: "host-local" } } },
  { config: { ...COMMON, type: "host-device", hwaddr: "0a:58:0a:01:00:0d" } },
  { config: { ...COMMON, type: "host-device", kernelpath: "/sys/devices/pci0000:00/0000:00:19.0" } },
  { config: { ...COMMON, type: "host-device", pciBusID: "0000:03:00.1" } },
  { config: { ...COMMON, type: "host-device", runtimeConfig: { deviceID: "0000:03:00.2" } } },
];
