import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import {
  type CallTraceRecord,
  disablePhaseTrace,
  enablePhaseTrace,
  endPhase,
  phase,
  phaseClock,
  phaseSync,
  phaseTraceOn,
  tracedCall,
} from "./phase-trace.js";

const call = (containerID: string) => ({ program: "bridge", command: "ADD", containerID, ifName: "eth0", where: "server" });
const tick = () => new Promise((r) => setTimeout(r, 2));

test("off, phases run their work and record nothing", async () => {
  assert.equal(phaseTraceOn(), false);
  assert.equal(phaseClock(), 0);
  assert.equal(await tracedCall(call("a"), () => phase("netlink", "x", async () => 7)), 7);
  assert.equal(
    phaseSync("spawn", "y", () => 8),
    8,
  );
});

test("on, each call is one line with its own phases, nested by depth, concurrent calls kept apart", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-trace-"));
  const file = path.join(dir, "trace.jsonl");
  try {
    enablePhaseTrace(file);
    const one = (id: string) =>
      tracedCall(call(id), async () => {
        const t = phaseClock();
        await tick();
        endPhase("wait", "queue", t);
        await phase("delegate", `host-local ADD ${id}`, async () => {
          phaseSync("netlink", `create ${id}`, () => undefined);
          await tick();
          await phase("ipam store", "host-local", tick);
        });
        await assert.rejects(
          phase("spawn", "iptables-restore", async () => {
            throw new Error("boom");
          }),
        );
      });
    await Promise.all([one("c1"), one("c2")]);
    disablePhaseTrace();
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as CallTraceRecord);
    assert.deepEqual(lines.map((l) => l.containerID).sort(), ["c1", "c2"]);
    for (const l of lines) {
      const shape = l.phases.map((p) => `${p.depth} ${p.kind} ${p.label}`);
      assert.deepEqual(shape, [
        "0 wait queue",
        `1 netlink create ${l.containerID}`,
        "1 ipam store host-local",
        `0 delegate host-local ADD ${l.containerID}`,
        "0 spawn iptables-restore",
      ]);
      const delegate = l.phases[3]!;
      assert.ok(delegate.ms >= l.phases[2]!.ms && delegate.start <= l.phases[1]!.start, "the delegation holds its phases");
      assert.ok(l.ms >= delegate.ms && l.start <= l.phases[0]!.start);
    }
  } finally {
    disablePhaseTrace();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a symlink at the trace's path is refused", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-trace-"));
  try {
    symlinkSync(path.join(dir, "elsewhere"), path.join(dir, "trace.jsonl"));
    assert.throws(() => enablePhaseTrace(path.join(dir, "trace.jsonl")), /ELOOP/);
    assert.equal(phaseTraceOn(), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
