import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { callResident } from "#invoke/resident-client.js";
import { warmUp } from "./warm-up.js";

/** A warm-up whose calls are recorded (program, command) instead of sent; `busy` and `stopped` as given. */
function recordedWarmUp(rounds: number, busy: () => boolean, stopped: () => boolean = () => false) {
  const calls: string[] = [];
  const call: typeof callResident = async (_socket, _build, req) => {
    calls.push(`${req.program} ${req.env["CNI_COMMAND"]}`);
    return { kind: "served", stdout: "{}", stderr: "", status: 0 };
  };
  const done = warmUp({ socketPath: "/nonexistent", buildId: "b", rounds, env: {}, stopped, busy, log: () => {}, call });
  return { calls, done };
}

test("warm-up: rounds of host-local ADD, CHECK and DEL, one call at a time", async () => {
  const { calls, done } = recordedWarmUp(2, () => false);
  await done;
  assert.deepEqual(calls, ["host-local ADD", "host-local CHECK", "host-local DEL", "host-local ADD", "host-local CHECK", "host-local DEL"]);
});

test("warm-up: sends nothing while real calls are under way, and goes on once they are done", async () => {
  let busy = true;
  const { calls, done } = recordedWarmUp(1, () => busy);
  await sleep(60);
  assert.deepEqual(calls, [], "a warm-up call was sent while real calls were under way");
  busy = false;
  await done;
  assert.equal(calls.length, 3);
});

test("warm-up: a stop while it waits for real calls ends it without a call", async () => {
  let stopped = false;
  const { calls, done } = recordedWarmUp(
    5,
    () => true,
    () => stopped,
  );
  await sleep(30);
  stopped = true;
  await done;
  assert.deepEqual(calls, []);
});
