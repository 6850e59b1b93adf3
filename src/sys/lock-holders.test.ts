import { test } from "node:test";
import assert from "node:assert/strict";
import { fdinfoShowsFlock, flockHolders, holdsFlockNow, procLocksDevice } from "./lock-holders.js";

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
