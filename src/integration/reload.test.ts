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
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CNITOOL, Cleanup, OUR_BIN, runTag, skipReason } from "../testing/harness.js";
import { containerIdOf, Host, type AttachEnv, type Result } from "../testing/rig.js";
import { fetchFrom, startHelloServer } from "../testing/published-port.js";

const DNSMASQ = "/usr/sbin/dnsmasq";
const HAVE_DNSMASQ = existsSync(DNSMASQ);
const skip = skipReason(false,
  existsSync(path.join(OUR_BIN, "portmap")) ? undefined : "dist/bin is not built",
  spawnSync("dbus-daemon", ["--version"]).status === 0 ? undefined : "dbus-daemon is not installed",
  spawnSync("busctl", ["--version"]).status === 0 ? undefined : "busctl (systemd) is not installed");
if (skip) console.log(`# skipping reload integration tests: ${skip}`);
if (!skip && !HAVE_DNSMASQ) console.log("# reload integration tests run without dnsname: dnsmasq (dnsmasq-base) is not installed");

type Backend = "iptables" | "nftables";

/** A ruleset with its counters zeroed (iptables-save `[p:b]`, nft `counter packets p bytes b`). */
const normalise = (text: string) => text.split("\n").filter((l) => !l.startsWith("#"))
  .map((l) => l.replace(/\[\d+:\d+\]/g, "[0:0]").replace(/counter packets \d+ bytes \d+/g, "counter packets 0 bytes 0")).join("\n");

