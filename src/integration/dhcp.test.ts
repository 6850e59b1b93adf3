/**
 * The dhcp plugin and its daemon against a real DHCP server: Debian's dnsmasq in a namespace of its own on a
 * test-only subnet (10.237.0.0/24, leases of 2 minutes, T1 of 4 s through option 58 so a renewal shows within
 * seconds), behind a bridge in a test-made "host" namespace where our daemon runs; containers are namespaces
 * whose eth0 is a veth on that bridge (made by the test, or by our bridge plugin in the chain test). Shown:
 * leases with router, option-121 routes and DNS; renewal at T1; the daemon killed (SIGKILL) and started
 * again renewing and releasing what it held; SIGTERM keeping leases; twenty containers at once; GC; the
 * interface disappearing; no server; no daemon; bad options; bad requests; systemd socket activation.
 * Every process is stopped by its PID; namespaces and files are removed.
 */
import { describe, test, before, beforeEach, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, linkSync, readFileSync, statSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, GO_BIN, Netns, OUR_BIN, runTag, skipReason, missing } from "../testing/harness.js";
import { runPlugin, type PluginRun } from "../testing/plugin-run.js";
import { Host } from "../testing/rig.js";
import { leaseFileName } from "../plugins/ipam/dhcp/lease-file.js";

