/** The call's context: its signal, and stepAside routed to the server's place when the call has one. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { callSignal, stepAside, withCallSignal } from "./call-signal.js";

test("stepAside: the wait itself outside a call and in a call with no place; through the call's place in one", async () => {
  assert.equal(await stepAside(Promise.resolve(1)), 1);
  const lent: string[] = [];
  const aside = <W>(wait: Promise<W>): Promise<W> => {
    lent.push("lent");
    return wait.finally(() => lent.push("back"));
  };
  const signal = new AbortController().signal;
  const got = await withCallSignal(
    signal,
    async () => {
      assert.equal(callSignal(), signal);
      const inner = await withCallSignal(new AbortController().signal, () => stepAside(Promise.resolve("nested")));
      assert.deepEqual(lent, [], "a nested call (no place of its own) waits in place");
      return [inner, await stepAside(Promise.resolve("batch"))];
    },
    aside,
  );
  assert.deepEqual(got, ["nested", "batch"]);
  assert.deepEqual(lent, ["lent", "back"]);
  await assert.rejects(
    withCallSignal(signal, () => stepAside(Promise.reject(new Error("kernel"))), aside),
    /kernel/,
    "a failed wait fails the call's wait as it would have",
  );
});