/** Everything of the host's firewall: both families' iptables (every table) and the nftables ruleset. */
async function ruleset(host: Host): Promise<string> {
  let text = "";
  for (const [cmd, args] of [["iptables-save", []], ["ip6tables-save", []], ["nft", ["list", "ruleset"]]] as const) {
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
  return readdirSync("/proc").filter((p) => /^\d+$/.test(p)).flatMap((pid) => {
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
        } catch { /* gone */ }
      }
    });
  });
  after(() => cleanup.run());

  /** A host namespace with the chain on `backend`, one container attached with a published port, answering. */
  async function attached(backend: Backend) {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-rlh-${tag}-${n}`, OUR_BIN);
    const net = `rl${tag}${n}`;
    const nft = backend === "nftables";
    host.writeNetwork({
      cniVersion: "1.0.0", name: net,
      plugins: [
        { type: "bridge", bridge: net, isGateway: true, hairpinMode: true, ipMasq: true, ...(nft ? { ipMasqBackend: "nftables" } : {}),
          ipam: host.hostLocal([`10.232.${n}.0/24`, `fd00:232:${n}::/64`]) },
        { type: "portmap", capabilities: { portMappings: true }, dataDir: cleanup.dir("tscni-rl-pm-"), ...(nft ? { backend } : {}) },
        { type: "firewall", backend, dataDir: cleanup.dir("tscni-rl-fw-") },
        ...(HAVE_DNSMASQ ? [{ type: "dnsname", domainName: "dns.podman", capabilities: { aliases: true } }] : []),
      ],
    });
    const ctr = host.container(`tscni-rlc-${tag}-${n}`);
    const env = {
      CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] }),
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAME=web${n}`, XDG_RUNTIME_DIR: xdg,
    } as AttachEnv;
    const result: Result = await host.add(net, ctr, env);
    await startHelloServer(cleanup, ctr);
    const gw = `10.232.${n}.1`;
    assert.equal(await fetchFrom(host.ns, gw, 8080), "hello", "the published port answers after ADD");
    return { host, net, ctr, env, result, gw, id: containerIdOf(ctr), attachment: `${net}/${containerIdOf(ctr)}/eth0` };
  }

  /** `cnitool reload --cache-dir` in the host namespace. */
  const reload = (host: Host) => host.ns.run(CNITOOL, ["reload", "--cache-dir", host.cacheDir], { env: { ...process.env, XDG_RUNTIME_DIR: xdg } });

  /** A cache entry, with valid names, whose config is not JSON. */
  function plantBroken(host: Host): string {
    const name = `broken${tag}`;
    const file = path.join(host.cacheDir, "results", `${name}-ctrbroken-eth0`);
    writeFileSync(file, JSON.stringify({
      kind: "cniCacheV1", containerId: "ctrbroken", config: Buffer.from("{broken").toString("base64"), ifName: "eth0", networkName: name,
      result: { cniVersion: "1.0.0", ips: [{ address: "10.232.250.2/24" }] },
    }));
    return file;
  }

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: a flush -> reload puts back exactly the rules; again changes nothing; a broken entry is reported; DEL leaves nothing`, async () => {
      const a = await attached(backend);
      const broken = plantBroken(a.host);
      const before = await ruleset(a.host);
      assert.ok(before.includes(a.result.ips![0]!.address.split("/")[0]!), `the attachment's rules are there:\n${before}`);

      flush(a.host, backend);
      assert.match(await fetchFrom(a.host.ns, a.gw, 8080, 1), /^failed/, "the flush broke the published port");

      const first = await reload(a.host);
      assert.equal(first.code, 1, `a broken entry fails the reload: ${first.stdout}${first.stderr}`);
      assert.match(first.stdout, new RegExp(`^restored {2}${a.attachment} {2}bridge: ipMasq \\(${backend}\\); portmap: ${backend} IPv4, ${backend} IPv6; firewall: ${backend}${HAVE_DNSMASQ ? "; dnsname: DNS to " + a.net : ""}$`, "m"));
      assert.match(first.stderr, new RegExp(`^failed {4}broken${tag}/ctrbroken/eth0 {2}its cached config cannot be read: .+$`, "m"));
      assert.match(first.stderr, /1 of 2 attachments could not be restored/);
      assert.equal(await fetchFrom(a.host.ns, a.gw, 8080), "hello", "the published port answers again");
      assert.equal(await fetchFrom(a.ctr, a.gw, 8080), "hello", "hairpin too");
      assert.equal(await ruleset(a.host), before, "the ruleset from before the flush");

      const second = await reload(a.host);
      assert.match(second.stdout, new RegExp(`^complete {2}${a.attachment}$`, "m"));
      assert.equal(await ruleset(a.host), before, "a second reload changes nothing");

      rmSync(broken);
      const clean = await reload(a.host);
      assert.equal(clean.code, 0, clean.stderr);

      await a.host.must("del", a.net, a.ctr, a.env);
      const after = await ruleset(a.host);
      for (const left of [a.id, ...a.result.ips!.map((i) => i.address.split("/")[0]!), `-i ${a.net} `, "CNI-DN-"]) {
        assert.ok(!after.includes(left), `DEL left ${left}:\n${after}`);
      }
      assert.doesNotMatch(after, /^:CNI-[0-9a-f]{24} /m, "no masquerading chain");
    });
  }

  /** Starts `cnitool daemon` in the host namespace with `args`; its log so far; stopped at cleanup. */
  async function startDaemon(host: Host, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; log: () => string }> {
    const dir = cleanup.dir("tscni-rl-sock-");
    const child = spawn("nsenter", [`--net=${host.ns.path}`, "--", CNITOOL, "--cache-dir", host.cacheDir, "daemon",
      "--socket", path.join(dir, "run", "plugins.sock"), "--warm-up", "0", ...args], { stdio: ["ignore", "ignore", "pipe"], env });
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
    const a = await attached("iptables");
    const before = await ruleset(a.host);
    const daemon = await startDaemon(a.host, ["--repair-interval", "1"], { ...process.env, XDG_RUNTIME_DIR: xdg });
    flush(a.host, "iptables");
    assert.ok(await eventually(5000, async () => (await ruleset(a.host)) === before), `not repaired within 5 s:\n${daemon.log()}`);
    assert.equal(await fetchFrom(a.host.ns, a.gw, 8080), "hello");
    assert.match(daemon.log(), new RegExp(`self-repair \\(firewall state lost: 1 attachment\\(s\\), first ${a.attachment} `));
    assert.match(daemon.log(), new RegExp(`restored {2}${a.attachment} `));
    await sleep(1500);
    assert.equal(daemon.log().match(/self-repair \(/g)?.length, 1, "nothing more to do once repaired");
    await a.host.must("del", a.net, a.ctr, a.env);
  });

  test("a running server repairs on firewalld's Reloaded signal (a private bus; the periodic look off)", async () => {
    const a = await attached("nftables");
    const before = await ruleset(a.host);
    const dir = cleanup.dir("tscni-rl-bus-");
    const socket = path.join(dir, "system_bus_socket");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "bus.conf"), [
      '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">',
      "<busconfig><type>system</type>", `<listen>unix:path=${socket}</listen>`, "<auth>EXTERNAL</auth>",
      '<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/><allow send_type="signal"/>',
      '<allow send_requested_reply="true" send_type="method_return"/><allow send_requested_reply="true" send_type="error"/>',
      '<allow receive_type="method_call"/><allow receive_type="method_return"/><allow receive_type="error"/><allow receive_type="signal"/></policy>',
      "</busconfig>",
    ].join("\n"));
    const bus = spawn("dbus-daemon", [`--config-file=${path.join(dir, "bus.conf")}`, "--nofork"], { stdio: "ignore" });
    cleanup.add(() => void bus.kill("SIGKILL"));
    assert.ok(await eventually(5000, () => existsSync(socket)), "the private bus listens");
    const address = `unix:path=${socket}`;
    const daemon = await startDaemon(a.host, ["--repair-interval", "0"], { ...process.env, XDG_RUNTIME_DIR: xdg, DBUS_SYSTEM_BUS_ADDRESS: address });

    flush(a.host, "nftables");
    await sleep(1500);
    assert.notEqual(await ruleset(a.host), before, "no periodic look with --repair-interval 0");
    // Sent until the server has subscribed (each one only asks for a reload, which changes nothing once done).
    const emit = () => void spawnSync("busctl", [`--address=${address}`, "emit", "/org/fedoraproject/FirewallD1", "org.fedoraproject.FirewallD1", "Reloaded"]);
    assert.ok(await eventually(10_000, async () => (await ruleset(a.host)) === before, emit), `not repaired on the signal:\n${daemon.log()}`);
    assert.match(daemon.log(), /self-repair \(firewalld reloaded\)/);
    assert.equal(await fetchFrom(a.host.ns, a.gw, 8080), "hello");

    const watching = () => spawnSync("pgrep", ["-f", `busctl --address=${address}`], { encoding: "utf8" }).stdout.trim();
    assert.notEqual(watching(), "", "busctl monitor watches the bus");
    daemon.child.kill("SIGTERM");
    assert.ok(await eventually(5000, () => watching() === ""), "the watch ends with the server");
    await a.host.must("del", a.net, a.ctr, a.env);
  });
});
