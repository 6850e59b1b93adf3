/**
 * Rules back after a firewall reload, in test-made host namespaces: a dual-stack chain of bridge (ipMasq) +
 * host-local + portmap (a published port) + firewall (+ dnsname when dnsmasq is installed), with the iptables and
 * the nftables backends. After a flush (`iptables -F/-X` of filter and nat in both families, or `nft flush
 * ruleset`) the published port stops answering; `cnitool reload --cache-dir` makes it answer again and leaves
 * exactly the ruleset from before the flush (counters aside), a second reload changes nothing, an attachment with
 * a broken cached config is reported (exit status 1) while the other is restored, and DEL then leaves nothing of
 * the attachment. A resident server (`cnitool daemon`) repairs a flush by itself: within its `--repair-interval`,
 * and on firewalld's `Reloaded` signal on a private D-Bus (`--repair-interval 0`).
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Cleanup, CNITOOL, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { fetchFrom, startHelloServer } from "#testing/published-port.js";
import { type AttachEnv, containerIdOf, Host, type Result } from "#testing/rig.js";

const DNSMASQ = "/usr/sbin/dnsmasq";
const HAVE_DNSMASQ = existsSync(DNSMASQ);
const skip = skipReason(
  false,
  existsSync(path.join(OUR_BIN, "portmap")) ? undefined : "dist/bin is not built",
  spawnSync("dbus-daemon", ["--version"]).status === 0 ? undefined : "dbus-daemon is not installed",
  spawnSync("busctl", ["--version"]).status === 0 ? undefined : "busctl (systemd) is not installed",
);
if (skip) console.log(`# skipping reload integration tests: ${skip}`);
if (!skip && !HAVE_DNSMASQ) console.log("# reload integration tests run without dnsname: dnsmasq (dnsmasq-base) is not installed");

type Backend = "iptables" | "nftables";

/** A ruleset with its counters zeroed (iptables-save `[p:b]`, nft `counter packets p bytes b`). */
const normalise = (text: string) =>
  text
    .split("\n")
    .filter((l) => !l.startsWith("#"))
    .map((l) => l.replace(/\[\d+:\d+\]/g, "[0:0]").replace(/counter packets \d+ bytes \d+/g, "counter packets 0 bytes 0"))
    .join("\n");

/** Everything of the host's firewall: both families' iptables (every table) and the nftables ruleset. */
async function ruleset(host: Host): Promise<string> {
  let text = "";
  for (const [cmd, args] of [
    ["iptables-save", []],
    ["ip6tables-save", []],
    ["nft", ["list", "ruleset"]],
  ] as const) {
    // (nft warns on stderr about the tables iptables-nft manages.)
    const r = await host.ns.run(cmd, [...args]);
    assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
    text += r.stdout;
  }
  return normalise(text);
}

/** What takes the rules away: the iptables flush of the issue (both families), or nftables' whole ruleset. */
function flush(host: Host, backend: Backend): void {
  if (backend === "nftables") return void host.ns.exec("nft", ["flush", "ruleset"]);
  for (const cmd of ["iptables", "ip6tables"]) {
    for (const args of [["-F"], ["-X"], ["-t", "nat", "-F"], ["-t", "nat", "-X"]]) host.ns.exec(cmd, args);
  }
}

/** The pids of dnsmasq processes whose config is under `dir`. */
function dnsmasqsUnder(dir: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .flatMap((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        const conf = argv.find((a) => a.startsWith("--conf-file="));
        return path.basename(argv[0] ?? "") === "dnsmasq" && conf?.slice("--conf-file=".length).startsWith(dir) ? [Number(pid)] : [];
      } catch {
        return [];
      }
    });
}

