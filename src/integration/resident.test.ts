/**
 * Resident mode: a `cnitool daemon` runs in a test-made host namespace (entered with nsenter, so the server and
 * its callers share network and mount namespaces), and the launcher (dist/bin/<plugin>) forwards calls to it.
 * Served calls give exactly what exec gives (200 concurrent mixed ADD/CHECK/DEL across 50 containers); a caller
 * in another namespace, a non-root caller, a stale socket and a launcher of another build fall back to exec at
 * once; a server killed during a call gives the caller CNI error 999 and the call never runs twice; a call that
 * hangs past the timeout fails alone.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { rawHelloScript } from "#testing/confinement.js";
import { Cleanup, type Netns, OUR_BIN, ROOT, runCommand, runTag, skipReason } from "#testing/harness.js";
import { Host, ipIn } from "#testing/rig.js";

const skip = skipReason(false, existsSync(path.join(ROOT, "dist/tscni")) ? undefined : "the C launcher is not built (no C compiler?)");
if (skip) console.log(`# skipping resident-mode tests: ${skip}`);

describe("resident mode", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let sockDir: string;
  let socket: string;
  let server: ChildProcess | undefined;

  /** Starts the daemon in the host namespace (same mount namespace as the test); resolves when it serves. */
  async function startServer(extra: string[] = []): Promise<ChildProcess> {
    // A short warm-up unless the test asks for another (the default's ~1 s of CPU per server adds up in a suite).
    const warmUp = extra.includes("--warm-up") ? [] : ["--warm-up", "20"];
    const child = spawn(
      "nsenter",
      [`--net=${host.ns.path}`, "--", path.join(OUR_BIN, "cnitool"), "daemon", "--socket", socket, ...warmUp, ...extra],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let log = "";
    child.stderr!.on("data", (b: Buffer) => (log += b));
    for (let i = 0; i < 100 && !log.includes("serving plugin calls"); i++) await sleep(50);
    assert.match(log, /serving plugin calls/, log);
    return child;
  }
  const stopServer = async (child: ChildProcess | undefined, signal: NodeJS.Signals = "SIGTERM") => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill(signal);
    await exited;
  };
  const health = async () => {
    const r = await runCommand("nsenter", [`--net=${host.ns.path}`, "--", path.join(OUR_BIN, "cnitool"), "daemon", "status", "--socket", socket]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { served: number; inFlight: number; warmedUp: boolean };
  };

  /** Runs a plugin through the launcher in the host namespace (nsenter: same mount namespace as the server). */
  const call = (
    plugin: string,
    command: string,
    conf: unknown,
    env: Record<string, string>,
    opts: { via?: string[]; socketPath?: string; cwd?: string } = {},
  ) =>
    runCommand(opts.via?.[0] ?? "nsenter", [...(opts.via?.slice(1) ?? [`--net=${host.ns.path}`, "--"]), path.join(OUR_BIN, plugin)], {
      env: {
        // (manual: these tests mean the servers they start; a server that is gone is not started again)
        PATH: process.env["PATH"],
        TSCNI_RESIDENT: "manual",
        TSCNI_RESIDENT_SOCKET: opts.socketPath ?? socket,
        TSCNI_DEBUG: "1",
        CNI_COMMAND: command,
        CNI_PATH: OUR_BIN,
        CNI_IFNAME: "eth0",
        CNI_CONTAINERID: "c1",
        ...env,
      },
      input: JSON.stringify(conf),
      cwd: opts.cwd,
    });

  const hostLocalConf = (name: string, subnet: string, cniVersion = "1.0.0") => ({
    cniVersion,
    name,
    type: "host-local",
    ipam: host.hostLocal([subnet]),
  });
  const bridgeConf = (name: string, bridge: string, subnet: string) => ({
    cniVersion: "1.0.0",
    name,
    type: "bridge",
    bridge,
    isGateway: true,
    ipMasq: true,
    ipam: host.hostLocal([subnet], { routes: [{ dst: "0.0.0.0/0" }] }),
  });

  before(async () => {
    host = new Host(cleanup, `tscni-rs-${tag}`, OUR_BIN);
    sockDir = cleanup.dir("tscni-rsock-");
    socket = path.join(sockDir, "run", "plugins.sock");
    server = await startServer();
    cleanup.add(() => stopServer(server, "SIGKILL"));
  });
  after(() => cleanup.run());

  test("a served call gives what exec gives, and the server counts it", async () => {
    const before = (await health()).served;
    const ctr = host.container(`tscni-rsc-${tag}-a`);
    const conf = bridgeConf(`rsa${tag}`, `rsa${tag}`, "10.226.0.0/24");
    const served = await call("bridge", "ADD", conf, { CNI_NETNS: ctr.path, CNI_CONTAINERID: "served1" });
    assert.equal(served.code, 0, served.stdout + served.stderr);
    assert.doesNotMatch(served.stderr, /refused/);
    assert.equal((await health()).served, before + 1, "the server ran it");
    const addr = (JSON.parse(served.stdout) as { ips: Array<{ address: string }> }).ips[0]!.address;
    assert.equal(addr, "10.226.0.2/24");
    assert.deepEqual(
      ipIn(ctr, ["-4", "addr", "show", "eth0"]).flatMap((l) => (l["addr_info"] as Array<{ local: string }>).map((a) => a.local)),
      ["10.226.0.2"],
    );
    const exec = await call(
      "bridge",
      "ADD",
      conf,
      { CNI_NETNS: host.container(`tscni-rsc-${tag}-b`).path, CNI_CONTAINERID: "exec1" },
      { socketPath: "" },
    );
    assert.equal(exec.code, 0, exec.stderr);
    const shape = (out: string) =>
      JSON.stringify(JSON.parse(out), (k, v) => (k === "mac" || k === "sandbox" || (k === "name" && /^veth/.test(v)) ? "*" : v));
    assert.equal(shape(served.stdout).replace("10.226.0.2", "X"), shape(exec.stdout).replace("10.226.0.3", "X"), "same result shape");
    for (const id of ["served1", "exec1"]) {
      const netns = id === "served1" ? ctr.path : `/run/netns/tscni-rsc-${tag}-b`;
      assert.equal((await call("bridge", "DEL", conf, { CNI_NETNS: netns, CNI_CONTAINERID: id })).code, 0);
    }
    assert.deepEqual(host.allocations(`rsa${tag}`), []);
  });

  test("a relative dataDir resolves against the caller's directory, served as in exec mode", async () => {
    const dir = cleanup.dir("tscni-rcwd-");
    const name = `rsrel${tag}`;
    const conf = { cniVersion: "1.0.0", name, type: "host-local", ipam: { type: "host-local", subnet: "10.227.0.0/24", dataDir: "rel-store" } };
    const served = (await health()).served;
    const r = await call("host-local", "ADD", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "rel1" }, { cwd: dir });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.doesNotMatch(r.stderr, /refused/);
    assert.equal((await health()).served, served + 1, "the server took the call");
    assert.ok(existsSync(path.join(dir, "rel-store", name, "10.227.0.2")), "the allocation is under the caller's directory");
    const del = await call("host-local", "DEL", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "rel1" }, { cwd: dir });
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.ok(!existsSync(path.join(dir, "rel-store", name, "10.227.0.2")));
  });

  test("a bad config is the same CNI error either way, and the server keeps serving", async () => {
    const bad = { cniVersion: "1.0.0", name: "x", type: "bridge", mtu: "big", ipam: { type: "host-local" } };
    const before = (await health()).served;
    const served = await call("bridge", "ADD", bad, { CNI_NETNS: host.container(`tscni-rsc-${tag}-c`).path });
    assert.equal((await health()).served, before + 1, "the server ran the first call");
    const exec = await call("bridge", "ADD", bad, { CNI_NETNS: `/run/netns/tscni-rsc-${tag}-c` }, { socketPath: "" });
    assert.equal(served.code, 1);
    assert.equal(served.stdout, exec.stdout);
    assert.deepEqual(JSON.parse(served.stdout), { code: 7, msg: 'invalid "mtu": "big" (want an integer)' });
    await health();
  });

  test("200 concurrent mixed ADD, CHECK and DEL of different plugins across 50 containers: the same outcomes as exec", async () => {
    const run = async (mode: "served" | "exec") => {
      const socketPath = mode === "served" ? socket : "";
      const n = mode === "served" ? "s" : "e";
      const hl = hostLocalConf(`rsh${n}${tag}`, mode === "served" ? "10.227.0.0/24" : "10.228.0.0/24");
      const br = bridgeConf(`rsb${n}${tag}`, `rsb${n}${tag}`, mode === "served" ? "10.229.0.0/24" : "10.230.0.0/24");
      const ctrs = Array.from({ length: 50 }, (_, i) => host.container(`tscni-rs${n}-${tag}-${i}`));
      const outcome = (r: { code: number; stdout: string }) => (r.code === 0 ? "ok" : JSON.stringify(JSON.parse(r.stdout).code));
      // ADD of both plugins for all 50 at once (100 calls), then CHECK of host-local and DEL of both (100 calls).
      const adds = await Promise.all(
        ctrs.flatMap((c, i) => [
          call("host-local", "ADD", hl, { CNI_NETNS: c.path, CNI_CONTAINERID: `h${i}` }, { socketPath }),
          call("bridge", "ADD", br, { CNI_NETNS: c.path, CNI_CONTAINERID: `b${i}` }, { socketPath }),
        ]),
      );
      const results = adds.map((r) => (r.code === 0 ? (JSON.parse(r.stdout) as { ips: Array<{ address: string }> }).ips[0]!.address : "fail"));
      const rest = await Promise.all(
        ctrs.flatMap((c, i) => [
          call(
            "host-local",
            "CHECK",
            { ...hl, prevResult: JSON.parse(adds[2 * i]!.stdout) },
            { CNI_NETNS: c.path, CNI_CONTAINERID: `h${i}` },
            { socketPath },
          ),
          call("bridge", "DEL", br, { CNI_NETNS: c.path, CNI_CONTAINERID: `b${i}` }, { socketPath }),
        ]),
      );
      const dels = await Promise.all(
        ctrs.map((c, i) => call("host-local", "DEL", hl, { CNI_NETNS: c.path, CNI_CONTAINERID: `h${i}` }, { socketPath })),
      );
      for (const c of ctrs) c.delete();
      return {
        outcomes: [...adds, ...rest, ...dels].map(outcome),
        distinct: new Set(results).size,
        left: [...host.allocations(hl.name), ...host.allocations(br.name)],
      };
    };
    const before = (await health()).served;
    const served = await run("served");
    assert.ok((await health()).served - before >= 200, "at least 200 calls went through the server (bridge delegates to host-local in it)");
    const exec = await run("exec");
    assert.deepEqual(served.outcomes, exec.outcomes);
    assert.ok(
      served.outcomes.every((o) => o === "ok"),
      served.outcomes.join(" "),
    );
    assert.equal(served.distinct, 100, "100 distinct addresses");
    assert.deepEqual(served.left, []);
    assert.deepEqual(exec.left, []);
  });

  test("a caller in another network namespace falls back to exec and configures its own namespace", async () => {
    const other = host.container(`tscni-rso-${tag}`);
    const ctr = host.container(`tscni-rsc-${tag}-d`);
    const before = (await health()).served;
    const conf = bridgeConf(`rsd${tag}`, `rsd${tag}`, "10.231.0.0/24");
    const r = await call("bridge", "ADD", conf, { CNI_NETNS: ctr.path }, { via: ["nsenter", `--net=${other.path}`, "--"] });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /not used: the listener is in another network namespace/);
    // A client that sends anyway is refused by the server.
    const raw = await runCommand("nsenter", [`--net=${other.path}`, "--", process.execPath, "-e", rawHelloScript(socket)]);
    assert.equal(raw.stdout, "N the caller is in another network namespace");
    assert.equal((await health()).served, before, "not served");
    assert.equal(ipIn(other, ["link", "show", "type", "bridge"]).length, 1, "the bridge is in the caller's namespace");
    assert.equal(ipIn(host.ns as Netns, ["link", "show", "type", "bridge"]).filter((l) => l["ifname"] === `rsd${tag}`).length, 0);
    assert.equal((await call("bridge", "DEL", conf, { CNI_NETNS: ctr.path }, { via: ["nsenter", `--net=${other.path}`, "--"] })).code, 0);
  });

  test("a non-root caller is refused service", async () => {
    // Open the socket to everyone for this test only: the refusal must come from the peer check, not the file mode.
    chmodSync(sockDir, 0o755);
    chmodSync(path.dirname(socket), 0o755);
    chmodSync(socket, 0o777);
    try {
      // Its launcher sends nothing (it cannot tell root's server is the server); a client that sends anyway is refused.
      const nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"];
      const r = await call("host-local", "VERSION2", {}, {}, { via: ["nsenter", `--net=${host.ns.path}`, "--", ...nobody] });
      assert.match(r.stderr, /not used: /, JSON.stringify(r));
      const raw = await runCommand("nsenter", [`--net=${host.ns.path}`, "--", ...nobody, process.execPath, "-e", rawHelloScript(socket)]);
      assert.equal(raw.stdout, "N uid 65534 is not served (root only)");
    } finally {
      chmodSync(sockDir, 0o700);
      chmodSync(path.dirname(socket), 0o700);
      chmodSync(socket, 0o600);
    }
  });

  test("a stale socket file with no server behind it falls back to exec at once", async () => {
    const staleDir = cleanup.dir("tscni-stale-");
    const stale = path.join(staleDir, "stale.sock");
    const child = spawn("python3", ["-c", `import socket;s=socket.socket(socket.AF_UNIX);s.bind(${JSON.stringify(stale)})`]);
    await new Promise((resolve) => child.on("exit", resolve));
    const conf = hostLocalConf(`rse${tag}`, "10.232.0.0/24");
    const t0 = Date.now();
    const r = await call("host-local", "ADD", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "stale1" }, { socketPath: stale });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - t0 < 2000, `fell back at once (${Date.now() - t0} ms)`);
    assert.equal((await call("host-local", "DEL", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "stale1" }, { socketPath: stale })).code, 0);
  });

  test("a call that hangs past the timeout fails alone; a server killed during a call gives the caller error 999, and the call never runs twice", async () => {
    const conf = hostLocalConf(`rsf${tag}`, "10.233.0.0/24");
    // Hold host-local's store lock: a call for this network waits inside the server.
    const storeDir = path.join(host.dataDir, `rsf${tag}`);
    mkdirSync(storeDir, { recursive: true });
    writeFileSync(path.join(storeDir, "lock"), "");
    // Its own process group, so flock and the sleep holding the lock go together.
    const holder = spawn("flock", [path.join(storeDir, "lock"), "sleep", "30"], { stdio: "ignore", detached: true });
    const release = () => {
      try {
        process.kill(-holder.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    };
    cleanup.add(release);
    await sleep(200);

    // A second server on its own socket with a 2 s call timeout.
    const fast = path.join(sockDir, "fast", "plugins.sock");
    const savedSocket = socket;
    socket = fast;
    const timed = await startServer(["--call-timeout", "2"]);
    socket = savedSocket;
    try {
      const hung = call("host-local", "ADD", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "hang1" }, { socketPath: fast });
      const other = await call(
        "host-local",
        "ADD",
        hostLocalConf(`rsg${tag}`, "10.234.0.0/24"),
        { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "other1" },
        { socketPath: fast },
      );
      assert.equal(other.code, 0, "another call is served meanwhile");
      const r = await hung;
      assert.equal(r.code, 1);
      assert.match(JSON.parse(r.stdout).msg, /ran longer than 2000 ms/);

      // Kill the server while a call waits in it.
      const dying = call("host-local", "ADD", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "die1" }, { socketPath: fast });
      await sleep(500);
      await stopServer(timed, "SIGKILL");
      const died = await dying;
      assert.equal(died.code, 1);
      assert.deepEqual(JSON.parse(died.stdout).code, 999);
      assert.match(JSON.parse(died.stdout).msg, /tscni resident server died during the call/);
    } finally {
      await stopServer(timed, "SIGKILL");
    }
    release();
    await sleep(300);
    // Nothing ran the killed call again (an exec fallback would have allocated once the lock was free). The timed-out
    // call's own work may finish inside a live server, but this server is dead: no allocation at all.
    assert.deepEqual(
      readdirSync(storeDir).filter((f) => /^\d/.test(f)),
      [],
    );
  });

  test("STATUS is bounded: a STATUS the server takes and does not answer in 10 s is code 50 naming it; a server that does not answer the hello in 2 s is bypassed", async () => {
    // An etcd that takes connections and never answers: cluster-ipam's STATUS waits in the server up to its 60 s.
    const silent = spawn(
      "nsenter",
      [
        `--net=${host.ns.path}`,
        "--",
        process.execPath,
        "-e",
        `const s=require("net").createServer(()=>{}).listen(0,"127.0.0.1",()=>console.log(s.address().port))`,
      ],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    cleanup.add(() => silent.kill("SIGKILL"));
    const port = await new Promise<string>((resolve) => silent.stdout!.once("data", (b: Buffer) => resolve(b.toString().trim())));
    const ipamConf = {
      cniVersion: "1.1.0",
      name: `rss${tag}`,
      type: "cluster-ipam",
      ipam: {
        type: "cluster-ipam",
        nodeName: "n1",
        lockDir: cleanup.dir("tscni-rslock-"),
        etcd: { endpoints: [`http://127.0.0.1:${port}`], requestTimeoutMs: 60000 },
        ranges: [[{ subnet: "10.235.0.0/24" }]],
      },
    };
    const own = path.join(sockDir, "status", "plugins.sock");
    const savedSocket = socket;
    socket = own;
    const served = await startServer();
    socket = savedSocket;
    try {
      let t0 = Date.now();
      const r = await call("cluster-ipam", "STATUS", ipamConf, {}, { socketPath: own });
      const took = Date.now() - t0;
      assert.equal(r.code, 1, r.stderr);
      assert.equal(JSON.parse(r.stdout).code, 50);
      assert.match(JSON.parse(r.stdout).msg, /^tscni resident server \(pid \d+, log .*\) took the STATUS call and did not answer it within 10 s/);
      assert.ok(took >= 10_000 && took < 14_000, `answered after ${took} ms`);

      // A server that hangs before the hello (stopped): the STATUS runs itself after 2 s, with the plugin's answer.
      process.kill(served.pid!, "SIGSTOP");
      t0 = Date.now();
      const byItself = await call("host-local", "STATUS", hostLocalConf(`rst${tag}`, "10.236.0.0/24", "1.1.0"), {}, { socketPath: own });
      const fellBack = Date.now() - t0;
      process.kill(served.pid!, "SIGCONT");
      assert.equal(byItself.code, 0, byItself.stdout + byItself.stderr);
      assert.ok(fellBack >= 2000 && fellBack < 6000, `answered after ${fellBack} ms`);
      assert.match(readFileSync(`${own}.log`, "utf8"), /did not answer a STATUS call's hello within 2 s/);
    } finally {
      await stopServer(served, "SIGKILL");
    }
  });

  test("a caller killed during a served ADD: the ADD finishes in the server, the DEL that follows waits for it and leaves nothing", async () => {
    const name = `rsk${tag}`;
    const conf = bridgeConf(name, name, "10.235.0.0/24");
    const ctr = host.container(`tscni-rsc-${tag}-k`);
    const storeDir = path.join(host.dataDir, name);
    mkdirSync(storeDir, { recursive: true });
    writeFileSync(path.join(storeDir, "lock"), "");
    const holder = spawn("flock", [path.join(storeDir, "lock"), "sleep", "30"], { stdio: "ignore", detached: true });
    const release = () => {
      try {
        process.kill(-holder.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    };
    cleanup.add(release);
    await sleep(200);
    const env = { CNI_NETNS: ctr.path, CNI_CONTAINERID: "killed1" };
    const vethsBefore = host.veths();
    // The ADD waits in the server for the store lock; its caller (the launcher) is killed meanwhile.
    const caller = spawn("nsenter", [`--net=${host.ns.path}`, "--", path.join(OUR_BIN, "bridge")], {
      env: {
        PATH: process.env["PATH"],
        TSCNI_RESIDENT: "manual",
        TSCNI_RESIDENT_SOCKET: socket,
        CNI_COMMAND: "ADD",
        CNI_PATH: OUR_BIN,
        CNI_IFNAME: "eth0",
        ...env,
      },
      stdio: ["pipe", "ignore", "ignore"],
    });
    caller.stdin!.end(JSON.stringify(conf));
    for (let i = 0; i < 50 && (await health()).inFlight === 0; i++) await sleep(50);
    const exited = new Promise((resolve) => caller.once("exit", resolve));
    caller.kill("SIGKILL");
    await exited;
    // The runtime now cleans up: the DEL queues behind the ADD still under way, which then gets its lock.
    const del = call("bridge", "DEL", conf, env);
    await sleep(300);
    release();
    const r = await del;
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal((await call("bridge", "DEL", conf, env)).code, 0, "DEL again");
    assert.deepEqual(host.allocations(name), [], "no address left");
    assert.deepEqual(
      ipIn(ctr, ["link", "show"]).map((l) => l["ifname"]),
      ["lo"],
      "no interface left in the container",
    );
    assert.deepEqual(host.veths(), vethsBefore, "no veth left on the host");
    assert.doesNotMatch(host.natRules(), /killed1/, "no masquerade rule left");
  });

  test("socket activation: the unit's command, started on the first call with the socket systemd hands it, serves that call", async () => {
    // The ExecStart line `cnitool install --resident` writes, run the way its socket unit runs it.
    const unitDir = cleanup.dir("tscni-units-");
    const installed = await runCommand(path.join(OUR_BIN, "cnitool"), [
      "install",
      "--bin-dir",
      cleanup.dir("tscni-rsbin-"),
      "--resident",
      "--unit-dir",
      unitDir,
    ]);
    assert.equal(installed.code, 0, installed.stderr);
    const execStart = /^ExecStart=(.*)$/m.exec(readFileSync(path.join(unitDir, "tscni.service"), "utf8"))![1]!.split(" ");
    const activated = path.join(sockDir, "activated", "plugins.sock");
    mkdirSync(path.dirname(activated), { recursive: true, mode: 0o700 });
    const args = [...execStart.slice(1, -1), activated]; // daemon --socket <this test's socket>
    // systemd is PID 1, which launchers trust as the holder of a socket it hands to the server it starts
    // (docs/trust.md): its stand-in is PID 1 of a pid namespace of its own (with its own /proc), where the calls run.
    const activator = spawn(
      "nsenter",
      [
        `--net=${host.ns.path}`,
        "--",
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "--",
        "systemd-socket-activate",
        "-l",
        activated,
        execStart[0]!,
        ...args,
      ],
      { stdio: "ignore", detached: true },
    );
    cleanup.add(() => {
      try {
        process.kill(-activator.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    });
    for (let i = 0; i < 50 && !existsSync(activated); i++) await sleep(50);
    const init = Number(readFileSync(`/proc/${activator.pid}/task/${activator.pid}/children`, "utf8").trim().split(" ")[0]);
    const inside = ["nsenter", `--target=${init}`, "--pid", "--mount", "--net", "--"];
    const conf = hostLocalConf(`rsv${tag}`, "10.236.0.0/24");
    const env = { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "activated1" };
    const r = await call("host-local", "ADD", conf, env, { socketPath: activated, via: inside });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.doesNotMatch(r.stderr, /refused|not used/);
    assert.equal(JSON.parse(r.stdout).ips[0].address, "10.236.0.2/24");
    const status = async () => {
      const h = await runCommand(inside[0]!, [...inside.slice(1), path.join(OUR_BIN, "cnitool"), "daemon", "status", "--socket", activated]);
      assert.equal(h.code, 0, h.stderr);
      return JSON.parse(h.stdout) as { served: number; warmedUp: boolean };
    };
    assert.equal((await status()).served, 1, "the activated server ran the first call");
    // It warms up through the socket it was handed (the unit's --socket names it), uncounted.
    for (let i = 0; i < 400 && !(await status()).warmedUp; i++) await sleep(50);
    const h = await status();
    assert.deepEqual([h.warmedUp, h.served], [true, 1]);
    assert.equal((await call("host-local", "DEL", conf, env, { socketPath: activated, via: inside })).code, 0);
    process.kill(-activator.pid!, "SIGKILL");
  });

  test("the socket queues up to 4,096 connections (somaxconn permitting): a burst beyond Bun's 512 waits for the server", async () => {
    const r = await runCommand("nsenter", [`--net=${host.ns.path}`, "--", "ss", "-lxn"]);
    const line = r.stdout.split("\n").find((l) => l.includes(` ${socket} `));
    assert.ok(line, `the server's socket in ss: ${r.stdout}`);
    const somaxconn = Number(readFileSync("/proc/sys/net/core/somaxconn", "utf8"));
    assert.equal(Number(line.trim().split(/\s+/)[3]), Math.min(4096, somaxconn), line);
  });

  test("file modes: directories the server makes are 0700, its socket and lock 0600", async () => {
    const base = cleanup.dir("tscni-rsmodes-");
    const savedSocket = socket;
    const servers: ChildProcess[] = [];
    try {
      for (const s of [path.join(base, "plugins.sock"), path.join(base, "a", "b", "plugins.sock")]) {
        socket = s;
        servers.push(await startServer());
        assert.equal(statSync(s).mode & 0o777, 0o600, s);
        assert.equal(statSync(`${s}.lock`).mode & 0o777, 0o600, "the lock file");
      }
      for (const made of [path.join(base, "a"), path.join(base, "a", "b")]) assert.equal(statSync(made).mode & 0o777, 0o700, made);
    } finally {
      socket = savedSocket;
      for (const s of servers) await stopServer(s);
    }
  });

  test("warm-up: through its own socket on a temporary store, not counted, real calls served meanwhile; SIGTERM stops it at once", async () => {
    const warmDirs = () => readdirSync(os.tmpdir()).filter((n) => n.startsWith("tscni-warm-up-"));
    /** Waits until no warm-up directory but those in `before` is left (other servers of the suite may warm up too). */
    const noneLeft = async (before: string[]) => {
      for (let i = 0; i < 100 && warmDirs().some((d) => !before.includes(d)); i++) await sleep(50);
      assert.deepEqual(
        warmDirs().filter((d) => !before.includes(d)),
        [],
        "the warm-up's temporary store is removed",
      );
    };
    const savedSocket = socket;
    socket = path.join(sockDir, "warm", "plugins.sock");
    const before = warmDirs();
    try {
      const s = await startServer(["--warm-up", "1000"]);
      try {
        assert.equal((await health()).warmedUp, false, "still warming up");
        const name = `rswarm${tag}`;
        const conf = hostLocalConf(name, "10.198.0.0/24");
        const add = await call("host-local", "ADD", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "warm1" });
        assert.equal(add.code, 0, add.stdout + add.stderr);
        assert.equal(JSON.parse(add.stdout).ips[0].address, "10.198.0.2/24");
        assert.equal((await call("host-local", "DEL", conf, { CNI_NETNS: "/run/netns/none", CNI_CONTAINERID: "warm1" })).code, 0);
        for (let i = 0; i < 400 && !(await health()).warmedUp; i++) await sleep(50);
        const h = await health();
        assert.deepEqual([h.warmedUp, h.served, h.inFlight], [true, 2, 0], "only the two real calls count");
        await noneLeft(before);
      } finally {
        await stopServer(s);
      }
      const long = await startServer(["--warm-up", "1000000"]);
      await sleep(300);
      const t0 = Date.now();
      await stopServer(long);
      assert.equal(long.exitCode, 0);
      assert.ok(Date.now() - t0 < 5000, `SIGTERM during the warm-up took ${Date.now() - t0} ms`);
      await noneLeft(before);
    } finally {
      socket = savedSocket;
    }
  });

  test("SIGTERM lets the calls under way finish, then the server exits", async () => {
    await stopServer(server, "SIGTERM");
    assert.equal(server!.exitCode, 0);
    assert.equal(existsSync(socket), false, "the socket is removed");
    server = await startServer();
  });
});
