import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { judgeProcess, ownIdentity, startTime } from "./peer.js";
import { skipReason } from "../testing/harness.js";

const skip = skipReason();

/** Runs `argv` (ending in a long sleep) and resolves to the pid of the sleep once it runs. */
async function sleeper(argv: string[]) {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: "ignore" });
  await sleep(200);
  return child;
}

test("the peer rule: namespaces a server compares, uid and capabilities", { skip }, async () => {
  const own = ownIdentity();
  const same = await sleeper(["sleep", "30"]);
  const otherMount = await sleeper(["unshare", "--mount", "--", "sleep", "30"]);
  const otherNet = await sleeper(["unshare", "--net", "--", "sleep", "30"]);
  const capless = await sleeper(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", "sleep", "30"]);
  const nobody = await sleeper(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "sleep", "30"]);
  try {
    assert.equal(judgeProcess(same.pid!, own), undefined);
    assert.equal(judgeProcess(otherMount.pid!, own)?.refusal, "the caller is in another mount namespace");
    assert.equal(judgeProcess(otherNet.pid!, own)?.refusal, "the caller is in another network namespace");
    assert.match(judgeProcess(capless.pid!, own)?.refusal ?? "", /^the caller lacks capabilities the server has/);
    assert.equal(judgeProcess(nobody.pid!, own)?.refusal, "uid 65534 is not served (root only)");
    assert.deepEqual([otherMount, otherNet, capless, nobody].map((p) => judgeProcess(p.pid!, own)?.kind), ["namespace", "namespace", "capabilities", "not_root"]);
    // A server that serves callers of other mount namespaces (the dhcp daemon with -hostprefix) leaves that out.
    const hostprefixed = ownIdentity(["user", "net"]);
    assert.equal(judgeProcess(otherMount.pid!, hostprefixed), undefined);
    assert.equal(judgeProcess(otherNet.pid!, hostprefixed)?.refusal, "the caller is in another network namespace");
    assert.ok((startTime(same.pid!) ?? 0) > 0, "a start time");
  } finally {
    for (const c of [same, otherMount, otherNet, capless, nobody]) c.kill("SIGKILL");
  }
});
