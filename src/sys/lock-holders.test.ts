import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { effectiveUid, fdinfoShowsFlock, flockHolders, flockHoldersNow, holdsFlockNow, procLocksDevice } from "./lock-holders.js";

const tempDir = useTempDirs("tscni-lock-holders-");

/** A /proc of processes, each with its uid and its descriptors' fdinfo texts. */
function fakeProc(locks: string[], procs: Record<number, { uid: number; fds: string[] }>): string {
  const proc = tempDir();
  writeFileSync(path.join(proc, "locks"), locks.join("\n") + "\n");
  for (const [pid, { uid, fds }] of Object.entries(procs)) {
    mkdirSync(path.join(proc, pid, "fdinfo"), { recursive: true });
    writeFileSync(path.join(proc, pid, "status"), `Name:\tx\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
    fds.forEach((text, fd) => writeFileSync(path.join(proc, pid, "fdinfo", String(fd)), `pos:\t0\nflags:\t0100000\n${text}`));
  }
  return proc;
}
const LOCK = (taker: number, ino = 42) => `lock:\t1: FLOCK  ADVISORY  WRITE ${taker} fe:00:${ino} 0 EOF\n`;

test("procLocksDevice: user space's dev_t as /proc/locks prints it", () => {
  assert.equal(procLocksDevice(0xfe00), "fe:00");
  assert.equal(procLocksDevice(0x1a), "00:1a");
  assert.equal(procLocksDevice(0x103), "01:03");
  // minor numbers above 255 keep their high bits 12 places up (new_encode_dev)
  assert.equal(procLocksDevice((0x1234 & 0xff) | (0x8 << 8) | ((0x1234 & ~0xff) << 12)), "08:1234");
});

test("flockHolders: granted flocks of the file only, not waiters, POSIX locks or other files", () => {
  const text = [
    "1: FLOCK  ADVISORY  WRITE 1234 fe:00:42 0 EOF",
    "1: -> FLOCK  ADVISORY  WRITE 999 fe:00:42 0 EOF",
    "2: POSIX  ADVISORY  WRITE 77 fe:00:42 0 EOF",
    "3: FLOCK  ADVISORY  READ 55 fe:00:43 0 EOF",
    "4: FLOCK  ADVISORY  READ 0 fe:00:42 0 EOF",
  ].join("\n");
  assert.deepEqual(flockHolders({ dev: 0xfe00, ino: 42 }, text), [1234, 0]);
  assert.deepEqual(flockHolders({ dev: 0xfe00, ino: 44 }, text), []);
});

test("fdinfoShowsFlock: an exclusive flock of the file in one descriptor's fdinfo, nothing else", () => {
  const fdinfo = (lock: string) => `pos:\t0\nflags:\t02100002\nmnt_id:\t29\nino:\t42\n${lock}`;
  const file = { dev: 0xfe00, ino: 42 };
  assert.ok(fdinfoShowsFlock(fdinfo("lock:\t1: FLOCK  ADVISORY  WRITE 1234 fe:00:42 0 EOF\n"), file));
  // whoever took it: the pid in the line is the taker's, and may be gone
  assert.ok(fdinfoShowsFlock(fdinfo("lock:\t1: FLOCK  ADVISORY  WRITE 0 fe:00:42 0 EOF\n"), file));
  assert.ok(!fdinfoShowsFlock(fdinfo(""), file), "no lock");
  assert.ok(!fdinfoShowsFlock(fdinfo("lock:\t1: FLOCK  ADVISORY  READ 1234 fe:00:42 0 EOF\n"), file), "shared");
  assert.ok(!fdinfoShowsFlock(fdinfo("lock:\t1: POSIX  ADVISORY  WRITE 1234 fe:00:42 0 EOF\n"), file), "a POSIX lock");
  assert.ok(!fdinfoShowsFlock(fdinfo("lock:\t1: FLOCK  ADVISORY  WRITE 1234 fe:00:43 0 EOF\n"), file), "another file");
});

test("holdsFlockNow: from the holder's own descriptors, whoever took the lock", async () => {
  const { mkdtempSync, openSync, closeSync, fstatSync } = await import("node:fs");
  const { spawn } = await import("node:child_process");
  const os = await import("node:os");
  const path = await import("node:path");
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), "tscni-holds-")), "lock");
  closeSync(openSync(file, "w"));
  const key = fstatSync(openSync(file, "r"));
  // flock(1) holds it on a descriptor of its own and runs sleep with it: both hold it, neither is fd 3.
  const holder = spawn("flock", ["--exclusive", file, "sleep", "5"], { stdio: "ignore" });
  try {
    for (let i = 0; i < 100 && !holdsFlockNow(holder.pid!, key); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(holdsFlockNow(holder.pid!, key), "flock(1) holds it");
    assert.ok(!holdsFlockNow(process.pid, key), "this process does not");
    assert.ok(!holdsFlockNow(0, key));
  } finally {
    holder.kill("SIGKILL");
  }
});

test("flockHoldersNow: a taker whose fdinfo shows the lock holds it (no look through /proc for it)", async () => {
  const proc = fakeProc(["1: FLOCK  ADVISORY  WRITE 100 fe:00:42 0 EOF"], {
    100: { uid: 0, fds: ["", LOCK(100)] },
    300: { uid: 5, fds: [LOCK(100)] },
  });
  const file = { dev: 0xfe00, ino: 42 };
  assert.deepEqual(await flockHoldersNow(file, { proc }), { pids: [100], complete: true });
  assert.deepEqual(await flockHoldersNow({ dev: 0xfe00, ino: 43 }, { proc }), { pids: [], complete: true });
});

test("flockHoldersNow: a taker that no longer holds (exited, or its pid another process's) is looked past to the holders now", async () => {
  const file = { dev: 0xfe00, ino: 42 };
  // 100 took it; pid 100 is now another process (no lock in its fdinfo), 200 holds it (inherited), 201 another file's.
  const recycled = fakeProc(["1: FLOCK  ADVISORY  WRITE 100 fe:00:42 0 EOF"], {
    100: { uid: 65534, fds: [""] },
    200: { uid: 0, fds: ["", LOCK(100)] },
    201: { uid: 0, fds: [LOCK(100, 43)] },
  });
  assert.deepEqual(await flockHoldersNow(file, { proc: recycled }), { pids: [200], complete: true });
  assert.equal(effectiveUid(200, recycled), 0);
  // 100 exited and its lock is in no process we see: the holders are not all told.
  const unseen = fakeProc(["1: FLOCK  ADVISORY  WRITE 100 fe:00:42 0 EOF"], { 200: { uid: 0, fds: [""] } });
  assert.deepEqual(await flockHoldersNow(file, { proc: unseen }), { pids: [], complete: false });
  // Two locks (shared): one's taker holds it, the other's holder is found; a taker of another pid namespace (0) never
  // has all its holders told, even with some in sight.
  const shared = fakeProc(["1: FLOCK  ADVISORY  READ 100 fe:00:42 0 EOF", "2: FLOCK  ADVISORY  READ 101 fe:00:42 0 EOF"], {
    100: { uid: 7, fds: [LOCK(100)] },
    300: { uid: 8, fds: [LOCK(101)] },
  });
  const both = await flockHoldersNow(file, { proc: shared });
  assert.deepEqual([both.pids.sort(), both.complete], [[100, 300], true]);
  const hidden = fakeProc(["1: FLOCK  ADVISORY  WRITE 0 fe:00:42 0 EOF"], { 200: { uid: 7, fds: [LOCK(0)] } });
  assert.deepEqual(await flockHoldersNow(file, { proc: hidden }), { pids: [], complete: false });
});
