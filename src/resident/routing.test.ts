/**
 * A call run in the server's process that passes its time limit while its work waits for a lock is answered, and
 * its work never runs afterwards (an ADD finished later would leak an address). Needs root (a root holder, so the
 * lock is waited for) and util-linux flock(1).
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { TAG_STDOUT } from "#invoke/resident-protocol.js";
import { ErrorCode } from "#spec/errors.js";
import { KeyedMutex } from "#sys/keyed-mutex.js";
import { flockHolders } from "#sys/lock-holders.js";
import { useTempDirs } from "#testing/temp.js";
import { Places } from "./places.js";
import { type CallContext, PluginModules, runInProcess } from "./routing.js";

const skip = process.geteuid?.() !== 0 ? "needs root" : undefined;
const tempDir = useTempDirs("tscni-routing-");
const holders: number[] = [];
after(() => {
  for (const pid of holders) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
});

test("a call answered at its time limit while it waits for a lock never runs its work: no address is allocated", { skip }, async () => {
  const dataDir = tempDir();
  const store = path.join(dataDir, "rt");
  mkdirSync(store, { mode: 0o755 });
  const lock = path.join(store, "lock");
  closeSync(openSync(lock, "a", 0o644));
  const holder = spawn("flock", ["-x", "-o", lock, "sleep", "30"], { stdio: "ignore", detached: true });
  holders.push(holder.pid!);
  for (const t0 = Date.now(); !flockHolders(statSync(lock)).includes(holder.pid!); await sleep(10))
    assert.ok(Date.now() - t0 < 5000, "flock(1) took the lock");

  const plugins = new PluginModules();
  const queue = new KeyedMutex();
  const places = new Places();
  const conf = { cniVersion: "1.0.0", name: "rt", type: "host-local", ipam: { type: "host-local", subnet: "10.199.0.0/24", dataDir } };
  const call = (id: string, timeoutMs: number) => {
    const out: Buffer[] = [];
    const ctx: CallContext = {
      req: {
        program: "host-local",
        args: [],
        env: { CNI_COMMAND: "ADD", CNI_CONTAINERID: id, CNI_IFNAME: "eth0", CNI_NETNS: "/run/netns/none", CNI_PATH: "/nonexistent" },
        stdin: Buffer.from(JSON.stringify(conf)),
      },
      write: (f) => {
        if (f[0] === TAG_STDOUT) out.push(f.subarray(5));
      },
      timeoutMs,
      queue,
      places,
    };
    return runInProcess(ctx, plugins).then((outcome) => ({ outcome, stdout: Buffer.concat(out).toString() }));
  };

  // Two calls of other containers wait for the lock: one on the file, one behind it in the server's queue.
  const t0 = Date.now();
  const [first, second] = await Promise.all([call("rt1", 1000), call("rt2", 1000)]);
  for (const r of [first, second]) {
    assert.deepEqual(r.outcome, { status: 1, errorCode: ErrorCode.Internal }, r.stdout);
    assert.match(r.stdout, /ran longer than 1000 ms/);
  }
  // (At the time limit, not when the lock is let go, 30 s on: a loaded machine may answer late, never that late.)
  assert.ok(Date.now() - t0 < 10_000, `answered after ${Date.now() - t0} ms`);
  await sleep(50);
  assert.equal(places.running, 0);

  process.kill(-holder.pid!, "SIGKILL");
  await sleep(1000);
  assert.deepEqual(readdirSync(store).sort(), ["lock"], "nothing allocated for the calls already answered");
  // The store is not stuck: a new call gets the first address.
  const third = await call("rt3", 5000);
  assert.deepEqual(third.outcome, { status: 0 }, third.stdout);
  assert.ok(readdirSync(store).includes("10.199.0.2"), readdirSync(store).join(" "));
});
