/**
 * The dhcp plugin and its daemon against a real DHCP server: Debian's dnsmasq in a namespace of its own on a
 * test-only subnet (10.237.0.0/24, leases of 2 minutes, T1 of 4 s through option 58 so a renewal shows within
 * seconds), behind a bridge in a test-made "host" namespace where our daemon runs; containers are namespaces
 * whose eth0 is a veth on that bridge (made by the test, or by our bridge plugin in the chain test). Shown:
 * leases with router, option-121 routes and DNS; renewal at T1; the daemon killed (SIGKILL) and started
 * again renewing and releasing what it held; SIGTERM keeping leases; twenty containers at once; GC; the
 * interface disappearing; no server; no daemon; bad options; bad requests; systemd socket activation; the
 * trust boundary: the socket's and its directory's modes, hostile socket directories, callers that are not
 * root or lack capabilities (refused, their request not run), no RELEASE from the daemon's namespace, a caller of
 * another root (`unshare -m`, a private /run/netns) naming a namespace outside it, and a lease whose namespace name
 * is re-pointed after its ADD (renewals and the RELEASE stay in the namespace the ADD opened).
 * The daemon and its callers run in the host namespace and one mount namespace pinned for it
 * (testing/pinned-mount.ts), through `nsenter --net --mount`; one test runs a daemon in a mount namespace of its own
 * (`unshare -m`, which sees no namespace made after it started) that opens what callers name through their roots.
 * Every process is stopped by its PID; namespaces and files are removed.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { leaseFileName } from "#plugins/ipam/dhcp/lease-file.js";
import { Cleanup, GO_BIN, missing, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { pinMountNamespace } from "#testing/pinned-mount.js";
import type { PluginRun } from "#testing/plugin-run.js";
import { Host } from "#testing/rig.js";

const dhcpBinary = path.join(OUR_BIN, "dhcp");
const standalone = existsSync(dhcpBinary) && !spawnSync("readlink", ["-f", dhcpBinary], { encoding: "utf8" }).stdout.trim().endsWith(".js");
const skip = skipReason(
  false,
  spawnSync("dnsmasq", ["--version"]).status === 0 ? undefined : "dnsmasq is not installed (Debian package dnsmasq-base)",
  standalone ? undefined : missing("the dhcp daemon needs the standalone (Bun) build of dist/bin"),
);
if (skip) console.log(`# skipping dhcp integration tests: ${skip}`);

const SUBNET = "10.237.0";
const SERVER = `${SUBNET}.1`;

/** What a failed plugin run printed: one CNI error. */
function cniError(r: PluginRun): { code: number; msg: string; details?: string } {
  assert.notEqual(r.exitCode, 0, `expected a failure: ${r.stdout}`);
  assert.ok(r.json && typeof r.json.code === "number", `not a CNI error: ${r.stdout}${r.stderr}`);
  return r.json;
}

/** Polls `probe` until it gives a truthy value or `ms` pass. */
async function eventually<T>(probe: () => T | Promise<T>, ms: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** A process started by the test, its output kept, stopped by its PID. */
class Proc {
  output = "";
  exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    child.stdout?.on("data", (b: Buffer) => (this.output += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (this.output += b.toString()));
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? -1 : null))));
  }
  get pid(): number {
    return this.child.pid!;
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  stop(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.running) process.kill(this.pid, signal);
  }
}

/** A client of its own for the daemon's socket: sends its stdin, half-closes ("end") or cuts off after 200 ms, prints the answer. */
const RAW_CLIENT = `
const net = require("node:net");
const [file, how] = process.argv.slice(1);
const chunks = [];
process.stdin.on("data", (b) => chunks.push(b));
process.stdin.on("end", () => {
  const s = net.createConnection(file);
  let got = "";
  s.on("data", (b) => (got += b));
  s.on("close", () => process.stdout.write(got));
  s.on("error", () => undefined);
  s.write(Buffer.concat(chunks));
  if (how === "end") s.end();
  else setTimeout(() => s.destroy(), 200);
});`;

/** A listener that answers every connection with a made-up lease and reports how many bytes it was sent. */
const FAKE_DAEMON = `
const net = require("node:net");
const fs = require("node:fs");
const file = process.argv[1];
const lease = { result: { cniVersion: "1.0.0", ips: [{ address: "10.99.0.2/24" }] } };
net.createServer((s) => {
  let n = 0;
  s.on("data", (b) => (n += b.length));
  s.on("error", () => undefined);
  s.on("close", () => console.log("closed after " + n + " bytes"));
  s.write(JSON.stringify(lease) + "\\n");
}).listen(file, () => { fs.chmodSync(file, 0o666); console.log("listening"); });`;

/** A plugin call as a runtime makes it. */
interface Call {
  command: "ADD" | "DEL" | "CHECK" | "STATUS" | "GC";
  containerID?: string;
  netns?: string;
  ifName?: string;
  args?: string;
}

/** Whether `link` in `ns` is up. */
const linkUp = (ns: Netns, link: string): boolean => (ns.ipJson(["link", "show", link]) as Array<{ flags: string[] }>)[0]!.flags.includes("UP");

