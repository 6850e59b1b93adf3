import assert from "node:assert/strict";
import { test } from "node:test";
import { atStep, kindOfErrno, kindOfText, NetOpError } from "./errors.js";
import { runTool } from "./tools.js";

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
  assert.equal(kindOfText("Error: Exclusivity flag on, cannot modify.", "tc"), "exists");
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

test("an unreachable network is a kind, from the errno and from the tools' words", () => {
  assert.deepEqual([100, 101, 113].map(kindOfErrno), ["unreachable", "unreachable", "unreachable"]);
  assert.equal(kindOfText("RTNETLINK answers: Network is unreachable", "ip"), "unreachable");
  assert.equal(kindOfText("RTNETLINK answers: No route to host", "ip"), "unreachable");
});

test("tc's and conntrack's own words for a thing that is not there (or is)", () => {
  assert.equal(kindOfText("Error: Invalid handle.", "tc"), "not-found");
  assert.equal(kindOfText("Error: Cannot delete qdisc with handle of zero.", "tc"), "not-found");
  assert.equal(kindOfText("RTNETLINK answers: Device or resource busy", "tc"), "busy");
  assert.equal(kindOfText("Error: Exclusivity flag on, cannot modify.", "tc"), "exists");
  assert.equal(kindOfText("conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.", "conntrack"), "not-found");
  assert.equal(kindOfText("conntrack v1.4.7 (conntrack-tools): 3 flow entries have been deleted.", "conntrack"), "other");
});

test("a tool that cannot be run is the kind tool-missing, whatever its words", async () => {
  await assert.rejects(runTool("tscni-no-such-tool-x", ["a"], "run a tool that is not there"), (e: unknown) => {
    assert.ok(e instanceof NetOpError);
    assert.equal(e.kind, "tool-missing");
    assert.match(e.message, /^run a tool that is not there: cannot run tscni-no-such-tool-x: no executable/);
    return true;
  });
});

test("a tool's failure keeps its exit status and its words' kind; nsenter's is the kind of the tool it ran", async () => {
  await assert.rejects(runTool("sh", ["-c", "echo 'RTNETLINK answers: File exists' >&2; exit 2"], "add x"), {
    name: "NetOpError",
    kind: "exists",
    exitCode: 2,
    reason: "RTNETLINK answers: File exists",
  });
});

test("atStep names the failed step of a batch once: the innermost step wins", () => {
  const e = new NetOpError("set up x", "RTNETLINK answers: File exists");
  assert.throws(
    () => atStep(3)(e),
    (thrown: unknown) => thrown instanceof NetOpError && thrown.step === 3 && thrown.kind === "exists",
  );
  const named = new NetOpError("set up x", "x", 2, undefined, "exists", 1);
  assert.throws(
    () => atStep(3)(named),
    (thrown: unknown) => thrown === named,
  );
  const other = new Error("not a net error");
  assert.throws(
    () => atStep(3)(other),
    (thrown: unknown) => thrown === other,
  );
});
