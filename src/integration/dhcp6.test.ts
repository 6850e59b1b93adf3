/**
 * DHCPv6 in the dhcp plugin and its daemon against a real server: Debian's dnsmasq in a namespace of its own,
 * serving DHCPv4 (10.248.0.0/24) and DHCPv6 (fd00:248::10 to ::100, with router advertisements for the /64) with
 * leases of 2 minutes, behind a bridge in a test-made "host" namespace where our daemon runs; containers are
 * namespaces whose eth0 is a veth on that bridge (made by the test, or by our bridge plugin in the chain test).
 * Shown: a dual-stack lease with the DNS server and search domain of options 23 and 24, and its RELEASE emptying
 * dnsmasq's lease file; IPv6 alone through cnitool and the bridge plugin (the address on eth0, the prefix from the
 * router advertisement, the server reachable); the daemon killed (SIGKILL) and started again finding the lease,
 * renewing it (RENEW) and rebinding it (REBIND) — T1 and T2 set in the past in its lease file, as if they had
 * passed while it was down: dnsmasq's shortest lease is 2 minutes — and releasing it on DEL; a renewal the server
 * refuses (the lease file made to name an address it never gave) removing the address from eth0; no server (a clear
 * error within -resendtimeout, nothing kept); a dual-stack ADD that half succeeds (dnsmasq told to ignore one
 * family of one client) rolled back, in both directions.
 * The daemon and its callers share the host namespace and one pinned mount namespace, as in dhcp.test.ts.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { leaseFileName } from "#plugins/ipam/dhcp/lease-file.js";
import { Cleanup, missing, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
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
if (skip) console.log(`# skipping dhcp6 integration tests: ${skip}`);

const SUBNET4 = "10.248.0";
const PREFIX6 = "fd00:248:";
const SERVER6 = `${PREFIX6}:1`;
/** The containers whose DHCPv4 (by client id) or DHCPv6 (by DUID-LL, from this MAC) dnsmasq ignores. */
const NO_V4_CONTAINER = "nov4";
const NO_V6_MAC = "02:00:00:00:48:66";

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
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  stop(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.running) process.kill(this.child.pid!, signal);
  }
}

