/**
 * docs/resident.md's commands, run as written with /opt/cni/bin and /etc/tscni pointed at the test's own
 * directories: the mode switch (exec and manual start no server, back to auto starts one), looking at a server
 * (status, metrics, stop) on the node's default socket in a private mount namespace with a /run of its own, and the
 * systemd socket activation install with units written into a private /etc/systemd/system (systemctl stubbed: no
 * systemd runs here; the units themselves are verified in resident.test.ts). Run once, in the exec pass.
 */

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { docSnippet, substitute } from "#testing/doc-snippets.js";
import { Cleanup, OUR_BIN, ROOT, runCommand, skipReason } from "#testing/harness.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";
import { killServers } from "#testing/servers.js";

const DOC = "docs/resident.md";
const skip = RESIDENT_PASS
  ? "docs/resident.md's commands run once, in the exec pass"
  : skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping docs/resident.md's commands: ${skip}`);

describe("docs/resident.md, as written", { skip }, () => {
  const cleanup = new Cleanup();
  after(() => cleanup.run());
  /** A plugin directory as an install leaves it (the doc's /opt/cni/bin). */
  const installed = async () => {
    const bin = path.join(cleanup.dir("tscni-docres-"), "bin");
    const r = await runCommand(path.join(OUR_BIN, "cnitool"), ["install", "--bin-dir", bin]);
    assert.equal(r.code, 0, r.stderr);
    return bin;
  };

  test("resident-switch: exec and manual start no server; without the file (auto) the next call starts one", async () => {
    const base = cleanup.dir("tscni-docres-");
    const etc = path.join(base, "etc-tscni");
    const runDir = path.join(base, "run");
    mkdirSync(runDir, { mode: 0o700 });
    const socket = path.join(runDir, "plugins.sock");
    cleanup.add(() => killServers(socket));
    const lines = substitute(docSnippet(DOC, "resident-switch"), { "/etc/tscni": etc }).trim().split("\n");
    assert.equal(lines.length, 4, "mkdir, exec, manual, rm");
    const call = (n: number) =>
      runCommand(path.join(OUR_BIN, "host-local"), [], {
        env: {
          PATH: process.env["PATH"],
          CNI_COMMAND: "ADD",
          CNI_CONTAINERID: `switch${n}`,
          CNI_IFNAME: "eth0",
          CNI_NETNS: "/run/netns/none",
          CNI_PATH: OUR_BIN,
          TSCNI_RESIDENT_SOCKET: socket,
          TSCNI_RESIDENT_CONF: path.join(etc, "resident"),
          TSCNI_DEBUG: "1",
        },
        input: JSON.stringify({
          cniVersion: "1.0.0",
          name: "docsw",
          type: "host-local",
          ipam: { type: "host-local", subnet: "10.196.0.0/24", dataDir: path.join(base, "store") },
        }),
      });
    const shell = (line: string) => runCommand("sh", ["-euc", line]);
    for (const [i, mode] of [
      [1, "exec"],
      [2, "manual"],
    ] as const) {
      if (i === 1) assert.equal((await shell(lines[0]!)).code, 0);
      assert.equal((await shell(lines[i]!)).code, 0, lines[i]);
      assert.equal(readFileSync(path.join(etc, "resident"), "utf8").trim().split(/\s/)[0], mode);
      const r = await call(i);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      await sleep(300);
      assert.ok(!existsSync(socket), `${mode}: no server started (${r.stderr.trim()})`);
    }
    assert.equal((await shell(lines[3]!)).code, 0, lines[3]);
    assert.ok(!existsSync(path.join(etc, "resident")));
    const r = await call(3);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    for (const t0 = Date.now(); !existsSync(socket); await sleep(25)) assert.ok(Date.now() - t0 < 5000, "auto: a server started");
  });

  test("resident-observe: status, metrics and stop of the server on the node's socket", async () => {
    const bin = await installed();
    const block = substitute(docSnippet(DOC, "resident-observe"), { "/opt/cni/bin/": `${bin}/` });
    // A /run of its own (the node's socket is /run/tscni/plugins.sock), a server on it, then the doc's commands.
    const script = [
      "set -eu",
      "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0700 /run/tscni",
      `${bin}/cnitool daemon --warm-up 0 2>/run/daemon.err &`,
      "server=$!",
      "i=0; while [ ! -S /run/tscni/plugins.sock ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done",
      block,
      "wait $server; echo server-left",
    ].join("\n");
    const r = await runCommand("unshare", ["--mount", "--propagation", "private", "sh", "-c", script], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const [status, metrics, ...rest] = r.stdout.trim().split("\n");
    assert.equal(JSON.parse(status!).inFlight, 0, status);
    assert.match(metrics!, /^tscni_calls_in_flight 0$/);
    assert.equal(rest.at(-1), "server-left", "stop: the server left");
  });

  test("resident-systemd: install writes the socket and service units, systemctl enables the socket", async () => {
    const bin = await installed();
    const stub = cleanup.dir("tscni-docres-");
    writeFileSync(path.join(stub, "systemctl"), `#!/bin/sh\necho "systemctl $*" >> ${stub}/calls\n`);
    chmodSync(path.join(stub, "systemctl"), 0o755);
    const block = substitute(docSnippet(DOC, "resident-systemd"), { "/opt/cni/bin": bin });
    const script = ["set -eu", "mkdir -p /etc/systemd/system", "mount -t tmpfs tmpfs /etc/systemd/system", block, "ls /etc/systemd/system"].join(
      "\n",
    );
    const r = await runCommand("unshare", ["--mount", "--propagation", "private", "sh", "-c", script], {
      env: { PATH: `${stub}:${process.env["PATH"]}` },
      timeoutMs: 60_000,
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(
      r.stdout
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("tscni."))
        .sort(),
      ["tscni.service", "tscni.socket"],
    );
    assert.deepEqual(readFileSync(path.join(stub, "calls"), "utf8").trim().split("\n"), [
      "systemctl daemon-reload",
      "systemctl enable --now tscni.socket",
    ]);
  });
});
