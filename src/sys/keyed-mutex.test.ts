import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { KeyedMutex } from "./keyed-mutex.js";

/** A run of `m` under "k" that records its start and ends when `release` is called. */
function holder(m: KeyedMutex, ran: string[], name: string, signal?: AbortSignal) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  const result = m.run(
    "k",
    async () => {
      ran.push(name);
      await done;
      return name;
    },
    signal ? { signal } : {},
  );
  return { result, release };
}

test("KeyedMutex: a waiter that leaves the queue never runs, and the ones behind it keep their order", async () => {
  const m = new KeyedMutex();
  const ran: string[] = [];
  const a = holder(m, ran, "a");
  const leaving = new AbortController();
  const b = holder(m, ran, "b", leaving.signal);
  const c = holder(m, ran, "c");
  const d = holder(m, ran, "d");
  await sleep(5);
  assert.equal(m.waiting("k"), 3);
  leaving.abort(new Error("gone"));
  await assert.rejects(b.result, /gone/);
  assert.equal(m.waiting("k"), 2);
  a.release();
  c.release();
  d.release();
  assert.deepEqual(await Promise.all([a.result, c.result, d.result]), ["a", "c", "d"]);
  assert.deepEqual(ran, ["a", "c", "d"]);
  assert.deepEqual(m.busyKeys, []);
});

test("KeyedMutex: the next waiter leaving too, or every waiter, loses no turn and leaves the key free", async () => {
  const m = new KeyedMutex();
  const ran: string[] = [];
  const a = holder(m, ran, "a");
  const controllers = [new AbortController(), new AbortController()];
  const waiters = controllers.map((c, i) => holder(m, ran, `w${i}`, c.signal));
  await sleep(5);
  for (const c of controllers) c.abort(new Error("gone"));
  for (const w of waiters) await assert.rejects(w.result, /gone/);
  a.release();
  await a.result;
  assert.deepEqual(m.busyKeys, []);
  // The key is free: a new run starts at once.
  const e = holder(m, ran, "e");
  await sleep(5);
  assert.deepEqual(ran, ["a", "e"]);
  e.release();
  await e.result;
});

test("KeyedMutex: the next waiter leaving as the holder's work ends: the turn goes to the one behind it", async () => {
  const m = new KeyedMutex();
  const ran: string[] = [];
  const late = new AbortController();
  const a = m.run("k", async () => {
    ran.push("a");
    await sleep(5);
    late.abort(new Error("late"));
    return "a";
  });
  const b = holder(m, ran, "b", late.signal);
  const c = holder(m, ran, "c");
  assert.equal(await a, "a");
  await assert.rejects(b.result, /late/);
  c.release();
  assert.equal(await c.result, "c");
  assert.deepEqual(ran, ["a", "c"]);
});

test("KeyedMutex: a signal aborted before the run asks rejects at once; a failing work hands the key on", async () => {
  const m = new KeyedMutex();
  await assert.rejects(
    m.run("k", async () => "never", { signal: AbortSignal.abort(new Error("before")) }),
    /before/,
  );
  await assert.rejects(
    m.run("k", async () => {
      throw new Error("work failed");
    }),
    /work failed/,
  );
  assert.equal(await m.run("k", async () => "next"), "next");
  assert.deepEqual(m.busyKeys, []);
});
