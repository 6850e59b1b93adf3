/**
 * Resident mode by default: a plugin call that finds no server runs itself and starts one in the background
 * (launcher.c's start_server), for the calls that follow. Exactly one server however many cold calls race, fully
 * detached (its own session, none of the caller's descriptors), gone after its idle time; kept out by
 * TSCNI_RESIDENT=exec and by the operator's file; a start that fails is not tried again on every call; and a new
 * build takes over from an old server without a failed call. The calls name a socket of the test's (a server is
 * started for them in their own namespaces); none is started on the node's socket for a caller outside the node's.
 */

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, OUR_BIN, ROOT, runCommand, skipReason } from "#testing/harness.js";
import { killServers, serverPids } from "#testing/servers.js";

const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping auto-start tests: ${skip}`);

const waitFor = async (what: string, ok: () => boolean, ms = 5000, detail?: () => string) => {
  for (const t0 = Date.now(); !ok(); await sleep(25))
    if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms${detail ? `\n${detail()}` : ""}`);
};

describe("resident mode by default: the server starts itself", { skip }, () => {
  const cleanup = new Cleanup();
  const base = skip ? "" : cleanup.dir("tscni-auto-");
  let n = 0;
  /** A fresh socket path (and a store) per test. */
  const fresh = () => {
    const dir = path.join(base, `t${++n}`);
    mkdirSync(dir, { mode: 0o700 });
    const socket = path.join(dir, "run", "plugins.sock");
    cleanup.add(() => killServers(socket));
    return {
      dir,
      socket,
      conf: {
        cniVersion: "1.0.0",
        name: `auto${n}`,
        type: "host-local",
        ipam: { type: "host-local", subnet: "10.197.0.0/24", dataDir: path.join(dir, "store") },
      },
    };
  };
  after(() => cleanup.run());

  const env = (socket: string, extra: Record<string, string> = {}) => ({
    PATH: process.env["PATH"],
    CNI_PATH: OUR_BIN,
    CNI_IFNAME: "eth0",
    CNI_NETNS: "/run/netns/none",
    TSCNI_RESIDENT_SOCKET: socket,
    TSCNI_DEBUG: "1",
    ...extra,
  });
  const call = (bin: string, command: string, conf: unknown, socket: string, id: string, extra: Record<string, string> = {}) =>
    runCommand(path.join(bin, "host-local"), [], {
      env: { ...env(socket, extra), CNI_COMMAND: command, CNI_CONTAINERID: id },
      input: JSON.stringify(conf),
    });
  const status = async (socket: string) => {
    const r = await runCommand(path.join(OUR_BIN, "cnitool"), ["daemon", "status", "--socket", socket]);
    return r.code === 0
      ? (JSON.parse(r.stdout) as { served: number; pid: number; build: string; autoStarted: boolean; idleSeconds: number })
      : undefined;
  };

  test("a cold call runs itself at once and starts one detached server, which serves the calls that follow", async () => {
    const { socket, conf } = fresh();
    // The runtime's view: the plugin's stdout closes when its work is done, whatever the server does.
    const t0 = Date.now();
    const child = spawn(path.join(OUR_BIN, "host-local"), [], { env: { ...env(socket), CNI_COMMAND: "ADD", CNI_CONTAINERID: "first" } });
    child.stdin.end(JSON.stringify(conf));
    let out = "";
    let err = "";
    child.stdout.on("data", (b: Buffer) => (out += b));
    child.stderr.on("data", (b: Buffer) => (err += b));
    const closed = await new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
    assert.equal(closed, 0, out + err);
    assert.ok(Date.now() - t0 < 3000, `the first call's output closed after ${Date.now() - t0} ms`);
    assert.equal(JSON.parse(out).ips[0].address, "10.197.0.2/24");
    assert.match(err, /no server answered; one is starting/);

    await waitFor("the server listens", () => existsSync(socket));
    const [pid, ...more] = serverPids(socket);
    assert.ok(pid !== undefined && more.length === 0, `one server: ${serverPids(socket)}`);
    // Detached: a session of its own, not the caller's child, none of the caller's descriptors.
    const ids = (p: number | "self") => {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const [ppid, , sid] = stat
        .slice(stat.lastIndexOf(")") + 4)
        .split(" ")
        .map(Number);
      return { ppid, sid };
    };
    const { ppid, sid } = ids(pid);
    assert.notEqual(sid, ids("self").sid, "a session of its own, not the caller's");
    assert.notEqual(ppid, child.pid, "not the launcher's child");
    const fds = Object.fromEntries(
      readdirSync(`/proc/${pid}/fd`).map((fd) => {
        try {
          return [fd, readlinkSync(`/proc/${pid}/fd/${fd}`)];
        } catch {
          return [fd, "?"];
        }
      }),
    );
    assert.equal(fds["0"], "/dev/null");
    assert.equal(fds["1"], `${socket}.log`);
    assert.equal(fds["3"], `${socket}.lock`);
    assert.ok(!Object.values(fds).some((l) => /^pipe:/.test(l) && l !== fds["1"]), `no pipe of the caller: ${JSON.stringify(fds)}`);
    assert.equal(readlinkSync(`/proc/${pid}/cwd`), "/");

    const s = await status(socket);
    assert.deepEqual([s?.autoStarted, s?.idleSeconds, s?.served], [true, 600, 0]);
    const second = await call(OUR_BIN, "ADD", conf, socket, "second");
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.equal(JSON.parse(second.stdout).ips[0].address, "10.197.0.3/24");
    assert.equal((await status(socket))?.served, 1, "the second call was served");
    for (const id of ["first", "second"]) assert.equal((await call(OUR_BIN, "DEL", conf, socket, id)).code, 0);
    assert.match(readFileSync(`${socket}.log`, "utf8"), /serving plugin calls/);
  });

  test("a caller whose stdout and stderr are closed starts a server that holds its lock and serves", async () => {
    const { socket, conf } = fresh();
    const r = await runCommand("sh", ["-c", 'exec "$0" >&- 2>&-', path.join(OUR_BIN, "host-local")], {
      env: { ...env(socket), CNI_COMMAND: "ADD", CNI_CONTAINERID: "closed" },
      input: JSON.stringify(conf),
    });
    assert.notEqual(r.code, null);
    await waitFor("the server listens", () => existsSync(socket));
    const [pid] = serverPids(socket);
    assert.equal(readlinkSync(`/proc/${pid}/fd/3`), `${socket}.lock`);
    assert.equal(readlinkSync(`/proc/${pid}/fd/1`), `${socket}.log`);
    const del = await call(OUR_BIN, "DEL", conf, socket, "closed");
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal((await status(socket))?.served, 1);
  });

  test("40 concurrent cold calls start exactly one server, all succeed, and the others wait for it rather than run themselves", async () => {
    const { dir, socket, conf } = fresh();
    // Each call that runs itself (exec mode) writes one line here; the server, started with an environment of its own, writes none.
    const ranThemselves = path.join(dir, "exec-calls.jsonl");
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call(OUR_BIN, "ADD", conf, socket, `c${i}`, { TSCNI_TRACE_PHASES: ranThemselves })),
    );
    assert.ok(
      results.every((r) => r.code === 0),
      results.map((r) => r.stdout).join("\n"),
    );
    // The call that starts the server runs itself; a call that meets the start under way waits for the server (the
    // starter names itself in the lock file until the server does). Two at most: a call can still meet the lock in
    // the instant between the starter taking it and naming itself.
    const selfRun = existsSync(ranThemselves) ? readFileSync(ranThemselves, "utf8").trim().split("\n").length : 0;
    assert.ok(selfRun >= 1 && selfRun <= 2, `${selfRun} of 40 calls ran themselves`);
    assert.equal(new Set(results.map((r) => JSON.parse(r.stdout).ips[0].address)).size, 40, "distinct addresses");
    await waitFor("the server listens", () => existsSync(socket));
    await sleep(300);
    assert.equal(serverPids(socket).length, 1, `servers: ${serverPids(socket)}`);
    assert.equal(readFileSync(`${socket}.log`, "utf8").match(/serving plugin calls/g)?.length, 1, "one start in the log");
    const dels = await Promise.all(Array.from({ length: 40 }, (_, i) => call(OUR_BIN, "DEL", conf, socket, `c${i}`)));
    assert.ok(dels.every((r) => r.code === 0));
  });

  test("the server leaves after TSCNI_RESIDENT_IDLE seconds without calls, and takes its socket with it", async () => {
    const { socket, conf } = fresh();
    assert.equal((await call(OUR_BIN, "ADD", conf, socket, "i1", { TSCNI_RESIDENT_IDLE: "2" })).code, 0);
    await waitFor("the server listens", () => existsSync(socket));
    assert.equal((await status(socket))?.idleSeconds, 2);
    assert.equal((await call(OUR_BIN, "DEL", conf, socket, "i1")).code, 0);
    await waitFor("the server leaves", () => serverPids(socket).length === 0 && !existsSync(socket), 6000);
    assert.match(readFileSync(`${socket}.log`, "utf8"), /left: no call for 2 s/);
    assert.match(readFileSync(`${socket}.lock`, "utf8"), /^0 0 \d+\n$/, "a server that left well clears the record of starts (its pid stays)");
  });

  test("TSCNI_RESIDENT=exec and the operator's file keep a node out of resident mode; manual uses a server but starts none", async () => {
    const { dir, socket, conf } = fresh();
    const conffile = path.join(dir, "resident");
    assert.equal((await call(OUR_BIN, "ADD", conf, socket, "x1", { TSCNI_RESIDENT: "exec" })).code, 0);
    writeFileSync(conffile, "# the operator's switch\n  exec  \n");
    assert.equal((await call(OUR_BIN, "ADD", conf, socket, "x2", { TSCNI_RESIDENT_CONF: conffile })).code, 0);
    writeFileSync(conffile, "manual\n");
    assert.equal((await call(OUR_BIN, "ADD", conf, socket, "x3", { TSCNI_RESIDENT_CONF: conffile })).code, 0);
    await sleep(500);
    assert.deepEqual([existsSync(socket), serverPids(socket)], [false, []], "no server was started");

    // With a server up: "exec" (either way) does not use it, "manual" does.
    assert.equal((await call(OUR_BIN, "ADD", conf, socket, "x4")).code, 0);
    await waitFor("the server listens", () => existsSync(socket));
    const before = (await status(socket))!.served;
    writeFileSync(conffile, "exec\n");
    assert.equal((await call(OUR_BIN, "DEL", conf, socket, "x1", { TSCNI_RESIDENT_CONF: conffile })).code, 0);
    assert.equal((await call(OUR_BIN, "DEL", conf, socket, "x2", { TSCNI_RESIDENT: "exec" })).code, 0);
    assert.equal((await status(socket))!.served, before, "exec mode never reached the server");
    writeFileSync(conffile, "manual\n");
    assert.equal((await call(OUR_BIN, "DEL", conf, socket, "x3", { TSCNI_RESIDENT_CONF: conffile })).code, 0);
    // The caller's own word wins over the operator's file.
    assert.equal((await call(OUR_BIN, "DEL", conf, socket, "x4", { TSCNI_RESIDENT_CONF: conffile, TSCNI_RESIDENT: "exec" })).code, 0);
    assert.equal((await status(socket))!.served, before + 1, "manual mode used the server");
  });

  test("no server is started on the node's socket for a caller outside the node's namespaces; one that names its socket gets its own", async () => {
    const { socket, conf } = fresh();
    const nodeSocket = "/run/tscni/plugins.sock";
    const there = existsSync(nodeSocket) || existsSync(path.dirname(nodeSocket));
    const { TSCNI_RESIDENT_SOCKET: _, ...noSocket } = env(socket);
    const r = await runCommand("unshare", ["--net", "--", path.join(OUR_BIN, "host-local")], {
      env: { ...noSocket, CNI_COMMAND: "ADD", CNI_CONTAINERID: "ns1" },
      input: JSON.stringify(conf),
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    await sleep(300);
    if (!there) assert.deepEqual([existsSync(path.dirname(nodeSocket)), serverPids(nodeSocket)], [false, []], "nothing on the node's socket");
    const named = await runCommand("unshare", ["--net", "--", path.join(OUR_BIN, "host-local")], {
      env: { ...env(socket), CNI_COMMAND: "DEL", CNI_CONTAINERID: "ns1" },
      input: JSON.stringify(conf),
    });
    assert.equal(named.code, 0, named.stdout + named.stderr);
    await waitFor("a server on the named socket", () => existsSync(socket));
    const [pid] = serverPids(socket);
    assert.notEqual(readlinkSync(`/proc/${pid}/ns/net`), readlinkSync("/proc/self/ns/net"), "in the caller's namespace");
  });

  test("a start that fails is tried again only after a pause that grows", async () => {
    const { socket, conf } = fresh();
    // Something that is not a socket where the socket goes: connecting is refused, and a server cannot listen.
    mkdirSync(path.dirname(socket), { mode: 0o700 });
    writeFileSync(socket, "");
    const attempts = () =>
      (existsSync(`${socket}.log`) ? (readFileSync(`${socket}.log`, "utf8").match(/exists and is not a socket/g) ?? []) : []).length;
    // Calls for at least 3 s: starts may come at 0, 1 and 3 s after the first (each failure doubles the pause), so
    // however slow the machine, the calls outnumber the starts the pause allows.
    const t0 = Date.now();
    let calls = 0;
    for (; calls < 8 || Date.now() - t0 < 3000; calls++) {
      assert.equal((await call(OUR_BIN, calls % 2 ? "DEL" : "ADD", conf, socket, `f${calls >> 1}`)).code, 0, "every call still succeeds");
      await sleep(50);
    }
    const elapsed = (Date.now() - t0) / 1000;
    await waitFor("the first start fails", () => attempts() >= 1, 15_000);
    await sleep(500);
    const allowed = [0, 1, 3, 7, 15, 31].filter((at) => at <= elapsed + 0.5).length;
    assert.ok(attempts() <= allowed, `${attempts()} starts in ${elapsed} s (at most ${allowed} with the pause)`);
    assert.ok(attempts() < calls, `${attempts()} starts for ${calls} calls`);
    // "<attempts> <since> <pid>": the pid is the process that was to become the server (launcher.c's record_server_pid).
    assert.match(readFileSync(`${socket}.lock`, "utf8"), new RegExp(`^${attempts()} \\d+ \\d+\n$`), "the record of failed starts");
  });

  test("new binaries (another build) take over from the old server without a failed call", async () => {
    const { dir, socket, conf } = fresh();
    const bin = path.join(dir, "bin");
    const installed = await runCommand(path.join(OUR_BIN, "cnitool"), ["install", "--bin-dir", bin]);
    assert.equal(installed.code, 0, installed.stderr);
    const oldBuild = readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();
    assert.equal((await call(bin, "ADD", conf, socket, "u0")).code, 0);
    await waitFor("the old server listens", () => existsSync(socket));
    const old = (await status(socket))!;
    assert.equal(old.build, oldBuild);

    // The upgrade: the same program with another build ID, put in place as `cnitool install` does (rename over).
    // Only the first character changes: the compiler may keep another string as a tail of the ID's bytes (the
    // launcher's "3" was one), which a patch of the last characters would change too.
    const newBuild = (oldBuild[0] === "f" ? "e" : "f") + oldBuild.slice(1);
    const staged = path.join(dir, "staged");
    mkdirSync(staged);
    for (const file of ["tscni-js", "tscni"]) {
      const bytes = readFileSync(path.join(bin, file));
      const from = Buffer.from(oldBuild);
      const to = Buffer.from(newBuild);
      for (let at = bytes.indexOf(from); at >= 0; at = bytes.indexOf(from, at + 1)) to.copy(bytes, at);
      writeFileSync(path.join(staged, file), bytes);
      chmodSync(path.join(staged, file), 0o755);
    }
    // Calls keep coming while the binaries change under them.
    let stop = false;
    const failures: string[] = [];
    let i = 0;
    const traffic = (async () => {
      while (!stop) {
        const id = `u${++i}`;
        const add = await call(bin, "ADD", conf, socket, id);
        const del = await call(bin, "DEL", conf, socket, id);
        for (const r of [add, del]) if (r.code !== 0) failures.push(r.stdout + r.stderr);
      }
    })();
    try {
      await sleep(300);
      for (const file of ["tscni-js", "tscni"]) {
        copyFileSync(path.join(staged, file), path.join(bin, `.${file}.new`));
        chmodSync(path.join(bin, `.${file}.new`), 0o755);
        renameSync(path.join(bin, `.${file}.new`), path.join(bin, file));
      }
      await waitFor(
        "a server of the new build serves",
        () =>
          spawnSync(path.join(bin, "cnitool"), ["daemon", "status", "--socket", socket], { encoding: "utf8" }).stdout.includes(
            `"build":"${newBuild}"`,
          ),
        15_000,
        () => readFileSync(`${socket}.log`, "utf8"),
      );
      await sleep(300);
    } finally {
      stop = true;
      await traffic;
    }
    assert.deepEqual(failures, [], "no call failed during the switch");
    assert.ok(i > 4, `calls ran during the switch (${i})`);
    await waitFor("the old server is gone", () => {
      try {
        process.kill(old.pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    assert.match(readFileSync(`${socket}.log`, "utf8"), /stepping aside/);
    assert.equal((await call(bin, "DEL", conf, socket, "u0")).code, 0);
  });
});
