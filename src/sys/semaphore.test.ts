import assert from "node:assert/strict";
import { test } from "node:test";
import { Semaphore } from "./semaphore.js";

test("at most `size` runs at once, the others in arrival order, a failing run gives its place back", async () => {
  const s = new Semaphore(2);
  let running = 0;
  let most = 0;
  const order: number[] = [];
  const runs = Array.from({ length: 6 }, (_, i) =>
    s.run(async () => {
      running++;
      most = Math.max(most, running);
      order.push(i);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      if (i === 1) throw new Error("boom");
      return i;
    }),
  );
  const settled = await Promise.allSettled(runs);
  assert.equal(most, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  assert.equal(settled.filter((r) => r.status === "rejected").length, 1);
  assert.equal(s.busy, 0);
  assert.equal(await s.run(async () => "again"), "again");
});
