import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseIP } from "#ip/ip.js";
import { isGlobalUnicast } from "#net/link/link-addresses.js";
import { hostContainerRoutes, hostGatewayAddresses, pointToPointRoutes } from "./routing.js";

describe("point-to-point routing", () => {
  test("container routes: the gateway on-link, the subnet through it, both sourced from the address", () => {
    assert.deepEqual(pointToPointRoutes("eth0", { address: "10.1.2.5/24", gateway: "10.1.2.1" }), [
      { dst: "10.1.2.1/32", dev: "eth0", scope: "link", src: "10.1.2.5" },
      { dst: "10.1.2.0/24", gw: "10.1.2.1", dev: "eth0", src: "10.1.2.5" },
    ]);
    assert.deepEqual(pointToPointRoutes("eth0", { address: "fd00:1::5/64", gateway: "fd00:1::1" }), [
      { dst: "fd00:1::1/128", dev: "eth0", scope: "link", src: "fd00:1::5" },
      { dst: "fd00:1::/64", gw: "fd00:1::1", dev: "eth0", src: "fd00:1::5" },
    ]);
  });

  test("host side: gateways as host addresses (once each), container addresses as host-scope routes", () => {
    const addrs = [
      { address: "10.1.2.5/24", gateway: "10.1.2.1" },
      { address: "10.1.3.5/24", gateway: "10.1.2.1" },
      { address: "fd00:1::5/64", gateway: "fd00:1::1" },
    ];
    assert.deepEqual(hostGatewayAddresses(addrs), ["10.1.2.1/32", "fd00:1::1/128"]);
    assert.deepEqual(hostContainerRoutes("veth1234abcd", addrs), [
      { dst: "10.1.2.5/32", dev: "veth1234abcd", scope: "host" },
      { dst: "10.1.3.5/32", dev: "veth1234abcd", scope: "host" },
      { dst: "fd00:1::5/128", dev: "veth1234abcd", scope: "host" },
    ]);
  });

  test("isGlobalUnicast follows Go's net.IP.IsGlobalUnicast", () => {
    for (const a of ["10.0.0.1", "192.168.1.1", "8.8.8.8", "fd00::1", "2001:db8::1", "240.0.0.1"]) assert.ok(isGlobalUnicast(parseIP(a)), a);
    for (const a of ["0.0.0.0", "127.0.0.1", "169.254.1.1", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "ff02::1"]) {
      assert.ok(!isGlobalUnicast(parseIP(a)), a);
    }
  });
});