describe("cnitool reload and the server's self-repair", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  /** dnsname's files (and XDG_RUNTIME_DIR of every command here, so reload finds them as ADD put them). */
  let xdg: string;

  before(() => {
    xdg = cleanup.dir("tscni-rl-xdg-");
    cleanup.add(() => {
      for (const pid of dnsmasqsUnder(xdg)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    });
  });
  after(() => cleanup.run());

  interface Setup {
    backend: Backend;
    /** ptp instead of bridge (IPv4 only, no dnsname). */
    ptp?: boolean;
    /** Plugins from here (default ours); Go's 1.1.1 take no nftables keys and no dnsname. */
    cniPath?: string;
    /** Containers attached, each publishing 8080 + i. */
    containers?: number;
  }

  /**
   * A host namespace with the chain on `backend` and containers attached, each with a published port answering:
   * bridge (ipMasq, nftables also macspoofchk) or ptp, host-local, portmap, firewall, and dnsname when it can.
   */
  async function attached(o: Setup) {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-rlh-${tag}-${n}`, o.cniPath ?? OUR_BIN);
    const net = `rl${tag}${n}`;
    const nft = o.backend === "nftables";
    const ours = (o.cniPath ?? OUR_BIN) === OUR_BIN;
    const dnsname = HAVE_DNSMASQ && ours && !o.ptp;
    const main = o.ptp
      ? { type: "ptp", ipMasq: true, ipam: host.hostLocal([`10.232.${n}.0/24`]) }
      : {
          type: "bridge",
          bridge: net,
          isGateway: true,
          hairpinMode: true,
          ipMasq: true,
          ...(nft ? { ipMasqBackend: "nftables", macspoofchk: true } : {}),
          ipam: host.hostLocal([`10.232.${n}.0/24`, `fd00:232:${n}::/64`]),
        };
    host.writeNetwork({
      cniVersion: "1.0.0",
      name: net,
      plugins: [
        main,
        { type: "portmap", capabilities: { portMappings: true }, dataDir: cleanup.dir("tscni-rl-pm-"), ...(nft ? { backend: o.backend } : {}) },
        { type: "firewall", backend: o.backend, dataDir: cleanup.dir("tscni-rl-fw-") },
        ...(dnsname ? [{ type: "dnsname", domainName: "dns.podman", capabilities: { aliases: true } }] : []),
      ],
    });
    const gw = `10.232.${n}.1`;
    const attachments: Array<{ ctr: Netns; env: AttachEnv; result: Result; id: string; label: string }> = [];
    for (let i = 0; i < (o.containers ?? 1); i++) {
      const ctr = host.container(`tscni-rlc-${tag}-${n}-${i}`);
      const env = {
        CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 8080 + i, containerPort: 80, protocol: "tcp" }] }),
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAME=web${n}-${i}`,
        XDG_RUNTIME_DIR: xdg,
      } as AttachEnv;
      const result: Result = await host.add(net, ctr, env);
      await startHelloServer(cleanup, ctr);
      assert.equal(await fetchFrom(host.ns, gw, 8080 + i), "hello", "the published port answers after ADD");
      attachments.push({ ctr, env, result, id: containerIdOf(ctr), label: `${net}/${containerIdOf(ctr)}/eth0` });
    }
    /** DEL of every attachment, then what is left of them in the ruleset (nothing). */
    const delAll = async () => {
      for (const a of attachments) await host.must("del", net, a.ctr, a.env);
      const after = await ruleset(host);
      for (const a of attachments) {
        for (const left of [a.id, ...a.result.ips!.map((i) => i.address.split("/")[0]!), `-i ${net} `, "CNI-DN-"]) {
          assert.ok(!after.includes(left), `DEL left ${left}:\n${after}`);
        }
      }
      assert.doesNotMatch(after, /^:CNI-[0-9a-f]{24} /m, "no masquerading chain");
    };
    return { host, net, gw, attachments, a: attachments[0]!, dnsname, delAll };
  }

  /** `cnitool reload --cache-dir` in the host namespace. */
  const reload = (host: Host) => host.ns.run(CNITOOL, ["reload", "--cache-dir", host.cacheDir], { env: { ...process.env, XDG_RUNTIME_DIR: xdg } });

  /** A cache entry, with valid names, whose config is not JSON. */
  function plantBroken(host: Host): string {
    const name = `broken${tag}`;
    const file = path.join(host.cacheDir, "results", `${name}-ctrbroken-eth0`);
    writeFileSync(
      file,
      JSON.stringify({
        kind: "cniCacheV1",
        containerId: "ctrbroken",
        config: Buffer.from("{broken").toString("base64"),
        ifName: "eth0",
        networkName: name,
        result: { cniVersion: "1.0.0", ips: [{ address: "10.232.250.2/24" }] },
      }),
    );
    return file;
  }

  /** Flush, reload: the ports answer again and the ruleset is `before`; a second reload finds everything complete. */
  async function flushAndReload(s: Awaited<ReturnType<typeof attached>>, backend: Backend, before: string, restored: (label: string) => RegExp) {
    flush(s.host, backend);
    assert.match(await fetchFrom(s.host.ns, s.gw, 8080, 1), /^failed/, "the flush broke the published port");
    const first = await reload(s.host);
    for (const a of s.attachments) assert.match(first.stdout, restored(a.label), first.stdout + first.stderr);
    for (const [i, a] of s.attachments.entries())
      assert.equal(await fetchFrom(s.host.ns, s.gw, 8080 + i), "hello", `${a.label}'s port answers again`);
    assert.equal(await ruleset(s.host), before, "the ruleset from before the flush");
    const second = await reload(s.host);
    for (const a of s.attachments) assert.match(second.stdout, new RegExp(`^complete {2}${a.label}$`, "m"));
    assert.equal(await ruleset(s.host), before, "a second reload changes nothing");
    return first;
  }

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: a flush -> reload puts back exactly the rules (two containers); again changes nothing; a broken entry is reported; DEL leaves nothing`, async () => {
      const s = await attached({ backend, containers: 2 });
      const broken = plantBroken(s.host);
      const before = await ruleset(s.host);
      assert.ok(before.includes(s.a.result.ips![0]!.address.split("/")[0]!), `the attachment's rules are there:\n${before}`);

      const bridge = `bridge: ${backend === "nftables" ? "macspoofchk, " : ""}ipMasq \\(${backend}\\)`;
      const dns = s.dnsname ? "; dnsname: DNS to " + s.net : "";
      // The second container finds the shared chains and dnsname's rules put back by the first.
      const first = await flushAndReload(
        s,
        backend,
        before,
        (label) => new RegExp(`^restored {2}${label} {2}${bridge}; portmap: ${backend} IPv4, ${backend} IPv6; firewall: ${backend}(?:${dns})?$`, "m"),
      );
      assert.equal(first.code, 1, "the broken entry fails the reload");
      assert.match(first.stderr, new RegExp(`^failed {4}broken${tag}/ctrbroken/eth0 {2}its cached config cannot be read: .+$`, "m"));
      assert.match(first.stderr, /1 of 3 attachments could not be restored/);
      assert.equal(await fetchFrom(s.a.ctr, s.gw, 8080), "hello", "hairpin too");

      rmSync(broken);
      const clean = await reload(s.host);
      assert.equal(clean.code, 0, clean.stderr);
      await s.delAll();
    });
  }

  test("an attachment deleted while the reload restores it (its DEL ran, libcni had not yet removed its cache entry): what was put back is removed again", async () => {
    const s = await attached({ backend: "iptables" });
    const cacheFile = path.join(s.host.cacheDir, "results", `${s.net}-${s.a.id}-eth0`);
    const entry = readFileSync(cacheFile);
    const hostVeth = s.a.result.interfaces![1]!.name;
    await s.host.must("del", s.net, s.a.ctr, s.a.env);
    const afterDel = await ruleset(s.host);
    // The moment of the race: every plugin's DEL has run, the cache entry is still there (libcni removes it last),
    // and the host veth not yet gone (the bridge plugin deletes it last of the chain).
    writeFileSync(cacheFile, entry);
    s.host.ns.exec("ip", ["link", "add", hostVeth, "type", "veth", "peer", "name", `rlp${tag}`]);
    cleanup.add(() => void spawnSync("ip", ["-n", s.host.ns.name, "link", "del", hostVeth]));
    const reloading = reload(s.host);
    const deadline = Date.now() + 20_000;
    while ((await ruleset(s.host)) === afterDel) {
      assert.ok(Date.now() < deadline, "the reload put nothing back");
      await sleep(20);
    }
    rmSync(cacheFile); // libcni's last step of the DEL
    const r = await reloading;
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`^skipped {3}${s.a.label} {2}it was deleted during the reload: what was put back was removed again$`, "m"));
    assert.equal(await ruleset(s.host), afterDel, "nothing of the attachment is left");
  });

  test("ptp: its masquerading comes back with portmap's and the firewall's rules", async () => {
    const s = await attached({ backend: "iptables", ptp: true });
    const before = await ruleset(s.host);
    await flushAndReload(
      s,
      "iptables",
      before,
      (label) => new RegExp(`^restored {2}${label} {2}ptp: ipMasq \\(iptables\\); portmap: iptables IPv4; firewall: iptables$`, "m"),
    );
    await s.delAll();
  });

  test("rules Go's plugins made (Debian 1.1.1, through our libcni's cache) come back exactly as they were", { skip: skipReason(true) }, async () => {
    const s = await attached({ backend: "iptables", cniPath: GO_BIN });
    const before = await ruleset(s.host);
    await flushAndReload(
      s,
      "iptables",
      before,
      (label) =>
        new RegExp(`^restored {2}${label} {2}bridge: ipMasq \\(iptables\\); portmap: iptables IPv4, iptables IPv6; firewall: iptables$`, "m"),
    );
    await s.delAll();
  });

  /** Starts `cnitool daemon` in the host namespace with `args`; its log so far; stopped at cleanup. */
  async function startDaemon(host: Host, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; log: () => string }> {
    const dir = cleanup.dir("tscni-rl-sock-");
    const child = spawn(
      "nsenter",
      [
        `--net=${host.ns.path}`,
        "--",
        CNITOOL,
        "--cache-dir",
        host.cacheDir,
        "daemon",
        "--socket",
        path.join(dir, "run", "plugins.sock"),
        "--warm-up",
        "0",
        ...args,
      ],
      { stdio: ["ignore", "ignore", "pipe"], env },
    );
    cleanup.add(() => void child.kill("SIGKILL"));
    let log = "";
    child.stderr!.on("data", (b: Buffer) => (log += b));
    for (let i = 0; i < 100 && !log.includes("serving plugin calls"); i++) await sleep(50);
    assert.match(log, /serving plugin calls/, log);
    return { child, log: () => log };
  }

  /** Waits until `done` holds, trying every 200 ms for `ms`; whether it did. */
  async function eventually(ms: number, done: () => boolean | Promise<boolean>, between?: () => void): Promise<boolean> {
    for (const end = Date.now() + ms; Date.now() < end; await sleep(200)) {
      between?.();
      if (await done()) return true;
    }
    return false;
  }

  test("a running server repairs a flush by itself within its --repair-interval", async () => {
    const s = await attached({ backend: "iptables" });
    const before = await ruleset(s.host);
    const daemon = await startDaemon(s.host, ["--repair-interval", "1"], { ...process.env, XDG_RUNTIME_DIR: xdg });
    flush(s.host, "iptables");
    assert.ok(await eventually(5000, async () => (await ruleset(s.host)) === before), `not repaired within 5 s:\n${daemon.log()}`);
    assert.equal(await fetchFrom(s.host.ns, s.gw, 8080), "hello");
    assert.match(daemon.log(), new RegExp(`self-repair \\(firewall state lost: 1 attachment\\(s\\), first ${s.a.label} `));
    // (The pass reports once it has looked again whether the attachment was deleted meanwhile, 1 s later.)
    const restored = new RegExp(`restored {2}${s.a.label} `);
    assert.ok(await eventually(5000, () => restored.test(daemon.log())), `no report of the repair:\n${daemon.log()}`);
    await sleep(1500);
    assert.equal(daemon.log().match(/self-repair \(/g)?.length, 1, "nothing more to do once repaired");
    await s.delAll();
  });

  test("a running server repairs on firewalld's Reloaded signal (a private bus; the periodic look off)", async () => {
    const s = await attached({ backend: "nftables" });
    const before = await ruleset(s.host);
    const dir = cleanup.dir("tscni-rl-bus-");
    const socket = path.join(dir, "system_bus_socket");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, "bus.conf"),
      [
        '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">',
        "<busconfig><type>system</type>",
        `<listen>unix:path=${socket}</listen>`,
        "<auth>EXTERNAL</auth>",
        '<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/><allow send_type="signal"/>',
        '<allow send_requested_reply="true" send_type="method_return"/><allow send_requested_reply="true" send_type="error"/>',
        '<allow receive_type="method_call"/><allow receive_type="method_return"/><allow receive_type="error"/><allow receive_type="signal"/></policy>',
        "</busconfig>",
      ].join("\n"),
    );
    const bus = spawn("dbus-daemon", [`--config-file=${path.join(dir, "bus.conf")}`, "--nofork"], { stdio: "ignore" });
    cleanup.add(() => void bus.kill("SIGKILL"));
    assert.ok(await eventually(5000, () => existsSync(socket)), "the private bus listens");
    const address = `unix:path=${socket}`;
    const daemon = await startDaemon(s.host, ["--repair-interval", "0"], { ...process.env, XDG_RUNTIME_DIR: xdg, DBUS_SYSTEM_BUS_ADDRESS: address });

    flush(s.host, "nftables");
    await sleep(1500);
    assert.notEqual(await ruleset(s.host), before, "no periodic look with --repair-interval 0");
    // Sent until the server has subscribed (each one only asks for a reload, which changes nothing once done).
    const emit = () =>
      void spawnSync("busctl", [`--address=${address}`, "emit", "/org/fedoraproject/FirewallD1", "org.fedoraproject.FirewallD1", "Reloaded"]);
    assert.ok(await eventually(10_000, async () => (await ruleset(s.host)) === before, emit), `not repaired on the signal:\n${daemon.log()}`);
    assert.match(daemon.log(), /self-repair \(firewalld reloaded\)/);
    assert.equal(await fetchFrom(s.host.ns, s.gw, 8080), "hello");

    const watching = () => spawnSync("pgrep", ["-f", `busctl --address=${address}`], { encoding: "utf8" }).stdout.trim();
    assert.notEqual(watching(), "", "busctl monitor watches the bus");
    daemon.child.kill("SIGTERM");
    assert.ok(await eventually(5000, () => watching() === ""), "the watch ends with the server");
    await s.delAll();
  });
});
