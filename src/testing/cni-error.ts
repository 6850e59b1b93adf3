/**
 * "This call fails with this CNI error": the one assertion the config tests share. A failure names what was
 * thrown instead (its code and its whole message, or the non-CNI error), never only "the validation function
 * returned false".
 */
import assert from "node:assert/strict";
import { CniError } from "#spec/errors.js";

/**
 * Asserts that `run` throws a CniError of `code` whose message equals `msg` (a string) or matches it (a RegExp),
 */
export function assertCniError(run: () => unknown, code: number, msg: string | RegExp): void {
  let thrown: unknown;
  try {
    run();
  } catch (e) {
    thrown = e;
  }
  const want = `a CNI error ${code} ${typeof msg === "string" ? JSON.stringify(msg) : String(msg)}`;
  if (thrown === undefined) assert.fail(`expected ${want}; nothing was thrown`);
  if (!(thrown instanceof CniError)) {
    assert.fail(`expected ${want}; got ${thrown instanceof Error ? (thrown.stack ?? thrown.message) : String(thrown)}`);
  }
  assert.equal(thrown.code, code, `expected ${want}; got code ${thrown.code}: ${JSON.stringify(thrown.msg)}`);
  if (typeof msg === "string") assert.equal(thrown.msg, msg);
  else assert.match(thrown.msg, msg);
}
