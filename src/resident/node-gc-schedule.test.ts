/**
 * The node GC schedule: runs one interval apart and never overlapping, logs each run's report (or why it removed
 * nothing), stops without starting another run and waits for the one under way; bad settings fail at start.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { NodeGcOptions, NodeGcReport } from "#runtime/node-gc.js";
import { startNodeGc } from "./node-gc-schedule.js";

const REPORT: NodeGcReport = {
  dryRun: false,
  runtime: "fake 1.0 (CRI v1) at unix:///fake.sock",
  sandboxes: 2,
  judged: 3,
  notJudged: 0,
  stale: [{ containerID: "a", network: "net1", ifName: "eth0" }],
  tooRecent: [],
  occupied: [],
  unreadableKept: [],
  removed: [{ containerID: "a", network: "net1", ifName: "eth0" }],
  failed: [],
  networks: [{ network: "net1", file: "/x/net1.conflist", gc: true, validAttachments: 2 }],
  configErrors: [],
};
const base = { criEndpoint: "unix:///fake.sock", cacheDir: "/c", confDir: "/n", pluginDirs: ["/opt/cni/bin"] };

/** Waits until `done()` (polling), at most 10 s. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await sleep(10);
  assert.ok(done(), "timed out");
}

test("runs every interval, one at a time, with the schedule's settings, and logs what each did", async () => {
  const lines: string[] = [];
  const calls: NodeGcOptions[] = [];
  const spans: Array<[number, number]> = [];
  const schedule = startNodeGc({
    ...base,
    intervalMs: 30,
    minAgeMs: 1234,
    log: (l) => lines.push(l),
    run: async (o) => {
      calls.push(o);
      const start = performance.now();
      await sleep(50); // longer than the interval: the next run still waits for this one, then an interval
      spans.push([start, performance.now()]);
      return REPORT;
    },
  });
  await until(() => spans.length >= 3);
  await schedule.stop();
  for (let i = 1; i < spans.length; i++) {
    assert.ok(spans[i]![0] >= spans[i - 1]![1] + 29, `run ${i} started ${spans[i]![0] - spans[i - 1]![1]} ms after the one before ended`);
  }
  assert.deepEqual(
    { ...calls[0], runtime: undefined },
    { runtime: undefined, cacheDir: "/c", confDir: "/n", pluginDirs: ["/opt/cni/bin"], minAgeMs: 1234 },
    "node GC judges by its own rule (judgedByNodeGc)",
  );
  assert.equal(calls[0]!.dryRun, undefined);
  assert.match(lines[0]!, /^node GC: every 0.03 s, asking unix:\/\/\/fake.sock, cache \/c, networks in \/n$/);
  assert.ok(lines.includes(`node GC: removed: a on network "net1" (eth0)`), lines.join("\n"));
  const n = calls.length;
  await sleep(100);
  assert.equal(calls.length, n, "no run after stop()");
});

test("a run that fails is logged and the schedule goes on", async () => {
  const lines: string[] = [];
  let runs = 0;
  const schedule = startNodeGc({
    ...base,
    intervalMs: 20,
    log: (l) => lines.push(l),
    run: async () => {
      runs++;
      throw new Error("CRI runtime at unix:///fake.sock: cannot reach");
    },
  });
  await until(() => runs >= 2);
  await schedule.stop();
  assert.ok(lines.includes("node GC: removed nothing: CRI runtime at unix:///fake.sock: cannot reach"));
});

test("stop() waits for the run under way", async () => {
  let started = false;
  let finished = false;
  const schedule = startNodeGc({
    ...base,
    intervalMs: 10,
    log: () => undefined,
    run: async () => {
      started = true;
      await sleep(100);
      finished = true;
      return REPORT;
    },
  });
  await until(() => started);
  await schedule.stop();
  assert.equal(finished, true);
});

test("the first run comes one interval after the start, and the timer keeps no process alive", async () => {
  let runs = 0;
  const schedule = startNodeGc({ ...base, intervalMs: 60_000, log: () => undefined, run: async () => (runs++, REPORT) });
  await sleep(50);
  assert.equal(runs, 0);
  await schedule.stop();
});

test("bad settings fail at start", () => {
  assert.throws(() => startNodeGc({ ...base, intervalMs: 0, log: () => undefined }), /interval must be positive/);
  assert.throws(() => startNodeGc({ ...base, criEndpoint: "tcp://1.2.3.4:5", intervalMs: 1000, log: () => undefined }), /is not a unix socket/);
});
