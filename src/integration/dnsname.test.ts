/**
 * The dnsname plugin chained after bridge + host-local (ours: dist/bin) in test-made "host" namespaces: containers
 * resolve each other by name and alias through the network's dnsmasq (busybox nslookup), CHECK, DEL (of one, of the
 * last, twice, without prevResult, of two containers with one name), concurrent ADDs and DELs, refused names, a
 * failed ADD, STATUS and GC; and against Debian's Go dnsname 1.3.1: the same scenario gives the same files and
 * result, and one network served by both (each adds a pod, both names resolve, each one's DEL cleans up).
 *
 * dnsmasq runs in the namespace of the plugin's caller (the test host) and its files are on the real filesystem:
 * every test's network has a name of its own, the files are under a temporary XDG_RUNTIME_DIR (one test uses the
 * default /run/containers/cni/dnsname), and whatever a failed test leaves (dnsmasq processes, directories) is
 * removed at the end.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_BASE_DIR } from "#plugins/meta/dnsname/state.js";
import { type ChainEnv, type ChainList, chainAdd, runPlugin } from "#testing/chain.js";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { type AttachEnv, cniError, containerIdOf, Host, pluginDir, type Result, type RunResult } from "#testing/rig.js";

const BUSYBOX = "/bin/busybox";
const GO_DNSNAME = path.join(GO_BIN, "dnsname");
const DNSMASQ = "/usr/sbin/dnsmasq";

const skip = skipReason(
  true,
  existsSync(DNSMASQ) ? undefined : "dnsmasq (dnsmasq-base) is not installed",
  existsSync(BUSYBOX) ? undefined : "busybox-static is not installed",
  existsSync(GO_DNSNAME) ? undefined : "Debian's Go dnsname (golang-github-containernetworking-plugin-dnsname) is not installed",
);
if (skip) console.log(`# skipping dnsname integration tests: ${skip}`);

type Json = Record<string, unknown>;

/** The pids of running dnsmasq processes whose config file's path passes `match` (a prefix: under that directory). */
function dnsmasqsUnder(match: string | ((conf: string) => boolean)): number[] {
  const test = typeof match === "string" ? (conf: string) => conf.startsWith(match) : match;
  const pids: number[] = [];
  for (const entry of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const conf = argv.find((a) => a.startsWith("--conf-file="))?.slice("--conf-file=".length);
      if (path.basename(argv[0] ?? "") === "dnsmasq" && conf !== undefined && test(conf)) pids.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return pids;
}

/** The addresses busybox nslookup gives for `name` from `ctr`, asking `server` (none when it cannot find it). */
async function lookup(ctr: Netns, name: string, server: string): Promise<{ addresses: string[]; output: string }> {
  const r = await ctr.run(BUSYBOX, ["nslookup", name, server]);
  const answers = r.stdout.split("\n\n").slice(1).join("\n");
  return { addresses: [...answers.matchAll(/^Address:\s*(\S+)$/gm)].map((m) => m[1]!).sort(), output: r.stdout + r.stderr };
}

/** Looks `name` up until the answer is `want` (dnsmasq rereads its hosts on SIGHUP, a moment after ADD returns). */
async function resolvesTo(ctr: Netns, name: string, server: string, want: string[]): Promise<void> {
  let got = { addresses: [] as string[], output: "" };
  for (let i = 0; i < 30; i++) {
    got = await lookup(ctr, name, server);
    if (JSON.stringify(got.addresses) === JSON.stringify([...want].sort())) return;
    await sleep(100);
  }
  const routes = (await ctr.run("ip", ["-br", "addr"])).stdout + (await ctr.run("ip", ["route"])).stdout;
  assert.deepEqual(got.addresses, [...want].sort(), `nslookup ${name} ${server} from ${ctr.name}:\n${got.output}\n${routes}`);
}

const readIf = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : undefined);
const sortedLines = (text: string | undefined) => (text ?? "").split("\n").filter(Boolean).sort();

