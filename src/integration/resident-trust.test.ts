/**
 * docs/trust.md, each rule tried with a caller or a listener that breaks it (issue 31): a socket taken over by a
 * root without capabilities or by the root of a user namespace gets not one byte, the call runs as in exec mode,
 * the server's log says why and the server takes its socket back; a server that takes a call and then hangs
 * fails the call within its time limit and a margin, naming itself; a server in a child pid namespace that kept
 * the node's /proc judges the caller the kernel names, not the pid the caller picked; no server is started from a
 * child pid namespace; callers under a seccomp filter or no_new_privs are not served; hung calls stall only
 * themselves (another container's call goes on, the hung ones show in the metrics) and a lock any user can take
 * stalls nothing; files made for a call follow the caller's umask; an auto-started server lives in a cgroup of
 * its own and survives the kill of every process of the cgroup that started it.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { hierarchies, ownCgroupName } from "#resident/own-cgroup.js";
import { CAPLESS, NO_NEW_PRIVS, rawHelloScript, seccompNoSetns, USERNS_ROOT } from "#testing/confinement.js";
import { Cleanup, CNITOOL, OUR_BIN, ROOT, runCommand, runTag, skipReason } from "#testing/harness.js";
import { Host } from "#testing/rig.js";
import { killServers, serverPids, startServer } from "#testing/servers.js";

const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping resident trust tests: ${skip}`);

const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 5000) => {
  for (const t0 = Date.now(); !(await ok()); await sleep(25)) if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
};

describe("the default server trusts no one it should not", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let base: string;
  let n = 0;
  const children: ChildProcess[] = [];
  before(() => {
    host = new Host(cleanup, `tscni-rtr-${tag}`, OUR_BIN);
    base = cleanup.dir("tscni-rtr-");
    cleanup.add(() => children.forEach((c) => c.kill("SIGKILL")));
  });
  after(() => cleanup.run());

  const inHost = () => [`--net=${host.ns.path}`];
  /** A fresh root-only directory with a socket path in it. */
  const freshSocket = () => {
    const dir = path.join(base, `s${++n}`);
    mkdirSync(path.join(dir, "run"), { recursive: true, mode: 0o700 });
    return path.join(dir, "run", "plugins.sock");
  };
  const status = async (socket: string) => {
    const r = await runCommand("nsenter", [...inHost(), "--", CNITOOL, "daemon", "status", "--socket", socket]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { served: number; pid: number; overdue: number; longRunning: number };
  };
  const metrics = async (socket: string) =>
    (await runCommand("nsenter", [...inHost(), "--", CNITOOL, "daemon", "metrics", "--socket", socket])).stdout;
  /** A plugin call from the host namespace through `prefix`, in mode manual on `socket`. */
  const call = (
    socket: string,
    plugin: string,
    command: string,
    conf: unknown,
    env: Record<string, string>,
    prefix: string[] = [],
    timeoutMs?: number,
  ) =>
    runCommand("nsenter", [...inHost(), "--", ...prefix, path.join(OUR_BIN, plugin)], {
      env: {
        PATH: process.env["PATH"],
        TSCNI_RESIDENT: "manual",
        TSCNI_RESIDENT_SOCKET: socket,
        TSCNI_DEBUG: "1",
        CNI_COMMAND: command,
        CNI_PATH: OUR_BIN,
        CNI_IFNAME: "eth0",
        CNI_CONTAINERID: "trust1",
        CNI_NETNS: "/run/netns/none",
        ...env,
      },
      input: JSON.stringify(conf),
      ...(timeoutMs ? { timeoutMs } : {}),
    });
  const hostLocal = (name: string, subnet: string, dataDir = path.join(base, `store-${name}`)) => ({
    cniVersion: "1.0.0",
    name,
    type: "host-local",
    ipam: { type: "host-local", subnet, dataDir },
  });

  for (const [who, prefix, why] of [
    ["a root process without capabilities", CAPLESS, /the listener lacks capabilities this caller has/],
    [
      "the root of a user namespace mapped to uid 0",
      USERNS_ROOT,
      /(this caller cannot read the listener's user namespace|the listener (lacks|has) capabilities)/,
    ],
  ] as const) {
    test(`a socket taken over by ${who}: not one byte reaches it, the call runs as in exec mode, the log says why, the server takes its socket back`, async () => {
      const socket = freshSocket();
      const server = await startServer(cleanup, socket, ["nsenter", ...inHost(), "--"]);
      const before = (await status(socket)).served;
      const received = path.join(path.dirname(socket), "..", "received");
      // The impostor: takes the path (root owns the directory: no capability needed), says "Y" to anything, records bytes.
      const script = `const net = require("net"), fs = require("fs");
        fs.unlinkSync(${JSON.stringify(socket)});
        net.createServer((c) => {
          let got = 0;
          c.write(Buffer.from([0x59, 0x10, 0x27, 0, 0]));
          c.on("data", (d) => (got += d.length));
          c.on("error", () => {});
          c.on("close", () => fs.appendFileSync(${JSON.stringify(received)}, got + "\\n"));
        }).listen(${JSON.stringify(socket)}, () => fs.writeFileSync(${JSON.stringify(received)}, ""));
        setTimeout(() => process.exit(0), 8000);`;
      const impostor = spawn("nsenter", [...inHost(), "--", ...prefix, process.execPath, "-e", script], { stdio: "inherit" });
      children.push(impostor);
      await waitFor("the impostor listens", () => existsSync(received));
      const conf = hostLocal(`rtr${tag}${n}`, "10.191.0.0/24");
      const r = await call(socket, "host-local", "ADD", conf, { CNI_CONTAINERID: "imp1" });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(JSON.parse(r.stdout).ips[0].address, "10.191.0.2/24", "the call ran in the caller");
      assert.match(r.stderr, new RegExp(`not used: ${why.source}`));
      await sleep(200);
      assert.equal(readFileSync(received, "utf8"), "0\n", "the impostor got a connection and not one byte");
      assert.match(
        readFileSync(`${socket}.log`, "utf8"),
        new RegExp(`host-local ADD of imp1: not using the listener on the server's socket, running the call itself: ${why.source}`),
      );
      // The server notices within a second and listens again on its path.
      await waitFor("the server says it took its socket back", () => /no longer names this server's socket/.test(server.log()), 4000);
      const again = await call(socket, "host-local", "DEL", conf, { CNI_CONTAINERID: "imp1" });
      assert.equal(again.code, 0, again.stdout + again.stderr);
      assert.doesNotMatch(again.stderr, /not used/);
      assert.equal((await status(socket)).served, before + 1, "served again by the real server");
      impostor.kill("SIGKILL");
    });
  }

  // The server's thread enters a container's network namespace for a moment (sys/thread-netns.ts), and its /proc
  // entry says so meanwhile: a caller that looks then must look again, not run its call itself; a listener that
  // stays in another network namespace is refused as before. And a server that another call is starting, on a
  // loaded node, may take more than a second to listen: its callers wait for it (5 s at most) rather than each
  // adding one more program to the load.
  for (const [how, mode] of [
    ["passes through another network namespace when the caller looks: the hello is sent", "passing"],
    ["stays in another network namespace: not one byte", "away"],
    ["is started by another call and listens after 1.5 s: the caller waits for it and the hello is sent", "slow"],
  ] as const) {
    test(`a listener that ${how}`, async () => {
      const socket = freshSocket();
      const received = path.join(path.dirname(socket), "..", "received");
      // A root listener that holds the server's lock, in the test's namespace; it records the bytes it got.
      // passing/away: it goes to another namespace before it accepts, and (passing) comes back 20 ms after the
      // connection. slow: it holds the lock 1.5 s before it listens, as a server that starts.
      const script = `import ctypes, fcntl, os, socket, sys, time
sock_path, home, away, received, mode = sys.argv[1:6]
libc = ctypes.CDLL(None, use_errno=True)
lock = os.open(sock_path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)
if mode == "slow":
    # As the process a launcher starts as the server names itself in the lock's start record (launcher.c).
    os.pwrite(lock, ("1 %d %d\\n" % (int(time.clock_gettime(time.CLOCK_BOOTTIME)), os.getpid())).encode(), 0)
    open(received, "w").close()
    time.sleep(1.5)
s = socket.socket(socket.AF_UNIX)
s.bind(sock_path)
s.listen(8)
if mode != "slow":
    h, a = os.open(home, os.O_RDONLY), os.open(away, os.O_RDONLY)
    assert libc.setns(a, 0x40000000) == 0
    open(received, "w").close()
c, _ = s.accept()
if mode == "passing":
    time.sleep(0.02)
    assert libc.setns(h, 0x40000000) == 0
c.settimeout(3)
got = 0
try:
    while got < 6:
        d = c.recv(4096)
        if not d: break
        got += len(d)
except OSError:
    pass
with open(received, "a") as f: f.write(str(got) + "\\n")
`;
      const away = host.container(`tscni-rtr-${tag}-away${n}`).path;
      const listener = spawn("nsenter", [...inHost(), "--", "python3", "-c", script, socket, host.ns.path, away, received, mode], {
        stdio: "inherit",
      });
      children.push(listener);
      await waitFor("the listener has the lock", () => existsSync(received));
      const conf = hostLocal(`rtrx${tag}${n}`, "10.186.0.0/24");
      const r = await call(socket, "host-local", "ADD", conf, { CNI_CONTAINERID: "pass1", ...(mode === "slow" ? { TSCNI_RESIDENT: "auto" } : {}) });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      await waitFor("the listener is done", () => readFileSync(received, "utf8") !== "");
      if (mode === "away") {
        assert.match(r.stderr, /not used: the listener is in another network namespace/);
        assert.equal(readFileSync(received, "utf8"), "0\n", "not one byte");
      } else {
        assert.doesNotMatch(r.stderr, /not used|did not answer in time/);
        assert.ok(Number(readFileSync(received, "utf8")) >= 6, "the hello reached the listener");
      }
      listener.kill("SIGKILL");
      const del = await call(socket, "host-local", "DEL", conf, { CNI_CONTAINERID: "pass1", TSCNI_RESIDENT: "exec" });
      assert.equal(del.code, 0, del.stdout);
    });
  }

  test("the dhcp plugin sends nothing to a daemon socket taken over by a root without capabilities", async () => {
    const dir = path.join(base, "dhcp");
    mkdirSync(dir, { mode: 0o700 });
    const socket = path.join(dir, "dhcp.sock");
    const received = path.join(base, "dhcp-received");
    const script = `const net = require("net"), fs = require("fs");
      net.createServer((c) => { let got = 0; c.on("data", (d) => (got += d.length)); c.on("error", () => {});
        c.on("close", () => fs.appendFileSync(${JSON.stringify(received)}, got + "\\n")); })
        .listen(${JSON.stringify(socket)}, () => fs.writeFileSync(${JSON.stringify(received)}, ""));
      setTimeout(() => process.exit(0), 8000);`;
    const impostor = spawn(CAPLESS[0]!, [...CAPLESS.slice(1), process.execPath, "-e", script], { stdio: "inherit" });
    children.push(impostor);
    await waitFor("the impostor listens", () => existsSync(received));
    const r = await runCommand(path.join(OUR_BIN, "dhcp"), [], {
      env: {
        PATH: process.env["PATH"],
        TSCNI_RESIDENT: "exec",
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: "d1",
        CNI_NETNS: host.ns.path,
        CNI_IFNAME: "eth0",
        CNI_PATH: OUR_BIN,
      },
      input: JSON.stringify({ cniVersion: "1.0.0", name: "dn", type: "bridge", ipam: { type: "dhcp", daemonSocketPath: socket } }),
    });
    assert.notEqual(r.code, 0);
    const e = JSON.parse(r.stdout) as { code: number; msg: string };
    assert.equal(e.code, 11);
    assert.match(e.msg, /^will not call the dhcp daemon at .*: the listener lacks capabilities this caller has \(.*\) \(nothing was sent\)$/);
    await sleep(200);
    assert.equal(readFileSync(received, "utf8"), "0\n");
    impostor.kill("SIGKILL");
  });

  test("a server that takes a call and then hangs: the launcher gives up after the call's time limit and a margin, naming the server and its log", async () => {
    const socket = freshSocket();
    await startServer(cleanup, socket, ["nsenter", ...inHost(), "--"], ["--call-timeout", "2"]);
    const pid = (await status(socket)).pid;
    // A call that waits in the server (sbr waits for a lock root holds on the namespace file)...
    const ctr = host.container(`tscni-rtr-${tag}-hang`);
    const holder = spawn("flock", ["-o", "-x", ctr.path, "sleep", "30"], { stdio: "ignore" });
    children.push(holder);
    await sleep(200);
    const t0 = Date.now();
    const pending = call(
      socket,
      "sbr",
      "DEL",
      { cniVersion: "1.0.0", name: "hang", type: "sbr" },
      { CNI_NETNS: ctr.path, CNI_CONTAINERID: "hang1" },
      [],
      60_000,
    );
    // ...and the server stops in the middle of it, before it can answer even with its time limit's error.
    await sleep(700);
    const stopped = serverPids(socket);
    for (const p of stopped) process.kill(p, "SIGSTOP");
    cleanup.add(() => stopped.forEach((p) => process.kill(p, "SIGCONT")));
    const r = await pending;
    const took = Date.now() - t0;
    for (const p of stopped) process.kill(p, "SIGCONT");
    holder.kill("SIGKILL");
    assert.equal(r.code, 1, r.stdout);
    const e = JSON.parse(r.stdout) as { code: number; msg: string };
    assert.equal(e.code, 999);
    assert.equal(e.msg, `tscni resident server (pid ${pid}, log ${socket}.log) did not answer the call within 12 s; it may still be running there`);
    assert.ok(took >= 11_000 && took < 20_000, `gave up after ${took} ms`);
    assert.match(readFileSync(`${socket}.log`, "utf8"), /sbr DEL of hang1: the server did not answer the call in time, gave up after 12/);
  });

  test("a server in a child pid namespace that kept the node's /proc judges the caller the kernel names, not the pid it picked", async () => {
    const socket = freshSocket();
    // The server: in the test's network namespace, in a new pid namespace, /proc still the node's.
    await startServer(cleanup, socket, ["nsenter", ...inHost(), "--", "unshare", "--pid", "--fork", "--"]);
    // (unshare, its parent, names the socket on its command line too)
    const [serverPid] = serverPids(socket).filter((p) => statSync(`/proc/${p}/ns/pid`).ino !== statSync("/proc/self/ns/pid").ino);
    assert.ok(serverPid, "the server's pid on the node");
    // The attacker: a root without capabilities in the server's pid namespace, whose pid there is the server's pid
    // on the node (it could fork until it got it; the test picks it with ns_last_pid). Reading /proc/<its pid>
    // would read the server itself, which passes every rule.
    const script = rawHelloScript(socket);
    const r = await runCommand("nsenter", [
      `--target=${serverPid}`,
      "--pid",
      "--net",
      "--",
      "sh",
      "-c",
      `n=$1; shift
      for i in $(seq 100); do
        echo $((n - 1)) > /proc/sys/kernel/ns_last_pid
        "$@"; rc=$?; [ $rc = 99 ] || exit $rc
      done; exit 98`,
      "sh",
      String(serverPid),
      ...CAPLESS,
      "sh",
      "-c",
      '[ "$$" = "$0" ] || exit 99; echo "$$" >&2; exec "$1" -e "$2"',
      String(serverPid),
      process.execPath,
      script,
    ]);
    assert.equal(r.stderr.trim(), String(serverPid), `the attacker had the pid it picked (${r.code})`);
    assert.match(r.stdout, /^N the caller lacks capabilities the server has/, r.stdout);
  });

  test("no server is started from a child pid namespace, even on a socket the caller names", async () => {
    const socket = freshSocket();
    const conf = hostLocal(`rtrp${tag}`, "10.190.0.0/24");
    // A child pid namespace that still sees the node's /proc, and a call that is not its init.
    const r = await runCommand(
      "nsenter",
      [...inHost(), "--", "unshare", "--pid", "--fork", "--", "sh", "-c", '"$0"; exit $?', path.join(OUR_BIN, "host-local")],
      {
        env: {
          PATH: process.env["PATH"],
          TSCNI_RESIDENT: "auto",
          TSCNI_RESIDENT_SOCKET: socket,
          TSCNI_DEBUG: "1",
          CNI_COMMAND: "ADD",
          CNI_CONTAINERID: "p1",
          CNI_NETNS: "/run/netns/none",
          CNI_IFNAME: "eth0",
          CNI_PATH: OUR_BIN,
        },
        input: JSON.stringify(conf),
      },
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.doesNotMatch(r.stderr, /one is starting/);
    await sleep(500);
    assert.equal(existsSync(socket), false);
    assert.deepEqual(serverPids(socket), []);
  });

  test("callers under a seccomp filter or no_new_privs are not served: the launcher runs the call itself, a raw client is refused", async () => {
    const socket = freshSocket();
    await startServer(cleanup, socket, ["nsenter", ...inHost(), "--"]);
    const before = (await status(socket)).served;
    const seccomp = seccompNoSetns();
    const ctr = host.container(`tscni-rtr-${tag}-sc`);
    const conf = { cniVersion: "1.0.0", name: `rtrs${tag}`, type: "bridge", bridge: `rtrs${tag}`, ipam: hostLocal("x", "10.189.0.0/24").ipam };
    const env = { CNI_NETNS: ctr.path, CNI_CONTAINERID: "sc1" };
    // A full root whose setns(2) fails: a bridge ADD its own exec cannot do is not done for it by the server.
    const viaServer = await call(socket, "bridge", "ADD", conf, env, seccomp);
    const exec = await call(socket, "bridge", "ADD", conf, { ...env, TSCNI_RESIDENT: "exec" }, seccomp);
    assert.match(viaServer.stderr, /not used: the listener's seccomp confinement differs from this caller's/);
    assert.notEqual(viaServer.code, 0);
    assert.equal(viaServer.stdout.replace(/veth[0-9a-f]+/g, "veth"), exec.stdout.replace(/veth[0-9a-f]+/g, "veth"));
    assert.match(viaServer.stdout, /operation not permitted/i);
    const nnp = await call(socket, "host-local", "ADD", hostLocal(`rtrn${tag}`, "10.188.0.0/24"), { CNI_CONTAINERID: "nnp1" }, NO_NEW_PRIVS);
    assert.equal(nnp.code, 0, nnp.stdout);
    assert.match(nnp.stderr, /not used: the listener's no_new_privs differs from this caller's/);
    assert.equal((await status(socket)).served, before, "the server ran nothing for them");
    // An attacker that skips the launcher's checks is refused by the server's own.
    for (const [prefix, why] of [
      [seccomp, /^N the caller runs under seccomp mode 2 with 1 filter\(s\), the server under no seccomp filter/],
      [NO_NEW_PRIVS, /^N the caller has no_new_privs 1, the server 0/],
    ] as const) {
      const raw = await runCommand("nsenter", [...inHost(), "--", ...prefix, process.execPath, "-e", rawHelloScript(socket)]);
      assert.match(raw.stdout, why);
    }
    assert.match(await metrics(socket), /^tscni_refusals_total\{reason="confinement"\} 2$/m);
    const del = await call(socket, "bridge", "DEL", conf, env);
    assert.equal(del.code, 0, del.stdout);
  });

  test("hung calls stall only themselves: another container's call goes on at once, they show in the metrics, and they let go of everything at their time limit", async () => {
    const socket = freshSocket();
    await startServer(cleanup, socket, ["nsenter", ...inHost(), "--"], ["--call-timeout", "4"]);
    const ctr = host.container(`tscni-rtr-${tag}-w`);
    // Every sbr call for this namespace waits for the lock root holds on its file.
    const holder = spawn("flock", ["-o", "-x", ctr.path, "sleep", "60"], { stdio: "ignore" });
    children.push(holder);
    await sleep(200);
    const sbr = { cniVersion: "1.0.0", name: "wedge", type: "sbr" };
    const hung = Array.from({ length: 20 }, (_, i) =>
      call(socket, "sbr", "DEL", sbr, { CNI_NETNS: ctr.path, CNI_CONTAINERID: `hung${i}` }, [], 30_000),
    );
    await sleep(1500);
    const conf = hostLocal(`rtrw${tag}`, "10.187.0.0/24");
    const t0 = Date.now();
    const r = await call(socket, "host-local", "ADD", conf, { CNI_CONTAINERID: "other1" });
    const took = Date.now() - t0;
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(took < 1500, `another container's call took ${took} ms`);
    assert.match(await metrics(socket), /^tscni_calls_in_flight 16$/m);
    // At the time limit the hung calls are answered (999), their places and queues are given back, and their work,
    // which only waited for the lock, is dropped with them (sys/call-signal.ts): nothing is left overdue.
    await waitFor("the hung calls answered", async () => /^tscni_calls_in_flight 0$/m.test(await metrics(socket)), 8000);
    assert.match(await metrics(socket), /^tscni_calls_overdue 0$/m);
    const t1 = Date.now();
    const served = await call(socket, "host-local", "DEL", conf, { CNI_CONTAINERID: "other1" });
    assert.equal(served.code, 0);
    assert.doesNotMatch(served.stderr, /handed the call back/);
    assert.ok(Date.now() - t1 < 1000);
    holder.kill("SIGKILL");
    const answers = await Promise.all(hung);
    const timedOut = answers.filter((a) => /ran longer than 4000 ms/.test(a.stdout));
    const handedBack = answers.filter((a) => /handed the call back/.test(a.stderr));
    assert.equal(timedOut.length, 16, answers.map((a) => a.stdout).join("\n"));
    assert.equal(handedBack.length, 4);
    for (const a of handedBack) assert.equal(a.code, 0, `run by its caller once the lock was free: ${a.stdout}`);
  });

  test("an ADD answered at its time limit while it waits for the store's lock never runs: no address leaks", async () => {
    const socket = freshSocket();
    await startServer(cleanup, socket, ["nsenter", ...inHost(), "--"], ["--call-timeout", "2"]);
    const conf = hostLocal(`rtrl${tag}`, "10.187.1.0/24");
    const store = path.join(conf.ipam.dataDir, conf.name);
    mkdirSync(store, { recursive: true, mode: 0o755 });
    const lock = path.join(store, "lock");
    writeFileSync(lock, "", { mode: 0o644 });
    const holder = spawn("flock", ["-o", "-x", lock, "sleep", "60"], { stdio: "ignore" });
    children.push(holder);
    await sleep(200);
    // Two containers' ADDs: one waits on the file, the other behind it in the server.
    const answers = await Promise.all(["late1", "late2"].map((id) => call(socket, "host-local", "ADD", conf, { CNI_CONTAINERID: id }, [], 20_000)));
    for (const a of answers) {
      assert.notEqual(a.code, 0);
      assert.match(a.stdout, /ran longer than 2000 ms/);
    }
    holder.kill("SIGKILL");
    await sleep(1500);
    assert.deepEqual(readdirSync(store).sort(), ["lock"], "no address allocated for the calls already answered");
    const r = await call(socket, "host-local", "ADD", conf, { CNI_CONTAINERID: "late3" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /10\.187\.1\.2\//);
    assert.equal((await call(socket, "host-local", "DEL", conf, { CNI_CONTAINERID: "late3" })).code, 0);
  });

  test("a lock any user can take stalls nothing: sbr goes on when nobody holds the namespace file's lock", async () => {
    const ctr = host.container(`tscni-rtr-${tag}-nb`);
    const holder = spawn("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "flock", "-o", "-x", ctr.path, "sleep", "60"], {
      stdio: "ignore",
    });
    children.push(holder);
    await sleep(300);
    const t0 = Date.now();
    const r = await call(
      "",
      "sbr",
      "DEL",
      { cniVersion: "1.0.0", name: "nb", type: "sbr" },
      { CNI_NETNS: ctr.path, TSCNI_RESIDENT: "exec" },
      [],
      10_000,
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
    holder.kill("SIGKILL");
  });

  test("files made for a call follow the caller's umask, as in exec mode", async () => {
    const socket = freshSocket();
    await startServer(cleanup, socket, ["nsenter", ...inHost(), "--"]);
    const modes: Record<string, number> = {};
    for (const mask of ["077", "022"]) {
      for (const mode of ["manual", "exec"]) {
        const dataDir = path.join(base, `um-${mask}-${mode}`);
        mkdirSync(dataDir, { mode: 0o755 });
        chmodSync(dataDir, 0o755);
        const before = (await status(socket)).served;
        const run = await runCommand("nsenter", [...inHost(), "--", "sh", "-c", `umask ${mask}; exec "$0"`, path.join(OUR_BIN, "host-local")], {
          env: {
            PATH: process.env["PATH"],
            TSCNI_RESIDENT: mode,
            TSCNI_RESIDENT_SOCKET: socket,
            CNI_COMMAND: "ADD",
            CNI_CONTAINERID: "um1",
            CNI_NETNS: "/run/netns/none",
            CNI_IFNAME: "eth0",
            CNI_PATH: OUR_BIN,
          },
          input: JSON.stringify(hostLocal(`um${mask}`, "10.186.0.0/24", dataDir)),
        });
        assert.equal(run.code, 0, run.stdout + run.stderr);
        assert.equal((await status(socket)).served, before + (mode === "manual" ? 1 : 0), `${mask} ${mode}: served through the server`);
        modes[`${mask} ${mode}`] = statSync(path.join(dataDir, `um${mask}`)).mode & 0o777;
      }
    }
    assert.deepEqual(modes, { "077 manual": 0o700, "077 exec": 0o700, "022 manual": 0o755, "022 exec": 0o755 });
  });

  test("an auto-started server runs in a cgroup of its own, and the kill of every process of the cgroup that started it fails no call", async () => {
    const socket = freshSocket();
    const name = ownCgroupName(socket);
    const mine = hierarchies();
    assert.ok(mine.length > 0, "cgroup hierarchies are mounted");
    // The starting caller's cgroup, in every hierarchy: a service the server must not be part of.
    const starter = `tscni-rtr-${tag}-starter`;
    const dirs = mine.map((h) => ({ h, dir: path.join(h.mount, starter) }));
    for (const { h, dir } of dirs) {
      mkdirSync(dir);
      if (h.kind.split(",").includes("cpuset"))
        for (const f of ["cpuset.cpus", "cpuset.mems"]) writeFileSync(path.join(dir, f), readFileSync(path.join(h.mount, f)));
    }
    const procsOf = (dir: string) => readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
    cleanup.add(() => {
      for (const { dir } of dirs) {
        for (const p of procsOf(dir)) spawnSync("kill", ["-9", String(p)]);
        for (let i = 0; i < 50; i++) {
          try {
            rmdirSync(dir);
            break;
          } catch {
            spawnSync("sleep", ["0.02"]);
          }
        }
      }
    });
    cleanup.add(() => killServers(socket));
    const conf = hostLocal(`rtrc${tag}`, "10.185.0.0/24");
    const env = {
      PATH: process.env["PATH"],
      TSCNI_RESIDENT: "auto",
      TSCNI_RESIDENT_SOCKET: socket,
      TSCNI_DEBUG: "1",
      CNI_NETNS: "/run/netns/none",
      CNI_IFNAME: "eth0",
      CNI_PATH: OUR_BIN,
    };
    // The service: a shell in that cgroup (it stays, as containerd does), whose plugin call starts the server.
    const joins = dirs.map(({ dir }) => `echo $$ > ${dir}/cgroup.procs`).join(" && ");
    writeFileSync(path.join(base, "cg-conf.json"), JSON.stringify(conf));
    const service = spawn(
      "nsenter",
      [
        ...inHost(),
        "--",
        "sh",
        "-c",
        `${joins} && CNI_COMMAND=ADD CNI_CONTAINERID=c0 "$0" < "$1" && sleep 60`,
        path.join(OUR_BIN, "host-local"),
        path.join(base, "cg-conf.json"),
      ],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    children.push(service);
    await waitFor("the server listens", () => existsSync(socket), 10_000);
    const [pid] = serverPids(socket);
    assert.ok(pid);
    await waitFor("the server moved to its own cgroup", () => readFileSync(`/proc/${pid}/cgroup`, "utf8").includes(name), 5000);
    const cgroups = readFileSync(`/proc/${pid}/cgroup`, "utf8");
    assert.doesNotMatch(cgroups, new RegExp(starter), cgroups);
    for (const h of mine)
      assert.ok(
        cgroups.split("\n").some((l) => l.endsWith(`:/${name}`) && l.includes(h.kind === "cgroup2" ? "::" : h.kind)),
        `${h.kind}: ${cgroups}`,
      );
    const memory = mine.find((h) => h.kind.split(",").includes("memory"));
    if (memory) {
      // Its own memory (anonymous: the program's file pages are the page cache's, charged to whoever read them first).
      const anon = Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
      const used = Number(readFileSync(path.join(memory.mount, name, "memory.usage_in_bytes"), "utf8"));
      assert.ok(used >= anon * 0.9, `the server's memory is charged to its own cgroup: ${used} bytes there, ${anon} of its own`);
    }
    // Calls go on while every process of the starter's cgroup is killed.
    let failures = 0;
    let calls = 0;
    let stop = false;
    const loop = (async () => {
      for (let i = 0; !stop; i++) {
        const r = await runCommand("nsenter", [...inHost(), "--", path.join(OUR_BIN, "host-local")], {
          env: { ...env, TSCNI_RESIDENT: "manual", CNI_COMMAND: i % 2 ? "DEL" : "ADD", CNI_CONTAINERID: "loop" },
          input: JSON.stringify(conf),
        });
        calls++;
        if (r.code !== 0 || /not used|handed/.test(r.stderr)) failures++;
      }
    })();
    await sleep(500);
    for (const { dir } of dirs) for (const p of procsOf(dir)) spawnSync("kill", ["-9", String(p)]);
    await waitFor("the starter's cgroup is empty", () => dirs.every(({ dir }) => procsOf(dir).length === 0));
    await sleep(700);
    stop = true;
    await loop;
    assert.ok(calls >= 4, `${calls} calls`);
    assert.equal(failures, 0, `${failures} of ${calls} calls failed or were not served`);
    assert.deepEqual(serverPids(socket), [pid], "the server lives on");
  });
});
