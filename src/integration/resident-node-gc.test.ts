/**
 * `cnitool daemon --gc-cri-endpoint`: the resident server runs node GC on its schedule against a CRI runtime (a
 * stand-in gRPC server here) and logs what it did; a stale attachment goes within an interval, one the runtime knows
 * stays; SIGTERM stops it. Bad node GC flags stop the daemon before it serves anything.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { writeCacheEntry } from "#libcni/cache.js";
import { startFakeCri } from "#testing/fake-cri.js";
import { Cleanup, CNITOOL, runCommand, skipReason, TEST_BIN } from "#testing/harness.js";
import { writeDebug } from "#testing/plugins/noop-debug.js";

const skip = skipReason();
if (skip) console.log(`# skipping the resident server's node GC tests: ${skip}`);

describe("the resident server's periodic node GC", { skip }, () => {
  const cleanup = new Cleanup();
  after(() => cleanup.run());

  test("removes a stale attachment within an interval, keeps the runtime's, logs it, stops on SIGTERM", async () => {
    const dir = cleanup.dir("tscni-daemon-gc-");
    const cacheDir = path.join(dir, "cache");
    const confDir = path.join(dir, "net.d");
    const sockDir = path.join(dir, "sock");
    for (const d of [cacheDir, confDir, sockDir]) fs.mkdirSync(d, { mode: 0o700 });
    const debugFile = path.join(dir, "debug.json");
    writeDebug(debugFile, { ReportResult: `{"cniVersion":"1.1.0"}` });
    const conf = JSON.stringify({
      cniVersion: "1.1.0",
      name: "gcnet",
      plugins: [{ type: "noop", debugFile, commandLog: path.join(dir, "log.json") }],
    });
    fs.writeFileSync(path.join(confDir, "10-gcnet.conflist"), conf);
    const [stale, known] = ["a".repeat(64), "b".repeat(64)];
    for (const id of [stale, known]) {
      await writeCacheEntry(
        cacheDir,
        {
          networkName: "gcnet",
          containerID: id,
          ifName: "eth0",
          config: Buffer.from(conf),
          cniArgs: [["K8S_POD_INFRA_CONTAINER_ID", id]],
        },
        undefined,
      );
    }
    const cri = await startFakeCri(dir, [{ id: known }]);
    cleanup.add(() => cri.stop());

    const daemon = spawn(
      CNITOOL,
      [
        "daemon",
        "--socket",
        path.join(sockDir, "plugins.sock"),
        "--warm-up",
        "0",
        "--gc-cri-endpoint",
        cri.endpoint,
        "--gc-interval",
        "1",
        "--gc-min-age",
        "0",
        "--gc-cache-dir",
        cacheDir,
        "--gc-conf-dir",
        confDir,
        "--gc-cni-path",
        TEST_BIN,
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, TSCNI_RESIDENT: "exec" } },
    );
    cleanup.add(() => daemon.kill("SIGKILL"));
    let log = "";
    daemon.stderr!.on("data", (b: Buffer) => (log += b));
    const exited = new Promise<number | null>((resolve) => daemon.once("exit", resolve));

    for (let i = 0; i < 100 && !log.includes("node GC: removed: "); i++) await sleep(100);
    assert.match(log, new RegExp(`node GC: every 1 s, asking ${cri.endpoint}, cache ${cacheDir}, networks in ${confDir}`));
    assert.match(log, new RegExp(`node GC: removed: ${stale} on network "gcnet" \\(eth0\\)`), log);
    assert.match(log, /node GC: sent GC to network "gcnet" with \d+ valid attachment\(s\)/);
    assert.deepEqual(fs.readdirSync(path.join(cacheDir, "results")), [`gcnet-${known}-eth0`]);

    daemon.kill("SIGTERM");
    assert.equal(await exited, 0);
    assert.match(log, /left: /);
  });

  test("bad node GC flags: the daemon stops before serving, naming the flag", async () => {
    const dir = cleanup.dir("tscni-daemon-gc-");
    const socket = path.join(dir, "plugins.sock");
    const cases: Array<[string[], RegExp]> = [
      [["--gc-cri-endpoint", "tcp://10.0.0.1:1"], /CRI endpoint "tcp:\/\/10\.0\.0\.1:1" is not a unix socket/],
      [["--gc-cri-endpoint", "unix:///x.sock", "--gc-interval", "0"], /--gc-interval wants at least 1 second/],
      [["--gc-cri-endpoint", "unix:///x.sock", "--gc-min-age", "-5"], /--gc-min-age wants a whole number/],
    ];
    for (const [flags, message] of cases) {
      const r = await runCommand(CNITOOL, ["daemon", "--socket", socket, "--warm-up", "0", ...flags], {
        env: { ...process.env, TSCNI_RESIDENT: "exec" },
        timeoutMs: 10_000,
      });
      assert.equal(r.code, 1, flags.join(" "));
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /serving plugin calls/);
      assert.equal(fs.existsSync(socket), false);
    }
  });
});
