import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { nftIPMasqComment } from "./firewall/ipmasq.js";
import { attachmentComment, hashWithPrefix, ipMasqChainName, randomVethName } from "./names.js";

// Expected values observed from the Go 1.1.1 plugins on this machine (plugins-matrix §1.4 and §7).
describe("object names shared with the Go plugins", () => {
  test("the ipMasq chain is CNI- + sha512(network + containerID), 28 characters", () => {
    assert.equal(ipMasqChainName("rtestnet", "rtestcid0123456789"), "CNI-c723d1892dbba901e937f676");
    assert.equal(ipMasqChainName("rtestnet", "rtestcid0123456789").length, 28);
  });
  test("the hash has no separator between its inputs (Go's quirk, kept for compatibility)", () => {
    assert.equal(ipMasqChainName("a", "bc"), ipMasqChainName("ab", "c"));
  });
  test("hashWithPrefix truncates the whole name", () => {
    assert.equal(hashWithPrefix(15, "bwp", "rtestnetrtestcid0123456789"), "bwpc723d1892dbb");
    assert.equal(hashWithPrefix(28, "CNI-DN-", "rtestnetrtestcid0123456789"), "CNI-DN-c723d1892dbba901e937f");
  });
  test("the iptables comment is Go's %q of both values", () => {
    assert.equal(attachmentComment("rtestnet", "rtestcid0123456789"), 'name: "rtestnet" id: "rtestcid0123456789"');
  });
  test("the nft masquerade comment: network hash, attachment hash, readable tail, at most 128 characters", () => {
    const c = nftIPMasqComment("net1", "eth0", "ctr1");
    assert.match(c, /^[0-9a-f]{16}-[0-9a-f]{16}, net: net1, if: eth0, id: ctr1$/);
    assert.equal(c.slice(0, 16), nftIPMasqComment("net1", "eth1", "other").slice(0, 16), "the first hash is the network's");
    assert.notEqual(c.slice(17, 33), nftIPMasqComment("net1", "eth1", "ctr1").slice(17, 33));
    assert.equal(nftIPMasqComment('n"et', "eth0", "c").includes('"'), false, "double quotes are stripped");
    assert.equal(nftIPMasqComment("n", "eth0", "x".repeat(200)).length, 128);
  });
  test("host veth names are veth + 8 hex digits", () => {
    const names = new Set(Array.from({ length: 50 }, randomVethName));
    for (const n of names) assert.match(n, /^veth[0-9a-f]{8}$/);
    assert.ok(names.size > 45);
  });
});
