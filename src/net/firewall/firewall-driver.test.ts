import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chooseFirewallKind, type FirewallProbes, firewallFor, onEveryEngine, withDefaultFirewall } from "./firewall-driver.js";

/** Probes with fixed answers, counting the questions. */
function probes(iptables: boolean, nftables: boolean) {
  const asked: string[] = [];
  const p: FirewallProbes = {
    iptables: async () => (asked.push("iptables"), iptables),
    nftables: async () => (asked.push("nftables"), nftables),
  };
  return { p, asked };
}

describe("firewall driver: one choice of engine per call", () => {
  test("the configured engine, unasked; else iptables unless only nftables works", async () => {
    const configured = probes(false, false);
    assert.equal(await chooseFirewallKind("nftables", configured.p), "nftables");
    assert.deepEqual(configured.asked, []);
    const both = probes(true, true);
    assert.equal(await chooseFirewallKind(undefined, both.p), "iptables");
    assert.deepEqual(both.asked, ["iptables"], "nftables is asked only when iptables does not work");
    assert.equal(await chooseFirewallKind(undefined, probes(false, true).p), "nftables");
    assert.equal(await chooseFirewallKind(undefined, probes(false, false).p), "iptables", "neither: iptables, whose error says why");
  });

  test("firewallFor hands back the chosen engine's implementation", async () => {
    const engines = { iptables: "I", nftables: "N" } as const;
    assert.equal(await firewallFor(engines, undefined, probes(false, true).p), "N");
    assert.equal(await firewallFor(engines, "iptables", probes(false, true).p), "I");
  });

  test("onEveryEngine runs both; an error counts only from an engine that works here", async () => {
    const ran: string[] = [];
    const fail = async (name: string) => {
      ran.push(name);
      throw new Error(`${name} broke`);
    };
    const engines = { iptables: "iptables", nftables: "nftables" } as const;
    await onEveryEngine(engines, fail, probes(false, false).p);
    assert.deepEqual(ran, ["iptables", "nftables"]);
    await assert.rejects(onEveryEngine(engines, fail, probes(false, true).p), (e: Error) => e.message === "nftables broke");
    await assert.rejects(onEveryEngine(engines, fail, probes(true, true).p), (e: Error) => e.message === "iptables broke\nnftables broke");
  });

  test("withDefaultFirewall asks nothing when iptables works, falls back only when nftables is the choice", async () => {
    const engines = { iptables: "iptables", nftables: "nftables" } as const;
    const working = probes(true, true);
    assert.equal(await withDefaultFirewall(engines, undefined, async (r) => r, working.p), "iptables");
    assert.deepEqual(working.asked, [], "no probe on the usual path");
    const failsOnIptables = async (r: string) => {
      if (r === "iptables") throw new Error("iptables broke");
      return r;
    };
    assert.equal(await withDefaultFirewall(engines, undefined, failsOnIptables, probes(false, true).p), "nftables");
    await assert.rejects(withDefaultFirewall(engines, undefined, failsOnIptables, probes(true, true).p), /iptables broke/);
    assert.equal(await withDefaultFirewall(engines, "nftables", async (r) => r, probes(true, true).p), "nftables");
  });
});
