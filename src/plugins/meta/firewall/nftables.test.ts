import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { nftIPMasqComment } from "#net/firewall/ipmasq.js";
import { nftAddressRules, nftAllowScript, nftAttachmentComment } from "./nftables.js";

const h16 = (s: string) => createHash("sha512").update(s).digest("hex").slice(0, 16);

describe("the firewall plugin's nftables table", () => {
  test("attachment comments: network hash, attachment hash, readable rest (the ipMasq scheme)", () => {
    const c = nftAttachmentComment("net1", "eth0", "ctr1");
    assert.equal(c, `${h16("net1")}-${h16("eth0:ctr1")}, net: net1, if: eth0, id: ctr1`);
    assert.equal(c, nftIPMasqComment("net1", "eth0", "ctr1"));
    assert.ok(nftAttachmentComment("n", "eth0", "x".repeat(300)).length <= 128);
    assert.doesNotMatch(nftAttachmentComment('a"b', "eth0", "c"), /"/);
  });

  test("two rules per address, ip or ip6", () => {
    assert.deepEqual(nftAddressRules(["10.1.0.5/24", "fd00::5/64"]), [
      "ip daddr 10.1.0.5 ct state established,related accept",
      "ip saddr 10.1.0.5 accept",
      "ip6 daddr fd00::5 ct state established,related accept",
      "ip6 saddr fd00::5 accept",
    ]);
  });

  test("ADD script: structure, rewritten static chains, stale rules out, new rules and policy sets in", () => {
    const script = nftAllowScript(
      { network: "n", ifName: "eth0", containerID: "c", addresses: ["10.1.0.5/24"], isolation: { bridge: "br0", policy: "isolated" } },
      [7, 9],
    );
    const lines = script.trim().split("\n");
    const T = "inet cni_plugins_firewall";
    assert.equal(lines[0], `add table ${T}`);
    assert.ok(lines.includes(`add chain ${T} forward { type filter hook forward priority filter ; policy accept ; }`));
    const flush = lines.indexOf(`flush chain ${T} forward`);
    assert.deepEqual(lines.slice(flush + 1, flush + 4), [
      `add rule ${T} forward jump ingress_policy`,
      `add rule ${T} forward jump admin comment "CNI firewall plugin admin overrides"`,
      `add rule ${T} forward jump containers comment "CNI firewall plugin rules"`,
    ]);
    assert.ok(!lines.some((l) => l.startsWith(`flush chain ${T} admin`)), "the admin chain is never flushed");
    assert.ok(lines.indexOf(`delete rule ${T} containers handle 7`) < lines.findIndex((l) => l.includes("ip daddr 10.1.0.5")));
    assert.ok(lines.includes(`add rule ${T} containers ip saddr 10.1.0.5 accept comment "${nftAttachmentComment("n", "eth0", "c")}"`));
    assert.deepEqual(lines.slice(-3), [
      `add element ${T} ingress_policy_bridges { "br0" }`,
      `add element ${T} same_bridge { "br0" . "br0" }`,
      `add element ${T} isolated_same_bridge { "br0" . "br0" }`,
    ]);
    const sameBridge = nftAllowScript(
      { network: "n", ifName: "eth0", containerID: "c", addresses: [], isolation: { bridge: "br0", policy: "same-bridge" } },
      [],
    );
    assert.doesNotMatch(sameBridge, /add element .* isolated_same_bridge/);
    assert.doesNotMatch(nftAllowScript({ network: "n", ifName: "eth0", containerID: "c", addresses: [] }, []), /add element/);
  });
});