const dhcpBinary = path.join(OUR_BIN, "dhcp");
const standalone = existsSync(dhcpBinary) && !spawnSync("readlink", ["-f", dhcpBinary], { encoding: "utf8" }).stdout.trim().endsWith(".js");
const skip = skipReason(false,
  spawnSync("dnsmasq", ["--version"]).status === 0 ? undefined : "dnsmasq is not installed (Debian package dnsmasq-base)",
  standalone ? undefined : missing("the dhcp daemon needs the standalone (Bun) build of dist/bin"));
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
  const acks = (ip: string) => dnsmasqLogNow().split("\n").filter((l) => new RegExp(`DHCPACK\\(ds${tag}\\) ${ip.replaceAll(".", "\\.")} `).test(l)).length;
  const released = (ip: string) => new RegExp(`DHCPRELEASE\\(ds${tag}\\) ${ip.replaceAll(".", "\\.")} `).test(dnsmasqLogNow());
  /** The server logs a RELEASE a moment after the plugin's DEL has sent it. */
  const seesRelease = (ips: string[], what = "DHCPRELEASE") => eventually(() => ips.every(released), 3000, `${what} of ${ips.join(", ")}`);
  /** Whether the daemon keeps a lease file for the container's eth0 on this network. */
  const heldBy = (ctr: Netns) => existsSync(path.join(leaseDir, leaseFileName(`${ctr.name}/dhcp${tag}/eth0`)));
  /** The daemon's log (on a pipe, so a line may come a moment after the answer it preceded). */
  const daemonLogs = (re: RegExp) => eventually(() => re.test(daemon.output), 3000, `the daemon to log ${re}`);

  const ipamConf = (ipam: Record<string, unknown> = {}) => ({
    cniVersion: "1.1.0", name: `dhcp${tag}`, type: "macvlan", ipam: { type: "dhcp", daemonSocketPath: socketPath, ...ipam },
  });

  /** Starts our daemon in the host namespace (extra flags after ours). */
  async function startDaemon(...extra: string[]): Promise<Proc> {
    const p = new Proc(spawn("ip", ["netns", "exec", host.ns.name, dhcpBinary, "daemon", "-socketpath", socketPath, "-leasedir", leaseDir,
      "-pidfile", path.join(dir, "daemon.pid"), "-timeout", "1s", "-resendtimeout", "3s", ...extra], { stdio: ["ignore", "pipe", "pipe"] }));
    cleanup.add(() => p.stop());
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

  const call = (command: "ADD" | "DEL" | "CHECK" | "STATUS" | "GC", ctr: Netns | undefined, conf: unknown = ipamConf(), args = ""): Promise<PluginRun> =>
    runPlugin(OUR_BIN, "dhcp", { command, containerID: ctr ? ctr.name : "", netns: ctr ? ctr.path : "", ifName: ctr ? "eth0" : "", args }, conf);

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
    srv = cleanup.netns(`tscni-dhcp-${tag}-srv`);
    host.ns.exec("ip", ["link", "add", `br${tag}`, "type", "bridge"]);
    host.ns.exec("ip", ["addr", "add", `${SUBNET}.2/24`, "dev", `br${tag}`]); // the daemon's own way to the server
    host.ns.exec("ip", ["link", "set", `br${tag}`, "up"]);
    srv.exec("ip", ["link", "add", `ds${tag}`, "type", "veth", "peer", "name", `ps${tag}`, "netns", host.ns.name]);
    srv.exec("ip", ["addr", "add", `${SERVER}/24`, "dev", `ds${tag}`]);
    srv.exec("ip", ["link", "set", `ds${tag}`, "up"]);
    host.ns.exec("ip", ["link", "set", `ps${tag}`, "master", `br${tag}`, "up"]);

    // DHCP only (--port=0: no DNS), bound to its veth, every file in the test's directory.
    dnsmasq = new Proc(spawn("ip", ["netns", "exec", srv.name, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0",
      `--interface=ds${tag}`, "--bind-interfaces", "--user=root", "--no-ping", "--log-dhcp", `--log-facility=${path.join(dir, "dnsmasq.log")}`,
      `--pid-file=${path.join(dir, "dnsmasq.pid")}`, `--dhcp-leasefile=${path.join(dir, "dnsmasq.leases")}`,
      `--dhcp-range=${SUBNET}.50,${SUBNET}.150,255.255.255.0,2m`, `--dhcp-option=option:router,${SERVER}`,
      `--dhcp-option=option:dns-server,${SUBNET}.53`, "--dhcp-option=option:domain-name,tscni.test",
      `--dhcp-option=option:classless-static-route,10.99.0.0/16,${SERVER},0.0.0.0/0,${SERVER}`, "--dhcp-option=58,4"], { stdio: ["ignore", "pipe", "pipe"] }));
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
    assert.deepEqual(result.routes, [{ dst: "10.99.0.0/16", gw: SERVER }, { dst: "0.0.0.0/0", gw: SERVER }]);
    assert.deepEqual(result.dns, { nameservers: [`${SUBNET}.53`], domain: "tscni.test" });
    assert.equal((ctr.ipJson(["link", "show", "eth0"]) as Array<{ flags: string[] }>)[0]!.flags.includes("UP"), true, "the daemon set eth0 up");
    const clientIdHex = Buffer.from(`\0${ctr.name}/dhcp${tag}/eth0`).toString("hex").replace(/(..)(?!$)/g, "$1:");
    assert.match(dnsmasqLeases(), new RegExp(`${ip.replaceAll(".", "\\.")} pod-one ${clientIdHex}`), "dnsmasq saw the host name and the client id");
    assert.ok(heldBy(ctr));
    assert.equal(statSync(path.dirname(socketPath)).mode & 0o777, 0o700, "the socket's directory is 0700");
    assert.equal(statSync(socketPath).mode & 0o777, 0o600);
    assert.equal(statSync(leaseDir).mode & 0o777, 0o700);
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
    assert.deepEqual(cniError(noDaemon), { code: 11, msg: `cannot reach the dhcp daemon at ${socketPath}: the socket does not exist (is \`dhcp daemon\` running?)` });

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
    assert.deepEqual(ctrs.map(heldBy), ctrs.map((_, i) => i < 10));
    await seesRelease(leases.slice(10).map((l) => l.ip), "GC's RELEASE");
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
    assert.deepEqual(eth0!.addr_info.filter((a) => a.family === "inet"), [], "no IPv4 address on eth0");
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
    assert.deepEqual(cniError(none), { code: 11, msg: `cannot reach the dhcp daemon at ${missingSocket}: the socket does not exist (is \`dhcp daemon\` running?)` });
    assert.ok(Date.now() - started < 2000);
    assert.equal(cniError(await call("STATUS", undefined, ipamConf({ daemonSocketPath: missingSocket }))).code, 50);
    assert.ok(!heldBy(ctr));
  });

  test("bad requests get an error answer and the daemon carries on", async () => {
    const send = (data: string, end = true) => new Promise<string>((resolve) => {
      const s = net.createConnection(socketPath);
      let got = "";
      s.on("data", (b) => (got += b.toString()));
      s.on("close", () => resolve(got));
      s.on("error", () => resolve(got));
      s.write(data);
      if (end) s.end();
      else setTimeout(() => s.destroy(), 200);
    });
    assert.match(await send("garbage\n"), /"code":6.*not JSON/);
    assert.match(await send('{"protocol":"tscni-dhcp/1","method":"ADD","args":{"stdinData":"bm90IGpzb24="}}\n'), /"code":6/);
    assert.match(await send('{"protocol":"tscni-dhcp/1","method":"DEL","args":{"containerID":"x","ifName":"eth0","stdinData":""}}\n'), /"error"/);
    await send('{"protocol":"tscni-dhcp/1"', false); // cut off mid-request
    await send(`${"x".repeat(5 << 20)}\n`);
    assert.ok(daemon.running);
    assert.equal((await call("STATUS", undefined)).exitCode, 0);
  });

  test("bridge + dhcp through cnitool: the address configured, the server reachable; DEL releases from the daemon's namespace", async () => {
    const network = host.writeNetwork({ cniVersion: "1.0.0", name: `dhbr${tag}`, type: "bridge", bridge: `br${tag}`, ipam: { type: "dhcp", daemonSocketPath: socketPath } });
    const ctr = host.container(`tscni-dhcp-${tag}-br`);
    const result = await host.add(network, ctr);
    const ip = result.ips![0]!.address.split("/")[0]!;
    const r = await ctr.run("ping", ["-c", "1", "-W", "2", SERVER]);
    assert.equal(r.code, 0, `ping the DHCP server from the container: ${r.stdout}${r.stderr}`);
    await host.must("del", network, ctr);
    await seesRelease([ip], "the RELEASE (the bridge deleted eth0 before IPAM DEL, so the daemon sends it from its own namespace)");
    await daemonLogs(/unicast to 10\.237\.0\.1 from the daemon's namespace/);
  });

  test("Go's dhcp plugin and our daemon, our plugin and Go's daemon: they do not mix, and each says so", { skip: existsSync(path.join(GO_BIN, "dhcp")) ? false : "Go's dhcp is not in /usr/lib/cni" }, async () => {
    const ctr = container();
    const goPlugin = await runPlugin(GO_BIN, "dhcp", { command: "ADD", containerID: ctr.name, netns: ctr.path, ifName: "eth0" }, { ...ipamConf(), cniVersion: "1.0.0" });
    assert.notEqual(goPlugin.exitCode, 0);
    assert.match(goPlugin.stdout, /this is tscni's dhcp daemon: Go's dhcp plugin cannot use it/);
    const goSocket = path.join(dir, "go", "dhcp.sock");
    const goDaemon = new Proc(spawn("ip", ["netns", "exec", host.ns.name, path.join(GO_BIN, "dhcp"), "daemon", "-socketpath", goSocket], { stdio: ["ignore", "pipe", "pipe"] }));
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
    const p = new Proc(spawn("sh", ["-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" daemon -leasedir "$1"', dhcpBinary, path.join(dir, "leases-activated")],
      { stdio: ["ignore", "pipe", "pipe", fd] }));
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
