import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { parseIP } from "#ip/ip.js";
import { DiskStore } from "./store.js";

/** Whether another process could take the lock right now (flock -n). */
const lockIsFree = (lockPath: string) => spawnSync("flock", ["--nonblock", "--exclusive", lockPath, "true"]).status === 0;

describe("DiskStore", () => {
  let dataDir: string;
  let store: DiskStore;
  let dir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), "tscni-store-"));
    store = DiskStore.open({ network: "net", dataDir });
    dir = path.join(dataDir, "net");
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  test("open creates the network directory and an empty lock file, as Go", () => {
    assert.equal(statSync(dir).mode & 0o777, 0o755 & ~process.umask());
    const lock = statSync(path.join(dir, "lock"));
    assert.equal(lock.size, 0);
    assert.equal(lock.mode & 0o777, 0o750 & ~process.umask());
  });

  test("reserve writes `<id>\\r\\n<ifname>` exclusively with mode 0600, and last_reserved_ip in place", () => {
    assert.equal(store.reserve("  cid  ", "eth0", parseIP("fd00::a"), "3"), true);
    assert.equal(store.reserve("other", "eth0", parseIP("fd00::a"), "3"), false);
    const bytes = readFileSync(path.join(dir, "fd00::a"));
    assert.deepEqual([...bytes], [...Buffer.from("cid\r\neth0")]);
    assert.equal(statSync(path.join(dir, "fd00::a")).mode & 0o777, 0o600);
    assert.equal(readFileSync(path.join(dir, "last_reserved_ip.3"), "utf8"), "fd00::a");
    assert.equal(statSync(path.join(dir, "last_reserved_ip.3")).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir).sort(), ["fd00::a", "last_reserved_ip.3", "lock"], "no temporary files left");
  });

  test("lookups ignore the lock and last_reserved_ip files", () => {
    store.reserve("c1", "eth0", parseIP("10.0.0.5"), "0");
    // A container named like an IP must not match last_reserved_ip.0 (content "10.0.0.5") in the old-format lookup.
    assert.equal(store.findByID("10.0.0.5", "eth0"), false);
    store.releaseByID("10.0.0.5", "eth0");
    assert.ok(existsSync(path.join(dir, "last_reserved_ip.0")));
    assert.deepEqual(
      store.getByID("c1", "eth0").map((ip) => ip.text),
      ["10.0.0.5"],
    );
    assert.equal(store.findByID("c1", "eth0"), true);
    assert.equal(store.findByID("c1", "eth1"), false);
  });

  test("withLock holds flock(LOCK_EX) on <dir>/lock, and releases it after the work (also on failure)", async () => {
    const lockPath = path.join(dir, "lock");
    assert.ok(lockIsFree(lockPath));
    await store.withLock(() => assert.equal(lockIsFree(lockPath), false, "held during the work"));
    assert.ok(lockIsFree(lockPath), "released after");
    await assert.rejects(
      store.withLock(() => {
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.ok(lockIsFree(lockPath), "released after a failure");
  });

  test("withLock waits for a lock held by another process (as Go's host-local would hold it)", async () => {
    const lockPath = path.join(dir, "lock");
    const holder = spawn("flock", ["--exclusive", lockPath, "-c", "echo locked; exec cat >/dev/null"], { stdio: ["pipe", "pipe", "inherit"] });
    await new Promise<void>((resolve) => holder.stdout!.once("data", () => resolve()));
    let entered = false;
    const waiting = store.withLock(() => {
      entered = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(entered, false, "blocked while the other process holds the lock");
    holder.stdin!.end();
    await waiting;
    assert.equal(entered, true);
  });

  test("GC deletes IP files of attachments that are not valid, and nothing else", () => {
    store.reserve("keep", "eth0", parseIP("10.0.0.2"), "0");
    store.reserve("keep", "eth1", parseIP("10.0.0.3"), "0");
    store.reserve("gone", "eth0", parseIP("10.0.0.4"), "0");
    store.reserve("gone", "eth0", parseIP("fd00::4"), "1");
    writeFileSync(path.join(dir, "10.0.0.5"), "keep"); // old id-only format, container still valid
    writeFileSync(path.join(dir, "10.0.0.6"), "gone"); // old format, container gone
    writeFileSync(path.join(dir, "10.0.0.7"), ""); // left empty by a crash
    writeFileSync(path.join(dir, "notes.txt"), "gone\r\neth0"); // not an IP file
    const removed = store.collectGarbage([{ containerID: "keep", ifname: "eth0" }]);
    assert.deepEqual(removed.sort(), ["10.0.0.3", "10.0.0.4", "10.0.0.6", "10.0.0.7", "fd00::4"]);
    assert.deepEqual(readdirSync(dir).sort(), ["10.0.0.2", "10.0.0.5", "last_reserved_ip.0", "last_reserved_ip.1", "lock", "notes.txt"]);
  });

  test("checkUsable passes on a writable store", () => {
    store.checkUsable();
  });
});
