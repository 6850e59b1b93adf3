/**
 * Option names, the client identifier, and the IPAM result a DHCPACK gives: address with the mask's
 * prefix, the first router as gateway, routes from option 121 (on-link routes get scope link) or else option
 * 33 plus a default route, DNS from options 6, 15 and 119, and route metrics from `priority`.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Option, parseOptionName } from "./option-codes.js";
import { clientIdOf, clientIdOption, leaseResult } from "./options.js";
import { type DhcpMessage, encodeClasslessRoutes, encodeDomainSearch, ipv4Bytes, newRequest } from "./packet.js";

function ack(options: Array<[number, Uint8Array]>): DhcpMessage {
  const m = newRequest({ xid: 1, chaddr: Uint8Array.of(1, 2, 3, 4, 5, 6) });
  m.yiaddr = "192.168.7.20";
  m.options = new Map(options);
  return m;
}
const MASK: [number, Uint8Array] = [Option.SubnetMask, ipv4Bytes("255.255.252.0")];
const ROUTER: [number, Uint8Array] = [Option.Router, Uint8Array.from([...ipv4Bytes("192.168.4.1"), ...ipv4Bytes("192.168.4.2")])];

describe("option names", () => {
  test("upstream's names, decimal numbers 0-255, nothing else", () => {
    assert.equal(parseOptionName("routers"), 3);
    assert.equal(parseOptionName("dhcp-client-identifier"), 61);
    assert.equal(parseOptionName("vendor-class-identifier"), 60);
    assert.equal(parseOptionName("user-class"), 77);
    assert.equal(parseOptionName("121"), 121);
    assert.equal(parseOptionName("007"), 7);
    for (const bad of ["256", "-1", "0x10", "Routers", "", " 3", "toString", "3.0"]) assert.equal(parseOptionName(bad), undefined, bad);
  });
});

describe("client identifier", () => {
  test("containerID/netName/ifName, sent with type byte 0, cut to 254 bytes", () => {
    assert.equal(clientIdOf("abc", "net", "eth0"), "abc/net/eth0");
    assert.deepEqual([...clientIdOption("a/b/c")], [0, 0x61, 0x2f, 0x62, 0x2f, 0x63]);
    const long = clientIdOf("x".repeat(300), "net", "eth0");
    assert.equal(Buffer.byteLength(long), 254);
    assert.equal(clientIdOption(long).length, 255);
  });
});

describe("the result of a lease", () => {
  test("address, gateway, option 121 routes (scope link without a router), DNS", () => {
    const result = leaseResult(
      ack([
        MASK,
        ROUTER,
        [
          Option.ClasslessStaticRoutes,
          encodeClasslessRoutes([
            { dst: "10.1.0.0/16", router: "192.168.4.254" },
            { dst: "192.168.8.0/24", router: "0.0.0.0" },
          ]),
        ],
        [Option.StaticRoutes, Uint8Array.from([...ipv4Bytes("10.2.0.0"), ...ipv4Bytes("192.168.4.1")])],
        [Option.DomainNameServer, Uint8Array.from([...ipv4Bytes("1.1.1.1"), ...ipv4Bytes("9.9.9.9")])],
        [Option.DomainName, Uint8Array.from(Buffer.from("corp.example"))],
        [Option.DomainSearch, encodeDomainSearch(["corp.example", "example"])],
      ]),
      0,
    );
    assert.deepEqual(result, {
      cniVersion: "1.1.0",
      ips: [{ address: "192.168.7.20/22", gateway: "192.168.4.1" }],
      routes: [
        { dst: "10.1.0.0/16", gw: "192.168.4.254" },
        { dst: "192.168.8.0/24", scope: 253 },
      ],
      dns: { nameservers: ["1.1.1.1", "9.9.9.9"], domain: "corp.example", search: ["corp.example", "example"] },
    });
  });

  test("without option 121: option 33 routes and a default route via the router; priority on every route", () => {
    const result = leaseResult(
      ack([MASK, ROUTER, [Option.StaticRoutes, Uint8Array.from([...ipv4Bytes("10.2.0.0"), ...ipv4Bytes("192.168.4.9")])]]),
      50,
    );
    assert.deepEqual(result.routes, [
      { dst: "10.2.0.0/8", gw: "192.168.4.9", priority: 50 },
      { dst: "0.0.0.0/0", gw: "192.168.4.1", priority: 50 },
    ]);
    assert.equal(result.dns, undefined);
  });

  test("a malformed option 121 is ignored as the RFC says; no router, no default route", () => {
    const result = leaseResult(ack([MASK, [Option.ClasslessStaticRoutes, Uint8Array.of(40, 1, 2)]]), 0);
    assert.deepEqual(result.routes, []);
    assert.deepEqual(result.ips, [{ address: "192.168.7.20/22" }]);
  });

  test("no subnet mask is an error, as upstream; a broken mask too", () => {
    assert.throws(() => leaseResult(ack([ROUTER]), 0), /Subnet Mask not found/);
    assert.throws(() => leaseResult(ack([[Option.SubnetMask, ipv4Bytes("255.0.255.0")]]), 0), /not contiguous/);
  });
});
