import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type IptablesRule, saveLine, saveQuote, TableListing } from "#net/firewall/iptables-rules.js";
import { addressRules, firewallPlan, hostCidr, isolationRules, jumpRules } from "./iptables.js";

const lines = (rules: IptablesRule[]) => rules.map((r) => `${r.position === "first" ? "I" : "A"} ${saveLine(r.chain, r.args)}`);

describe("the Go firewall plugin's iptables rules", () => {
  test("per address: replies to it and everything from it, as /32 or /128", () => {
    assert.equal(hostCidr("10.1.0.5/24"), "10.1.0.5/32");
    assert.equal(hostCidr("fd00:0:0::5/64"), "fd00::5/128");
    assert.deepEqual(
      addressRules(["10.1.0.5/24"]).map((r) => saveLine(r.chain, r.args)),
      ["-A CNI-FORWARD -d 10.1.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", "-A CNI-FORWARD -s 10.1.0.5/32 -j ACCEPT"],
    );
  });

  test("jumps: FORWARD to CNI-FORWARD and CNI-FORWARD to the admin chain, both inserted first", () => {
    assert.deepEqual(lines(jumpRules("MY-ADMIN")), [
      'I -A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      'I -A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j MY-ADMIN',
    ]);
  });

  test("plan per family: chains, jumps, then the addresses of that family only", () => {
    const plan = firewallPlan({ addresses: ["10.1.0.5/24", "fd00::5/64", "10.2.0.5/24"], adminChain: "CNI-ADMIN" });
    assert.deepEqual([...plan.keys()], [4, 6]);
    assert.deepEqual(plan.get(4)!.chains, ["CNI-FORWARD", "CNI-ADMIN"]);
    assert.deepEqual(
      plan
        .get(4)!
        .rules.slice(2)
        .map((r) => r.args[1]),
      ["10.1.0.5/32", "10.1.0.5/32", "10.2.0.5/32", "10.2.0.5/32"],
    );
    assert.deepEqual(
      plan
        .get(6)!
        .rules.slice(2)
        .map((r) => r.args[1]),
      ["fd00::5/128", "fd00::5/128"],
    );
    const isolationOnly = firewallPlan({
      addresses: ["10.1.0.5/24"],
      adminChain: "CNI-ADMIN",
      forward: false,
      isolation: { bridge: "cni0", policy: "same-bridge" },
    });
    assert.deepEqual(isolationOnly.get(4)!.chains, ["CNI-ISOLATION-STAGE-1", "CNI-ISOLATION-STAGE-2"]);
    assert.ok(isolationOnly.get(4)!.rules.every((r) => r.chain !== "CNI-FORWARD"));
  });

  test("ingressPolicy same-bridge: the upstream order and comments", () => {
    assert.deepEqual(lines(isolationRules("cni0", "same-bridge")), [
      'I -A FORWARD -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j CNI-ISOLATION-STAGE-1',
      'I -A CNI-ISOLATION-STAGE-1 -i cni0 ! -o cni0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j CNI-ISOLATION-STAGE-2',
      'A -A CNI-ISOLATION-STAGE-1 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j RETURN',
      'I -A CNI-ISOLATION-STAGE-2 -o cni0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j DROP',
      'A -A CNI-ISOLATION-STAGE-2 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j RETURN',
    ]);
  });

  test("ingressPolicy isolated adds the same-bridge drop", () => {
    const rules = lines(isolationRules("cni0", "isolated"));
    assert.equal(rules.length, 6);
    assert.equal(
      rules[2],
      'I -A CNI-ISOLATION-STAGE-1 -i cni0 -o cni0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j DROP',
    );
    assert.match(rules[1]!, /ingressPolicy: isolated\)" -j CNI-ISOLATION-STAGE-2$/);
  });

  test("Go 1.1.1's older comment on the shared isolation rules counts as the rule being there", () => {
    const old = "CNI firewall plugin rules (ingressPolicy: same-bridge)";
    const snap = new TableListing([
      "-P FORWARD ACCEPT",
      "-N CNI-ISOLATION-STAGE-1",
      "-N CNI-ISOLATION-STAGE-2",
      `-A FORWARD -m comment --comment "${old}" -j CNI-ISOLATION-STAGE-1`,
      `-A CNI-ISOLATION-STAGE-1 -i cni0 ! -o cni0 -m comment --comment "${old}" -j CNI-ISOLATION-STAGE-2`,
      `-A CNI-ISOLATION-STAGE-1 -m comment --comment "${old}" -j RETURN`,
      `-A CNI-ISOLATION-STAGE-2 -o cni0 -m comment --comment "${old}" -j DROP`,
      `-A CNI-ISOLATION-STAGE-2 -m comment --comment "${old}" -j RETURN`,
    ]);
    assert.ok(["CNI-ISOLATION-STAGE-1", "CNI-ISOLATION-STAGE-2"].every((c) => snap.chains.has(c)));
    assert.ok(isolationRules("cni0", "same-bridge").every((r) => snap.has(r)));
    assert.equal(isolationRules("cni0", "isolated").filter((r) => !snap.has(r)).length, 2, "isolated's own rules are new");
  });
});

describe("iptables -S forms", () => {
  test("comments are quoted as iptables prints them", () => {
    assert.equal(saveQuote("plain-word_1"), "plain-word_1");
    assert.equal(saveQuote("two words"), '"two words"');
    assert.equal(saveQuote('say "hi"'), '"say \\"hi\\""');
    assert.equal(saveLine("X", ["-m", "comment", "--comment", "a b", "-j", "ACCEPT"]), '-A X -m comment --comment "a b" -j ACCEPT');
  });

  test("a listing knows chains (builtin and user) and rule lines", () => {
    const snap = new TableListing(["-P INPUT ACCEPT", "-N CNI-FORWARD", "-A CNI-FORWARD -s 10.0.0.1/32 -j ACCEPT", "# junk"]);
    assert.ok(snap.chains.has("INPUT") && snap.chains.has("CNI-FORWARD") && !snap.chains.has("CNI-ADMIN"));
    assert.equal(snap.has({ chain: "CNI-FORWARD", args: ["-s", "10.0.0.1/32", "-j", "ACCEPT"] }), true);
    assert.equal(snap.has({ chain: "CNI-FORWARD", args: ["-d", "10.0.0.1/32", "-j", "ACCEPT"] }), false);
    assert.equal(snap.has({ chain: "CNI-FORWARD", args: ["-d", "10.0.0.1/32", "-j", "ACCEPT"], listed: null }), undefined, "-C tells");
    assert.deepEqual(
      snap.jumpsTo("ACCEPT").map((r) => r.chain),
      ["CNI-FORWARD"],
    );
  });
});
