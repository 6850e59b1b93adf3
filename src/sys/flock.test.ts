/**
 * Lock waits as docs/trust.md says: judged by who holds the lock now (a lock handed to a child whose taker exited is
 * the child's), each waiter within its own bound however many of this process queue for the lock, and a waiter
 * whose call was given up never runs what the lock guards. Needs root (a holder of another user) and util-linux.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { useTempDirs } from "#testing/temp.js";
import { CallAbandonedError, withCallSignal } from "./call-signal.js";
import { flockFd, LockTimeoutError, tryFlockFd, withFlock } from "./flock.js";
import { flockHolders, flockHoldersNow } from "./lock-holders.js";

const skip = process.geteuid?.() !== 0 ? "needs root" : undefined;
const tempDir = useTempDirs("tscni-flock-");
const strays: number[] = [];
after(() => {
  for (const pid of strays) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
});

const waitFor = async (what: string, ok: () => boolean, ms = 5000) => {
  for (const t0 = Date.now(); !ok(); await sleep(10)) if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
};
const exited = (child: ChildProcess) =>
  new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(0) : child.once("exit", resolve)));
const lockFileIn = (dir: string) => {
  const file = path.join(dir, "lock");
  writeFileSync(file, "", { mode: 0o600 });
  return file;
};

/** flock(1) takes the lock on `file` and runs `command` with the lock's descriptor: the command holds it too. */
async function holdWith(file: string, command: string[]): Promise<{ taker: ChildProcess; child: number }> {
  const taker = spawn("flock", ["-x", file, ...command], { stdio: "ignore" });
  strays.push(taker.pid!);
  await waitFor("flock(1) holds the lock", () => flockHolders(statSync(file)).includes(taker.pid!));
  let child = 0;
  await waitFor("flock(1) started its command", () => {
    child = Number(readFileSync(`/proc/${taker.pid}/task/${taker.pid}/children`, "latin1").trim().split(/\s+/)[0]);
    return child > 0;
  });
  strays.push(child);
  return { taker, child };
}

/** A lock held, then handed down: flock(1) (root) took it, its command holds it, flock(1) is killed. */
async function handedDown(file: string, command: string[]): Promise<number> {
  const { taker, child } = await holdWith(file, command);
  taker.kill("SIGKILL");
  await exited(taker);
  // /proc/locks still names the taker, which is gone.
  assert.deepEqual(flockHolders(statSync(file)), [taker.pid]);
  assert.equal(await waitForUid(child, command[0] === "setpriv" ? 65534 : 0), true);
  return child;
}

async function waitForUid(pid: number, uid: number): Promise<boolean> {
  await waitFor(`pid ${pid} runs as uid ${uid}`, () => {
    try {
      return new RegExp(`\nUid:\\s+\\d+\\s+${uid}\\b`).test(readFileSync(`/proc/${pid}/status`, "latin1"));
    } catch {
      return false;
    }
  });
  return true;
}

const NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "sleep", "60"];

describe("who holds a lock is who holds it now, not who took it", { skip }, () => {
  test("a lock a root taker handed to a child of nobody's and exited: the child holds it, and it is not waited for", async () => {
    const file = lockFileIn(tempDir());
    const child = await handedDown(file, NOBODY);
    assert.deepEqual(await flockHoldersNow(statSync(file)), { pids: [child], complete: true });
    const fd = openSync(file, "r");
    try {
      const t0 = performance.now();
      assert.equal(await flockFd(fd, file, { timeoutMs: 10_000 }), false);
      assert.ok(performance.now() - t0 < 5000, `took ${performance.now() - t0} ms`);
    } finally {
      closeSync(fd);
      process.kill(child, "SIGKILL");
    }
  });

  test("a lock a root taker handed to a root child and exited: it is waited for, until the bound", async () => {
    const file = lockFileIn(tempDir());
    const child = await handedDown(file, ["sleep", "60"]);
    const fd = openSync(file, "r");
    try {
      const t0 = performance.now();
      const e = await flockFd(fd, file, { timeoutMs: 1200 }).then(
        () => assert.fail("the lock was taken"),
        (e: Error) => e,
      );
      assert.ok(e instanceof LockTimeoutError, String(e));
      assert.deepEqual(e.holders, [child]);
      assert.ok(performance.now() - t0 >= 1150);
    } finally {
      closeSync(fd);
      process.kill(child, "SIGKILL");
    }
  });

  test("a root taker that still holds the lock its nobody child shares is waited for", async () => {
    const file = lockFileIn(tempDir());
    const { taker, child } = await holdWith(file, NOBODY);
    await waitForUid(child, 65534);
    assert.deepEqual(await flockHoldersNow(statSync(file)), { pids: [taker.pid], complete: true });
    const fd = openSync(file, "r");
    try {
      await assert.rejects(flockFd(fd, file, { timeoutMs: 800 }), LockTimeoutError);
    } finally {
      closeSync(fd);
      taker.kill("SIGKILL");
      process.kill(child, "SIGKILL");
    }
  });
});

