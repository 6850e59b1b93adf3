import assert from "node:assert/strict";
import { test } from "node:test";
import { judgeFacts, type PeerRule, type ProcessFacts, SAME_PROCESS_RULE, statusField } from "./peer.js";

const base: ProcessFacts = {
  euid: 0,
  namespaces: { user: "4:1", net: "4:2", mnt: "4:3", pid: "4:4" },
  capEff: 0x1ffffffffffn,
  seccomp: "0/0",
  noNewPrivs: "0",
  lsm: "(none: EINVAL)",
};
const facts = (over: Partial<ProcessFacts>): ProcessFacts => ({ ...base, ...over, namespaces: { ...base.namespaces, ...over.namespaces } });

test("judgeFacts: the same process in all but pid passes; each difference is named in the words of both sides", () => {
  assert.equal(judgeFacts(base, base, SAME_PROCESS_RULE), undefined);
  const cases: Array<[Partial<ProcessFacts>, string, string]> = [
    [{ euid: 65534 }, "not_root", "the listener runs as uid 65534, not root"],
    [{ namespaces: { pid: "4:9" } }, "namespace", "the listener is in another pid namespace"],
    [{ namespaces: { user: "4:9" } }, "namespace", "the listener is in another user namespace"],
    [
      { capEff: 0n },
      "capabilities",
      "the listener lacks capabilities this caller has (0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40)",
    ],
    [{ capEff: 0x3ffffffffffn }, "capabilities", "the listener has capabilities this caller lacks (41)"],
    [{ seccomp: "2/1" }, "confinement", "the listener runs under seccomp mode 2 with 1 filter(s), this caller under no seccomp filter"],
    [{ noNewPrivs: "1" }, "confinement", "the listener has no_new_privs 1, this caller 0"],
    [{ lsm: "unconfined" }, "confinement", 'the listener\'s LSM label is "unconfined", this caller\'s "(none: EINVAL)"'],
  ];
  for (const [over, kind, words] of cases) {
    assert.deepEqual(judgeFacts(facts(over), base, SAME_PROCESS_RULE, "the listener", "this caller"), { kind, refusal: words });
  }
});

test("judgeFacts: a namespace that cannot be read is never shared, and says which side could not read it", () => {
  const own = facts({ namespaces: { mnt: undefined } });
  assert.deepEqual(judgeFacts(own, own, SAME_PROCESS_RULE), { kind: "namespace", refusal: "the server cannot read its own mount namespace" });
  assert.deepEqual(judgeFacts(facts({ namespaces: { user: undefined } }), base, SAME_PROCESS_RULE, "the listener", "this caller"), {
    kind: "namespace",
    refusal: "this caller cannot read the listener's user namespace",
  });
});

test("judgeFacts: capabilities are judged before namespaces (one with fewer may not even read the other's)", () => {
  assert.equal(judgeFacts(facts({ capEff: 0n, namespaces: { user: undefined } }), base, SAME_PROCESS_RULE)?.kind, "capabilities");
});

test("judgeFacts: at-least capabilities, no-stricter confinement, the judge's own uid", () => {
  const rule: PeerRule = { namespaces: ["user"], capabilities: "at-least", confinement: "no-stricter", ownUid: true };
  assert.equal(judgeFacts(facts({ capEff: 0x3ffffffffffn, namespaces: { mnt: "4:8", net: "4:7" }, lsm: "x" }), base, rule), undefined);
  assert.equal(judgeFacts(facts({ seccomp: "2/1" }), base, rule)?.kind, "confinement");
  assert.equal(judgeFacts(facts({ seccomp: "2/1" }), facts({ seccomp: "2/1" }), rule), undefined);
  assert.equal(judgeFacts(facts({ noNewPrivs: "1" }), base, rule)?.refusal, "the caller has no_new_privs set and the server has not");
  assert.equal(judgeFacts(base, facts({ noNewPrivs: "1" }), rule), undefined, "a less confined peer");
  const user = facts({ euid: 1000 });
  assert.equal(judgeFacts(user, user, rule), undefined);
  assert.equal(judgeFacts(user, user, { ...rule, ownUid: false })?.kind, "not_root");
});

test("statusField reads a field at the start, in the middle, and not a longer field's name", () => {
  const status = "Name:\tsleep\nSeccomp:\t2\nSeccomp_filters:\t1\nNSpid:\t12\t3\n";
  assert.equal(statusField(status, "Name"), "sleep");
  assert.equal(statusField(status, "Seccomp"), "2");
  assert.equal(statusField(status, "Seccomp_filters"), "1");
  assert.equal(statusField(status, "NSpid"), "12\t3");
  assert.equal(statusField(status, "Umask"), undefined);
});