describe("dhcp plugin and daemon with dnsmasq", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let srv: Netns;
  let dir: string;
  let dnsmasq: Proc;
  let daemon: Proc;
  let socketPath: string;
  let leaseDir: string;
  let n = 0;

  const dnsmasqLog = () => readFileSync(path.join(dir, "dnsmasq.log"), "utf8");
  /** Where this test's part of dnsmasq's log begins (addresses are handed out again from one test to the next). */
  let logMark = 0;
  const dnsmasqLogNow = () => dnsmasqLog().slice(logMark);
  const dnsmasqLeases = () => (existsSync(path.join(dir, "dnsmasq.leases")) ? readFileSync(path.join(dir, "dnsmasq.leases"), "utf8") : "");
  const acks = (ip: string) =>
    dnsmasqLogNow()
      .split("\n")
      .filter((l) => new RegExp(`DHCPACK\\(ds${tag}\\) ${ip.replaceAll(".", "\\.")} `).test(l)).length;
  const released = (ip: string) => new RegExp(`DHCPRELEASE\\(ds${tag}\\) ${ip.replaceAll(".", "\\.")} `).test(dnsmasqLogNow());
  /** The server logs a RELEASE a moment after the plugin's DEL has sent it. */
  const seesRelease = (ips: string[], what = "DHCPRELEASE") => eventually(() => ips.every(released), 3000, `${what} of ${ips.join(", ")}`);
  /** Whether the daemon keeps a lease file for the container's eth0 on this network. */
  const heldBy = (ctr: Netns) => existsSync(path.join(leaseDir, leaseFileName(`${ctr.name}/dhcp${tag}/eth0`)));
  /** A daemon's log (on a pipe, so a line may come a moment after the answer it preceded); the main daemon's by default. */
  const daemonLogs = (re: RegExp, p = daemon) => eventually(() => re.test(p.output), 3000, `the daemon to log ${re}`);

  const ipamConf = (ipam: Record<string, unknown> = {}) => ({
    cniVersion: "1.1.0",
    name: `dhcp${tag}`,
    type: "macvlan",
    ipam: { type: "dhcp", daemonSocketPath: socketPath, ...ipam },
  });

  /** Where a daemon listens and keeps its leases. */
  interface Place {
    socket: string;
    leases: string;
    pidfile?: string;
  }
  const mainPlace = (): Place => ({ socket: socketPath, leases: leaseDir, pidfile: path.join(dir, "daemon.pid") });

  /** Spawns our daemon in the host's namespaces (extra flags after ours). */
  function spawnDaemon(place: Place, ...extra: string[]): Proc {
    const flags = [
      "-socketpath",
      place.socket,
      "-leasedir",
      place.leases,
      ...(place.pidfile ? ["-pidfile", place.pidfile] : []),
      "-timeout",
      "1s",
      "-resendtimeout",
      "3s",
      ...extra,
    ];
    const p = new Proc(spawn(...host.ns.commandLine(dhcpBinary, ["daemon", ...flags]), { stdio: ["ignore", "pipe", "pipe"] }));
    cleanup.add(() => p.stop());
    return p;
  }

  /** Starts our daemon in the host's namespaces and waits until it listens. */
  async function startDaemon(place = mainPlace(), ...extra: string[]): Promise<Proc> {
    const p = spawnDaemon(place, ...extra);
    await eventually(() => /listening on/.test(p.output) || !p.running, 10_000, "the daemon to listen");
    assert.ok(p.running, `the daemon started: ${p.output}`);
    return p;
  }

  /** A container namespace whose eth0 (left down) is a veth on the bridge, or on nothing. */
  function container(onBridge = true): Netns {
    const i = n++;
    const ns = cleanup.netns(`tscni-dhcp-${tag}-c${i}`);
    host.ns.exec("ip", ["link", "add", `v${tag}c${i}`, "type", "veth", "peer", "name", "eth0", "netns", ns.name]);
    host.ns.exec("ip", ["link", "set", `v${tag}c${i}`, ...(onBridge ? ["master", `br${tag}`] : []), "up"]);
    return ns;
  }

  /**
   * Runs a dhcp plugin `binary` in the host's namespaces (where the daemon is) as a runtime runs it: CNI_*
   * environment, the config on stdin; `as` (setpriv's options) changes who runs it.
   */
  async function plugin(binary: string, c: Call, conf: unknown, opts: { as?: string[]; env?: Record<string, string> } = {}): Promise<PluginRun> {
    const env = {
      PATH: process.env["PATH"],
      CNI_COMMAND: c.command,
      CNI_CONTAINERID: c.containerID ?? "",
      CNI_NETNS: c.netns ?? "",
      CNI_IFNAME: c.ifName ?? "",
      CNI_ARGS: c.args ?? "",
      CNI_PATH: OUR_BIN,
      ...opts.env,
    };
    const [cmd, args] = opts.as ? ["setpriv", [...opts.as, "--", binary]] : [binary, []];
    const r = await host.ns.run(cmd, args, { env, input: typeof conf === "string" ? conf : JSON.stringify(conf) });
    let json: unknown;
    try {
      json = r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
    } catch {
      /* not JSON */
    }
    return { exitCode: r.code, stdout: r.stdout, stderr: r.stderr, json };
  }

  const call = (command: Call["command"], ctr: Netns | undefined, conf: unknown = ipamConf(), args = ""): Promise<PluginRun> =>
    plugin(dhcpBinary, { command, containerID: ctr ? ctr.name : "", netns: ctr ? ctr.path : "", ifName: ctr ? "eth0" : "", args }, conf);

  /**
   * Sends `data` to a daemon's socket (the main one's by default) from the host's namespaces, through a client of
   * the test's own; `as` (setpriv's options) changes who sends it. What came back.
   */
  async function sendRaw(data: string, opts: { socket?: string; end?: boolean; as?: string[] } = {}): Promise<string> {
    const client = [process.execPath, "-e", RAW_CLIENT, opts.socket ?? socketPath, opts.end === false ? "cut" : "end"];
    const [cmd, ...args] = opts.as ? ["setpriv", ...opts.as, "--", ...client] : client;
    return (await host.ns.run(cmd!, args, { input: data })).stdout;
  }

  /** A request line of the daemon's protocol. */
  const request = (method: Call["command"], args: { containerID: string; netns: string; ifName: string }, conf: unknown): string =>
    `${JSON.stringify({ protocol: "tscni-dhcp/1", method, args: { ...args, stdinData: Buffer.from(JSON.stringify(conf)).toString("base64") } })}\n`;

  async function add(ctr: Netns, args = ""): Promise<{ address: string; ip: string; result: any }> {
    const r = await call("ADD", ctr, ipamConf(), args);
    assert.equal(r.exitCode, 0, `ADD in ${ctr.name}: ${r.stdout}${r.stderr}\n${daemon.output}`);
    const address = String(r.json.ips[0].address);
    return { address, ip: address.split("/")[0]!, result: r.json };
  }

  before(async () => {
    dir = cleanup.dir("tscni-dhcp-");
    socketPath = path.join(dir, "run", "dhcp.sock");
    leaseDir = path.join(dir, "leases");
    host = new Host(cleanup, `tscni-dhcp-${tag}-host`, OUR_BIN);
    if (!host.ns.mountNs) {
      // (the resident pass pins one for every host)
      const pinned = pinMountNamespace(host.ns.name, cleanup.dir("tscni-dhcp-mnt-"));
      cleanup.add(() => pinned.unpin());
      host.ns.mountNs = pinned.mountNs;
    }
    srv = cleanup.netns(`tscni-dhcp-${tag}-srv`);
    host.ns.exec("ip", ["link", "add", `br${tag}`, "type", "bridge"]);
    // The host reaches the server: a RELEASE sent from the daemon's namespace would show in dnsmasq's log.
    host.ns.exec("ip", ["addr", "add", `${SUBNET}.2/24`, "dev", `br${tag}`]);
    host.ns.exec("ip", ["link", "set", `br${tag}`, "up"]);
    srv.exec("ip", ["link", "add", `ds${tag}`, "type", "veth", "peer", "name", `ps${tag}`, "netns", host.ns.name]);
    srv.exec("ip", ["addr", "add", `${SERVER}/24`, "dev", `ds${tag}`]);
    srv.exec("ip", ["link", "set", `ds${tag}`, "up"]);
    host.ns.exec("ip", ["link", "set", `ps${tag}`, "master", `br${tag}`, "up"]);

    // DHCP only (--port=0: no DNS), bound to its veth, every file in the test's directory.
    dnsmasq = new Proc(
      spawn(
        "ip",
        [
          "netns",
          "exec",
          srv.name,
          "dnsmasq",
          "--keep-in-foreground",
          "--conf-file=/dev/null",
          "--port=0",
          `--interface=ds${tag}`,
          "--bind-interfaces",
          "--user=root",
          "--no-ping",
          "--log-dhcp",
          `--log-facility=${path.join(dir, "dnsmasq.log")}`,
          `--pid-file=${path.join(dir, "dnsmasq.pid")}`,
          `--dhcp-leasefile=${path.join(dir, "dnsmasq.leases")}`,
          `--dhcp-range=${SUBNET}.50,${SUBNET}.150,255.255.255.0,2m`,
          `--dhcp-option=option:router,${SERVER}`,
          `--dhcp-option=option:dns-server,${SUBNET}.53`,
          "--dhcp-option=option:domain-name,tscni.test",
          `--dhcp-option=option:classless-static-route,10.99.0.0/16,${SERVER},0.0.0.0/0,${SERVER}`,
          "--dhcp-option=58,4",
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      ),
    );
    cleanup.add(() => dnsmasq.stop("SIGTERM"));
    await eventually(() => existsSync(path.join(dir, "dnsmasq.log")) && /DHCP, IP range/.test(dnsmasqLog()), 10_000, "dnsmasq to start");
    daemon = await startDaemon();
  });
  beforeEach(() => {
    logMark = dnsmasqLog().length;
  });
  after(() => cleanup.run());

  test("ADD: a lease with router, option-121 routes and DNS; the link set up; the lease on disk; CHECK and STATUS", async () => {
    const ctr = container();
    const { address, ip, result } = await add(ctr, "IgnoreUnknown=1;K8S_POD_NAME=pod-one");
    assert.match(address, /^10\.237\.0\.(\d+)\/24$/);
    assert.deepEqual(result.ips, [{ address, gateway: SERVER }]);
    assert.deepEqual(result.routes, [
      { dst: "10.99.0.0/16", gw: SERVER },
      { dst: "0.0.0.0/0", gw: SERVER },
    ]);
    assert.deepEqual(result.dns, { nameservers: [`${SUBNET}.53`], domain: "tscni.test" });
    assert.equal((ctr.ipJson(["link", "show", "eth0"]) as Array<{ flags: string[] }>)[0]!.flags.includes("UP"), true, "the daemon set eth0 up");
    const clientIdHex = Buffer.from(`\0${ctr.name}/dhcp${tag}/eth0`)
      .toString("hex")
      .replace(/(..)(?!$)/g, "$1:");
    assert.match(dnsmasqLeases(), new RegExp(`${ip.replaceAll(".", "\\.")} pod-one ${clientIdHex}`), "dnsmasq saw the host name and the client id");
    assert.ok(heldBy(ctr));
    assert.equal(lstatSync(leaseDir).mode & 0o777, 0o700);
    assert.equal((await call("CHECK", ctr)).exitCode, 0);
    assert.equal((await call("STATUS", undefined)).exitCode, 0);
    assert.equal((await call("DEL", ctr)).exitCode, 0);
    await seesRelease([ip]);
    assert.ok(!heldBy(ctr));
  });

  test("renewal at T1; upkeep stops when the interface disappears", async () => {
    const ctr = container();
    const { address, ip } = await add(ctr);
    ctr.exec("ip", ["addr", "add", address, "dev", "eth0"]); // what the main plugin does with the result
    const doomed = container();
    const gone = await add(doomed);
    host.ns.exec("ip", ["link", "del", `v${tag}c${n - 1}`]);
    await eventually(() => acks(ip) >= 2, 10_000, "a renewal (DHCPACK) at T1");
    await daemonLogs(new RegExp(`${ctr.name}/dhcp${tag}/eth0: renewed ${ip.replaceAll(".", "\\.")}`));
    await eventually(() => !heldBy(doomed), 10_000, "the lease of the vanished interface to be dropped");
    await daemonLogs(new RegExp(`${doomed.name}/dhcp${tag}/eth0: no longer maintained: eth0 in ${doomed.path} is gone`));
    assert.ok(heldBy(ctr));
    assert.equal(acks(gone.ip), 1, "the vanished interface's lease was not renewed");
    assert.equal((await call("DEL", doomed)).exitCode, 0, "DEL of a dropped lease succeeds");
    assert.equal((await call("DEL", ctr)).exitCode, 0);
    await seesRelease([ip]);
  });

  test("SIGTERM keeps the leases; after SIGKILL and a restart the daemon renews them and DEL still releases", async () => {
    const ctr = container();
    const { address, ip } = await add(ctr);
    ctr.exec("ip", ["addr", "add", address, "dev", "eth0"]);

    assert.equal(readFileSync(path.join(dir, "daemon.pid"), "utf8"), String(daemon.pid), "-pidfile holds the daemon's PID");
    daemon.stop("SIGTERM");
    assert.equal(await daemon.exited, 0);
    assert.ok(!existsSync(socketPath) && !existsSync(path.join(dir, "daemon.pid")), "socket and pidfile removed");
    assert.ok(heldBy(ctr), "the lease stays on disk");
    assert.ok(!released(ip), "nothing released on SIGTERM");
    const noDaemon = await call("CHECK", ctr);
    assert.deepEqual(cniError(noDaemon), {
      code: 11,
      msg: `cannot reach the dhcp daemon at ${socketPath}: the socket does not exist (is \`dhcp daemon\` running?)`,
    });

    daemon = await startDaemon();
    daemon.stop("SIGKILL");
    await daemon.exited;
    assert.ok(existsSync(socketPath), "SIGKILL leaves the socket behind");
    const stale = await call("ADD", ctr);
    assert.equal(cniError(stale).code, 11);
    assert.match(cniError(stale).msg, new RegExp(`${socketPath.replaceAll(".", "\\.")}: nothing listens on the socket`));

    const before = acks(ip);
    daemon = await startDaemon(); // replaces the stale socket
    assert.match(daemon.output, new RegExp(`resumed the lease of ${ip.replaceAll(".", "\\.")}`));
    await eventually(() => acks(ip) > before, 10_000, "the restarted daemon to renew the lease");
    const again = await add(ctr);
    assert.equal(again.address, address, "ADD after the restart gives the held lease");
    assert.equal((await call("DEL", ctr)).exitCode, 0);
    await seesRelease([ip], "the RELEASE of DEL after the restart");
    await daemonLogs(new RegExp(`released ${ip.replaceAll(".", "\\.")} \\(DEL\\): unicast to ${SERVER.replaceAll(".", "\\.")}$`, "m"));
    assert.ok(!dnsmasqLeases().includes(` ${ip} `), "dnsmasq forgot the lease");
    assert.ok(!heldBy(ctr));
  });

  test("twenty containers at once get distinct leases; GC releases those not valid; DEL the rest", async () => {
    const ctrs = Array.from({ length: 20 }, () => container());
    const leases = await Promise.all(ctrs.map((c) => add(c)));
    assert.equal(new Set(leases.map((l) => l.ip)).size, 20);
    assert.ok(ctrs.every(heldBy));
    const valid = ctrs.slice(0, 10).map((c) => ({ containerID: c.name, ifname: "eth0" }));
    const gc = await call("GC", undefined, { ...ipamConf(), cniVersion: "1.1.0", "cni.dev/valid-attachments": valid });
    assert.equal(gc.exitCode, 0, gc.stdout);
    assert.deepEqual(
      ctrs.map(heldBy),
      ctrs.map((_, i) => i < 10),
    );
    await seesRelease(
      leases.slice(10).map((l) => l.ip),
      "GC's RELEASE",
    );
    assert.ok(leases.slice(0, 10).every((l) => !released(l.ip)));
    const dels = await Promise.all(ctrs.slice(0, 10).map((c) => call("DEL", c)));
    assert.ok(dels.every((d) => d.exitCode === 0));
    await seesRelease(leases.map((l) => l.ip));
    assert.ok(!ctrs.some(heldBy));
  });

  test("no server: code 11 within -resendtimeout (3 s), nothing kept, the link left without an address", async () => {
    const ctr = container(false);
    const started = Date.now();
    const r = await call("ADD", ctr);
    const took = Date.now() - started;
    assert.deepEqual({ code: cniError(r).code }, { code: 11 });
    assert.match(cniError(r).msg, new RegExp(`^no DHCP lease for eth0 in ${ctr.path}: no DHCPOFFER within 3s`));
    assert.ok(took < 5000, `failed after ${took} ms`);
    assert.ok(!heldBy(ctr));
    const [eth0] = ctr.ipJson(["addr", "show", "eth0"]) as Array<{ addr_info: Array<{ family: string }> }>;
    assert.deepEqual(
      eth0!.addr_info.filter((a) => a.family === "inet"),
      [],
      "no IPv4 address on eth0",
    );
    assert.equal((await call("DEL", ctr)).exitCode, 0);
  });

  test("bad options are code 7 naming the option; no daemon is code 11 naming the socket", async () => {
    const ctr = container();
    const bad = await call("ADD", ctr, ipamConf({ request: [{ option: "routerz" }] }));
    assert.equal(cniError(bad).code, 7);
    assert.match(cniError(bad).msg, /^invalid "ipam\.request\[0\]\.option": "routerz"/);
    const badProvide = await call("ADD", ctr, ipamConf({ provide: [{ option: "53", value: "x" }] }));
    assert.match(cniError(badProvide).msg, /"ipam\.provide\[0\]\.option": "53"/);
    const missingSocket = path.join(dir, "nobody.sock");
    const started = Date.now();
    const none = await call("ADD", ctr, ipamConf({ daemonSocketPath: missingSocket }));
    assert.deepEqual(cniError(none), {
      code: 11,
      msg: `cannot reach the dhcp daemon at ${missingSocket}: the socket does not exist (is \`dhcp daemon\` running?)`,
    });
    assert.ok(Date.now() - started < 2000);
    assert.equal(cniError(await call("STATUS", undefined, ipamConf({ daemonSocketPath: missingSocket }))).code, 51);
    assert.ok(!heldBy(ctr));
  });

  test("bad requests get an error answer and the daemon carries on", async () => {
    assert.match(await sendRaw("garbage\n"), /"code":6.*not JSON/);
    assert.match(await sendRaw('{"protocol":"tscni-dhcp/1","method":"ADD","args":{"stdinData":"bm90IGpzb24="}}\n'), /"code":6/);
    assert.match(await sendRaw('{"protocol":"tscni-dhcp/1","method":"DEL","args":{"containerID":"x","ifName":"eth0","stdinData":""}}\n'), /"error"/);
    await sendRaw('{"protocol":"tscni-dhcp/1"', { end: false }); // cut off mid-request
    await sendRaw(`${"x".repeat(5 << 20)}\n`);
    assert.ok(daemon.running);
    assert.equal((await call("STATUS", undefined)).exitCode, 0);
  });

  test("bridge + dhcp through cnitool: the address configured, the server reachable; DEL (bridge deletes eth0 first) sends no RELEASE", async () => {
    const network = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `dhbr${tag}`,
      type: "bridge",
      bridge: `br${tag}`,
      ipam: { type: "dhcp", daemonSocketPath: socketPath },
    });
    const ctr = host.container(`tscni-dhcp-${tag}-br`);
    const result = await host.add(network, ctr);
    const ip = result.ips![0]!.address.split("/")[0]!;
    const r = await ctr.run("ping", ["-c", "1", "-W", "2", SERVER]);
    assert.equal(r.code, 0, `ping the DHCP server from the container: ${r.stdout}${r.stderr}`);
    await host.must("del", network, ctr);
    // A RELEASE goes from the container's interface or not at all: here it is gone, so the lease just expires.
    await daemonLogs(new RegExp(`dropped ${ip.replaceAll(".", "\\.")} without a RELEASE \\(DEL\\): interface eth0 does not exist in ${ctr.path}`));
    await sleep(500);
    assert.ok(!released(ip), "no RELEASE reached the server (the host, where the daemon runs, reaches it)");
  });

  test("DEL after the container's namespace is gone sends nothing, from the daemon's namespace either: the lease is dropped", async () => {
    const ctr = container();
    const { ip } = await add(ctr);
    ctr.delete();
    assert.equal((await call("DEL", ctr)).exitCode, 0);
    assert.ok(!heldBy(ctr), "the lease's record is removed");
    // (The upkeep, checking every few seconds, may have dropped the lease just before DEL came.)
    const escaped = ip.replaceAll(".", "\\.");
    await daemonLogs(
      new RegExp(
        `${ctr.name}/dhcp${tag}/eth0: (dropped ${escaped} without a RELEASE \\(DEL\\): network namespace ${ctr.path} does not exist|no longer maintained: eth0 in ${ctr.path} is gone)`,
      ),
    );
    await sleep(500);
    assert.ok(!released(ip), "no RELEASE reached the server (the host, where the daemon runs, reaches it)");
    assert.ok(dnsmasqLeases().includes(` ${ip} `), "the server keeps the lease until it expires");
  });

  test("the socket is born 0600 in a directory made 0700; a socket directory that is a symbolic link, writable by others or not root's stops start-up", async () => {
    assert.equal(lstatSync(path.dirname(socketPath)).mode & 0o7777, 0o700, "the main daemon's socket directory");
    const base = cleanup.dir("tscni-dhcp-dirs-");
    const fresh: Place = { socket: path.join(base, "fresh", "run", "dhcp.sock"), leases: path.join(base, "fresh", "leases") };
    const p = spawnDaemon(fresh);
    // No chmod follows listen(): the mode the socket has when it appears is the mode it keeps.
    while (!existsSync(fresh.socket) && p.running) await sleep(1);
    const born = lstatSync(fresh.socket);
    assert.ok(born.isSocket() && born.uid === 0);
    assert.equal(born.mode & 0o7777, 0o600, "the socket, as soon as it exists");
    const madeDir = lstatSync(path.dirname(fresh.socket));
    assert.ok(madeDir.isDirectory());
    assert.equal(madeDir.mode & 0o7777, 0o700, "the directory the daemon made");
    await daemonLogs(/listening on/, p);
    p.stop("SIGTERM");
    assert.equal(await p.exited, 0);

    const real = path.join(base, "real");
    mkdirSync(real, { mode: 0o700 });
    const hostile = [
      { what: "a symbolic link to a good directory", make: (d: string) => symlinkSync(real, d), says: "is a symbolic link" },
      {
        what: "group-writable",
        make: (d: string) => {
          mkdirSync(d);
          chmodSync(d, 0o770);
        },
        says: "is writable by its group or others (mode 0770)",
      },
      {
        what: "world-writable and sticky, as /tmp",
        make: (d: string) => {
          mkdirSync(d);
          chmodSync(d, 0o1777);
        },
        says: "is writable by its group or others (mode 01777)",
      },
      {
        what: "owned by uid 65534",
        make: (d: string) => {
          mkdirSync(d, { mode: 0o700 });
          chownSync(d, 65534, 65534);
        },
        says: "is owned by uid 65534",
      },
    ];
    for (const [i, h] of hostile.entries()) {
      const socketDir = path.join(base, `hostile${i}`);
      h.make(socketDir);
      const d = spawnDaemon({ socket: path.join(socketDir, "dhcp.sock"), leases: path.join(base, `leases${i}`) });
      assert.equal(await d.exited, 1, `${h.what}: ${d.output}`);
      assert.ok(d.output.includes(`the socket directory ${socketDir} ${h.says}: refusing to listen there`), `${h.what}: ${d.output}`);
      assert.deepEqual(readdirSync(h.what.startsWith("a symbolic") ? real : socketDir), [], `${h.what}: no socket made`);
    }
  });

  test("a caller that is not root is refused before its request is read: uid 65534 cannot make the daemon touch a link (the socket made reachable on purpose)", async () => {
    const base = cleanup.dir("tscni-dhcp-peer-");
    const place: Place = { socket: path.join(base, "run", "dhcp.sock"), leases: path.join(base, "leases") };
    const d = await startDaemon(place);
    // What the review found exploitable: a socket anyone can reach.
    for (const p of [base, path.dirname(place.socket)]) chmodSync(p, 0o711);
    chmodSync(place.socket, 0o666);
    const ctr = container(); // eth0 down, on the bridge where dnsmasq answers
    const hostLink = `atk${tag}`;
    host.ns.exec("ip", ["link", "add", hostLink, "type", "veth", "peer", "name", `${hostLink}p`]); // down, in the host namespace
    const conf = ipamConf({ daemonSocketPath: place.socket });
    const nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    const refused = "the dhcp daemon serves only root callers of its user namespace, with its capabilities: uid 65534 is not served (root only)";
    // The review's attack, in the daemon's protocol: a host link, through the daemon's own namespace.
    const ownNetns = { containerID: `atk${tag}`, netns: `/proc/${d.pid}/ns/net`, ifName: hostLink };
    const raw = await sendRaw(request("ADD", ownNetns, conf), { socket: place.socket, as: nobody });
    assert.deepEqual(JSON.parse(raw), { error: { code: 999, msg: refused } });
    // And through the plugin, as a runtime would call it: a container's link. The plugin cannot tell that root's
    // daemon is the daemon (it may not read the daemon's namespaces): it sends nothing.
    const r = await plugin(dhcpBinary, { command: "ADD", containerID: `atk${tag}`, netns: ctr.path, ifName: "eth0" }, conf, {
      as: nobody,
      env: { TSCNI_RESIDENT_SOCKET: "" },
    });
    assert.deepEqual(cniError(r), {
      code: 11,
      msg: `will not call the dhcp daemon at ${place.socket}: this caller cannot read the listener's user namespace (nothing was sent)`,
    });
    // Nothing of the requests ran: the links are still down, no DHCP message went out, no lease was kept.
    assert.ok(!linkUp(host.ns, hostLink), "the host link is still down");
    assert.ok(!linkUp(ctr, "eth0"), "the container's link is still down");
    const mac = (ctr.ipJson(["link", "show", "eth0"]) as Array<{ address: string }>)[0]!.address;
    assert.ok(!dnsmasqLogNow().includes(mac), "dnsmasq heard nothing from the container");
    assert.deepEqual(
      readdirSync(place.leases).filter((f) => f.startsWith("lease-")),
      [],
    );
    await daemonLogs(/refused a caller: uid 65534 is not served \(root only\)/, d);
    assert.ok(!/\bADD\b/.test(d.output), `the daemon ran no ADD: ${d.output}`);

    // A root caller in the daemon's namespaces is served, but the daemon acts in no link of its own namespace.
    const root = await sendRaw(request("ADD", ownNetns, conf), { socket: place.socket });
    assert.deepEqual(JSON.parse(root), {
      error: { code: 4, msg: `network namespace /proc/${d.pid}/ns/net is the dhcp daemon's own: it acts only in containers' namespaces` },
    });
    assert.ok(!linkUp(host.ns, hostLink), "the host link is still down");
    d.stop("SIGTERM");
    assert.equal(await d.exited, 0);
  });

  test("a daemon in a mount namespace of its own serves callers of the host's: ADD, renewal, DEL through the caller's view; a path only the daemon sees is refused", async () => {
    const base = cleanup.dir("tscni-dhcp-mnt-own-");
    const place: Place = { socket: path.join(base, "run", "dhcp.sock"), leases: path.join(base, "leases") };
    const flags = ["-socketpath", place.socket, "-leasedir", place.leases, "-timeout", "1s", "-resendtimeout", "3s"];
    const d = new Proc(
      spawn(...host.ns.commandLine("unshare", ["--mount", "--propagation", "private", "--", dhcpBinary, "daemon", ...flags]), {
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    cleanup.add(() => d.stop());
    await eventually(() => /listening on/.test(d.output) || !d.running, 10_000, "the daemon to listen");
    assert.ok(d.running, d.output);
    // Made after the daemon's mount namespace was: the daemon cannot open it by its path.
    const ctr = container();
    const own = (await host.ns.run("nsenter", [`--target=${d.pid}`, "--mount", "--", "cat", "/proc/self/mountinfo"])).stdout;
    assert.doesNotMatch(own, new RegExp(ctr.name), "the daemon's mount namespace does not have the container's namespace");
    const conf = ipamConf({ daemonSocketPath: place.socket });
    const r = await plugin(dhcpBinary, { command: "ADD", containerID: ctr.name, netns: ctr.path, ifName: "eth0" }, conf, {
      env: { TSCNI_RESIDENT_SOCKET: "" },
    });
    assert.equal(r.exitCode, 0, `${r.stdout}${r.stderr}\n${d.output}`);
    const address = String(r.json.ips[0].address);
    const ip = address.split("/")[0]!;
    ctr.exec("ip", ["addr", "add", address, "dev", "eth0"]);
    await eventually(() => acks(ip) >= 2, 10_000, "a renewal (DHCPACK) at T1 by the daemon that cannot see the namespace's path");
    await daemonLogs(new RegExp(`renewed ${ip.replaceAll(".", "\\.")}`), d);
    const del = await plugin(dhcpBinary, { command: "DEL", containerID: ctr.name, netns: ctr.path, ifName: "eth0" }, conf, {
      env: { TSCNI_RESIDENT_SOCKET: "" },
    });
    assert.equal(del.exitCode, 0, del.stdout);
    await seesRelease([ip]);

    // A namespace mounted where only the daemon sees it: the caller names a path that is not there for it.
    const hidden = path.join(base, "hidden");
    mkdirSync(hidden);
    const other = container();
    const mounted = await host.ns.run("nsenter", [
      `--target=${d.pid}`,
      "--mount",
      "--",
      "sh",
      "-c",
      'mount -t tmpfs none "$1" && touch "$1/ns" && mount --bind "$2" "$1/ns"',
      "sh",
      hidden,
      other.path,
    ]);
    assert.equal(mounted.code, 0, mounted.stderr);
    const sneaky = await plugin(dhcpBinary, { command: "ADD", containerID: "sneaky", netns: path.join(hidden, "ns"), ifName: "eth0" }, conf, {
      env: { TSCNI_RESIDENT_SOCKET: "" },
    });
    assert.deepEqual(cniError(sneaky), { code: 4, msg: `network namespace ${path.join(hidden, "ns")} does not exist (as the caller sees it)` });
    assert.ok(!linkUp(other, "eth0"), "the daemon did nothing in the namespace only it could see");
    d.stop("SIGTERM");
    assert.equal(await d.exited, 0);
  });

  /**
   * Runs the dhcp plugin as a caller in a mount namespace of its own (`unshare -m`) whose /run/netns is a private
   * tmpfs, after `setup` (shell, $1 the victim's namespace path) made names there; the CNI_* environment as a
   * runtime sets it.
   */
  async function privateRootCall(c: Call, conf: unknown, setup: string, victim: string): Promise<PluginRun> {
    const env = {
      PATH: process.env["PATH"],
      CNI_COMMAND: c.command,
      CNI_CONTAINERID: c.containerID ?? "",
      CNI_NETNS: c.netns ?? "",
      CNI_IFNAME: c.ifName ?? "",
      CNI_ARGS: "",
      CNI_PATH: OUR_BIN,
      TSCNI_RESIDENT_SOCKET: "",
    };
    const script = `mount -t tmpfs none /run/netns && ${setup} && exec "$2"`;
    const r = await host.ns.run("unshare", ["--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", victim, dhcpBinary], {
      env,
      input: JSON.stringify(conf),
    });
    let json: unknown;
    try {
      json = r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
    } catch {
      /* not JSON */
    }
    return { exitCode: r.code, stdout: r.stdout, stderr: r.stderr, json };
  }

  test("a caller whose root differs cannot name a namespace outside it: not by an absolute link, not through a link spelled like a magic link (the old fallback)", async () => {
    const victim = container(); // eth0 down, on the bridge where dnsmasq answers
    const mac = (victim.ipJson(["link", "show", "eth0"]) as Array<{ address: string }>)[0]!.address;
    // In the caller's root /run/netns is its own tmpfs: the victim's name there is nothing. Resolved in the
    // daemon's root instead, each of these names would be the victim's namespace.
    const cases = [
      // An absolute link: RESOLVE_IN_ROOT keeps it in the caller's root, where it names nothing.
      {
        name: "abs",
        setup: 'ln -s "$1" /run/netns/abs',
        code: 4,
        msg: /network namespace \/run\/netns\/abs does not exist \(as the caller sees it\)/,
      },
      // What the old fallback (EXDEV/ELOOP: a magic link on the way) followed by the daemon's own resolution: a
      // link shown as "net:[1]" leading (relative) to one through /proc/self/root, the daemon's root.
      {
        name: "spelled",
        setup: 'ln -s "net:[1]" /run/netns/spelled && ln -s "/proc/self/root$1" "/run/netns/net:[1]"',
        code: 999,
        msg: /cannot open the network namespace \/run\/netns\/spelled as the caller sees it/,
      },
      // The daemon's own root by a magic link, named directly.
      {
        name: "self",
        setup: 'ln -s "/proc/self/root$1" /run/netns/self',
        code: 999,
        msg: /cannot open the network namespace \/run\/netns\/self as the caller sees it/,
      },
    ];
    for (const { name, setup, code, msg } of cases) {
      const r = await privateRootCall(
        { command: "ADD", containerID: `priv${name}`, netns: `/run/netns/${name}`, ifName: "eth0" },
        ipamConf(),
        setup,
        victim.path,
      );
      const err = cniError(r);
      assert.equal(err.code, code, `${name}: ${r.stdout}${r.stderr}\n${daemon.output}`);
      assert.match(err.msg, msg, name);
    }
    assert.ok(!linkUp(victim, "eth0"), "the victim's eth0 is still down");
    await sleep(500);
    assert.ok(!dnsmasqLogNow().toLowerCase().includes(mac.toLowerCase()), "dnsmasq heard nothing with the victim's MAC");
    assert.ok(!readdirSync(leaseDir).some((f) => f.startsWith("lease-") && f === leaseFileName(`privspelled/dhcp${tag}/eth0`)));
  });

  test("a lease acts only in the namespace its ADD opened: its name re-pointed (a bind mount, then an absolute link) to another, renewals and the RELEASE stay in the first", async () => {
    const first = container();
    const second = container(); // eth0 down, on the bridge: DHCP from it would reach dnsmasq
    const secondMac = (second.ipJson(["link", "show", "eth0"]) as Array<{ address: string }>)[0]!.address;
    const names = cleanup.dir("tscni-dhcp-names-");
    const name = path.join(names, "ns");
    const sh = async (script: string, ...args: string[]) => {
      const r = await host.ns.run("sh", ["-c", script, "sh", ...args]);
      assert.equal(r.code, 0, r.stderr);
    };
    cleanup.add(() => void spawnSync(...host.ns.commandLine("umount", ["-l", name]))); // (before the namespaces go, and the directory)
    await sh('touch "$1" && mount --bind "$2" "$1"', name, first.path);
    const conf = ipamConf();
    const ctr = { containerID: first.name, netns: name, ifName: "eth0" };
    const r = await plugin(dhcpBinary, { command: "ADD", ...ctr }, conf);
    assert.equal(r.exitCode, 0, `${r.stdout}${r.stderr}\n${daemon.output}`);
    const address = String(r.json.ips[0].address);
    const ip = address.split("/")[0]!;
    first.exec("ip", ["addr", "add", address, "dev", "eth0"]);
    const escaped = ip.replaceAll(".", "\\.");
    const renewals = () => (daemon.output.match(new RegExp(`${first.name}/dhcp${tag}/eth0: renewed ${escaped} `, "g")) ?? []).length;

    // The name now names the second namespace, through a bind mount: the next renewal is still the first's.
    await sh('umount -l "$1" && mount --bind "$2" "$1"', name, second.path);
    const before = renewals();
    await eventually(() => renewals() > before, 10_000, "a renewal after the name was re-pointed");
    // And through an absolute link (the old renewal followed it from the daemon's root).
    await sh('umount -l "$1" && rm "$1" && ln -s "$2" "$1"', name, second.path);
    const again = renewals();
    await eventually(() => renewals() > again, 10_000, "a renewal after the name became a link");
    assert.ok(heldBy(first), "the lease is still held");
    assert.ok(!linkUp(second, "eth0"), "the second namespace's eth0 was never touched");
    assert.ok(!dnsmasqLogNow().toLowerCase().includes(secondMac.toLowerCase()), "dnsmasq heard nothing from the second namespace");
    assert.ok(linkUp(first, "eth0"), "the first namespace's eth0 is up, as the ADD left it");

    // DEL through the same name: the RELEASE goes out from the first namespace's interface.
    const del = await plugin(dhcpBinary, { command: "DEL", ...ctr }, conf);
    assert.equal(del.exitCode, 0, del.stdout);
    await seesRelease([ip]);
    await daemonLogs(new RegExp(`${first.name}/dhcp${tag}/eth0: released ${escaped} \\(DEL\\)`));
    assert.ok(!dnsmasqLogNow().toLowerCase().includes(secondMac.toLowerCase()), "nor at DEL");
  });

  test("a root caller without capabilities is refused: it may not do what the daemon would do for it", async () => {
    const capless = ["--bounding-set=-all", "--inh-caps=-all"];
    const caps = await host.ns.run("setpriv", [...capless, "--", "grep", "^CapEff:", "/proc/self/status"]);
    assert.match(caps.stdout, /^CapEff:\s+0+$/m, `setpriv leaves the caller no capabilities: ${caps.stdout}${caps.stderr}`);
    const ctr = container();
    // Its plugin sends nothing (it may not read the daemon's namespaces, so it cannot tell it is the daemon)...
    const r = await plugin(dhcpBinary, { command: "ADD", containerID: ctr.name, netns: ctr.path, ifName: "eth0" }, ipamConf(), {
      as: capless,
      env: { TSCNI_RESIDENT_SOCKET: "" },
    });
    assert.deepEqual(cniError(r), {
      code: 11,
      msg: `will not call the dhcp daemon at ${socketPath}: this caller cannot read the listener's user namespace (nothing was sent)`,
    });
    // ...and a request sent anyway is refused by the daemon before it is read.
    const raw = JSON.parse(
      await sendRaw(request("ADD", { containerID: ctr.name, netns: ctr.path, ifName: "eth0" }, ipamConf()), { as: capless }),
    ) as { error: { code: number; msg: string } };
    const e = raw.error;
    assert.equal(e.code, 999);
    assert.match(
      e.msg,
      /^the dhcp daemon serves only root callers of its user namespace, with its capabilities: the caller lacks capabilities the server has \(\d+(,\d+)*\)/,
    );
    assert.ok(!linkUp(ctr, "eth0"), "the container's link is still down");
    assert.ok(!heldBy(ctr));
    await daemonLogs(/refused a caller: the caller lacks capabilities the server has/);
    // The same call with the capabilities is served.
    await add(ctr);
    assert.equal((await call("DEL", ctr)).exitCode, 0);
  });

  test("the plugin sends nothing to a daemon that is not root's: a listener of uid 65534 on the socket path gets no byte, and its answer is not taken", async () => {
    const base = cleanup.dir("tscni-dhcp-fake-");
    chmodSync(base, 0o711);
    const dirOfNobody = path.join(base, "run");
    mkdirSync(dirOfNobody, { mode: 0o700 });
    chownSync(dirOfNobody, 65534, 65534);
    const socket = path.join(dirOfNobody, "dhcp.sock");
    // What the listener would have the plugin print: a lease it made up.
    const listener = new Proc(
      spawn("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, "-e", FAKE_DAEMON, socket], {
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    cleanup.add(() => listener.stop());
    await eventually(() => listener.output.includes("listening"), 5000, "the fake daemon listening");
    const ctr = container();
    const r = await plugin(
      dhcpBinary,
      { command: "ADD", containerID: ctr.name, netns: ctr.path, ifName: "eth0" },
      ipamConf({ daemonSocketPath: socket }),
      { env: { TSCNI_RESIDENT_SOCKET: "" } },
    );
    assert.notEqual(r.exitCode, 0, `the made-up lease was not taken: ${r.stdout}`);
    const e = cniError(r);
    assert.equal(e.code, 11);
    assert.match(
      e.msg,
      new RegExp(
        `^will not call the dhcp daemon at ${socket.replace(/[.]/g, "\\.")}: (the listener runs as|the socket is owned by) uid 65534, not root \\(nothing was sent\\)$`,
      ),
    );
    await eventually(() => /closed after 0 bytes/.test(listener.output), 5000, "the fake daemon saw the connection close");
    assert.doesNotMatch(listener.output, /closed after [1-9]/, "the listener received nothing");
    assert.ok(!linkUp(ctr, "eth0"), "the container's link is still down");
  });

  test("Go's dhcp plugin and our daemon, our plugin and Go's daemon: they do not mix, and each says so", {
    skip: existsSync(path.join(GO_BIN, "dhcp")) ? false : "Go's dhcp is not in /usr/lib/cni",
  }, async () => {
    const ctr = container();
    const goPlugin = await plugin(
      path.join(GO_BIN, "dhcp"),
      { command: "ADD", containerID: ctr.name, netns: ctr.path, ifName: "eth0" },
      { ...ipamConf(), cniVersion: "1.0.0" },
      { env: { CNI_PATH: GO_BIN } },
    );
    assert.notEqual(goPlugin.exitCode, 0);
    assert.match(goPlugin.stdout, /this is tscni's dhcp daemon: Go's dhcp plugin cannot use it/);
    const goSocket = path.join(dir, "go", "dhcp.sock");
    const goDaemon = new Proc(
      spawn(...host.ns.commandLine(path.join(GO_BIN, "dhcp"), ["daemon", "-socketpath", goSocket]), { stdio: ["ignore", "pipe", "pipe"] }),
    );
    cleanup.add(() => goDaemon.stop());
    try {
      await eventually(() => existsSync(goSocket) || !goDaemon.running, 10_000, "Go's daemon to listen");
      const ours = await call("ADD", ctr, ipamConf({ daemonSocketPath: goSocket }));
      assert.equal(cniError(ours).code, 999);
      assert.match(cniError(ours).msg, /does not speak tscni-dhcp\/1 \(an HTTP server: Go's dhcp daemon\?/);
    } finally {
      goDaemon.stop("SIGTERM");
      await goDaemon.exited;
    }
    assert.ok(!heldBy(ctr));
  });

  test("systemd socket activation: the daemon serves the socket it inherits on fd 3", async () => {
    const bound = path.join(dir, "activated.sock");
    const reachable = path.join(dir, "activated-link.sock");
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(bound, resolve));
    linkSync(bound, reachable); // closing our copy below unlinks `bound`; the socket stays reachable by this name
    const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
    const p = new Proc(
      spawn(
        ...host.ns.commandLine("sh", [
          "-c",
          'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" daemon -leasedir "$1"',
          dhcpBinary,
          path.join(dir, "leases-activated"),
        ]),
        { stdio: ["ignore", "pipe", "pipe", fd] },
      ),
    );
    cleanup.add(() => p.stop());
    await new Promise<void>((resolve) => server.close(() => resolve())); // only the daemon may accept now
    try {
      await eventually(() => /listening on the socket systemd passed/.test(p.output) || !p.running, 10_000, "the activated daemon");
      assert.ok(p.running, p.output);
      const status = await call("STATUS", undefined, ipamConf({ daemonSocketPath: reachable }));
      assert.equal(status.exitCode, 0, status.stdout);
    } finally {
      p.stop("SIGTERM");
    }
    assert.equal(await p.exited, 0);
  });
});
