import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { isTemporaryName, replaceAtomicSync, writeFileAtomic, writeFileAtomicSync } from "./state.js";

const tempDir = useTempDirs("tscni-atomic-");

test("a replacement is made at a temporary name readers recognise, then renamed over the file", () => {
  const dir = tempDir();
  const file = path.join(dir, "state");
  writeFileSync(file, "old");
  let during: string[] = [];
  replaceAtomicSync(file, (tmp) => {
    writeFileSync(tmp, "new");
    during = readdirSync(dir);
  });
  assert.equal(readFileSync(file, "utf8"), "new");
  assert.equal(during.length, 2);
  assert.deepEqual(during.filter(isTemporaryName).length, 1, `one temporary name among ${during.join(", ")}`);
  assert.equal(isTemporaryName("state"), false);
  assert.deepEqual(readdirSync(dir), ["state"]);
});

test("a failed rename leaves no temporary file and throws (sync and async)", async () => {
  const dir = tempDir();
  const target = path.join(dir, "taken");
  mkdirSync(path.join(target, "inside"), { recursive: true }); // a non-empty directory: a file cannot replace it
  assert.throws(() => writeFileAtomicSync(target, "x"));
  await assert.rejects(writeFileAtomic(target, "x"));
  assert.deepEqual(readdirSync(dir), ["taken"]);
  assert.ok(statSync(target).isDirectory());
});

test("the file gets the mode asked for", () => {
  const file = path.join(tempDir(), "secret");
  writeFileAtomicSync(file, "x", 0o600);
  assert.equal(statSync(file).mode & 0o777, 0o600);
});
