import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JsonObject } from "#go-json/json.js";
import { createResult } from "#spec/result/index.js";
import { expectedShape, judgeResult, maskResult, shapeDifferences } from "./shape.js";

const NS = "/run/netns/a";

/** A bridge ADD result at 1.1.0 in namespace `ns`, with this attachment's own address and MACs. */
const bridgeResult = (ns: string, ip: string, macs: [string, string, string], veth: string): JsonObject => ({
  cniVersion: "1.1.0",
  interfaces: [
    { name: "cni0", mac: macs[0] },
    { name: veth, mac: macs[1] },
    { name: "eth0", mac: macs[2], sandbox: ns },
  ],
  ips: [{ interface: 2, address: `${ip}/24`, gateway: "10.1.0.1" }],
  routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }],
  dns: { nameservers: ["10.1.0.53"] },
});
const messages = (r: { problems: Array<{ message: string }> }) => r.problems.map((p) => p.message);

describe("judgeResult", () => {
  test("a valid result of the requested version", () => {
    const r = judgeResult(bridgeResult(NS, "10.1.0.5", ["02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"], "veth1"), "1.1.0", NS);
    assert.deepEqual(r.problems, []);
    assert.equal(r.result!.cniVersion, "1.1.0");
  });

  test("another version's cniVersion; another version's members; decoding errors", () => {
    assert.deepEqual(messages(judgeResult({ cniVersion: "1.0.0", ips: [{ address: "10.1.0.5/24" }] }, "1.1.0", NS)), [
      'the result\'s cniVersion must be the config\'s, "1.1.0"; it is "1.0.0"',
    ]);
    assert.deepEqual(
      messages(judgeResult({ cniVersion: "0.2.0", interfaces: [{ name: "lo" }], ips: [{ interface: 0, address: "127.0.0.1/8" }] }, "0.2.0", NS)),
      ['"interfaces", "ips" are not part of a 0.2.0 result (its members: cniVersion, ip4, ip6, dns)'],
    );
    assert.deepEqual(messages(judgeResult({ cniVersion: "1.1.0", ips: [{ address: "10.1.0.300/24" }] }, "1.1.0", NS)), [
      "not a valid 1.1.0 result: invalid CIDR address: 10.1.0.300/24",
    ]);
    assert.deepEqual(messages(judgeResult({ cniVersion: "0.2.0", ip4: { ip: "fd00::5/64" } }, "0.2.0", NS)), [
      "ip4.ip fd00::5/64 is not an IPv4 address",
    ]);
  });

  test("IP versions: required from 0.3.0 to 0.4.0 and matching the address, gone in 1.x", () => {
    assert.deepEqual(
      messages(judgeResult({ cniVersion: "0.4.0", ips: [{ address: "10.1.0.5/24" }, { version: "4", address: "fd00::5/64" }] }, "0.4.0", NS)),
      ['ips[0] needs "version": "4" or "6" in a 0.3.x/0.4.0 result; got null', "ips[1] says version 4 for the IPv6 address fd00::5/64"],
    );
    assert.deepEqual(messages(judgeResult({ cniVersion: "1.0.0", ips: [{ version: "4", address: "10.1.0.5/24" }] }, "1.0.0", NS)), [
      'ips[0] has "version", which results lost in 1.0.0 (a 0.x shape under a 1.x cniVersion)',
    ]);
  });

  test("references: interface indexes in range (-1 tolerated), sandboxes naming CNI_NETNS", () => {
    const raw = {
      cniVersion: "1.1.0",
      interfaces: [{ name: "eth0", sandbox: "/run/netns/other" }],
      ips: [
        { interface: 1, address: "10.1.0.5/24" },
        { interface: -1, address: "10.1.0.6/24" },
      ],
    };
    assert.deepEqual(messages(judgeResult(raw, "1.1.0", NS)), [
      "ips[0].interface is 1, but the result lists 1 interface(s)",
      'interfaces[0] (eth0) has sandbox "/run/netns/other"; an interface in the container\'s namespace names CNI_NETNS, "/run/netns/a"',
    ]);
  });
});

describe("shapes of one result in other versions", () => {
  const reference = createResult("1.1.0", bridgeResult(NS, "10.1.0.5", ["02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"], "veth1"));

  test("masking keeps what versions decide and hides what attachments differ in", () => {
    assert.deepEqual(maskResult(bridgeResult(NS, "10.1.0.5", ["02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"], "veth1"), NS), {
      cniVersion: "1.1.0",
      interfaces: [
        { name: "<host link>", mac: "<mac>" },
        { name: "<host link>", mac: "<mac>" },
        { name: "eth0", mac: "<mac>", sandbox: "<CNI_NETNS>" },
      ],
      ips: [{ interface: 2, address: "<IPv4>/24", gateway: "<IPv4>" }],
      routes: [{ dst: "<IPv4>/0", gw: "<IPv4>" }],
      dns: { nameservers: ["10.1.0.53"] },
    });
    assert.deepEqual(maskResult({ cniVersion: "0.4.0", dns: {}, ips: [] }, NS), { cniVersion: "0.4.0" });
  });

  test("another attachment's result in an older version, printed right, has the expected shape", () => {
    const other = "/run/netns/b";
    const got040: JsonObject = {
      cniVersion: "0.4.0",
      interfaces: [
        { name: "cni0", mac: "aa:00:00:00:00:01" },
        { name: "veth9", mac: "aa:00:00:00:00:02" },
        { name: "eth0", mac: "aa:00:00:00:00:03", sandbox: other },
      ],
      ips: [{ version: "4", interface: 2, address: "10.1.0.9/24", gateway: "10.1.0.1" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }],
      dns: { nameservers: ["10.1.0.53"] },
    };
    const expected = expectedShape(reference, NS, "0.4.0");
    assert.ok("shape" in expected);
    assert.deepEqual(shapeDifferences(expected.shape, maskResult(got040, other)), []);
    const got020 = {
      cniVersion: "0.2.0",
      ip4: { ip: "10.1.0.9/24", gateway: "10.1.0.1", routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }] },
      dns: { nameservers: ["10.1.0.53"] },
    };
    const e020 = expectedShape(reference, NS, "0.2.0");
    assert.ok("shape" in e020);
    assert.deepEqual(shapeDifferences(e020.shape, maskResult(got020, other)), []);
  });

  test("a 1.x shape printed under an old cniVersion (Go's loopback) is told apart, path by path", () => {
    const lo = createResult("1.0.0", {
      cniVersion: "1.0.0",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: NS }],
      ips: [{ interface: 0, address: "127.0.0.1/8" }],
    });
    const wrong = {
      cniVersion: "0.2.0",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: NS }],
      ips: [{ interface: 0, address: "127.0.0.1/8" }],
      dns: {},
    };
    const expected = expectedShape(lo, NS, "0.2.0");
    assert.ok("shape" in expected);
    assert.deepEqual(shapeDifferences(expected.shape, maskResult(wrong, NS)), [
      'ip4: expected {"ip":"<IPv4>/8"}, got nothing',
      'interfaces: expected nothing, got [{"name":"lo","mac":"<mac>","sandbox":"<CNI_NETNS>"}]',
      'ips: expected nothing, got [{"interface":0,"address":"<IPv4>/8"}]',
    ]);
  });

  test("a result without addresses has no 0.2.0 form: the conversion error says so", () => {
    const noIp = createResult("1.1.0", { cniVersion: "1.1.0", interfaces: [{ name: "eth0", sandbox: NS }] });
    assert.deepEqual(expectedShape(noIp, NS, "0.2.0"), { conversionError: "cannot convert: no valid IP addresses" });
  });
});
