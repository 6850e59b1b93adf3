/**
 * The resident server's trust boundary, each rule tried with a caller that breaks it: a root caller without
 * capabilities and the root of a user namespace get exactly what exec mode gives them (neither their launcher nor
 * the server lets the server act for them); a socket whose listening end is not root's never receives a byte of a
 * call (resident-trust.test.ts tries the rest of docs/trust.md); socket directories that are
 * a symbolic link, another user's or writable by others are refused, and the lock is not followed through a
 * link; floods of silent, slow or huge requests do not keep other callers from an answer; a peer that is no
 * longer the process that connected is refused.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, OUR_BIN, ROOT, runCommand, runTag, skipReason } from "#testing/harness.js";
import { Host } from "#testing/rig.js";

const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping resident security tests: ${skip}`);

const CNITOOL = path.join(OUR_BIN, "cnitool");

describe("resident server: the trust boundary", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let socket: string;
  let server: ChildProcess | undefined;

  before(async () => {
    host = new Host(cleanup, `tscni-rsec-${tag}`, OUR_BIN);
    socket = path.join(cleanup.dir("tscni-rsec-"), "run", "plugins.sock");
    server = spawn("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "daemon", "--socket", socket, "--warm-up", "0"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let log = "";
    server.stderr!.on("data", (b: Buffer) => (log += b));
    cleanup.add(() => server?.kill("SIGKILL"));
    for (let i = 0; i < 100 && !log.includes("serving plugin calls"); i++) await sleep(50);
    assert.match(log, /serving plugin calls/, log);
  });
  after(() => cleanup.run());

  const served = async () => {
    const r = await runCommand("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "daemon", "status", "--socket", socket]);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { served: number; connections: number }).served;
  };
  /** A plugin call from the host namespace, through `prefix` (the breaking part), served if the server takes it. */
  const call = (
    plugin: string,
    command: string,
    conf: unknown,
    env: Record<string, string>,
    prefix: string[] = [],
    extra: Record<string, string> = {},
  ) =>
    runCommand("nsenter", [`--net=${host.ns.path}`, "--", ...prefix, path.join(OUR_BIN, plugin)], {
      env: {
        PATH: process.env["PATH"],
        TSCNI_RESIDENT: "manual",
        TSCNI_RESIDENT_SOCKET: socket,
        TSCNI_DEBUG: "1",
        CNI_COMMAND: command,
        CNI_PATH: OUR_BIN,
        CNI_IFNAME: "eth0",
        CNI_CONTAINERID: "sec1",
        CNI_NETNS: "/run/netns/none",
        ...env,
        ...extra,
      },
      input: JSON.stringify(conf),
    });
  /** The same call served (if admitted) and in exec mode: their outcomes must be equal. */
  const bothWays = async (plugin: string, command: string, conf: unknown, env: Record<string, string>, prefix: string[]) => {
    const before = await served();
    const viaServer = await call(plugin, command, conf, env, prefix);
    const exec = await call(plugin, command, conf, env, prefix, { TSCNI_RESIDENT: "exec" });
    assert.equal(await served(), before, "the server ran nothing for it");
    return { viaServer, exec };
  };

  const capless = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"];
  const usernsRoot = ["unshare", "--user", "--map-root-user", "--"];

  // (The launcher of such a caller refuses the server first: the same rule, from its side.)
  for (const [who, prefix, why] of [
    ["a root caller without capabilities", capless, /not used: the listener has capabilities this caller lacks/],
    [
      "the root of a user namespace mapped 0 -> 0",
      usernsRoot,
      /not used: (this caller cannot read the listener's user namespace|the listener (lacks|has) capabilities)/,
    ],
  ] as const) {
    test(`${who} gets exactly what exec mode gives it: loopback ADD into a container it may not enter`, async () => {
      const ctr = host.container(`tscni-rsec-${tag}-${prefix[0]!.slice(0, 4)}`);
      const conf = { cniVersion: "1.0.0", name: "lo", type: "loopback" };
      const { viaServer, exec } = await bothWays("loopback", "ADD", conf, { CNI_NETNS: ctr.path, CNI_IFNAME: "lo" }, [...prefix]);
      assert.match(viaServer.stderr, why);
      assert.equal(viaServer.code, exec.code);
      assert.equal(viaServer.stdout, exec.stdout);
      assert.notEqual(exec.code, 0, "exec mode fails for it");
      assert.match(exec.stdout, /operation not permitted/i);
    });
  }

  test("a capability-less root caller's STATUS runs its IPAM program with its own capabilities, not the server's", async () => {
    const dir = cleanup.dir("tscni-rsec-ipam-");
    const record = path.join(dir, "caps");
    writeFileSync(path.join(dir, "capdump"), `#!/bin/sh\ngrep CapEff /proc/self/status >> ${record}\n`);
    chmodSync(path.join(dir, "capdump"), 0o755);
    const conf = { cniVersion: "1.1.0", name: "capnet", type: "bridge", bridge: `rsec${tag}`, ipam: { type: "capdump" } };
    const r = await call("bridge", "STATUS", conf, { CNI_PATH: `${dir}:${OUR_BIN}` }, capless);
    assert.match(r.stderr, /not used: the listener has capabilities this caller lacks/);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(
      readFileSync(record, "utf8")
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/)[1]),
      ["0000000000000000"],
    );
  });

  test("a socket whose listening end is not root's never receives a byte of the call", async () => {
    const open = cleanup.dir("tscni-rsec-foreign-");
    chmodSync(open, 0o755);
    const dir = path.join(open, "run");
    mkdirSync(dir, { mode: 0o777 });
    chmodSync(dir, 0o777);
    const fake = path.join(dir, "plugins.sock");
    const received = path.join(dir, "received");
    // A server run as nobody that answers "Y" to anything and records every byte it gets.
    const script = `const net = require("net"), fs = require("fs");
      net.createServer((c) => {
        let n = 0;
        c.write("Y");
        c.on("data", (d) => (n += d.length));
        c.on("error", () => {});
        c.on("close", () => fs.appendFileSync(${JSON.stringify(received)}, n + "\\n"));
        c.setTimeout(2000, () => c.destroy());
      }).listen(${JSON.stringify(fake)}, () => fs.chmodSync(${JSON.stringify(fake)}, 0o777));`;
    const nobody = spawn("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, "-e", script], { stdio: "ignore" });
    cleanup.add(() => nobody.kill("SIGKILL"));
    for (let i = 0; i < 100 && !existsSync(fake); i++) await sleep(20);
    const conf = {
      cniVersion: "1.0.0",
      name: `rsecf${tag}`,
      type: "host-local",
      ipam: { type: "host-local", subnet: "10.196.0.0/24", dataDir: path.join(open, "store") },
    };
    const r = await runCommand(path.join(OUR_BIN, "host-local"), [], {
      env: {
        PATH: process.env["PATH"],
        TSCNI_RESIDENT: "manual",
        TSCNI_RESIDENT_SOCKET: fake,
        TSCNI_DEBUG: "1",
        CNI_COMMAND: "ADD",
        CNI_PATH: OUR_BIN,
        CNI_IFNAME: "eth0",
        CNI_CONTAINERID: "f1",
        CNI_NETNS: "/run/netns/none",
      },
      input: JSON.stringify(conf),
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(JSON.parse(r.stdout).ips[0].address, "10.196.0.2/24", "the call ran in the caller");
    assert.match(r.stderr, /not used: the listener does not run as root/);
    for (let i = 0; i < 100 && !existsSync(received); i++) await sleep(20);
    assert.equal(readFileSync(received, "utf8"), "0\n", "the foreign server got nothing");
  });

  test("socket directories that are a link, another user's, or writable by others are refused; the lock is not followed", async () => {
    const base = cleanup.dir("tscni-rsec-dirs-");
    const real = path.join(base, "real");
    mkdirSync(real, { mode: 0o700 });
    const cases: Array<[string, string, RegExp]> = [];
    symlinkSync(real, path.join(base, "link"));
    cases.push(["a symbolic link", path.join(base, "link", "plugins.sock"), /is a symbolic link/]);
    mkdirSync(path.join(base, "theirs"), { mode: 0o700 });
    chownSync(path.join(base, "theirs"), 65534, 65534);
    cases.push(["another user's", path.join(base, "theirs", "plugins.sock"), /belongs to uid 65534/]);
    for (const mode of [0o777, 0o770, 0o1777]) {
      const d = path.join(base, `m${mode.toString(8)}`);
      mkdirSync(d);
      chmodSync(d, mode);
      cases.push([`mode ${mode.toString(8)}`, path.join(d, "plugins.sock"), /is writable by/]);
    }
    const above = path.join(base, "above");
    mkdirSync(path.join(above, "run"), { recursive: true, mode: 0o700 });
    chownSync(above, 65534, 65534);
    cases.push(["under another user's directory", path.join(above, "run", "plugins.sock"), /above belongs to uid 65534/]);
    for (const [what, sock, why] of cases) {
      const r = await runCommand(CNITOOL, ["daemon", "--socket", sock, "--warm-up", "0"], { timeoutMs: 10_000 });
      assert.notEqual(r.code, 0, what);
      assert.match(r.stderr, why, what);
      assert.equal(existsSync(sock), false, `${what}: no socket`);
    }
    // A lock file that is a link: not followed, the server does not start, the target is untouched.
    const victim = path.join(base, "victim");
    writeFileSync(victim, "keep");
    symlinkSync(victim, path.join(real, "plugins.sock.lock"));
    const r = await runCommand(CNITOOL, ["daemon", "--socket", path.join(real, "plugins.sock"), "--warm-up", "0"], { timeoutMs: 10_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /ELOOP|symbolic link/);
    assert.equal(readFileSync(victim, "utf8"), "keep");
  });

  test("a flood of silent connections does not keep a caller from its answer, and is dropped after the hello's time limit", async () => {
    const silent: net.Socket[] = [];
    let dropped = 0;
    for (let i = 0; i < 600; i++) {
      const s = net.connect(socket);
      s.on("error", () => undefined);
      s.on("close", () => dropped++);
      s.resume();
      silent.push(s);
    }
    cleanup.add(() => silent.forEach((s) => s.destroy()));
    await sleep(200);
    const conf = { cniVersion: "1.0.0", name: `rsecs${tag}`, type: "host-local", ipam: host.hostLocal(["10.195.0.0/24"]) };
    const t0 = Date.now();
    const r = await call("host-local", "ADD", conf, { CNI_CONTAINERID: "flood1" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(Date.now() - t0 < 3000, `answered in ${Date.now() - t0} ms`);
    // Dropped at the hello's time limit (10 s).
    for (const t1 = Date.now(); dropped < 600 && Date.now() - t1 < 11_000; ) await sleep(100);
    assert.equal(dropped, 600, "the server dropped the silent connections");
    const before = await served();
    assert.equal((await call("host-local", "DEL", conf, { CNI_CONTAINERID: "flood1" })).code, 0);
    assert.equal(await served(), before + 1, "served again");
  });

  test("a caller whose hello comes 3.5 s after its connection (a launcher of a burst, checking the listener) is answered, not dropped", async () => {
    const build = readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();
    // Connects, then computes for 3.5 s (what a starved launcher looks like) before its hello.
    const script = `const net = require("net");
      const id = Buffer.from(${JSON.stringify(build)});
      const s = net.connect(${JSON.stringify(socket)}, () => {
        for (const end = Date.now() + 3500; Date.now() < end;);
        const hello = Buffer.alloc(12 + id.length);
        hello.write("TSCNI\\x02", 0, "latin1"); hello.writeUInt16LE(id.length, 6); id.copy(hello, 8); hello.writeUInt32LE(100, 8 + id.length);
        s.write(hello);
      });
      s.on("data", (d) => { process.stdout.write(String.fromCharCode(d[0])); process.exit(0); });
      s.on("error", (e) => { process.stdout.write(e.code ?? "error"); process.exit(0); });
      s.on("close", () => { process.stdout.write("closed"); process.exit(0); });`;
    const r = await runCommand("nsenter", [`--net=${host.ns.path}`, "--", process.execPath, "-e", script]);
    assert.equal(r.stdout, "Y", r.stdout + r.stderr);
  });

  test("requests larger than the server takes, or past its byte budget, run in the caller", async () => {
    const conf = {
      cniVersion: "1.0.0",
      name: `rsech${tag}`,
      type: "host-local",
      ipam: host.hostLocal(["10.194.0.0/24"]),
      padding: "x".repeat(9 * 1024 * 1024),
    };
    const big = await call("host-local", "ADD", conf, { CNI_CONTAINERID: "big1" });
    assert.equal(big.code, 0, big.stdout.slice(0, 500));
    assert.match(big.stderr, /refused: a request of \d+ bytes is larger than the server takes/);
    assert.equal((await call("host-local", "DEL", conf, { CNI_CONTAINERID: "big1" })).code, 0);

    // Eight admitted callers announce 8 MiB each and never send it: the budget is spent until they are dropped.
    const build = readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();
    const hoarder = spawn(
      "nsenter",
      [
        `--net=${host.ns.path}`,
        "--",
        process.execPath,
        "-e",
        `
      const net = require("net");
      const id = Buffer.from(${JSON.stringify(build)});
      for (let i = 0; i < 8; i++) {
        const s = net.connect(${JSON.stringify(socket)});
        const hello = Buffer.alloc(12 + id.length);
        hello.write("TSCNI\\x02", 0, "latin1"); hello.writeUInt16LE(id.length, 6); id.copy(hello, 8); hello.writeUInt32LE(8 * 1024 * 1024, 8 + id.length);
        s.on("data", (d) => process.stdout.write(d.subarray(0, 1)));
        s.write(hello);
      }
      setInterval(() => {}, 1000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    cleanup.add(() => hoarder.kill("SIGKILL"));
    let answers = "";
    hoarder.stdout!.on("data", (b: Buffer) => (answers += b));
    for (let i = 0; i < 100 && answers.length < 8; i++) await sleep(50);
    assert.equal(answers, "YYYYYYYY");
    const small = { cniVersion: "1.0.0", name: `rsech${tag}`, type: "host-local", ipam: host.hostLocal(["10.194.0.0/24"]) };
    const r = await call("host-local", "ADD", small, { CNI_CONTAINERID: "budget1" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /refused: the server is busy \(\d+ bytes of requests pending\)/);
    hoarder.kill("SIGKILL");
    await sleep(300);
    const before = await served();
    assert.equal((await call("host-local", "DEL", small, { CNI_CONTAINERID: "budget1" })).code, 0);
    assert.equal(await served(), before + 1, "served again once they left");
  });

  test("a peer that is no longer the process that connected is refused (its hello sent by a child after the parent left)", async () => {
    const build = readFileSync(path.join(ROOT, "dist/build-id"), "utf8").trim();
    // The parent connects and leaves; its child, holding the connection, sends the hello once the parent is gone.
    const out = path.join(cleanup.dir("tscni-rsec-pid-"), "answer");
    const script = `const net = require("net"), { spawn } = require("child_process");
      const s = net.connect(${JSON.stringify(socket)}, () => {
        const child = spawn(process.execPath, ["-e", \`
          const fs = require("fs"), net = require("net");
          setTimeout(() => {
            const s = new net.Socket({ fd: 3, readable: true, writable: true });
            const id = Buffer.from(${JSON.stringify(build)});
            const hello = Buffer.alloc(12 + id.length);
            hello.write("TSCNI\\\\x02", 0, "latin1"); hello.writeUInt16LE(id.length, 6); id.copy(hello, 8); hello.writeUInt32LE(10, 8 + id.length);
            let got = Buffer.alloc(0);
            s.on("data", (d) => (got = Buffer.concat([got, d])));
            s.on("close", () => fs.writeFileSync(${JSON.stringify(out)}, got.subarray(0, 1).toString() + " " + got.subarray(3).toString()));
            s.write(hello);
          }, 500);\`], { stdio: ["ignore", "ignore", "ignore", s], detached: true });
        child.unref();
        process.exit(0);
      });`;
    const r = await runCommand("nsenter", [`--net=${host.ns.path}`, "--", process.execPath, "-e", script]);
    assert.equal(r.code, 0, r.stderr);
    for (let i = 0; i < 100 && !existsSync(out); i++) await sleep(50);
    const answer = readFileSync(out, "utf8");
    assert.match(answer, /^N /, answer);
    assert.match(answer, /left|cannot be read|younger/);
  });
});
