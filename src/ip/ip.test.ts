import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { canonicalCIDR, canonicalIP, cidrContains, ipFamily, ipFromBytes, networkOf, parseCIDR, parseIP, tryParseCIDR, tryParseIP } from "./ip.js";

describe("parseCIDR (Go types.ParseCIDR, checklist 0.7 / 6.2)", () => {
  test("1.2.3.4/24 keeps the host bits", () => {
    const c = parseCIDR("1.2.3.4/24");
    assert.equal(c.text, "1.2.3.4/24");
    assert.equal(c.ip.text, "1.2.3.4");
    assert.equal(c.ip.family, 4);
    assert.deepEqual([...c.ip.bytes], [1, 2, 3, 4]);
    assert.equal(c.prefix, 24);
  });
  test("2001:db8::/32", () => {
    const c = parseCIDR("2001:db8::/32");
    assert.equal(c.text, "2001:db8::/32");
    assert.equal(c.prefix, 32);
    assert.equal(c.ip.family, 6);
    assert.equal(c.ip.bytes.length, 16);
  });
  for (const bad of [
    "1.2.3/45",
    "1.2.3.4/99",
    "1.2.3.4/33",
    "::1/129",
    "1.2.3.4",
    "1.2.3.4/",
    "/24",
    "",
    "1.2.3.4/-1",
    "1.2.3.4/2a",
    "foo/24",
    "01.2.3.4/24",
    "fe80::1%eth0/64",
    "1.2.3.4/24/1",
    "1.2.3.4 /24",
  ]) {
    test(`${JSON.stringify(bad)} => invalid CIDR address`, () => {
      assert.throws(() => parseCIDR(bad), { message: `invalid CIDR address: ${bad}` });
      assert.equal(tryParseCIDR(bad), undefined);
    });
  }
  const canon: Array<[string, string]> = [
    ["10.1.2.3/24", "10.1.2.3/24"],
    ["15.5.6.0/24", "15.5.6.0/24"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    ["1.2.3.4/32", "1.2.3.4/32"],
    ["abcd:1234:ffff::cdde/64", "abcd:1234:ffff::cdde/64"],
    ["ABCD:1234:FFFF:0:0:0:0:CDDE/64", "abcd:1234:ffff::cdde/64"],
    ["1111:dddd::/80", "1111:dddd::/80"],
    ["::/0", "::/0"],
    ["2001:db8:0:0:1:0:0:1/128", "2001:db8::1:0:0:1/128"],
    ["::ffff:1.2.3.4/120", "1.2.3.4/24"], // IPv4-mapped: printed as IPv4 with prefix-96
    ["::ffff:1.2.3.4/90", "1.2.3.4/0"],
    ["1.2.3.4/024", "1.2.3.4/24"], // Go's dtoi accepts leading zeros in the prefix
    ["1.2.3.4/000000000000024", "1.2.3.4/24"], // ... any number of them
  ];
  for (const [input, out] of canon) {
    test(`${input} => ${out}`, () => assert.equal(canonicalCIDR(input), out));
  }
});

describe("parseIP (Go net.ParseIP + String)", () => {
  const canon: Array<[string, string]> = [
    ["1.2.3.4", "1.2.3.4"],
    ["0.0.0.0", "0.0.0.0"],
    ["255.255.255.255", "255.255.255.255"],
    ["::", "::"],
    ["::1", "::1"],
    ["1::", "1::"],
    ["ABCD::0:0:1", "abcd::1"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["1:0:1:1:1:1:1:1", "1:0:1:1:1:1:1:1"], // a single zero group is not compressed
    ["1:0:0:1:0:0:1:1", "1::1:0:0:1:1"], // first of equal runs
    ["1:0:0:1:0:0:0:1", "1:0:0:1::1"], // longest run
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
    ["::ffff:1.2.3.4", "1.2.3.4"], // IPv4-mapped printed as IPv4
    ["0:0:0:0:0:ffff:102:304", "1.2.3.4"],
    ["::ffff:0:0", "0.0.0.0"],
    ["::1.2.3.4", "::102:304"], // IPv4-compatible (not mapped) stays IPv6
    ["64:ff9b::1.2.3.4", "64:ff9b::102:304"],
    ["1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"],
    ["::1:2:3:4:5:6:7", "0:1:2:3:4:5:6:7"], // "::" standing for one field; one zero field is printed as 0
    ["0000:0000:0000:0000:0000:0000:0000:0001", "::1"],
    ["::FFFF:10.0.0.1", "10.0.0.1"],
    ["fe80::", "fe80::"],
    ["1:0:0:0:1:0:0:0", "1::1:0:0:0"], // equal runs: the leftmost
  ];
  for (const [input, out] of canon) {
    test(`${input} => ${out}`, () => assert.equal(canonicalIP(input), out));
  }
  for (const bad of [
    "1.2.3",
    "1.2.3.256",
    "01.2.3.4",
    "1.2.3.4.5",
    "1.2.3.x",
    "1.2.3.0/24",
    "fe80::1%eth0",
    ":::",
    "1::2::3",
    "1:2:3:4:5:6:7:8:9",
    "12345::",
    "::1.2.3",
    "::01.2.3.4",
    "",
    " 1.2.3.4",
    "0x1.2.3.4",
    // Go's netip: "::" must stand for at least one field, an IPv4 tail is the last 32 bits, no stray colons
    "1:2:3:4:5:6:7:8::",
    "1::2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7:1.2.3.4",
    "1:2:3:4:5:1.2.3.4",
    "::1.2.3.4.5",
    ":1::",
    "1:",
    "1::2:",
    "1.2.3.4.",
    ".1.2.3",
    "1..2.3",
    "255.255.255.256",
    "1.2.3.4%eth0",
    "00000::1",
    "1.2.3.04",
    "12",
  ]) {
    test(`${JSON.stringify(bad)} => invalid IP address`, () => {
      assert.throws(() => parseIP(bad), { message: `invalid IP address: ${bad}` });
      assert.equal(tryParseIP(bad), undefined);
    });
  }
  test("families and bytes", () => {
    assert.equal(parseIP("1.2.3.4").family, 4);
    assert.equal(parseIP("::ffff:1.2.3.4").family, 4);
    assert.deepEqual([...parseIP("::ffff:1.2.3.4").bytes], [1, 2, 3, 4]);
    assert.equal(parseIP("::1.2.3.4").family, 6);
    assert.deepEqual([...parseIP("::1").bytes], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  });
});

describe("ipFamily, networkOf, cidrContains, ipFromBytes", () => {
  test("ipFamily of IPs and CIDRs (To4 semantics)", () => {
    assert.equal(ipFamily("1.2.3.4"), 4);
    assert.equal(ipFamily("1.2.3.0/24"), 4);
    assert.equal(ipFamily("::ffff:1.2.3.4/120"), 4);
    assert.equal(ipFamily("abcd::1"), 6);
    assert.equal(ipFamily("1111:dddd::/80"), 6);
    assert.throws(() => ipFamily("nope"), { message: "invalid IP address: nope" });
    assert.throws(() => ipFamily("nope/1"), { message: "invalid CIDR address: nope/1" });
  });
  test("networkOf zeroes the host bits", () => {
    assert.equal(networkOf(parseCIDR("10.1.2.3/24")).text, "10.1.2.0/24");
    assert.equal(networkOf(parseCIDR("10.1.2.3/32")).text, "10.1.2.3/32");
    assert.equal(networkOf(parseCIDR("10.1.2.3/0")).text, "0.0.0.0/0");
    assert.equal(networkOf(parseCIDR("10.1.2.255/25")).text, "10.1.2.128/25");
    assert.equal(networkOf(parseCIDR("abcd:1234:ffff::cdde/64")).text, "abcd:1234:ffff::/64");
  });
  test("cidrContains", () => {
    const net = parseCIDR("10.1.2.3/24");
    assert.equal(cidrContains(net, parseIP("10.1.2.200")), true);
    assert.equal(cidrContains(net, parseIP("10.1.3.1")), false);
    assert.equal(cidrContains(net, parseIP("::1")), false);
    assert.equal(cidrContains(parseCIDR("1111:dddd::/80"), parseIP("1111:dddd::aaaa")), true);
    assert.equal(cidrContains(parseCIDR("1111:dddd::/80"), parseIP("1111:ddde::1")), false);
  });
  test("ipFromBytes", () => {
    assert.equal(ipFromBytes(Uint8Array.from([192, 168, 0, 1])).text, "192.168.0.1");
    assert.equal(ipFromBytes(Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1])).text, "10.0.0.1");
    assert.equal(ipFromBytes(Uint8Array.from([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])).text, "2001:db8::1");
  });
});
