import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CniError } from "#spec/errors.js";
import { skipReason } from "#testing/harness.js";
import { withLockFile } from "./lock-file.js";

const skip = skipReason();

/** A process holding an exclusive flock on `file` as `as` (setpriv's options), until killed. */
async function holder(file: string, as: string[] = []) {
  const child = spawn(
    as.length ? "setpriv" : "flock",
    as.length ? [...as, "--", "flock", "-o", "-x", file, "sleep", "30"] : ["-o", "-x", file, "sleep", "30"],
    { stdio: "ignore" },
  );
  await sleep(300);
  return child;
}

test("a lock root holds is waited for at most the time given: code 11, naming the file and its holder", { skip }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-lockwait-"));
  const file = path.join(dir, "lock");
  writeFileSync(file, "");
  const held = await holder(file);
  try {
    const t0 = Date.now();
    await assert.rejects(
      withLockFile(
        file,
        0o600,
        (r) => r,
        () => "ran",
        undefined,
        { timeoutMs: 400 },
      ),
      (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.code, 11);
        assert.equal(e.msg, `timed out after 0.4 s waiting for the lock on ${file} (held by pid ${held.pid})`);
        return true;
      },
    );
    assert.ok(Date.now() - t0 < 2000);
  } finally {
    held.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a lock another user took on a file anyone can read is not waited for", { skip }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-lockwait-"));
  chmodSync(dir, 0o755);
  const file = path.join(dir, "world-readable");
  writeFileSync(file, "");
  chmodSync(file, 0o644);
  const held = await holder(file, ["--reuid=65534", "--regid=65534", "--clear-groups"]);
  try {
    const t0 = Date.now();
    assert.equal(
      await withLockFile(
        file,
        0o600,
        (r) => r,
        () => "ran",
        undefined,
        { timeoutMs: 5000 },
      ),
      "ran",
    );
    assert.ok(Date.now() - t0 < 1500, `took ${Date.now() - t0} ms`);
  } finally {
    held.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
