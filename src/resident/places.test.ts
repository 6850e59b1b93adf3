/**
 * The places on a clock the tests move (testing/fake-timers.ts): each "waits", "at once" and "after stallMs" is
 * measured in the clock's milliseconds, so the tests hold on a loaded machine.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { setImmediate as turn } from "node:timers/promises";
import { FakeTimers } from "#testing/fake-timers.js";
import { type Place, Places, type PlacesLimits } from "./places.js";

/** A server that computes nothing while it waits. */
const idle = () => 0;

function placesOn(limits: PlacesLimits, cpuMs: () => number = idle, answers: () => number = () => 0) {
  const clock = new FakeTimers();
  return { clock, places: new Places(limits, cpuMs, answers, clock) };
}

/** What `p` has settled to now, or "pending". */
async function settled(p: Promise<Place | undefined>): Promise<Place | undefined | "pending"> {
  return Promise.race([p, turn().then(() => "pending" as const)]);
}

test("places: free ones at once; a burst waits while places are given back", async () => {
  const { clock, places } = placesOn({ size: 2, maxLong: 2, stallMs: 80, longMs: 10_000 });
  const a = await places.take();
  const b = await places.take();
  assert.ok(a && b);
  assert.equal(places.running, 2);
  const c = places.take();
  const d = places.take();
  await clock.advance(50);
  a!.release(); // progress: both waiters' patience starts again
  const gotC = await c;
  assert.ok(gotC);
  await clock.advance(79); // 129 ms after d began to wait, 79 after the last place came back
  assert.equal(await settled(d), "pending");
  b!.release();
  assert.ok(await d, "still served: a place was given back within stallMs of the last");
  gotC!.release();
  gotC!.release(); // twice is once
  assert.equal(places.running, 1);
});

test("places: when every place is held by a stuck call, a new call is handed back after stallMs", async () => {
  const { clock, places } = placesOn({ size: 2, maxLong: 2, stallMs: 60, longMs: 10_000 });
  const held = [await places.take(), await places.take()];
  const third = places.take();
  await clock.advance(59);
  assert.equal(await settled(third), "pending", "waits stallMs");
  await clock.advance(1);
  assert.equal(await settled(third), undefined, "handed back");
  for (const p of held) p!.release();
  assert.ok(await places.take());
});

test("places: a call past longMs gives its place back and runs on; beyond size + maxLong calls are handed back at once", async () => {
  const { clock, places } = placesOn({ size: 1, maxLong: 1, stallMs: 1000, longMs: 40 });
  const first = await places.take();
  const waiting = places.take();
  await clock.advance(39);
  assert.equal(places.longRunning, 0);
  await clock.advance(1);
  assert.equal(places.longRunning, 1);
  const second = await waiting;
  assert.ok(second, "the place the long call gave back");
  assert.equal(await settled(places.take()), undefined, "2 calls run: none more, at once");
  first!.release();
  second!.release();
  assert.equal(places.running + places.longRunning, 0);
});

test("places: a busy server keeps its waiters waiting though no place is given back (a slow burst), an idle one hands them back", async () => {
  let cpu = 0;
  const { clock, places } = placesOn({ size: 1, maxLong: 1, stallMs: 50, longMs: 10_000 }, () => cpu);
  const held = await places.take();
  const waiting = places.take();
  for (let i = 0; i < 8; i++) {
    cpu += 20; // 20 ms of CPU every 10 ms: computing
    await clock.advance(10);
  }
  assert.equal(places.waiters, 1, "still waiting while the server computes");
  await clock.advance(100); // the last patience that saw CPU, then one stallMs idle
  assert.equal(await settled(waiting), undefined, "handed back once the server went idle for stallMs");
  held!.release();
});

test("places: an idle server whose calls get answers from outside (a slow etcd) keeps its waiters waiting; once the answers stop, they are handed back", async () => {
  let answers = 0;
  const { clock, places } = placesOn({ size: 1, maxLong: 1, stallMs: 50, longMs: 10_000 }, idle, () => answers);
  const held = await places.take();
  const waiting = places.take();
  for (let i = 0; i < 10; i++) {
    answers++; // an answer every 30 ms, no CPU at all
    await clock.advance(30);
  }
  assert.equal(places.waiters, 1, "still waiting while the answers come");
  await clock.advance(100);
  assert.equal(await settled(waiting), undefined, "handed back once no answer came for stallMs");
  held!.release();
});

test("places: a call stepping aside lends its place to a waiter and takes it back at once when its wait ends", async () => {
  const { clock, places } = placesOn({ size: 1, maxLong: 2, stallMs: 50, longMs: 10_000 });
  const first = (await places.take())!;
  const second = places.take();
  assert.equal(await settled(second), "pending");
  let end!: (v: string) => void;
  const aside = first.stepAside(new Promise<string>((resolve) => (end = resolve)));
  assert.equal(places.asideNow, 1);
  const lent = await second;
  assert.ok(lent, "the waiter got the lent place");
  assert.equal(places.running, 1);
  const third = places.take();
  end("done");
  assert.equal(await aside, "done", "the wait's own result");
  assert.equal(places.asideNow, 0);
  assert.equal(places.running, 2, "back in its place, over the size, without waiting");
  await clock.advance(49);
  lent!.release(); // still 1 running: the size: the third waits on
  assert.equal(await settled(third), "pending");
  first.release();
  assert.ok(await third);
  assert.equal(places.running, 1);
});

test("places: calls aside count with the long ones: at most maxLong of them, size + maxLong in all; a call released aside frees all", async () => {
  const { clock, places } = placesOn({ size: 1, maxLong: 1, stallMs: 1000, longMs: 40 });
  const first = (await places.take())!;
  const never = new Promise<void>(() => undefined); // a kernel that never answers
  void first.stepAside(never);
  const second = (await places.take())!;
  assert.equal(places.asideNow, 1);
  let ran = false;
  await second.stepAside(Promise.resolve().then(() => (ran = true)));
  assert.ok(ran);
  assert.equal(places.asideNow, 1, "maxLong reached: the second waited in its place");
  assert.equal(await settled(places.take()), undefined, "size + maxLong calls under way: handed back at once");
  await clock.advance(40); // both turn long: the one aside leaves the aside count
  assert.equal(places.asideNow, 0);
  assert.equal(places.longRunning, 2);
  first.release();
  first.release();
  second.release();
  assert.equal(places.running + places.longRunning + places.asideNow, 0);
  const again = (await places.take())!;
  void again.stepAside(never);
  again.release(); // timed out while aside: nothing is left counted, and its wait's end changes nothing
  assert.equal(places.running + places.longRunning + places.asideNow, 0);
});
