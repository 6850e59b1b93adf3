import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { skipReason } from "#testing/harness.js";
import { flockHolders } from "./lock-holders.js";
import { judgeFacts, ownIdentity, type PeerRule, readFacts, SAME_PROCESS_RULE, startTime } from "./peer.js";

const skip = skipReason();

/** Runs `argv` (ending in a long sleep) and resolves to the pid of the sleep once it runs. */
async function sleeper(argv: string[]) {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: "ignore" });
  await sleep(200);
  return child;
}

test("the peer rule on real processes: uid, each namespace, capabilities, no_new_privs", { skip }, async () => {
  const own = ownIdentity();
  const judge = (pid: number, rule: PeerRule = SAME_PROCESS_RULE) => {
    const facts = readFacts(pid);
    assert.ok(facts, `facts of ${pid}`);
    return judgeFacts(facts, own, rule);
  };
  const same = await sleeper(["sleep", "30"]);
  const otherMount = await sleeper(["unshare", "--mount", "--", "sleep", "30"]);
  const otherNet = await sleeper(["unshare", "--net", "--", "sleep", "30"]);
  const otherPid = await sleeper(["unshare", "--pid", "--fork", "--", "sleep", "30"]);
  const capless = await sleeper(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", "sleep", "30"]);
  const nobody = await sleeper(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "sleep", "30"]);
  const nnp = await sleeper(["setpriv", "--no-new-privs", "--", "sleep", "30"]);
  // `unshare --pid --fork` forks: the sleep is its child.
  const pidNsChild = Number((await import("node:fs")).readFileSync(`/proc/${otherPid.pid}/task/${otherPid.pid}/children`, "utf8").trim());
  try {
    assert.equal(judge(same.pid!), undefined);
    assert.equal(judge(otherMount.pid!)?.refusal, "the caller is in another mount namespace");
    assert.equal(judge(otherNet.pid!)?.refusal, "the caller is in another network namespace");
    assert.equal(judge(pidNsChild)?.refusal, "the caller is in another pid namespace");
    assert.match(judge(capless.pid!)?.refusal ?? "", /^the caller lacks capabilities the server has/);
    assert.equal(judge(nobody.pid!)?.refusal, "the caller runs as uid 65534, not root");
    assert.equal(judge(nnp.pid!)?.refusal, "the caller has no_new_privs 1, the server 0");
    assert.deepEqual(
      [otherMount, otherNet, capless, nobody, nnp].map((p) => judge(p.pid!)?.kind),
      ["namespace", "namespace", "capabilities", "not_root", "confinement"],
    );
    // The dhcp daemon's rule: any mount, network or pid namespace, not a stricter confinement.
    const daemonRule: PeerRule = { namespaces: ["user"], capabilities: "at-least", confinement: "no-stricter" };
    assert.equal(judge(otherMount.pid!, daemonRule), undefined);
    assert.equal(judge(otherNet.pid!, daemonRule), undefined);
    assert.equal(judge(pidNsChild, daemonRule), undefined);
    assert.equal(judge(nnp.pid!, daemonRule)?.refusal, "the caller has no_new_privs set and the server has not");
    assert.ok((startTime(same.pid!) ?? 0) > 0, "a start time");
  } finally {
    for (const c of [same, otherMount, otherNet, otherPid, capless, nobody, nnp]) c.kill("SIGKILL");
  }
});

test("/proc/locks names the process that took a flock", { skip }, async () => {
  const file = `/tmp/tscni-peer-lock-${process.pid}`;
  closeSync(openSync(file, "w"));
  const holder = spawn("flock", ["-x", file, "sleep", "30"], { stdio: "ignore" });
  try {
    await sleep(300);
    const st = (await import("node:fs")).statSync(file);
    assert.deepEqual(flockHolders(st), [holder.pid]);
  } finally {
    holder.kill("SIGKILL");
    (await import("node:fs")).rmSync(file, { force: true });
  }
});
