/**
 * What the sample configs of every plugin (each plugin folder's `config.samples.ts`) are built from: the keys any
 * plugin's config has, and a prevResult.
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
/** Routes with every key a route has. */
export const ROUTES: JsonValue = [{ dst: "10.9.0.0/16", gw: "10.1.0.254", mtu: 1400, advmss: 1360, priority: 5, table: 100, scope: 0 }];