describe("dnsname plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  /** Our XDG_RUNTIME_DIR: the plugins' files are under <xdg>/containers/cni/dnsname. */
  let xdg: string;
  let base: string;
  /** Our bridge and host-local with Go's dnsname. */
  let goPath: string;

  before(() => {
    xdg = cleanup.dir("tscni-dnsname-xdg-");
    base = path.join(xdg, "containers/cni/dnsname");
    goPath = pluginDir(cleanup, { bridge: path.join(OUR_BIN, "bridge"), "host-local": path.join(OUR_BIN, "host-local"), dnsname: GO_DNSNAME });
    // Whatever a failing test left: the dnsmasq processes of this run's networks (named dn<tag>N, dd<tag>), wherever
    // their files are (they hold the test namespaces), and their directories in the default place.
    const ours = (name: string) => name.startsWith(`dn${tag}`) || name === `dd${tag}`;
    cleanup.add(() => {
      for (const pid of dnsmasqsUnder((conf) => ours(path.basename(path.dirname(conf))))) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      const names = existsSync(DEFAULT_BASE_DIR) ? readdirSync(DEFAULT_BASE_DIR).filter(ours) : [];
      for (const n of names) rmSync(path.join(DEFAULT_BASE_DIR, n), { recursive: true, force: true });
    });
  });
  after(() => cleanup.run());

  /** A fresh host namespace with a dual-stack bridge network (bridge + host-local + dnsname) of a unique name. */
  function newNetwork(opts: { cniVersion?: string; domainName?: string } = {}) {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-dnh-${tag}-${n}`, OUR_BIN);
    const name = `dn${tag}${n}`;
    const bridge = `dn${tag}${n}`;
    const list: ChainList = {
      cniVersion: opts.cniVersion ?? "1.0.0",
      name,
      plugins: [
        { type: "bridge", bridge, isGateway: true, ipam: host.hostLocal([`10.251.${n}.0/24`, `fd00:251:${n}::/64`]) },
        { type: "dnsname", domainName: opts.domainName ?? "dns.podman", capabilities: { aliases: true } },
      ],
    };
    host.writeNetwork(list as unknown as Json);
    const dir = path.join(base, name);
    return { host, name, bridge, list, dir, gw4: `10.251.${n}.1`, gw6: `fd00:251:${n}::1`, n };
  }
  type Net = ReturnType<typeof newNetwork>;

  /** The environment of an attachment named `pod` with `aliases` on `net`. */
  const attachEnv = (net: Net, pod?: string, aliases?: string[], extra: Record<string, string> = {}): AttachEnv =>
    ({
      CNI_ARGS: pod === undefined ? "" : `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
      ...(aliases ? { CAP_ARGS: JSON.stringify({ aliases: { [net.name]: aliases } }) } : {}),
      XDG_RUNTIME_DIR: xdg,
      ...extra,
    }) as AttachEnv;

  const cnitool = (net: Net, verb: string, ctr: Netns, pod?: string, aliases?: string[], cniPath = OUR_BIN, extra: Record<string, string> = {}) =>
    net.host.cnitool(verb, net.name, ctr, attachEnv(net, pod, aliases, extra), cniPath);
  async function must(r: Promise<RunResult>, what: string): Promise<RunResult> {
    const done = await r;
    assert.equal(done.code, 0, `${what}: ${done.stdout}${done.stderr}`);
    return done;
  }
  const addOk = async (net: Net, ctr: Netns, pod: string, aliases?: string[], cniPath = OUR_BIN) =>
    JSON.parse((await must(cnitool(net, "add", ctr, pod, aliases, cniPath), `ADD ${pod}`)).stdout) as Result;
  const ipv4Of = (r: Result) => r.ips!.find((i) => !i.address.includes(":"))!.address.split("/")[0]!;
  const ipv6Of = (r: Result) => r.ips!.find((i) => i.address.includes(":"))!.address.split("/")[0]!;
  const hostsOf = (net: Net, dir = net.dir) => sortedLines(readIf(path.join(dir, "addnhosts")));
  const inputRules = (net: Net, family: 4 | 6) =>
    net.host.ns
      .exec(family === 4 ? "iptables" : "ip6tables", ["-S", "INPUT"])
      .split("\n")
      .filter((l) => l.includes(`-i ${net.bridge} `));
  const acceptRules = (bridge: string) => [
    `-A INPUT -i ${bridge} -p udp -m udp --dport 53 -j ACCEPT`,
    `-A INPUT -i ${bridge} -p tcp -m tcp --dport 53 -j ACCEPT`,
  ];
  const goConf = (dir: string, bridge: string, domain = "dns.podman") =>
    [
      "## WARNING: THIS IS AN AUTOGENERATED FILE",
      "## AND SHOULD NOT BE EDITED MANUALLY AS IT",
      "## LIKELY TO AUTOMATICALLY BE REPLACED.",
      "strict-order",
      `local=/${domain}/`,
      `domain=${domain}`,
      "expand-hosts",
      `pid-file=${dir}/pidfile`,
      "except-interface=lo",
      "bind-dynamic",
      "no-hosts",
      `interface=${bridge}`,
      `addn-hosts=${dir}/addnhosts`,
      "",
    ].join("\n");

  test("two containers: each resolves the other by name, alias and FQDN; Go's files; DNS in the result; CHECK; DEL of one, of the last, twice", async () => {
    const net = newNetwork();
    const c1 = net.host.container(`tscni-dnc-${tag}-a1`);
    const c2 = net.host.container(`tscni-dnc-${tag}-a2`);
    const r1 = await addOk(net, c1, "web", ["db", "cache"]);
    const r2 = await addOk(net, c2, "exciting_chebyshev");
    assert.deepEqual(r1.dns, { nameservers: [net.gw4, net.gw6], search: ["dns.podman"] });
    assert.deepEqual(r2.dns, r1.dns);
    assert.deepEqual(
      r1.ips!.map((i) => i.address),
      [`10.251.${net.n}.2/24`, `fd00:251:${net.n}::2/64`],
      "the prevResult goes through",
    );

    assert.equal(readIf(path.join(net.dir, "dnsmasq.conf")), goConf(net.dir, net.bridge));
    assert.deepEqual(readIf(path.join(net.dir, "addnhosts"))!.split("\n"), [
      `${ipv4Of(r1)}\tweb\tdb\tcache`,
      `${ipv6Of(r1)}\tweb\tdb\tcache`,
      `${ipv4Of(r2)}\texciting_chebyshev`,
      `${ipv6Of(r2)}\texciting_chebyshev`,
      "",
    ]);
    assert.deepEqual(readdirSync(net.dir).sort(), ["addnhosts", "dnsmasq.conf", "lock", "pidfile", "tscni-attachments.json"]);
    const [pid] = dnsmasqsUnder(net.dir);
    assert.ok(pid, "one dnsmasq runs for the network");
    assert.equal(readFileSync(path.join(net.dir, "pidfile"), "utf8").trim(), String(pid));
    assert.deepEqual(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean), [
      DNSMASQ,
      "-u",
      "root",
      `--conf-file=${net.dir}/dnsmasq.conf`,
    ]);
    assert.deepEqual(inputRules(net, 4), acceptRules(net.bridge), "udp first, where Go puts it, then tcp; once");
    assert.deepEqual(inputRules(net, 6), acceptRules(net.bridge));

    await resolvesTo(c2, "web", net.gw4, [ipv4Of(r1), ipv6Of(r1)]);
    await resolvesTo(c2, "db", net.gw4, [ipv4Of(r1), ipv6Of(r1)]);
    await resolvesTo(c2, "cache.dns.podman", net.gw6, [ipv4Of(r1), ipv6Of(r1)]);
    await resolvesTo(c1, "exciting_chebyshev", net.gw4, [ipv4Of(r2), ipv6Of(r2)]);

    await must(cnitool(net, "check", c1, "web", ["db", "cache"]), "CHECK c1");
    await must(cnitool(net, "check", c2, "exciting_chebyshev"), "CHECK c2");

    await must(cnitool(net, "del", c1, "web"), "DEL c1");
    assert.deepEqual(hostsOf(net), [`${ipv4Of(r2)}\texciting_chebyshev`, `${ipv6Of(r2)}\texciting_chebyshev`]);
    await resolvesTo(c2, "web", net.gw4, []);
    await resolvesTo(c2, "db", net.gw4, []);
    await resolvesTo(c2, "exciting_chebyshev", net.gw4, [ipv4Of(r2), ipv6Of(r2)]);
    assert.deepEqual(dnsmasqsUnder(net.dir), [pid], "reloaded, not restarted");
    await must(cnitool(net, "del", c1, "web"), "DEL c1 again");

    await must(cnitool(net, "del", c2, "exciting_chebyshev"), "DEL of the last container");
    assert.ok(!existsSync(net.dir), "the network's directory is removed");
    assert.deepEqual(dnsmasqsUnder(net.dir), [], "dnsmasq is stopped");
    assert.deepEqual(inputRules(net, 4), []);
    assert.deepEqual(inputRules(net, 6), []);
    await must(cnitool(net, "del", c2, "exciting_chebyshev"), "DEL of the last container again");
    assert.ok(existsSync(base), "the base directory stays");
  });

  test("CHECK fails when dnsmasq is not running or a name is missing; DEL with the netns gone and without CNI_ARGS still cleans up", async () => {
    const net = newNetwork();
    const c1 = net.host.container(`tscni-dnc-${tag}-k1`);
    const r1 = await addOk(net, c1, "web", ["db"]);
    const check = async (pattern: RegExp, pod = "web", aliases = ["db"]) => {
      const r = await cnitool(net, "check", c1, pod, aliases);
      assert.notEqual(r.code, 0, "CHECK must fail");
      assert.match(r.stderr + r.stdout, pattern);
    };
    await check(/does not name .* web db extra/, "web", ["db", "extra"]);
    await check(/does not name .* other/, "other", []);
    const [pid] = dnsmasqsUnder(net.dir);
    process.kill(pid!, "SIGKILL");
    await check(/dnsmasq instance not running/);
    // Another container's ADD starts it again.
    const c2 = net.host.container(`tscni-dnc-${tag}-k2`);
    await addOk(net, c2, "other");
    await must(cnitool(net, "check", c1, "web", ["db"]), "CHECK after the restart");
    await resolvesTo(c2, "db", net.gw4, [ipv4Of(r1), ipv6Of(r1)]);

    await must(cnitool(net, "del", c2, "other"), "DEL c2");
    c1.delete();
    await must(cnitool(net, "del", c1), "DEL with the netns gone and no pod name (the cache's prevResult names the addresses)");
    assert.ok(!existsSync(net.dir));
    assert.deepEqual(dnsmasqsUnder(net.dir), []);
  });

  test("DEL removes exactly its attachment's lines: two containers of one name, without prevResult, and Go's by-name lines", async () => {
    const net = newNetwork();
    const ctr = net.host.container(`tscni-dnc-${tag}-t1`);
    const env = (id: string, pod?: string): ChainEnv & Record<string, string> => ({
      CNI_CONTAINERID: id,
      CNI_NETNS: ctr.path,
      CNI_IFNAME: "eth0",
      CNI_ARGS: pod ? `K8S_POD_NAME=${pod}` : "",
      XDG_RUNTIME_DIR: xdg,
    });
    const dnsname = (verb: string, e: ChainEnv, prevResult?: Result) => runPlugin(net.host, OUR_BIN, net.list, 1, verb, e, prevResult);
    const bridgeOnly = { ...net.list, plugins: [net.list.plugins[0]!] };
    const a = await chainAdd(net.host, OUR_BIN, bridgeOnly, env("twin-a"));
    const b = await chainAdd(net.host, OUR_BIN, bridgeOnly, { ...env("twin-b"), CNI_IFNAME: "eth1" });
    await must(dnsname("ADD", env("twin-a", "twin"), a), "ADD a");
    await must(dnsname("ADD", { ...env("twin-b", "twin"), CNI_IFNAME: "eth1" }, b), "ADD b");
    // A line Go's plugin wrote for a container of ours that has no record.
    writeFileSync(path.join(net.dir, "addnhosts"), `${readFileSync(path.join(net.dir, "addnhosts"), "utf8")}10.251.${net.n}.200\tghost\n`);
    assert.equal(hostsOf(net).length, 5);

    await must(dnsname("DEL", { ...env("twin-a"), CNI_NETNS: "" }), "DEL a without prevResult, netns or pod name");
    assert.deepEqual(hostsOf(net), [`10.251.${net.n}.200\tghost`, `${ipv4Of(b)}\ttwin`, `${ipv6Of(b)}\ttwin`].sort(), "b's lines stay");
    await must(dnsname("DEL", env("ghost-ctr", "ghost")), "DEL by name alone (no record, no prevResult), as Go's");
    assert.deepEqual(hostsOf(net), [`${ipv4Of(b)}\ttwin`, `${ipv6Of(b)}\ttwin`].sort());
    await must(dnsname("DEL", env("unknown", "nobody")), "DEL of an attachment the network never had");
    assert.equal(hostsOf(net).length, 2);
    await must(dnsname("DEL", { ...env("twin-b", "twin"), CNI_IFNAME: "eth1" }, b), "DEL b with its prevResult");
    assert.ok(!existsSync(net.dir));
    // A repeated ADD of one attachment replaces its lines.
    await must(dnsname("ADD", env("twin-a", "first"), a), "ADD");
    await must(dnsname("ADD", env("twin-a", "second"), a), "ADD again, renamed");
    assert.deepEqual(hostsOf(net), [`${ipv4Of(a)}\tsecond`, `${ipv6Of(a)}\tsecond`].sort());
    await must(dnsname("DEL", env("twin-a")), "DEL");
    assert.ok(!existsSync(net.dir));
    await must(runPlugin(net.host, OUR_BIN, net.list, 0, "DEL", env("twin-a")), "bridge DEL a");
    await must(runPlugin(net.host, OUR_BIN, net.list, 0, "DEL", { ...env("twin-b"), CNI_IFNAME: "eth1" }), "bridge DEL b");
  });

  test("concurrent ADDs and DELs on one network serialise on the lock: every name once, one dnsmasq, nothing left", async () => {
    const net = newNetwork();
    const ctrs = Array.from({ length: 8 }, (_, i) => net.host.container(`tscni-dnc-${tag}-p${i}`));
    const results = await Promise.all(ctrs.map((c, i) => addOk(net, c, `pod${i}`, [`alias${i}`])));
    assert.deepEqual(hostsOf(net), results.flatMap((r, i) => [`${ipv4Of(r)}\tpod${i}\talias${i}`, `${ipv6Of(r)}\tpod${i}\talias${i}`]).sort());
    assert.equal(dnsmasqsUnder(net.dir).length, 1, "one dnsmasq");
    assert.deepEqual(inputRules(net, 4), acceptRules(net.bridge), "the rules once");
    for (const i of [0, 7]) await resolvesTo(ctrs[(i + 1) % 8]!, `alias${i}`, net.gw4, [ipv4Of(results[i]!), ipv6Of(results[i]!)]);
    const dels = await Promise.all(ctrs.map((c, i) => cnitool(net, "del", c, `pod${i}`)));
    for (const r of dels) assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(!existsSync(net.dir));
    assert.deepEqual(dnsmasqsUnder(net.dir), []);
    assert.deepEqual(inputRules(net, 4), []);
  });

  test("names that are not DNS names are refused with code 7 and never written; a failed ADD leaves nothing", async () => {
    const net = newNetwork();
    const c1 = net.host.container(`tscni-dnc-${tag}-b1`);
    const env = (pod?: string): ChainEnv & Record<string, string> => ({
      CNI_CONTAINERID: "bad-c1",
      CNI_NETNS: c1.path,
      CNI_IFNAME: "eth0",
      CNI_ARGS: pod === undefined ? "" : `IgnoreUnknown=1;K8S_POD_NAME=${pod}`,
      XDG_RUNTIME_DIR: xdg,
    });
    const prev = await chainAdd(net.host, OUR_BIN, { ...net.list, plugins: [net.list.plugins[0]!] }, env());
    const dnsnameAdd = (pod: string | undefined, aliases?: string[]) => {
      const list = {
        ...net.list,
        plugins: [net.list.plugins[0]!, { ...net.list.plugins[1]!, ...(aliases ? { runtimeConfig: { aliases: { [net.name]: aliases } } } : {}) }],
      };
      return runPlugin(net.host, OUR_BIN, list, 1, "ADD", env(pod), prev);
    };
    const refusals: Array<[string | undefined, string[] | undefined, RegExp]> = [
      ["bad name", undefined, /"K8S_POD_NAME": "bad name"/],
      ["-web", undefined, /"K8S_POD_NAME": "-web"/],
      ["a\nb", undefined, /"K8S_POD_NAME": "a\\nb"/],
      ["web", ["ok", "x#y"], /runtimeConfig\.aliases.*"x#y"/],
      ["web", ["127.0.0.1 evil"], /runtimeConfig\.aliases/],
      [undefined, undefined, /K8S_POD_NAME/],
    ];
    const check = async (c2Lines: string[]) => {
      for (const [pod, aliases, pattern] of refusals) {
        const r = await dnsnameAdd(pod, aliases);
        assert.equal(cniError(r).code, 7, r.stdout);
        assert.match(cniError(r).msg, pattern);
        assert.deepEqual(hostsOf(net), c2Lines, "nothing written");
        assert.deepEqual(inputRules(net, 4), c2Lines.length ? acceptRules(net.bridge) : []);
      }
    };
    await check([]);
    assert.ok(!existsSync(net.dir));
    // With a container on the network, a refused one changes nothing either.
    const c2 = net.host.container(`tscni-dnc-${tag}-b2`);
    const r2 = await addOk(net, c2, "good");
    await check([`${ipv4Of(r2)}\tgood`, `${ipv6Of(r2)}\tgood`].sort());
    await must(cnitool(net, "del", c2, "good"), "DEL");
    assert.ok(!existsSync(net.dir));

    // dnsmasq cannot start (its address on the bridge is taken): the ADD fails and leaves no file, rule or process.
    const squatter = spawn(
      "ip",
      [
        "netns",
        "exec",
        net.host.ns.name,
        process.execPath,
        "-e",
        `const s=require("dgram").createSocket("udp4");s.bind(53,"${net.gw4}",()=>console.log("bound"));setTimeout(()=>{},60000)`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    cleanup.add(() => squatter.kill("SIGKILL"));
    await new Promise((resolve) => squatter.stdout.once("data", resolve));
    const failed = await dnsnameAdd("good");
    squatter.kill("SIGKILL");
    assert.equal(cniError(failed).code, 999, failed.stdout);
    assert.match(cniError(failed).msg, /dnsmasq failed: .*(in use|listening socket)/i);
    assert.ok(!existsSync(net.dir), "no directory left");
    assert.deepEqual(dnsmasqsUnder(net.dir), []);
    assert.deepEqual(inputRules(net, 4), []);
    assert.deepEqual(inputRules(net, 6), []);
    await must(runPlugin(net.host, OUR_BIN, net.list, 1, "DEL", env("good"), prev), "dnsname DEL after the failed ADD");
    await must(runPlugin(net.host, OUR_BIN, net.list, 0, "DEL", env(), prev), "bridge DEL");
  });

  test("STATUS is ready with dnsmasq and code 50 without it (ADD then fails before changing anything); GC removes attachments not in the valid list", async () => {
    const net = newNetwork({ cniVersion: "1.1.0" });
    const conf = { cniVersion: "1.1.0", name: net.name, type: "dnsname" };
    const status = await net.host.plugin(path.join(OUR_BIN, "dnsname"), "STATUS", conf, { XDG_RUNTIME_DIR: xdg });
    assert.equal(status.code, 0, status.stdout + status.stderr);
    // dnsmasq hidden (/dev/null over it) in a mount namespace of the call's own.
    const hidden = (command: string, stdin: Json, env: Record<string, string>) =>
      net.host.ns.run(
        "unshare",
        ["--mount", "--propagation", "private", "sh", "-c", `mount --bind /dev/null ${DNSMASQ} && exec "$@"`, "sh", path.join(OUR_BIN, "dnsname")],
        {
          env: {
            ...process.env,
            TSCNI_RESIDENT: "exec",
            CNI_COMMAND: command,
            CNI_PATH: OUR_BIN,
            CNI_IFNAME: "eth0",
            CNI_CONTAINERID: "c",
            XDG_RUNTIME_DIR: xdg,
            ...env,
          },
          input: JSON.stringify(stdin),
        },
      );
    const missing = await hidden("STATUS", conf, {});
    assert.equal(cniError(missing).code, 50, missing.stdout);
    assert.match(cniError(missing).msg, /dnsmasq/);

    const ctrs = [1, 2, 3].map((i) => net.host.container(`tscni-dnc-${tag}-g${i}`));
    const results = [];
    for (const [i, c] of ctrs.entries()) results.push(await addOk(net, c, `g${i}`));
    const noDnsmasq = await hidden("ADD", { ...conf, prevResult: results[0] }, { CNI_ARGS: "K8S_POD_NAME=late", CNI_NETNS: ctrs[0]!.path });
    assert.match(cniError(noDnsmasq).msg, /unable to locate dnsmasq/);
    assert.equal(hostsOf(net).length, 6, "the failed ADD changed nothing");
    writeFileSync(path.join(net.dir, "addnhosts"), `${readFileSync(path.join(net.dir, "addnhosts"), "utf8")}10.251.${net.n}.200\tgo-written\n`);

    const gc = (valid?: Netns[]) =>
      net.host.plugin(
        path.join(OUR_BIN, "dnsname"),
        "GC",
        { ...conf, ...(valid ? { "cni.dev/valid-attachments": valid.map((c) => ({ containerID: containerIdOf(c), ifname: "eth0" })) } : {}) },
        { XDG_RUNTIME_DIR: xdg },
      );
    await must(gc(), "GC without a valid list");
    assert.equal(hostsOf(net).length, 7, "without the list nothing is known to be stale");
    await must(gc([ctrs[0]!]), "GC keeping g0");
    assert.deepEqual(hostsOf(net), [`${ipv4Of(results[0]!)}\tg0`, `${ipv6Of(results[0]!)}\tg0`, `10.251.${net.n}.200\tgo-written`].sort());
    await resolvesTo(ctrs[0]!, "g1", net.gw4, []);
    await resolvesTo(ctrs[1]!, "g0", net.gw4, [ipv4Of(results[0]!), ipv6Of(results[0]!)]);
    await must(gc([]), "GC keeping none");
    assert.deepEqual(hostsOf(net), [`10.251.${net.n}.200\tgo-written`], "a line no record names (Go's) is left alone");
    await must(
      net.host.plugin(path.join(OUR_BIN, "dnsname"), "DEL", conf, { CNI_ARGS: "K8S_POD_NAME=go-written", XDG_RUNTIME_DIR: xdg }),
      "DEL by name",
    );
    assert.ok(!existsSync(net.dir));
    assert.deepEqual(dnsmasqsUnder(net.dir), []);
    for (const c of ctrs) await must(cnitool(net, "del", c), "DEL");
  });

  test("the default directory /run/containers/cni/dnsname when XDG_RUNTIME_DIR is not set", async () => {
    const net = newNetwork();
    const dir = path.join(DEFAULT_BASE_DIR, net.name);
    // The directories this test makes go again (those that hold anything else stay).
    const created = ["/run/containers", "/run/containers/cni", DEFAULT_BASE_DIR].filter((d) => !existsSync(d));
    cleanup.add(() => {
      for (const pid of dnsmasqsUnder(dir)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      rmSync(dir, { recursive: true, force: true });
      for (const d of created.reverse()) {
        try {
          rmdirSync(d);
        } catch {
          /* not empty: someone else's */
        }
      }
    });
    const ctr = net.host.container(`tscni-dnc-${tag}-d1`);
    const added = await must(cnitool(net, "add", ctr, "web", undefined, OUR_BIN, { XDG_RUNTIME_DIR: "" }), "ADD");
    assert.ok(existsSync(path.join(dir, "addnhosts")));
    assert.equal(readIf(path.join(dir, "dnsmasq.conf")), goConf(dir, net.bridge));
    await resolvesTo(ctr, "web", net.gw4, [ipv4Of(JSON.parse(added.stdout) as Result), ipv6Of(JSON.parse(added.stdout) as Result)]);
    await must(cnitool(net, "del", ctr, "web", undefined, OUR_BIN, { XDG_RUNTIME_DIR: "" }), "DEL");
    assert.ok(!existsSync(dir));
    assert.deepEqual(dnsmasqsUnder(dir), []);
  });

  describe("against Debian's Go dnsname 1.3.1", () => {
    test("differential: the same chain gives the same files and the same result; Go's CHECK fails, its DEL leaves its rule", async () => {
      // Two hosts with the same bridge, subnets and container IDs; each side's files under its own XDG_RUNTIME_DIR.
      const sides = await Promise.all(
        [OUR_BIN, goPath].map(async (binDir, i) => {
          const n = ++seq;
          const host = new Host(cleanup, `tscni-dnh-${tag}-${n}`, binDir);
          const sideXdg = cleanup.dir("tscni-dnsname-side-");
          const list: ChainList = {
            cniVersion: "1.0.0",
            name: `dd${tag}`,
            plugins: [
              { type: "bridge", bridge: `dd${tag}`, isGateway: true, ipam: host.hostLocal(["10.252.0.0/24", "fd00:252::/64"]) },
              { type: "dnsname", domainName: "dns.podman", capabilities: { aliases: true }, runtimeConfig: { aliases: { [`dd${tag}`]: ["db"] } } },
            ],
          };
          const ctrs = [host.container(`tscni-dnc-${tag}-d${i}a`), host.container(`tscni-dnc-${tag}-d${i}b`)];
          const env = (k: number): ChainEnv =>
            ({
              CNI_CONTAINERID: `dnsdiff${k}`,
              CNI_NETNS: ctrs[k]!.path,
              CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAME=pod${k}`,
              XDG_RUNTIME_DIR: sideXdg,
            }) as ChainEnv;
          const results = [await chainAdd(host, binDir, list, env(0)), await chainAdd(host, binDir, list, env(1))];
          const dir = path.join(sideXdg, "containers/cni/dnsname", list.name);
          return { host, binDir, list, ctrs, env, results, dir, sideXdg };
        }),
      );
      const [ours, go] = sides as [(typeof sides)[0], (typeof sides)[0]];
      // The same result (key order aside: Go's dnsname prints a 1.x result in struct order, tscni sorts its keys as
      // the other plugins of Go's libcni 1.x do), with the random parts masked: MACs, veth names, sandbox paths.
      const masked = (r: Result) =>
        JSON.parse(
          JSON.stringify(r, (k, v: unknown) =>
            k === "mac" || k === "sandbox" ? `<${k}>` : typeof v === "string" && v.startsWith("veth") ? "<veth>" : v,
          ),
        ) as Json;
      for (const k of [0, 1]) assert.deepEqual(masked(ours.results[k]!), masked(go.results[k]!), `the result of ADD ${k}`);
      assert.deepEqual(ours.results[0]!.dns, { nameservers: ["10.252.0.1", "fd00:252::1"], search: ["dns.podman"] });
      assert.equal(
        readIf(path.join(ours.dir, "dnsmasq.conf"))!.replaceAll(ours.sideXdg, "X"),
        readIf(path.join(go.dir, "dnsmasq.conf"))!.replaceAll(go.sideXdg, "X"),
      );
      assert.deepEqual(sortedLines(readIf(path.join(ours.dir, "addnhosts"))), sortedLines(readIf(path.join(go.dir, "addnhosts"))));
      assert.deepEqual(sortedLines(readIf(path.join(ours.dir, "addnhosts"))), [
        "10.252.0.2\tpod0\tdb",
        "10.252.0.3\tpod1\tdb",
        "fd00:252::2\tpod0\tdb",
        "fd00:252::3\tpod1\tdb",
      ]);
      const rules = (side: typeof ours, family: 4 | 6) =>
        side.host.ns
          .exec(family === 4 ? "iptables" : "ip6tables", ["-S", "INPUT"])
          .split("\n")
          .filter((l) => l.includes(`-i dd${tag} `));
      assert.deepEqual(rules(go, 4), [acceptRules(`dd${tag}`)[0]], "Go: udp, IPv4 only");
      assert.deepEqual(rules(ours, 4), acceptRules(`dd${tag}`), "ours: udp and tcp");
      assert.deepEqual(rules(ours, 6), acceptRules(`dd${tag}`), "and in ip6tables");
      for (const side of sides) await resolvesTo(side.ctrs[1]!, "pod0", "10.252.0.1", ["10.252.0.2", "fd00:252::2"]);

      const check = (side: typeof ours) => runPlugin(side.host, side.binDir, side.list, 1, "CHECK", side.env(0), side.results[0]);
      assert.equal((await check(ours)).code, 0);
      const goCheck = await check(go);
      assert.match(goCheck.stdout + goCheck.stderr, /addnhost file missing from configuration/, "Go's CHECK looks in the parent directory");

      for (const side of sides) {
        for (const k of [1, 0]) {
          const r = await runPlugin(side.host, side.binDir, side.list, 1, "DEL", side.env(k), side.results[k]);
          assert.equal(r.code, 0, r.stdout + r.stderr);
          if (k === 1) assert.deepEqual(sortedLines(readIf(path.join(side.dir, "addnhosts"))), ["10.252.0.2\tpod0\tdb", "fd00:252::2\tpod0\tdb"]);
          await must(runPlugin(side.host, side.binDir, side.list, 0, "DEL", side.env(k), side.results[k]), "bridge DEL");
        }
        assert.ok(!existsSync(side.dir), `${side.binDir}: the directory is removed with the last container`);
        assert.deepEqual(dnsmasqsUnder(side.dir), []);
      }
      assert.deepEqual(rules(ours, 4), [], "ours removes its rules with the last container");
      assert.deepEqual(rules(go, 4), [acceptRules(`dd${tag}`)[0]], "Go never removes its rule");
    });

    test("one network served by both: concurrent ADDs through each share the lock, every name resolves from either side, each DEL cleans up", async () => {
      const net = newNetwork();
      const ctrs = Array.from({ length: 6 }, (_, i) => net.host.container(`tscni-dnc-${tag}-m${i}`));
      const pathOf = (i: number) => (i % 2 === 0 ? goPath : OUR_BIN);
      const results = await Promise.all(ctrs.map((c, i) => addOk(net, c, `m${i}`, [`alias-m${i}`], pathOf(i))));
      assert.deepEqual(
        hostsOf(net),
        results.flatMap((r, i) => [`${ipv4Of(r)}\tm${i}\talias-m${i}`, `${ipv6Of(r)}\tm${i}\talias-m${i}`]).sort(),
        "every ADD's lines, Go's and ours, none lost",
      );
      assert.equal(dnsmasqsUnder(net.dir).length, 1, "one dnsmasq, whoever started it");
      await resolvesTo(ctrs[1]!, "m0", net.gw4, [ipv4Of(results[0]!), ipv6Of(results[0]!)]);
      await resolvesTo(ctrs[0]!, "alias-m1", net.gw4, [ipv4Of(results[1]!), ipv6Of(results[1]!)]);
      await must(cnitool(net, "check", ctrs[1]!, "m1", ["alias-m1"]), "our CHECK of our container");
      await must(cnitool(net, "check", ctrs[0]!, "m0", ["alias-m0"]), "our CHECK of Go's container");

      // Each DELs its own: Go's by name, ours by address; the last one is ours.
      for (const i of [0, 1, 2, 3, 4]) await must(cnitool(net, "del", ctrs[i]!, `m${i}`, undefined, pathOf(i)), `DEL m${i}`);
      assert.deepEqual(hostsOf(net), [`${ipv4Of(results[5]!)}\tm5\talias-m5`, `${ipv6Of(results[5]!)}\tm5\talias-m5`]);
      await resolvesTo(ctrs[5]!, "m4", net.gw4, []);
      await resolvesTo(ctrs[5]!, "alias-m5", net.gw4, [ipv4Of(results[5]!), ipv6Of(results[5]!)]);
      await must(cnitool(net, "del", ctrs[5]!, "m5"), "our DEL of the last");
      assert.ok(!existsSync(net.dir));
      assert.deepEqual(dnsmasqsUnder(net.dir), []);
      assert.deepEqual(inputRules(net, 4), [], "the last DEL being ours, Go's rule goes too");

      // The other way round: Go's DEL is the last one. It removes the directory and stops dnsmasq, and leaves the
      // rules (it never removes any): the udp one both plugins add, and ours for tcp.
      await addOk(net, ctrs[0]!, "m0", undefined, OUR_BIN);
      await addOk(net, ctrs[1]!, "m1", undefined, goPath);
      await must(cnitool(net, "del", ctrs[0]!, "m0"), "our DEL");
      await must(cnitool(net, "del", ctrs[1]!, "m1", undefined, goPath), "Go's DEL of the last");
      assert.ok(!existsSync(net.dir));
      assert.deepEqual(dnsmasqsUnder(net.dir), []);
      assert.deepEqual(inputRules(net, 4), acceptRules(net.bridge));
      for (const c of ctrs.slice(2)) await must(cnitool(net, "del", c), "bridge DEL");
    });
  });
});
