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

test("what the kernel does not support is a kind: its errno, iproute2's words, ip's for a generic netlink family it lacks", () => {
  assert.deepEqual([93, 95, 97].map(kindOfErrno), ["unsupported", "unsupported", "unsupported"]);
  assert.equal(kindOfText("RTNETLINK answers: Operation not supported", "ip"), "unsupported");
  // `ip mptcp` without the mptcp_pm family: the controller's ENOENT, then ip's own line.
  assert.equal(kindOfText("RTNETLINK answers: No such file or directory\nError talking to the kernel", "ip"), "unsupported");
  // tc says "We have an error talking to the kernel" after any refusal: the refusal's kind stands.
  assert.equal(kindOfText("RTNETLINK answers: File exists\nWe have an error talking to the kernel", "tc"), "exists");
  // `ip mptcp endpoint add` of an address that is an endpoint already.
  assert.equal(kindOfText("Error: too many addresses or duplicate one: -17.", "ip"), "exists");
  assert.equal(kindOfText("Call failed: ZONE_ALREADY_SET: 10.0.0.9/32", "busctl"), "exists");
});

test("a failed line of iproute2's -batch is the error's step; the reason is the tool's other lines", async () => {
  const batch = "echo 'RTNETLINK answers: File exists' >&2; echo 'Command failed -:2' >&2; exit 1";
  await assert.rejects(runTool("sh", ["-c", batch, "-batch"], "add routes"), {
    name: "NetOpError",
    kind: "exists",
    step: 1,
    reason: "RTNETLINK answers: File exists",
  });
  await assert.rejects(runTool("sh", ["-c", "echo 'Command failed -:2' >&2; exit 1"], "not a batch"), (e: unknown) => {
    assert.ok(e instanceof NetOpError);
    assert.equal(e.step, undefined);
    return true;
  });
});
