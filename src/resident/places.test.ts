import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Places } from "./places.js";

/** A server that computes nothing while it waits. */
const idle = () => 0;

test("places: free ones at once; a burst waits while places are given back", async () => {
  const places = new Places({ size: 2, maxLong: 2, stallMs: 80, longMs: 10_000 }, idle);
  const a = await places.take();
  const b = await places.take();
  assert.ok(a && b);
  assert.equal(places.running, 2);
  const c = places.take();
  const d = places.take();
  await sleep(50);
  a!.release(); // progress: both waiters' patience starts again
  const gotC = await c;
  assert.ok(gotC);
  await sleep(50);
  b!.release();
  assert.ok(await d, "still served: a place was given back within stallMs of the last");
  gotC!.release();
  gotC!.release(); // twice is once
  assert.equal(places.running, 1);
});

test("places: when every place is held by a stuck call, a new call is handed back after stallMs", async () => {
  const places = new Places({ size: 2, maxLong: 2, stallMs: 60, longMs: 10_000 }, idle);
  const held = [await places.take(), await places.take()];
  const t0 = performance.now();
  assert.equal(await places.take(), undefined);
  assert.ok(performance.now() - t0 >= 55, "waited stallMs");
  for (const p of held) p!.release();
  assert.ok(await places.take());
});

test("places: a call past longMs gives its place back and runs on; beyond size + maxLong calls are handed back at once", async () => {
  const places = new Places({ size: 1, maxLong: 1, stallMs: 1000, longMs: 40 }, idle);
  const first = await places.take();
  const waiting = places.take();
  await sleep(60);
  assert.equal(places.longRunning, 1);
  const second = await waiting;
  assert.ok(second, "the place the long call gave back");
  const t0 = performance.now();
  assert.equal(await places.take(), undefined, "2 calls run: none more");
  assert.ok(performance.now() - t0 < 30, "at once");
  first!.release();
  second!.release();
  assert.equal(places.running + places.longRunning, 0);
});

test("places: a busy server keeps its waiters waiting though no place is given back (a slow burst), an idle one hands them back", async () => {
  let cpu = 0;
  const places = new Places({ size: 1, maxLong: 1, stallMs: 50, longMs: 10_000 }, () => cpu);
  const held = await places.take();
  const busy = setInterval(() => (cpu += 20), 10); // 20 ms of CPU every 10 ms: computing
  const waiting = places.take();
  await sleep(200);
  assert.equal(places.waiters, 1, "still waiting while the server computes");
  clearInterval(busy);
  const t0 = performance.now();
  assert.equal(await waiting, undefined, "handed back once the server went idle");
  assert.ok(performance.now() - t0 < 200);
  held!.release();
});

test("places: an idle server whose calls get answers from outside (a slow etcd) keeps its waiters waiting; once the answers stop, they are handed back", async () => {
  let answers = 0;
  const places = new Places(
    { size: 1, maxLong: 1, stallMs: 50, longMs: 10_000 },
    () => 0,
    () => answers,
  );
  const held = await places.take();
  const answering = setInterval(() => answers++, 30); // an answer every 30 ms, no CPU at all
  const waiting = places.take();
  await sleep(300);
  assert.equal(places.waiters, 1, "still waiting while the answers come");
  clearInterval(answering);
  const t0 = performance.now();
  assert.equal(await waiting, undefined, "handed back once no answer came for stallMs");
  assert.ok(performance.now() - t0 < 200);
  held!.release();
});