/** What a failed plugin run printed: one CNI error. */
function cniError(r: PluginRun): { code: number; msg: string } {
  assert.notEqual(r.exitCode, 0, `expected a failure: ${r.stdout}`);
  assert.ok(r.json && typeof r.json.code === "number", `not a CNI error: ${r.stdout}${r.stderr}`);
  return r.json;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("dhcp plugin and daemon: DHCPv6 with dnsmasq", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  const network = `dhcp6${tag}`;
  let host: Host;
  let dir: string;
  let dnsmasq: Proc;
  let daemon: Proc;
  let socketPath: string;
  let leaseDir: string;
  let n = 0;

  const dnsmasqLog = () => readFileSync(path.join(dir, "dnsmasq.log"), "utf8");
  const dnsmasqLeases = () => (existsSync(path.join(dir, "dnsmasq.leases")) ? readFileSync(path.join(dir, "dnsmasq.leases"), "utf8") : "");
  /** dnsmasq's log lines of one DHCPv6 message type for one client DUID (`DHCPRENEW(ds…) <duid>`), and more. */
  const logged = (what: string, duid: string) =>
    dnsmasqLog()
      .split("\n")
      .filter((l) => l.includes(`${what}(ds${tag}) `) && l.includes(duid)).length;
  /** The lease file of a container's DHCPv6 (or DHCPv4) lease on this network. */
  const leaseFile = (ctr: string, family: "ipv4" | "ipv6" = "ipv6") => path.join(leaseDir, leaseFileName(`${ctr}/${network}/eth0`, family));
  const daemonLogs = (re: RegExp) => eventually(() => re.test(daemon.output), 3000, `the daemon to log ${re}`);

  const ipamConf = (ipam: Record<string, unknown> = {}) => ({
    cniVersion: "1.1.0",
    name: network,
    type: "macvlan",
    ipam: { type: "dhcp", daemonSocketPath: socketPath, families: ["ipv4", "ipv6"], ...ipam },
  });

  /** Starts our daemon in the host's namespaces and waits until it listens. */
  async function startDaemon(): Promise<Proc> {
    const flags = ["-socketpath", socketPath, "-leasedir", leaseDir, "-timeout", "1s", "-resendtimeout", "5s"];
    const p = new Proc(spawn(...host.ns.commandLine(dhcpBinary, ["daemon", ...flags]), { stdio: ["ignore", "pipe", "pipe"] }));
    cleanup.add(() => p.stop());
    await eventually(() => /listening on/.test(p.output) || !p.running, 10_000, "the daemon to listen");
    assert.ok(p.running, `the daemon started: ${p.output}`);
    return p;
  }

  /** A container namespace whose eth0 (left down, as macvlan leaves it) is a veth on the bridge, or on nothing. */
  function container(opts: { onBridge?: boolean; mac?: string } = {}): Netns {
    const i = n++;
    const ns = cleanup.netns(`tscni-dhcp6-${tag}-c${i}`);
    host.ns.exec("ip", [
      "link",
      "add",
      `v${tag}c${i}`,
      "type",
      "veth",
      "peer",
      "name",
      "eth0",
      ...(opts.mac ? ["address", opts.mac] : []),
      "netns",
      ns.name,
    ]);
    host.ns.exec("ip", ["link", "set", `v${tag}c${i}`, ...(opts.onBridge === false ? [] : ["master", `br${tag}`]), "up"]);
    return ns;
  }

  /** The DUID-LL dnsmasq logs for the container's eth0 (our default DUID). */
  const duidOf = (ctr: Netns): string => `00:03:00:01:${(ctr.ipJson(["link", "show", "eth0"]) as Array<{ address: string }>)[0]!.address}`;

  /** Runs our dhcp plugin in the host's namespaces (where the daemon is) as a runtime runs it. */
  async function call(
    command: "ADD" | "DEL" | "CHECK",
    ctr: Netns,
    conf: unknown = ipamConf(),
    opts: { containerID?: string; args?: string } = {},
  ): Promise<PluginRun> {
    const env = {
      PATH: process.env["PATH"],
      CNI_COMMAND: command,
      CNI_CONTAINERID: opts.containerID ?? ctr.name,
      CNI_NETNS: ctr.path,
      CNI_IFNAME: "eth0",
      CNI_ARGS: opts.args ?? "",
      CNI_PATH: OUR_BIN,
    };
    const r = await host.ns.run(dhcpBinary, [], { env, input: JSON.stringify(conf) });
    let json: any;
    try {
      json = r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
    } catch {
      /* not JSON */
    }
    return { exitCode: r.code, stdout: r.stdout, stderr: r.stderr, json };
  }

  async function add(ctr: Netns, conf: unknown = ipamConf(), args = ""): Promise<any> {
    const r = await call("ADD", ctr, conf, { args });
    assert.equal(r.exitCode, 0, `ADD in ${ctr.name}: ${r.stdout}${r.stderr}\n${daemon.output}`);
    return r.json;
  }

  /** The IPv6 address (without its prefix length) of a result. */
  const address6 = (result: any): string => String(result.ips.find((i: { address: string }) => i.address.includes(":")).address).split("/")[0]!;

  /** Kills the daemon, lets `edit` change the container's DHCPv6 lease file, and starts a daemon again. */
  async function restartWith(ctr: string, edit: (binding: Record<string, unknown>) => void): Promise<void> {
    daemon.stop("SIGKILL");
    await daemon.exited;
    const file = leaseFile(ctr);
    const record = JSON.parse(readFileSync(file, "utf8")) as { binding: Record<string, unknown> };
    edit(record.binding);
    writeFileSync(file, JSON.stringify(record));
    daemon = await startDaemon();
  }

  before(async () => {
    dir = cleanup.dir("tscni-dhcp6-");
    socketPath = path.join(dir, "run", "dhcp.sock");
    leaseDir = path.join(dir, "leases");
    host = new Host(cleanup, `tscni-dhcp6-${tag}-host`, OUR_BIN);
    if (!host.ns.mountNs) {
      // (the resident pass pins one for every host)
      const pinned = pinMountNamespace(host.ns.name, cleanup.dir("tscni-dhcp6-mnt-"));
      cleanup.add(() => pinned.unpin());
      host.ns.mountNs = pinned.mountNs;
    }
    const srv = cleanup.netns(`tscni-dhcp6-${tag}-srv`);
    host.ns.exec("ip", ["link", "add", `br${tag}`, "type", "bridge"]);
    host.ns.exec("ip", ["link", "set", `br${tag}`, "up"]);
    srv.exec("ip", ["link", "add", `ds${tag}`, "type", "veth", "peer", "name", `ps${tag}`, "netns", host.ns.name]);
    srv.exec("ip", ["addr", "add", `${SUBNET4}.1/24`, "dev", `ds${tag}`]);
    srv.exec("ip", ["addr", "add", `${SERVER6}/64`, "dev", `ds${tag}`, "nodad"]);
    srv.exec("ip", ["link", "set", `ds${tag}`, "up"]);
    host.ns.exec("ip", ["link", "set", `ps${tag}`, "master", `br${tag}`, "up"]);

    const noV4ClientId = [...Buffer.from(`\0${NO_V4_CONTAINER}/${network}/eth0`)].map((b) => b.toString(16).padStart(2, "0")).join(":");
    // DHCP only (--port=0: no DNS), bound to its veth, router advertisements for the /64, every file in the test's directory.
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
          `--dhcp-range=${SUBNET4}.50,${SUBNET4}.150,255.255.255.0,2m`,
          `--dhcp-range=${PREFIX6}:10,${PREFIX6}:100,64,2m`,
          "--enable-ra",
          `--dhcp-option=option6:dns-server,[${PREFIX6}:53]`,
          "--dhcp-option=option6:domain-search,tscni6.test",
          `--dhcp-host=id:${noV4ClientId},ignore`,
          `--dhcp-host=id:00:03:00:01:${NO_V6_MAC},ignore`,
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      ),
    );
    cleanup.add(() => dnsmasq.stop("SIGTERM"));
    await eventually(() => existsSync(path.join(dir, "dnsmasq.log")) && /DHCPv6, IP range/.test(dnsmasqLog()), 10_000, "dnsmasq to start");
    daemon = await startDaemon();
  });
  after(() => cleanup.run());

  test("dual-stack ADD: both addresses, DNS from options 23 and 24, the pod's name; CHECK; DEL releases both (dnsmasq's lease file empties)", async () => {
    const ctr = container();
    const result = await add(ctr, ipamConf(), "IgnoreUnknown=1;K8S_POD_NAME=pod-six");
    const ip6 = address6(result);
    assert.match(result.ips[0].address, new RegExp(`^${escapeRegExp(SUBNET4)}\\.\\d+/24$`));
    assert.equal(result.ips[0].gateway, `${SUBNET4}.1`, "dnsmasq's own address as the router (its default)");
    assert.match(ip6, new RegExp(`^${escapeRegExp(PREFIX6)}:[0-9a-f]{2,3}$`));
    const host6 = parseInt(ip6.split(":").at(-1)!, 16);
    assert.ok(host6 >= 0x10 && host6 <= 0x100, `${ip6} is in the range`);
    assert.deepEqual(result.ips[1], { address: `${ip6}/128` }, "DHCPv6 gives no prefix length: /128, the on-link prefix comes from the RA");
    assert.deepEqual(result.dns, { nameservers: [`${PREFIX6}:53`], search: ["tscni6.test"] });
    const duid = duidOf(ctr);
    assert.match(
      dnsmasqLeases(),
      new RegExp(`^\\d+ \\d+ ${escapeRegExp(ip6)} pod-six ${duid}$`, "m"),
      "dnsmasq's lease: the address, the name (option 39), our DUID-LL",
    );
    assert.ok(existsSync(leaseFile(ctr.name)) && existsSync(leaseFile(ctr.name, "ipv4")), "a lease file per family");
    assert.equal((await call("CHECK", ctr)).exitCode, 0);
    assert.equal((await call("DEL", ctr)).exitCode, 0);
    await eventually(() => logged("DHCPRELEASE", duid) === 1, 3000, "dnsmasq to log the DHCPv6 RELEASE");
    await eventually(
      () => !dnsmasqLeases().includes(` ${ip6} `) && !dnsmasqLeases().includes(` ${result.ips[0].address.split("/")[0]} `),
      3000,
      "dnsmasq to forget both leases",
    );
    await daemonLogs(new RegExp(`released ${escapeRegExp(ip6)} \\(DEL\\): confirmed by [0-9a-f:]+ \\(Success`));
    assert.ok(!existsSync(leaseFile(ctr.name)) && !existsSync(leaseFile(ctr.name, "ipv4")));
  });

  test("IPv6 alone through cnitool with the bridge plugin: the address on eth0, the /64 from the router advertisement, the server reachable", async () => {
    const net = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `dh6br${tag}`,
      type: "bridge",
      bridge: `br${tag}`,
      ipam: { type: "dhcp", daemonSocketPath: socketPath, families: ["ipv6"] },
    });
    const ctr = host.container(`tscni-dhcp6-${tag}-br`);
    const result = await host.add(net, ctr);
    assert.equal(result.ips!.length, 1);
    const ip6 = result.ips![0]!.address.split("/")[0]!;
    const addrs = ctr.ipJson(["-6", "addr", "show", "eth0"]) as Array<{ addr_info: Array<{ local: string; prefixlen: number }> }>;
    assert.ok(
      addrs[0]!.addr_info.some((a) => a.local === ip6 && a.prefixlen === 128),
      `${ip6}/128 on eth0`,
    );
    await eventually(
      () => (ctr.ipJson(["-6", "route", "show", `${PREFIX6}:/64`]) as unknown[]).length > 0,
      5000,
      "the on-link route of the router advertisement",
    );
    const ping = await ctr.run("ping", ["-6", "-c", "1", "-W", "2", SERVER6]);
    assert.equal(ping.code, 0, `ping the DHCPv6 server from the container: ${ping.stdout}${ping.stderr}`);
    await host.must("del", net, ctr);
    // The bridge plugin deletes eth0 before it calls IPAM DEL: no RELEASE can be sent, the lease is dropped.
    await daemonLogs(new RegExp(`dropped ${escapeRegExp(ip6)} without a RELEASE \\(DEL\\)`));
  });

  test("SIGKILL and restart: the lease found again, renewed past T1 (RENEW) and rebound past T2 (REBIND) with its stored DUID; DEL releases it", async () => {
    const ctr = container();
    const ip6 = address6(await add(ctr, ipamConf({ families: ["ipv6"] })));
    const duid = duidOf(ctr);
    assert.equal(logged("DHCPRENEW", duid), 0);

    await restartWith(ctr.name, (b) => void (b["renewAt"] = 0));
    assert.match(daemon.output, new RegExp(`resumed the lease of ${escapeRegExp(ip6)} on eth0`));
    await eventually(() => logged("DHCPRENEW", duid) === 1, 5000, "dnsmasq to get the restarted daemon's RENEW");
    await daemonLogs(new RegExp(`renewed ${escapeRegExp(ip6)} with `));
    const renewed = JSON.parse(readFileSync(leaseFile(ctr.name), "utf8")) as { binding: { renewAt: number } };
    assert.ok(renewed.binding.renewAt > Date.now() + 30_000, "the lease file has the new T1");

    await restartWith(ctr.name, (b) => Object.assign(b, { renewAt: 0, rebindAt: 0 }));
    await eventually(() => logged("DHCPREBIND", duid) === 1, 5000, "dnsmasq to get the REBIND");
    await daemonLogs(new RegExp(`rebound ${escapeRegExp(ip6)} with `));

    const again = await add(ctr, ipamConf({ families: ["ipv6"] }));
    assert.equal(address6(again), ip6, "ADD after the restart gives the held lease");
    assert.equal(logged("DHCPSOLICIT", duid), 1, "no new acquisition");
    assert.equal((await call("DEL", ctr, ipamConf({ families: ["ipv6"] }))).exitCode, 0);
    await eventually(() => logged("DHCPRELEASE", duid) === 1 && !dnsmasqLeases().includes(` ${ip6} `), 3000, "dnsmasq to release the lease");
    assert.ok(!existsSync(leaseFile(ctr.name)));
  });

  test("a server that refuses the address it is asked to renew: the address is removed from eth0, the link left up, the lease forgotten", async () => {
    const ctr = container();
    await add(ctr, ipamConf({ families: ["ipv6"] }));
    // A lease file naming an address the server never gave (outside its range), as the interface carries it.
    const foreign = `${PREFIX6}:ff0`;
    ctr.exec("ip", ["addr", "add", `${foreign}/128`, "dev", "eth0", "nodad"]);
    await restartWith(ctr.name, (b) => Object.assign(b, { address: foreign, renewAt: 0 }));
    await daemonLogs(new RegExp(`the server refused ${escapeRegExp(foreign)} \\(.*\\); removing it from eth0`));
    await eventually(() => !existsSync(leaseFile(ctr.name)), 3000, "the lease to be forgotten");
    const addrs = ctr.ipJson(["-6", "addr", "show", "eth0"]) as Array<{ flags: string[]; addr_info: Array<{ local: string }> }>;
    assert.ok(!addrs[0]!.addr_info.some((a) => a.local === foreign), `${foreign} is removed`);
    assert.ok(addrs[0]!.flags.includes("UP"), "eth0 stays up");
    assert.equal((await call("DEL", ctr, ipamConf({ families: ["ipv6"] }))).exitCode, 0);
  });

  test("no server: code 11 naming what was missing within -resendtimeout (5 s); nothing kept, no address", async () => {
    const ctr = container({ onBridge: false });
    const started = Date.now();
    const r = await call("ADD", ctr, ipamConf({ families: ["ipv6"] }));
    const took = Date.now() - started;
    const e = cniError(r);
    assert.equal(e.code, 11);
    assert.match(e.msg, new RegExp(`^no DHCPv6 lease for eth0 in ${escapeRegExp(ctr.path)}: no ADVERTISE within 5s \\(\\d SOLICITs?\\)$`));
    assert.ok(took < 7000, `failed after ${took} ms`);
    assert.deepEqual(
      readdirSync(leaseDir).filter((f) => f.startsWith("lease")),
      [],
    );
    const [eth0] = ctr.ipJson(["-6", "addr", "show", "eth0", "scope", "global"]) as Array<{ addr_info: unknown[] }>;
    assert.deepEqual(eth0?.addr_info ?? [], [], "no global IPv6 address on eth0");
    assert.equal((await call("DEL", ctr)).exitCode, 0);
  });

  test("dual-stack ADD that half succeeds is rolled back: the family that got a lease releases it, nothing is kept (both directions)", async () => {
    const noV4 = container();
    const noV6 = container({ mac: NO_V6_MAC });
    const [v4Refused, v6Refused] = await Promise.all([call("ADD", noV4, ipamConf(), { containerID: NO_V4_CONTAINER }), call("ADD", noV6)]);

    const e4 = cniError(v4Refused);
    assert.equal(e4.code, 11);
    const released6 = /\(the DHCPv6 lease of ([0-9a-f:]+) acquired meanwhile was released\)$/.exec(e4.msg);
    assert.ok(e4.msg.startsWith(`no DHCP lease for eth0 in ${noV4.path}: no DHCPOFFER within 5s`) && released6, `${e4.msg}\n${daemon.output}`);
    await eventually(
      () => logged("DHCPRELEASE", duidOf(noV4)) === 1 && !dnsmasqLeases().includes(` ${released6[1]} `),
      3000,
      "dnsmasq to release the DHCPv6 lease",
    );

    const e6 = cniError(v6Refused);
    const released4 = /\(the DHCPv4 lease of ([0-9.]+) acquired meanwhile was released\)$/.exec(e6.msg);
    assert.ok(e6.msg.startsWith(`no DHCPv6 lease for eth0 in ${noV6.path}: no ADVERTISE within 5s`) && released4, `${e6.msg}\n${daemon.output}`);
    assert.match(dnsmasqLog(), new RegExp(`DHCPSOLICIT\\(ds${tag}\\) 00:03:00:01:${NO_V6_MAC} ignored`));
    await eventually(
      () =>
        new RegExp(`DHCPRELEASE\\(ds${tag}\\) ${escapeRegExp(released4[1]!)} `).test(dnsmasqLog()) && !dnsmasqLeases().includes(` ${released4[1]} `),
      3000,
      "dnsmasq to release the DHCPv4 lease",
    );

    assert.deepEqual(
      readdirSync(leaseDir).filter((f) => f.startsWith("lease")),
      [],
      "no lease file of either",
    );
    assert.equal((await call("DEL", noV4, ipamConf(), { containerID: NO_V4_CONTAINER })).exitCode, 0);
    assert.equal((await call("DEL", noV6)).exitCode, 0);
  });
});
