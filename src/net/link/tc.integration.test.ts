/**
 * Traffic control over netlink (under Bun) against the `tc` fallback (under Node), in namespaces the test makes:
 * src/testing/tc-driver.ts adds a tbf and an ingress redirect, reads them back and deletes them, each phase under
 * either runtime, so that each path reads and removes what the other made. The netlink path must run no `tc`.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Cleanup, type Netns, ROOT, runTag, skipReason } from "#testing/harness.js";

const BUN = path.join(ROOT, "node_modules/.bin/bun");
const DRIVER = path.join(ROOT, "dist-test/testing/tc-driver.js");
const tag = runTag();

const skip = skipReason(false, existsSync(BUN) ? undefined : "Bun is not installed (node_modules/.bin/bun)");

type Json = Record<string, unknown>;
type Runtime = "bun" | "node";
interface Phase {
  steps: Json[];
  tcRuns: number;
}

const cleanup = new Cleanup();
after(() => cleanup.run());

/** A namespace with veth v0 (peer v1) and IFB b0, all up. */
function netns(name: string): Netns {
  const ns = cleanup.netns(name);
  ns.exec("sh", ["-c", "ip link add v0 up type veth peer name v1 && ip link set v1 up && ip link add b0 up type ifb"]);
  return ns;
}

/** Runs one phase of the driver in `ns` under `runtime`. */
function drive(ns: Netns, runtime: Runtime, phase: "add" | "read" | "delete"): Phase {
  const r = spawnSync(...ns.commandLine(runtime === "bun" ? BUN : process.execPath, [DRIVER, phase]), {
    env: { ...process.env, TSCNI_NETLINK: "1" },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Phase;
}

/** What `tc` shows of the namespace's traffic control (ingress filters without kernel counters and indexes). */
function state(ns: Netns): Json {
  const tc = (args: string[]) => JSON.parse(ns.exec("tc", ["-json", ...args]) || "[]") as Json[];
  const filters = tc(["filter", "show", "dev", "v0", "ingress"]).map((f) => {
    const o = f["options"] as Json | undefined;
    const actions = (o?.["actions"] as Json[] | undefined)?.map((a) => ({ ...a, index: undefined, ref: undefined, bind: undefined }));
    return { ...f, options: o && { ...o, actions } };
  });
  return { qdiscs: tc(["-raw", "qdisc", "show"]), filters };
}

describe("traffic control: netlink path vs tc path", { skip }, () => {
  test("each path adds the same, reads and deletes what the other added; netlink runs no tc", () => {
    const a = netns(`tscni-tca-${tag}`);
    const b = netns(`tscni-tcb-${tag}`);
    const added = { bun: drive(a, "bun", "add"), node: drive(b, "node", "add") };
    assert.equal(added.bun.tcRuns, 0, "the netlink path runs no tc");
    assert.ok(added.node.tcRuns > 0, `the Node build runs tc (${added.node.tcRuns} processes)`);
    assert.deepEqual(added.bun.steps, added.node.steps);
    assert.deepEqual(added.bun.steps, [
      { step: "tbf", value: null },
      { step: "tbf again", error: "exists" },
      { step: "redirect", value: null },
      { step: "redirect again", error: "exists" },
      { step: "redirect from a missing device", error: "not-found" },
    ]);
    assert.deepEqual(state(a), state(b), "the same qdiscs and filter");

    // Each reads what the other made.
    const read = { bun: drive(b, "bun", "read"), node: drive(a, "node", "read") };
    assert.equal(read.bun.tcRuns, 0);
    assert.deepEqual(read.bun.steps, read.node.steps);
    assert.deepEqual(read.bun.steps, [
      {
        step: "qdiscs",
        value: [
          { kind: "tbf", handle: "1:", root: true, tbf: { rate: 125000, limit: 13125, buffer: 1_250_000 } },
          { kind: "ingress", handle: "ffff:", root: false, parent: "ffff:fff1" },
        ],
      },
      { step: "redirects", value: ["b0"] },
      { step: "ifb qdiscs", value: [{ kind: "pfifo_fast", handle: "0:", root: true }] },
      { step: "ifb redirects", value: [] },
      { step: "qdiscs of a missing device", error: "not-found" },
    ]);

    // Each deletes what the other made.
    const deleted = { bun: drive(b, "bun", "delete"), node: drive(a, "node", "delete") };
    assert.equal(deleted.bun.tcRuns, 0);
    assert.deepEqual(deleted.bun.steps, deleted.node.steps);
    assert.deepEqual(deleted.bun.steps, [
      { step: "root", value: true },
      { step: "root again", value: false },
      { step: "ingress", value: true },
      { step: "ingress again", value: false },
      { step: "root of a missing device", value: false },
      { step: "qdiscs left", value: [{ kind: "noqueue", handle: "0:", root: true }] },
    ]);
    assert.deepEqual(state(a), state(b));
  });
});
