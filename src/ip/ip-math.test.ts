import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCIDR, parseIP } from "./ip.js";
import { compareIP, firstAddress, hasHostBits, intervalsOverlap, ipEqual, ipFromBigInt, ipToBigInt, lastAddress, nextIP, prevIP } from "./ip-math.js";

const ip = parseIP;

describe("ip-math", () => {
  test("integers round-trip in both families", () => {
    assert.equal(ipToBigInt(ip("10.0.0.1")), 0x0a000001n);
    assert.equal(ipFromBigInt(0x0a000001n, 4)!.text, "10.0.0.1");
    assert.equal(ipFromBigInt((1n << 128n) - 1n, 6)!.text, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    assert.equal(ipFromBigInt(1n << 32n, 4), undefined);
    assert.equal(ipFromBigInt(-1n, 6), undefined);
  });
  test("next and previous addresses carry across bytes and stop at the ends", () => {
    assert.equal(nextIP(ip("10.0.0.255"))!.text, "10.0.1.0");
    assert.equal(prevIP(ip("10.0.1.0"))!.text, "10.0.0.255");
    assert.equal(nextIP(ip("fd00::ffff"))!.text, "fd00::1:0");
    assert.equal(nextIP(ip("255.255.255.255")), undefined);
    assert.equal(prevIP(ip("0.0.0.0")), undefined);
  });
  test("compare and equality", () => {
    assert.ok(compareIP(ip("10.0.0.2"), ip("10.0.0.10")) < 0);
    assert.equal(compareIP(ip("fd00::1"), ip("fd00:0::1")), 0);
    assert.throws(() => compareIP(ip("10.0.0.1"), ip("fd00::1")), /cannot compare/);
    assert.ok(ipEqual(ip("::ffff:10.0.0.1"), ip("10.0.0.1")));
    assert.ok(!ipEqual(ip("10.0.0.1"), undefined));
  });
  test("first and last address of a CIDR", () => {
    assert.equal(firstAddress(parseCIDR("10.1.2.3/16")).text, "10.1.0.0");
    assert.equal(lastAddress(parseCIDR("10.1.2.3/16")).text, "10.1.255.255");
    assert.equal(lastAddress(parseCIDR("fd00::/64")).text, "fd00::ffff:ffff:ffff:ffff");
    assert.equal(lastAddress(parseCIDR("10.0.0.0/0")).text, "255.255.255.255");
    assert.ok(hasHostBits(parseCIDR("10.0.0.1/24")));
    assert.ok(!hasHostBits(parseCIDR("10.0.0.0/24")));
    assert.ok(!hasHostBits(parseCIDR("10.0.0.1/32")));
  });
  test("interval overlap is inclusive and per family", () => {
    assert.ok(intervalsOverlap(ip("10.0.0.1"), ip("10.0.0.10"), ip("10.0.0.10"), ip("10.0.0.20")));
    assert.ok(intervalsOverlap(ip("10.0.0.1"), ip("10.0.0.100"), ip("10.0.0.10"), ip("10.0.0.20")));
    assert.ok(!intervalsOverlap(ip("10.0.0.1"), ip("10.0.0.9"), ip("10.0.0.10"), ip("10.0.0.20")));
    assert.ok(!intervalsOverlap(ip("10.0.0.1"), ip("10.0.0.9"), ip("fd00::1"), ip("fd00::9")));
  });
});
