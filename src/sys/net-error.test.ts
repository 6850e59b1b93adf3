import { test } from "node:test";
import assert from "node:assert/strict";
import { kindOfErrno, kindOfText, NetOpError } from "./exec.js";

test("a kernel errno gives the kind, whatever the words", () => {
  assert.deepEqual([2, 3, 19, 17, 16, 1, 13, 22].map(kindOfErrno), [
    "not-found",
    "not-found",
    "not-found",
    "exists",
    "busy",
    "denied",
    "denied",
    "other",
  ]);
  const e = new NetOpError("delete link x", "an unusual text", 2, undefined, kindOfErrno(19));
  assert.equal(e.kind, "not-found");
  assert.equal(e.isNotFound, true);
  assert.equal(e.isExists, false);
});

test("a tool's words give the kind through its table, then the words any tool uses", () => {
  assert.equal(kindOfText('Cannot find device "veth0"', "ip"), "not-found");
  assert.equal(kindOfText("RTNETLINK answers: File exists", "ip"), "exists");
  assert.equal(kindOfText("RTNETLINK answers: Device or resource busy", "tc"), "busy");
  assert.equal(kindOfText("iptables: No chain/target/match by that name.", "iptables"), "not-found");
  assert.equal(kindOfText("iptables: Bad rule (does a matching rule exist in that chain?).", "ip6tables"), "not-found");
  assert.equal(kindOfText("iptables: Chain already exists.", "iptables"), "exists");
  assert.equal(kindOfText("Error: Could not process rule: No such file or directory", "nft"), "not-found");
  assert.equal(kindOfText("Error: Could not process rule: Operation not permitted", "nft"), "denied");
  assert.equal(kindOfText("something else went wrong", "ip"), "other");
  // A tool without a table, and an error no tool printed: the words any tool uses.
  assert.equal(kindOfText("conntrack v1.4.7 (conntrack-tools): Operation failed: such conntrack does not exist", "conntrack"), "not-found");
  assert.equal(new NetOpError("look up x", "no such file or directory").kind, "not-found");
  assert.equal(new NetOpError("look up x", "refused").kind, "other");
});
