/**
 * Issue 48, points 5-8, as an operator meets them: the off switch fails closed (any word that is not a mode means
 * exec mode, said once in the node's log and under TSCNI_DEBUG), `cnitool daemon status` tells the mode and why a
 * call is or is not served, with or without a server, on the socket TSCNI_RESIDENT_SOCKET names; a server started
 * with self-repair off and a memory cap says so; a plugin run without privilege says it needs root.
 */

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { docSnippet, substitute } from "#testing/doc-snippets.js";
import { Cleanup, OUR_BIN, ROOT, runCommand, skipReason } from "#testing/harness.js";
import { serverPids, socketDirs } from "#testing/servers.js";

const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping the node mode tests: ${skip}`);

describe("the node's resident mode: off means off, and the node tells its mode", { skip }, () => {
  const cleanup = new Cleanup();
  const base = skip ? "" : cleanup.dir("tscni-mode-");
  after(() => cleanup.run());
  const fresh = socketDirs(cleanup, () => base, "mode", "10.196.0.0/24");
  const call = (socket: string, conf: unknown, command: string, extra: Record<string, string | undefined>) =>
    runCommand(path.join(OUR_BIN, "host-local"), [], {
      env: {
        PATH: process.env["PATH"],
        CNI_COMMAND: command,
        CNI_CONTAINERID: "m1",
        CNI_NETNS: "/run/netns/none",
        CNI_IFNAME: "eth0",
        CNI_PATH: OUR_BIN,
        TSCNI_RESIDENT_SOCKET: socket,
        TSCNI_DEBUG: "1",
        ...extra,
      },
      input: JSON.stringify(conf),
    });
  const status = (env: Record<string, string | undefined>, args: string[] = []) =>
    runCommand(path.join(OUR_BIN, "cnitool"), ["daemon", "status", ...args], { env: { PATH: process.env["PATH"], ...env } });

  for (const word of ["off", "disabled", "no", "Exec"]) {
    for (const where of ["TSCNI_RESIDENT", "the operator's file"] as const) {
      test(`"${word}" in ${where} means exec mode: no server starts, the launcher says which word and which are accepted`, async () => {
        const { dir, socket, conf } = fresh();
        const file = path.join(dir, "resident");
        writeFileSync(file, `# the operator's switch\n${word}\n`);
        const env = where === "TSCNI_RESIDENT" ? { TSCNI_RESIDENT: word } : { TSCNI_RESIDENT: undefined, TSCNI_RESIDENT_CONF: file };
        for (const command of ["ADD", "DEL", "ADD", "DEL"]) {
          const r = await call(socket, conf, command, env);
          assert.equal(r.code, 0, r.stdout + r.stderr);
          assert.match(
            r.stderr,
            new RegExp(
              `resident mode "${word}" in ${where === "TSCNI_RESIDENT" ? "TSCNI_RESIDENT" : file} is not one of auto, manual, exec: running in exec mode`,
            ),
          );
        }
        await sleep(300);
        assert.deepEqual([existsSync(socket), serverPids(socket)], [false, []], "no server was started");
        const log = readFileSync(`${socket}.log`, "utf8");
        assert.equal(log.match(/is not one of auto, manual, exec/g)?.length, 1, `said once in the node's log:\n${log}`);
        const s = await status({ ...env, TSCNI_RESIDENT_SOCKET: socket });
        assert.equal(s.code, 3, s.stderr);
        const report = JSON.parse(s.stdout);
        assert.deepEqual([report.mode, report.thisCaller.served], ["exec", false]);
        assert.match(report.modeWarning, /is not one of auto, manual, exec/);
      });
    }
  }

  test("README's off switch, run as written (its directory substituted): calls run in exec mode, no server starts", async () => {
    const { dir, socket, conf } = fresh();
    const etc = path.join(dir, "etc-tscni");
    const block = substitute(docSnippet("README.md", "resident-off"), { "/etc/tscni": etc }).trim();
    assert.equal((await runCommand("sh", ["-c", block])).code, 0, block);
    const env = { TSCNI_RESIDENT: undefined, TSCNI_RESIDENT_CONF: path.join(etc, "resident") };
    const r = await call(socket, conf, "ADD", env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal((await call(socket, conf, "DEL", env)).code, 0);
    await sleep(300);
    assert.deepEqual([existsSync(socket), serverPids(socket)], [false, []], "no server was started");
    assert.deepEqual(JSON.parse((await status({ ...env, TSCNI_RESIDENT_SOCKET: socket })).stdout).mode, "exec");
  });

  test("`cnitool daemon status` without a server: the mode, its source, the socket TSCNI_RESIDENT_SOCKET names, and why nothing serves", async () => {
    const { socket } = fresh();
    const r = await status({ TSCNI_RESIDENT: undefined, TSCNI_RESIDENT_CONF: "/nonexistent", TSCNI_RESIDENT_SOCKET: socket });
    assert.equal(r.code, 3, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, /connect ENOENT|ECONNREFUSED/);
    const report = JSON.parse(r.stdout);
    assert.deepEqual([report.mode, report.modeFrom, report.socket, report.serverRunning], ["auto", "the default", socket, false]);
    assert.match(report.thisCaller.why, /no server runs: there is no socket at .*; the next plugin call starts one \(mode auto\)/);
    const manual = JSON.parse((await status({ TSCNI_RESIDENT: "manual", TSCNI_RESIDENT_SOCKET: socket })).stdout);
    assert.match(manual.thisCaller.why, /mode manual starts none/);
  });

  test("docs/resident.md's settings file: the server a launcher starts has self-repair off and its memory capped; the exec slots are read", async () => {
    const { dir, socket, conf } = fresh();
    const file = path.join(dir, "resident");
    writeFileSync(file, docSnippet("docs/resident.md", "resident-settings"));
    const env = { TSCNI_RESIDENT: undefined, TSCNI_RESIDENT_CONF: file };
    assert.equal((await call(socket, conf, "ADD", env)).code, 0);
    for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(25);
    let report: Record<string, unknown> = {};
    for (let i = 0; i < 100 && report["build"] === undefined; i++, await sleep(50)) {
      const r = await status({ TSCNI_RESIDENT_SOCKET: socket, TSCNI_RESIDENT_CONF: file });
      if (r.code === 0) report = JSON.parse(r.stdout);
    }
    assert.equal(report["selfRepair"], "off (--no-repair)", JSON.stringify(report));
    assert.equal(report["memoryMax"], 256 * 1024 * 1024);
    assert.deepEqual(report["settings"], {
      repair: `off (${file})`,
      memoryMax: `${256 * 1024 * 1024} bytes (${file})`,
      execSlots: `4 (${file})`,
      problems: [],
    });
    assert.equal((await call(socket, conf, "DEL", env)).code, 0);
  });

  test("a server a launcher starts with self-repair off and a memory cap: status shows both, and its cgroup", async () => {
    const { socket, conf } = fresh();
    const env = { TSCNI_RESIDENT: "auto", TSCNI_RESIDENT_REPAIR: "off", TSCNI_RESIDENT_MEMORY_MAX: "300M" };
    assert.equal((await call(socket, conf, "ADD", env)).code, 0);
    for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(25);
    let report: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      const r = await status({ TSCNI_RESIDENT_SOCKET: socket });
      if (r.code === 0) {
        report = JSON.parse(r.stdout);
        break;
      }
      await sleep(50);
    }
    assert.equal(report["serverRunning"], true, JSON.stringify(report));
    assert.deepEqual(report["thisCaller"], { served: true });
    assert.equal(report["selfRepair"], "off (--no-repair)");
    assert.equal(report["memoryMax"], 300 * 1024 * 1024);
    assert.match(String(report["cgroup"]), /tscni-resident-[0-9a-f]+.*(memory\.max|memory\.limit_in_bytes|MemoryMax) 314572800/);
    assert.equal(typeof report["rssBytes"], "number");
    assert.match(readFileSync(`${socket}.log`, "utf8"), /self-repair of firewall rules is off/);
    assert.equal((await call(socket, conf, "DEL", env)).code, 0);
  });

  test("TSCNI_DEBUG says why a call ran itself when it is not in the node's namespaces", async () => {
    const { conf } = fresh();
    const r = await runCommand("unshare", ["--net", "--", path.join(OUR_BIN, "host-local")], {
      env: {
        PATH: process.env["PATH"],
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: "ns1",
        CNI_NETNS: "/run/netns/none",
        CNI_IFNAME: "eth0",
        CNI_PATH: OUR_BIN,
        TSCNI_RESIDENT: "auto",
        TSCNI_DEBUG: "1",
      },
      input: JSON.stringify(conf),
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /no server answered, none started: this caller is not in the node's namespaces/);
  });

  test("a plugin run without privilege says it needs root with CAP_NET_ADMIN, not a bare 'Operation not permitted'", async () => {
    const ns = cleanup.netns(`tscni-mode-np${process.pid}`).name;
    const r = await runCommand("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", path.join(OUR_BIN, "bridge")], {
      env: {
        PATH: process.env["PATH"],
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: "np1",
        CNI_NETNS: `/run/netns/${ns}`,
        CNI_IFNAME: "eth0",
        CNI_PATH: OUR_BIN,
        TSCNI_RESIDENT: "exec",
      },
      input: JSON.stringify({ cniVersion: "1.0.0", name: "np", type: "bridge", bridge: "tscni-np0", ipam: {} }),
    });
    assert.notEqual(r.code, 0);
    assert.match(
      JSON.parse(r.stdout).msg,
      /needs root with CAP_NET_ADMIN, as a container runtime runs it; it ran as uid 65534 without CAP_NET_ADMIN/,
    );
  });
});
