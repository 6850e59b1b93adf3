/**
 * The launcher's bound on plugin programs running at once in exec mode (launcher/exec-slots.h, docs/resident.md):
 * a copy of dist/tscni beside a stand-in `tscni-js` (a shell script) that logs when it starts and ends, and with
 * CHAIN set calls a delegate through the launcher, as a plugin execs its IPAM. The socket's directory (where the slot
 * files live) is a private one of root's. Checked: 100 calls at once never run more than N programs, a chain under a
 * full bound finishes, a slot is believed to be a caller's only when the kernel says its ancestor holds it, and the
 * bound is off rather than held by anyone but root (a directory or slot file that is not root's alone, a link,
 * a caller that is not root).
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { OUR_BIN } from "#testing/harness.js";

const launcherBuilt = existsSync(path.join(OUR_BIN, "..", "tscni"));
const skip = process.getuid?.() !== 0 ? "needs root" : launcherBuilt ? undefined : "the C launcher is not built (no C compiler)";
if (skip) console.log(`# skipping exec-slot tests: ${skip}`);

const NOBODY = 65534;

describe("exec mode: the bound on programs running at once", { skip }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-slots-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o755);
  const bin = path.join(dir, "bin");
  mkdirSync(bin);
  copyFileSync(path.join(OUR_BIN, "..", "tscni"), path.join(bin, "tscni"));
  symlinkSync("tscni", path.join(bin, "bridge"));
  symlinkSync("tscni", path.join(bin, "host-local"));
  const logs = path.join(dir, "logs");
  mkdirSync(logs, { mode: 0o777 });
  chmodSync(logs, 0o777);
  writeFileSync(
    path.join(bin, "tscni-js"),
    [
      "#!/bin/sh",
      'echo "start $$ $(date +%s%N)" >> "$LOG"',
      'if [ -n "$CHAIN" ]; then',
      `  echo '{}' | CHAIN= "${bin}/host-local" > /dev/null || { echo "delegate failed" >> "$LOG"; exit 1; }`,
      "fi",
      'sleep "$HOLD"',
      'echo "end $$ $(date +%s%N)" >> "$LOG"',
      `echo '{"cniVersion":"1.0.0"}'`,
      "",
    ].join("\n"),
  );
  chmodSync(path.join(bin, "tscni-js"), 0o755);

  let runs = 0;
  /** A fresh socket directory of root's (0700) and log for one test. */
  const fresh = () => {
    const run = mkdtempSync(path.join(dir, "run-"));
    const log = path.join(logs, `log-${++runs}`);
    writeFileSync(log, "");
    chmodSync(log, 0o666);
    return { run, socket: path.join(run, "plugins.sock"), log };
  };
  const env = (socket: string, log: string, extra: Record<string, string> = {}) => ({
    PATH: process.env["PATH"],
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "slots",
    CNI_NETNS: "/run/netns/slots",
    CNI_IFNAME: "eth0",
    CNI_PATH: bin,
    TSCNI_RESIDENT: "exec",
    TSCNI_RESIDENT_SOCKET: socket,
    LOG: log,
    HOLD: "0.05",
    ...extra,
  });
  /** One call of `bridge`; resolves to its exit status and how long it took. */
  const call = (e: NodeJS.ProcessEnv, uid?: number) =>
    new Promise<{ status: number | null; ms: number; out: string }>((resolve) => {
      const started = performance.now();
      const child = spawn(path.join(bin, "bridge"), [], {
        env: e,
        stdio: ["pipe", "pipe", "inherit"],
        ...(uid !== undefined ? { uid, gid: uid } : {}),
      });
      let out = "";
      child.stdout.on("data", (b: Buffer) => (out += b));
      child.stdin.end("{}");
      child.on("close", (status) => resolve({ status, ms: performance.now() - started, out }));
    });
  /** The most programs the log shows running at once, and how many started. */
  const overlap = (log: string) => {
    const events = readFileSync(log, "utf8")
      .split("\n")
      .filter((l) => /^(start|end) /.test(l))
      .map((l) => {
        const [kind, , ns] = l.split(" ");
        return { at: BigInt(ns!), step: kind === "start" ? 1 : -1 };
      })
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.step - b.step));
    let now = 0;
    let most = 0;
    for (const e of events) most = Math.max(most, (now += e.step));
    return { most, started: events.filter((e) => e.step === 1).length };
  };
  /** Root holding every slot file of `socket` (`n` of them) with flock(1), until released. */
  const holdAll = async (socket: string, n: number) => {
    const holders: ChildProcess[] = [];
    for (let k = 0; k < n; k++) {
      if (!existsSync(`${socket}.slot.${k}`)) writeFileSync(`${socket}.slot.${k}`, "", { mode: 0o600 });
      const h = spawn("flock", ["--exclusive", `${socket}.slot.${k}`, "sleep", "60"], { stdio: "ignore", detached: true });
      holders.push(h);
    }
    // held once each file exists and flock(1) has exec'd its command
    for (let i = 0; i < 500 && !holders.every((h) => hasLock(h.pid!)); i++) await new Promise((r) => setTimeout(r, 10));
    return {
      holders,
      release: () => {
        for (const h of holders) {
          try {
            process.kill(-h.pid!, "SIGKILL");
          } catch {
            /* released already */
          }
        }
      },
    };
  };
  const hasLock = (pid: number) => {
    try {
      return readFileSync("/proc/locks", "utf8")
        .split("\n")
        .some((l) => l.includes(" FLOCK ") && !l.includes("->") && l.split(/\s+/)[4] === String(pid));
    } catch {
      return false;
    }
  };

  test("100 calls at once never run more than N programs, and use all N", async () => {
    const { socket, log } = fresh();
    const results = await Promise.all(Array.from({ length: 100 }, () => call(env(socket, log, { TSCNI_EXEC_SLOTS: "3" }))));
    assert.deepEqual(
      results.filter((r) => r.status !== 0),
      [],
    );
    const { most, started } = overlap(log);
    assert.equal(started, 100);
    assert.equal(most, 3);
  });

  test("by default: two per CPU; the slot files are plain files of root's, 0600", async () => {
    const { socket, log } = fresh();
    const results = await Promise.all(Array.from({ length: 40 }, () => call(env(socket, log, { HOLD: "0.1" }))));
    assert.ok(results.every((r) => r.status === 0));
    const n = 2 * os.availableParallelism();
    const { most } = overlap(log);
    assert.ok(most <= n && most >= 2, `at most ${n} at once, saw ${most}`);
    for (let k = 0; k < n; k++) {
      const s = spawnStat(`${socket}.slot.${k}`);
      assert.match(s, /^0 600 regular (empty )?file$/);
      // (empty, or the pid of its last holder: waiters read it to tell a busy holder from a stuck one)
      assert.match(readFileSync(`${socket}.slot.${k}`, "utf8"), /^(\d+\n)?$/);
    }
  });

  test("a chain under a full bound: the delegate runs under its caller's slot and nothing waits for ever", async () => {
    const { socket, log } = fresh();
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: 6 }, () => call(env(socket, log, { TSCNI_EXEC_SLOTS: "1", CHAIN: "1" }))));
    assert.deepEqual(
      results.map((r) => r.status),
      [0, 0, 0, 0, 0, 0],
    );
    assert.ok(performance.now() - started < 20_000, "well within the 60 s after which a waiting call gives up");
    const { most, started: programs } = overlap(log);
    assert.equal(programs, 12);
    // One slot: a caller and the delegate it waits for, never two callers (the delegate took no slot of its own).
    assert.equal(most, 2);
    assert.doesNotMatch(readFileSync(log, "utf8"), /delegate failed/);
  });

  test("slots held by stuck programs (named in their files, using no CPU) cost a call half a second, not its turn", async () => {
    const { socket, log } = fresh();
    const file = `${socket}.slot.0`;
    writeFileSync(file, "", { mode: 0o600 });
    // a holder as a launcher leaves one: its pid in the slot file; then it waits on something that does not come
    const holder = spawn("flock", ["--exclusive", file, "sh", "-c", `echo $$ > ${file}; exec sleep 60`], { stdio: "ignore", detached: true });
    try {
      for (let i = 0; i < 500 && !/^\d+\n$/.test(readFileSync(file, "utf8")); i++) await new Promise((r) => setTimeout(r, 10));
      const r = await call(env(socket, log, { TSCNI_EXEC_SLOTS: "1" }));
      assert.equal(r.status, 0);
      assert.ok(r.ms >= 450 && r.ms < 5000, `waited ${Math.round(r.ms)} ms (half a second of patience)`);
    } finally {
      process.kill(-holder.pid!, "SIGKILL");
    }
  });

  test("a caller's TSCNI_EXEC_SLOT is not believed unless the kernel shows its ancestor holding that slot", async () => {
    const { socket, log } = fresh();
    const held = await holdAll(socket, 1);
    try {
      const holder = held.holders[0]!.pid!;
      // a slot holder that is not this call's ancestor (flock(1) holds it on its descriptor 3), and an ancestor
      // (this test) whose descriptor 0 is no slot
      const forged = [`${holder}:3`, `${process.pid}:0`, "1:3", "garbage"];
      const calls = forged.map((mark) => call(env(socket, log, { TSCNI_EXEC_SLOTS: "1", TSCNI_EXEC_SLOT: mark })));
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(overlap(log).started, 0, "every call waits for the slot root holds");
      held.release();
      const results = await Promise.all(calls);
      assert.ok(results.every((r) => r.status === 0));
      assert.equal(overlap(log).most, 1);
    } finally {
      held.release();
    }
  });

  test("a socket directory that is not root's alone: no bound (nobody else's files can hold a slot)", async () => {
    const { run, socket, log } = fresh();
    chmodSync(run, 0o777);
    const results = await Promise.all(Array.from({ length: 6 }, () => call(env(socket, log, { TSCNI_EXEC_SLOTS: "1", HOLD: "0.4" }))));
    assert.ok(results.every((r) => r.status === 0));
    assert.ok(overlap(log).most > 1);
    assert.equal(existsSync(`${socket}.slot.0`), false);
  });

  test("a slot file that is a link, or not root's, is never used: the link is not followed", async () => {
    const { socket, log } = fresh();
    const target = path.join(dir, "elsewhere");
    symlinkSync(target, `${socket}.slot.0`);
    writeFileSync(`${socket}.slot.1`, "");
    chownSync(`${socket}.slot.1`, NOBODY, NOBODY);
    const results = await Promise.all(Array.from({ length: 6 }, () => call(env(socket, log, { TSCNI_EXEC_SLOTS: "2", HOLD: "0.4" }))));
    assert.ok(results.every((r) => r.status === 0));
    assert.ok(overlap(log).most > 2, "no slot usable: not bounded");
    assert.equal(existsSync(target), false);
  });

  test("a caller that is not root neither waits for root's slots nor holds one", async () => {
    const { socket, log } = fresh();
    const held = await holdAll(socket, 1);
    try {
      const r = await call(env(socket, log, { TSCNI_EXEC_SLOTS: "1" }), NOBODY);
      assert.equal(r.status, 0);
      assert.ok(r.ms < 5000);
      assert.equal(overlap(log).started, 1);
    } finally {
      held.release();
    }
  });

  test("exec-slots off (or 0): no bound", async () => {
    const { socket, log } = fresh();
    const results = await Promise.all(Array.from({ length: 6 }, () => call(env(socket, log, { TSCNI_EXEC_SLOTS: "off", HOLD: "0.4" }))));
    assert.ok(results.every((r) => r.status === 0));
    assert.ok(overlap(log).most > 1);
    assert.equal(existsSync(`${socket}.slot.0`), false);
  });
});

/** "<uid> <mode> <type>" of a file, as stat(1) gives them. */
function spawnStat(file: string): string {
  const { spawnSync } = process.getBuiltinModule("node:child_process");
  return spawnSync("stat", ["-c", "%u %a %F", file], { encoding: "utf8" }).stdout.trim();
}
