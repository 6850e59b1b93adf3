/**
 * The delegate config flannel renders, byte for byte as the flannel-io plugin's json.Marshal writes it (keys of
 * maps sorted, routes in types.Route's field order), for a table of subnet.env files and flannel configs.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadFlannelConf } from "./config.js";
import { renderDelegateBytes } from "./render.js";
import { parseSubnetEnv } from "./subnet-env.js";

const IPV4_ENV = "FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\nFLANNEL_MTU=1472\nFLANNEL_IPMASQ=true\n";
const DUAL_ENV =
  "FLANNEL_NETWORK=10.244.0.0/16,10.245.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_IPV6_NETWORK=fd00:10:244::/56\n" +
  "FLANNEL_IPV6_SUBNET=fd00:10:244:3::1/64\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n";
const IPV6_ENV = "FLANNEL_IPV6_NETWORK=fd00::/48\nFLANNEL_IPV6_SUBNET=fd00:0:0:7::/64\nFLANNEL_MTU=1280\nFLANNEL_IPMASQ=true\n";

const CASES: Array<{ name: string; env: string; config: Record<string, unknown>; delegate: string }> = [
  {
    name: "the README's example: bridge, host-local, the route to the flannel network",
    env: IPV4_ENV,
    config: { cniVersion: "1.0.0", name: "mynet", type: "flannel" },
    delegate:
      '{"cniVersion":"1.0.0","ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.1.17.0/24"}]],"routes":[{"dst":"10.1.0.0/16"}],' +
      '"type":"host-local"},"isGateway":true,"mtu":1472,"name":"mynet","type":"bridge"}',
  },
  {
    name: "no cniVersion: none is set on the delegate",
    env: IPV4_ENV,
    config: { name: "mynet", type: "flannel" },
    delegate:
      '{"ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.1.17.0/24"}]],"routes":[{"dst":"10.1.0.0/16"}],' +
      '"type":"host-local"},"isGateway":true,"mtu":1472,"name":"mynet","type":"bridge"}',
  },
  {
    name: "dual stack, flanneld not masquerading: one range set per family, a route per network, the delegate masquerades",
    env: DUAL_ENV,
    config: { cniVersion: "0.3.1", name: "cbr0", type: "flannel", delegate: { hairpinMode: true, isDefaultGateway: true } },
    delegate:
      '{"cniVersion":"0.3.1","hairpinMode":true,"ipMasq":true,"ipam":{"ranges":[[{"subnet":"10.244.3.0/24"}],[{"subnet":"fd00:10:244:3::/64"}]],' +
      '"routes":[{"dst":"10.244.0.0/16"},{"dst":"10.245.0.0/16"},{"dst":"fd00:10:244::/56"}],"type":"host-local"},' +
      '"isDefaultGateway":true,"isGateway":true,"mtu":1450,"name":"cbr0","type":"bridge"}',
  },
  {
    name: "IPv6 only",
    env: IPV6_ENV,
    config: { cniVersion: "1.0.0", name: "v6", type: "flannel" },
    delegate:
      '{"cniVersion":"1.0.0","ipMasq":false,"ipam":{"ranges":[[{"subnet":"fd00:0:0:7::/64"}]],"routes":[{"dst":"fd00::/48"}],' +
      '"type":"host-local"},"isGateway":true,"mtu":1280,"name":"v6","type":"bridge"}',
  },
  {
    name: "the delegate's own ipMasq, mtu and isGateway are kept; cniVersion is the config's",
    env: IPV4_ENV,
    config: {
      cniVersion: "1.0.0",
      name: "n",
      type: "flannel",
      delegate: { ipMasq: true, mtu: 1400, isGateway: false, cniVersion: "0.4.0", bridge: "mynet0" },
    },
    delegate:
      '{"bridge":"mynet0","cniVersion":"1.0.0","ipMasq":true,"ipam":{"ranges":[[{"subnet":"10.1.17.0/24"}]],"routes":[{"dst":"10.1.0.0/16"}],' +
      '"type":"host-local"},"isGateway":false,"mtu":1400,"name":"n","type":"bridge"}',
  },
  {
    name: "another delegate type gets no isGateway",
    env: IPV4_ENV,
    config: { cniVersion: "1.0.0", name: "n", type: "flannel", delegate: { type: "ipvlan", master: "eth0" } },
    delegate:
      '{"cniVersion":"1.0.0","ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.1.17.0/24"}]],"routes":[{"dst":"10.1.0.0/16"}],' +
      '"type":"host-local"},"master":"eth0","mtu":1472,"name":"n","type":"ipvlan"}',
  },
  {
    name: "the config's ipam is the base: its type and keys kept, ranges replaced, its routes first (as types.Route)",
    env: IPV4_ENV,
    config: {
      cniVersion: "1.0.0",
      name: "n",
      type: "flannel",
      ipam: {
        type: "static-ish",
        dataDir: "/var/lib/x",
        ranges: [[{ subnet: "192.168.0.0/24" }]],
        routes: [
          { dst: "10.96.0.1/12", gw: "10.1.17.254", priority: 5, mtu: 0, table: 0, unknown: 1 },
          { dst: "FD00::/8", scope: 253 },
        ],
      },
    },
    delegate:
      '{"cniVersion":"1.0.0","ipMasq":false,"ipam":{"dataDir":"/var/lib/x","ranges":[[{"subnet":"10.1.17.0/24"}]],' +
      '"routes":[{"dst":"10.96.0.1/12","gw":"10.1.17.254","priority":5,"table":0},{"dst":"fd00::/8","scope":253},{"dst":"10.1.0.0/16"}],' +
      '"type":"static-ish"},"isGateway":true,"mtu":1472,"name":"n","type":"bridge"}',
  },
  {
    name: "runtimeConfig is copied to the delegate (replacing the delegate's own); Go's HTML-safe escaping and number forms",
    env: IPV4_ENV,
    config: {
      cniVersion: "1.0.0",
      name: "n",
      type: "flannel",
      delegate: { runtimeConfig: { old: true }, note: "a<b&c", big: 1e21, small: 1e-7, float: 1.5 },
      runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] },
    },
    delegate:
      '{"big":1e+21,"cniVersion":"1.0.0","float":1.5,"ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.1.17.0/24"}]],"routes":[{"dst":"10.1.0.0/16"}],' +
      '"type":"host-local"},"isGateway":true,"mtu":1472,"name":"n","note":"a\\u003cb\\u0026c",' +
      '"runtimeConfig":{"portMappings":[{"containerPort":80,"hostPort":8080,"protocol":"tcp"}]},"small":1e-7,"type":"bridge"}',
  },
];

describe("flannel renders the delegate config as the flannel-io plugin does", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const n = loadFlannelConf(Buffer.from(JSON.stringify(c.config)));
      const env = parseSubnetEnv(c.env, "/run/flannel/subnet.env");
      assert.equal(renderDelegateBytes(n, env).toString(), c.delegate);
    });
  }
});