describe("waiters of one process", { skip }, () => {
  test("k waiters for a lock another process holds each get their own bound, not one after another", async () => {
    // One after another, the k-th would end after k bounds (1, 2, 3, 4 s); each ends after its own 1 s.
    const file = lockFileIn(tempDir());
    const { taker, child } = await holdWith(file, ["sleep", "60"]);
    try {
      const t0 = performance.now();
      const ran: number[] = [];
      const settled = await Promise.allSettled(
        [0, 1, 2, 3].map((i) =>
          withFlock(
            file,
            () => openSync(file, "r"),
            () => ran.push(i),
            undefined,
            { timeoutMs: 1000 },
          ).finally(() => assert.ok(performance.now() - t0 < 2500, `waiter ${i} settled after ${performance.now() - t0} ms`)),
        ),
      );
      assert.deepEqual(ran, []);
      for (const s of settled) {
        assert.equal(s.status, "rejected");
        assert.ok((s as PromiseRejectedResult).reason instanceof LockTimeoutError, String((s as PromiseRejectedResult).reason));
      }
    } finally {
      taker.kill("SIGKILL");
      process.kill(child, "SIGKILL");
    }
  });

  test("a queued waiter whose signal aborts never runs, and the waiter behind it gets the lock", async () => {
    const file = lockFileIn(tempDir());
    const open = () => openSync(file, "r");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ran: string[] = [];
    const first = withFlock(file, open, async () => {
      ran.push("first");
      await gate;
    });
    const call = new AbortController();
    // The second waits as a call of the server does: its signal is the call's (call-signal.ts).
    const second = withCallSignal(call.signal, () => withFlock(file, open, () => void ran.push("second")));
    const third = withFlock(file, open, () => void ran.push("third"));
    await sleep(50);
    call.abort(new CallAbandonedError("answered"));
    await assert.rejects(second, CallAbandonedError);
    release();
    await first;
    await third;
    assert.deepEqual(ran, ["first", "third"]);
  });

  test("a waiter whose call is given up while it waits for another process's lock ends at once and never runs", async () => {
    const file = lockFileIn(tempDir());
    const { taker, child } = await holdWith(file, ["sleep", "60"]);
    const open = () => openSync(file, "r");
    const ran: string[] = [];
    const call = new AbortController();
    const first = withFlock(file, open, () => void ran.push("first"), undefined, { signal: call.signal });
    const second = withFlock(file, open, () => void ran.push("second"), undefined, { timeoutMs: 10_000 });
    await sleep(300);
    const t0 = performance.now();
    call.abort(new CallAbandonedError("answered"));
    await assert.rejects(first, CallAbandonedError);
    assert.ok(performance.now() - t0 < 2000, `took ${performance.now() - t0} ms`);
    taker.kill("SIGKILL");
    process.kill(child, "SIGKILL");
    await second;
    assert.deepEqual(ran, ["second"]);
  });
});

describe("tryFlockFd: at once, whichever way it locks (FFI under Bun, flock(1) under Node)", { skip }, () => {
  test("false while another process holds the lock, true once it is free", async () => {
    const file = lockFileIn(tempDir());
    const { taker, child } = await holdWith(file, ["sleep", "60"]);
    const fd = openSync(file, "r");
    try {
      assert.equal(await tryFlockFd(fd, file), false, "held by flock(1) and its command");
      taker.kill("SIGKILL");
      process.kill(child, "SIGKILL");
      await exited(taker);
      await waitFor("the holders are gone", () => flockHolders(statSync(file)).length === 0);
      assert.equal(await tryFlockFd(fd, file), true, "free");
    } finally {
      closeSync(fd);
    }
  });
});
