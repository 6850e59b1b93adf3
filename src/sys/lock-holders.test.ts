import { test } from "node:test";
import assert from "node:assert/strict";
import { flockHolders, procLocksDevice } from "./lock-holders.js";

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
