/**
 * Reliability in real namespaces (issue: "reliability that stays"):
 * - generated bad input (testing/bad-input.ts) through the shipped binaries, a sample per registry plugin: each
 *   call ends in success or one well-known CNI error document, non-zero exit, no stack trace, within a time bound,
 *   and leaves nothing behind; in the resident pass the same calls go through the server, interleaved with good
 *   calls that must still get the right answers, and the server's memory stays bounded;
 * - stress: 200 concurrent host-local ADDs then DELs on one store, 100 concurrent bridge chain ADDs then DELs;
 *   SIGKILL at random points of ADD (bridge + host-local, a portmap chain, macvlan, tap), then DEL twice;
 *   DEL three times with and without prevResult, and with the netns gone;
 * - hostile names and paths: container IDs, ifnames, network names and dataDirs with `..`, `/`, newlines, long
 *   values and symlinks are refused or contained (no file outside the state dirs); the file modes of the store,
 *   the cache and the tuning backups are Go's or stricter.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import type { JsonValue } from "#go-json/json.js";
import { DEFAULT_DATA_DIR as HOST_LOCAL_DEFAULT_DIR } from "#plugins/ipam/host-local/config.js";
import { baseDir as dnsnameBaseDir } from "#plugins/meta/dnsname/state.js";
import { DEFAULT_DATA_DIR as FIREWALL_DEFAULT_DIR } from "#plugins/meta/firewall/config.js";
import { PLUGINS } from "#plugins/registry.js";
import { badConfigs, checkErrorOutput, FUZZ_SEED } from "#testing/bad-input.js";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { linkKindMissing } from "#testing/kernel.js";
import { SAMPLES } from "#testing/plugin-samples.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";
import { Host, ipIn, type Result } from "#testing/rig.js";

const skip = skipReason();
/** Generated cases per plugin through the binaries (the in-process tests run 500 each). */
const BINARY_RUNS = Number(process.env["TSCNI_FUZZ_BINARY_RUNS"] ?? 12);
const CALL_TIMEOUT_MS = 30_000;

/** Every file under `dir` (relative paths), following no symlinks. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}

/** What a namespace holds that a plugin could leave behind: links (but bridges, which outlive containers by design), addresses. */
function nsState(ns: Netns): string[] {
  const names = ipIn(ns, ["-d", "link", "show"])
    .filter((l) => (l["linkinfo"] as { info_kind?: string } | undefined)?.info_kind !== "bridge")
    .map((l) => String(l["ifname"]));
  const addrs = ipIn(ns, ["addr", "show"])
    .filter((l) => names.includes(String(l["ifname"])))
    .flatMap((l) =>
      (l["addr_info"] as Array<{ local: string; scope: string }>)
        .filter((a) => a.scope !== "link" && a.scope !== "host")
        .map((a) => `${l["ifname"]} ${a.local}`),
    );
  return [...names.sort(), ...addrs.sort()];
}

/**
 * The per-attachment firewall state of a host namespace: iptables chains named for one attachment (CNI-<hash>,
 * CNI-DN-<hash>, ...) and rules naming a container, in both families, and nftables rules on addresses. (The
 * shared top-level chains and tables, CNI-HOSTPORT-DNAT and the like, stay once made, as with Go's plugins.)
 */
function firewallState(host: Host): string {
  const perAttachment = (l: string) => /CNI-([A-Z]+-)?[0-9a-f]{16,}/.test(l) || /id: \\?"/.test(l);
  const save = (cmd: string) =>
    host.ns
      .exec(cmd, [])
      .split("\n")
      .filter(perAttachment)
      .map((l) => l.replace(/\[\d+:\d+\]/, ""));
  // (nft rules of our own on addresses; iptables-nft's translations of the iptables rules are already counted above.)
  const nft = host.ns
    .exec("nft", ["list", "ruleset"])
    .split("\n")
    .filter((l) => /[sd]addr \S+/.test(l) && !/jump CNI-|xt /.test(l));
  return [...save("iptables-save"), ...save("ip6tables-save"), ...nft].join("\n");
}

const kindTag = runTag();
const lacking = skip
  ? { ipvlan: skip, vlan: skip, dummy: skip }
  : { ipvlan: linkKindMissing("ipvlan", kindTag), vlan: linkKindMissing("vlan", kindTag), dummy: linkKindMissing("dummy", kindTag) };
for (const [kind, reason] of Object.entries(lacking)) if (reason && !skip) console.log(`# reliability: the ${kind} cases skip: ${reason}`);

describe("reliability", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  /** A veth in the host namespace (created when missing): a master for macvlan/ipvlan/vlan, a device for host-device. */
  const hostVeth = (name: string) =>
    host.ns.exec("sh", [
      "-c",
      `ip link show ${name} >/dev/null 2>&1 || (ip link add ${name} type veth peer name ${name}p && ip link set ${name} up)`,
    ]);
  let host: Host;
  let stateRoot: string;
  before(() => {
    host = new Host(cleanup, `tscni-rel-${tag}`, OUR_BIN);
    stateRoot = cleanup.dir("tscni-rel-state-");
  });
  after(() => cleanup.run());

  /** A plugin call in the test's host namespace. */
  const call = (plugin: string, command: string, stdin: string | Buffer, env: Record<string, string>, cwd?: string) =>
    host.ns.run(path.join(OUR_BIN, plugin), [], {
      env: { ...process.env, CNI_COMMAND: command, CNI_PATH: OUR_BIN, CNI_IFNAME: "eth0", CNI_ARGS: "", ...env },
      input: stdin,
      cwd,
      timeoutMs: CALL_TIMEOUT_MS,
    });

  /** A good host-local call (the resident pass interleaves them with the bad ones): its address, or a failure. */
  let goodCount = 0;
  async function goodCall(): Promise<void> {
    const id = `good${++goodCount}`;
    const conf = JSON.stringify({ cniVersion: "1.0.0", name: `good${tag}`, type: "host-local", ipam: host.hostLocal(["10.229.0.0/24"]) });
    const add = await call("host-local", "ADD", conf, { CNI_CONTAINERID: id, CNI_NETNS: "/run/netns/none" });
    assert.equal(add.code, 0, `a good call among bad ones: ${add.stdout}${add.stderr}`);
    const ips = (JSON.parse(add.stdout) as Result).ips?.map((i) => i.address) ?? [];
    assert.equal(ips.length, 1);
    assert.match(ips[0]!, /^10\.229\.0\.\d+\/24$/);
    assert.deepEqual(host.allocations(`good${tag}`), [ips[0]!.split("/")[0]]);
    const del = await call("host-local", "DEL", conf, { CNI_CONTAINERID: id, CNI_NETNS: "/run/netns/none" });
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.deepEqual(host.allocations(`good${tag}`), []);
  }

  /** The resident server of this host (resident pass): its RSS in KiB. */
  function serverRss(): number | undefined {
    const socket = host.ns.residentSocket;
    if (!socket) return undefined;
    for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        if (cmd.includes("daemon") && cmd.includes(socket)) return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
      } catch {
        /* gone */
      }
    }
    return undefined;
  }

  describe(`generated bad input through the binaries${RESIDENT_PASS ? ", served by the resident server" : ""}`, () => {
    let rssBefore: number | undefined;
    before(async () => {
      await goodCall();
      rssBefore = serverRss();
    });
    after(() => {
      const rss = serverRss();
      if (rssBefore !== undefined && rss !== undefined) {
        console.log(`# resident server RSS ${rssBefore} KiB -> ${rss} KiB over the generated calls`);
        assert.ok(rss - rssBefore < 64 * 1024, `the server's memory grew by ${rss - rssBefore} KiB`);
      }
    });

    for (const name of Object.keys(PLUGINS)) {
      test(name, async () => {
        const dir = path.join(stateRoot, `fuzz-${name}`);
        const cwd = path.join(dir, "cwd", "a", "b"); // relative paths in generated configs land here
        mkdirSync(cwd, { recursive: true });
        // The samples' paths and names pointed at this test's own; then mutated.
        // The network is this run's (a mutation that drops a dataDir sends a plugin to its default store, which is
        // then this network's directory there, checked and removed below).
        const network = `fz${tag}`;
        const rewrite = (v: JsonValue): JsonValue => ({
          ...(JSON.parse(
            JSON.stringify(v, (k, x: unknown) => {
              if (typeof x === "string" && /^\/(run\/tscni-sample|etc\/tscni)/.test(x)) return x.replace(/^\/(run\/tscni-sample|etc\/tscni)/, dir);
              if (k === "bridge" && typeof x === "string") return `tsf${tag}`;
              if (
                x &&
                typeof x === "object" &&
                !Array.isArray(x) &&
                (x as Record<string, unknown>)["type"] === "host-local" &&
                !("ranges" in x) &&
                !("subnet" in x)
              ) {
                return { ...x, subnet: "10.228.0.0/24", dataDir: path.join(dir, "ipam") };
              }
              return x;
            }),
          ) as Record<string, JsonValue>),
          name: network,
        });
        const defaultStores = [path.join(HOST_LOCAL_DEFAULT_DIR, network), path.join(FIREWALL_DEFAULT_DIR, network)];
        // dnsname keeps a network's hosts file and dnsmasq in a directory of its own, gone with its last attachment.
        const dnsnameDir = path.join(dnsnameBaseDir(process.env), network);
        cleanup.add(() => rmSync(dnsnameDir, { recursive: true, force: true }));
        cleanup.add(() => defaultStores.forEach((d) => rmSync(d, { recursive: true, force: true })));
        const plugin = await PLUGINS[name]!.load();
        // 999 only where the config itself is valid (the parser ADD uses accepts it): then the failure is the system's.
        const configValid = (stdin: Buffer, cniArgs: string) => {
          try {
            plugin.config!.parse(stdin, cniArgs);
            return true;
          } catch {
            return false;
          }
        };
        const ctr = host.container(`tscni-rel-${tag}-${name}`);
        const hostBefore = nsState(host.ns);
        const fwBefore = firewallState(host);
        const cases = fc.sample(badConfigs(SAMPLES[name]!, rewrite), { numRuns: BINARY_RUNS, seed: FUZZ_SEED + name.length });
        for (const [i, bad] of cases.entries()) {
          const command = ["ADD", "ADD", "DEL", "CHECK"][i % 4]!;
          const env = { CNI_CONTAINERID: `fz${i}`, CNI_NETNS: ctr.path, CNI_ARGS: bad.cniArgs };
          const t0 = Date.now();
          const r = await call(name, command, bad.stdin, env, cwd);
          const ms = Date.now() - t0;
          const what = `${name} ${command} case ${i} (${bad.describe}); stdin ${bad.stdin.toString().slice(0, 400)}`;
          assert.ok(ms < CALL_TIMEOUT_MS, `${what}: took ${ms} ms`);
          if (r.code === 0) {
            if (r.stdout.trim()) JSON.parse(r.stdout);
            if (command === "ADD") {
              // A generated config that is valid after all: DEL must undo it.
              const del = await call(name, "DEL", bad.stdin, env, cwd);
              assert.equal(del.code, 0, `${what}: DEL after a successful ADD: ${del.stdout}${del.stderr}`);
            }
          } else {
            // (CHECK and DEL read less of a config than ADD, as Go's do: their failures on a config ADD refuses are not config errors.)
            const problem = checkErrorOutput(r.stdout, r.stderr, r.code, command !== "ADD" || configValid(bad.stdin, bad.cniArgs));
            assert.equal(problem, undefined, `${what}: ${problem}`);
          }
          if (RESIDENT_PASS && i % 3 === 0) await goodCall();
        }
        // Nothing half-applied: the container holds only lo, the host what it held, no address is allocated.
        assert.deepEqual(nsState(ctr), ["lo"], `${name}: the container namespace after the generated calls`);
        assert.deepEqual(nsState(host.ns), hostBefore, `${name}: the host namespace after the generated calls`);
        assert.equal(firewallState(host), fwBefore, `${name}: the firewall after the generated calls`);
        const allocated = [dir, ...defaultStores].flatMap(filesUnder).filter((f) => /(^|\/)(\d+\.\d+\.\d+\.\d+|[0-9a-f:]+:[0-9a-f:]*)$/i.test(f));
        assert.deepEqual(allocated, [], `${name}: addresses left allocated`);
        assert.ok(!existsSync(dnsnameDir), `${name}: ${dnsnameDir} was left`);
      });
    }
  });

  describe("stress", () => {
    test("200 concurrent host-local ADDs on one store: 200 distinct addresses; 200 concurrent DELs empty it", async () => {
      const conf = JSON.stringify({ cniVersion: "1.0.0", name: `st${tag}`, type: "host-local", ipam: host.hostLocal(["10.230.0.0/22"]) });
      const ids = Array.from({ length: 200 }, (_, i) => `st${i}`);
      const adds = await Promise.all(ids.map((id) => call("host-local", "ADD", conf, { CNI_CONTAINERID: id, CNI_NETNS: "/run/netns/none" })));
      for (const r of adds) assert.equal(r.code, 0, r.stdout + r.stderr);
      const addresses = adds.map((r) => (JSON.parse(r.stdout) as Result).ips![0]!.address);
      assert.equal(new Set(addresses).size, 200, "no address given twice");
      assert.equal(host.allocations(`st${tag}`).length, 200);
      const dels = await Promise.all(ids.map((id) => call("host-local", "DEL", conf, { CNI_CONTAINERID: id, CNI_NETNS: "/run/netns/none" })));
      for (const r of dels) assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.deepEqual(host.allocations(`st${tag}`), []);
    });

    test("100 concurrent bridge chain ADDs (bridge + host-local, portmap, tuning): distinct addresses; DELs leave nothing", async () => {
      const net = host.writeNetwork({
        cniVersion: "1.0.0",
        name: `sb${tag}`,
        plugins: [
          {
            type: "bridge",
            bridge: `sb${tag}`,
            isGateway: true,
            ipMasq: true,
            ipam: host.hostLocal(["10.231.0.0/24"], { routes: [{ dst: "0.0.0.0/0" }] }),
          },
          { type: "portmap", capabilities: { portMappings: true } },
          { type: "tuning" },
        ],
      });
      const fwBefore = firewallState(host);
      const ctrs = Array.from({ length: 100 }, (_, i) => host.container(`tscni-rb-${tag}-${i}`));
      // The port mappings go with DEL too, as runtimes send them (Go's portmap, and ours, delete what DEL names).
      const caps = (i: number) => ({ CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 21000 + i, containerPort: 80, protocol: "tcp" }] }) });
      const adds = await Promise.all(ctrs.map((c, i) => host.cnitool("add", net, c, caps(i))));
      for (const r of adds) assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(new Set(adds.map((r) => (JSON.parse(r.stdout) as Result).ips![0]!.address)).size, 100);
      const dels = await Promise.all(ctrs.map((c, i) => host.cnitool("del", net, c, caps(i))));
      for (const r of dels) assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.deepEqual(host.allocations(net), []);
      assert.deepEqual(host.veths(), []);
      assert.equal(firewallState(host), fwBefore, "no rule or chain left");
      for (const c of ctrs) assert.deepEqual(nsState(c), ["lo"]);
    });

    /** Starts a command in the host namespace in its own process group; SIGKILLs the group after `ms`. */
    async function killedAfter(ms: number, cmd: string, args: string[], env: NodeJS.ProcessEnv, input: string): Promise<void> {
      const [c, a] = host.ns.commandLine(cmd, args);
      const child = spawn(c, a, { env: host.ns.callEnv(env), detached: true, stdio: ["pipe", "ignore", "ignore"] });
      child.stdin.on("error", () => undefined);
      child.stdin.end(input);
      const exited = new Promise((resolve) => child.once("exit", resolve));
      await sleep(ms);
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
      await exited;
    }

    const killCases: Array<{ label: string; conf: (n: number) => Record<string, unknown>; chain?: boolean; setup?: () => void; skip?: string }> = [
      {
        label: "bridge + host-local",
        conf: (n) => ({
          cniVersion: "1.0.0",
          name: `kb${tag}`,
          type: "bridge",
          bridge: `kb${tag}`,
          isGateway: true,
          ipMasq: true,
          ipam: host.hostLocal([`10.232.${n}.0/24`]),
        }),
      },
      {
        label: "a portmap chain (bridge + portmap)",
        chain: true,
        conf: (n) => ({
          cniVersion: "1.0.0",
          name: `kp${tag}${n}`,
          plugins: [
            { type: "bridge", bridge: `kp${tag}`, isGateway: true, ipam: host.hostLocal([`10.233.${n}.0/24`]) },
            { type: "portmap", capabilities: { portMappings: true } },
          ],
        }),
      },
      {
        label: "macvlan",
        setup: () => hostVeth(`km${tag}`),
        conf: (n) => ({ cniVersion: "1.0.0", name: `km${tag}`, type: "macvlan", master: `km${tag}`, ipam: host.hostLocal([`10.234.${n}.0/24`]) }),
      },
      { label: "tap", conf: (n) => ({ cniVersion: "1.0.0", name: `kt${tag}`, type: "tap", ipam: host.hostLocal([`10.235.${n}.0/24`]) }) },
      {
        label: "host-device",
        setup: () => hostVeth(`kh${tag}`),
        conf: (n) => ({ cniVersion: "1.0.0", name: `kh${tag}`, type: "host-device", device: `kh${tag}`, ipam: host.hostLocal([`10.225.${n}.0/24`]) }),
      },
      {
        label: "ipvlan",
        skip: lacking.ipvlan,
        setup: () => hostVeth(`km${tag}`),
        conf: (n) => ({ cniVersion: "1.0.0", name: `ki${tag}`, type: "ipvlan", master: `km${tag}`, ipam: host.hostLocal([`10.224.${n}.0/24`]) }),
      },
      {
        label: "vlan",
        skip: lacking.vlan,
        setup: () => hostVeth(`km${tag}`),
        conf: (n) => ({
          cniVersion: "1.0.0",
          name: `kv${tag}`,
          type: "vlan",
          master: `km${tag}`,
          vlanId: 100 + n,
          ipam: host.hostLocal([`10.223.${n}.0/24`]),
        }),
      },
      {
        label: "dummy",
        skip: lacking.dummy,
        conf: (n) => ({ cniVersion: "1.0.0", name: `kd${tag}`, type: "dummy", ipam: host.hostLocal([`10.222.${n}.0/24`]) }),
      },
    ];
    for (const k of killCases) {
      test(`SIGKILL at random points of ADD (${k.label}), then DEL twice: nothing left`, { skip: k.skip }, async () => {
        k.setup?.();
        const fwBefore = firewallState(host);
        const hostBefore = nsState(host.ns);
        // Seeded kill points from early start-up to past the end of a typical ADD.
        const delays = fc.sample(fc.integer({ min: 0, max: 400 }), { numRuns: 6, seed: FUZZ_SEED + k.label.length });
        for (const [i, ms] of delays.entries()) {
          const ctr = host.container(`tscni-rk-${tag}-${k.label.length}-${i}`);
          const conf = k.conf(i);
          const network = String(conf["name"]);
          if (k.chain) {
            host.writeNetwork(conf);
            const caps = { CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 22000 + i, containerPort: 80, protocol: "tcp" }] }) };
            const env = { ...process.env, NETCONFPATH: host.confDir, CNI_PATH: OUR_BIN, ...caps };
            await killedAfter(ms, path.join(OUR_BIN, "cnitool"), ["--cache-dir", host.cacheDir, "add", network, ctr.path], env, "");
            for (let d = 0; d < 2; d++) {
              const r = await host.cnitool("del", network, ctr, caps);
              assert.equal(r.code, 0, `DEL ${d + 1} after a kill at ${ms} ms: ${r.stdout}${r.stderr}`);
            }
          } else {
            const env = {
              ...process.env,
              CNI_COMMAND: "ADD",
              CNI_PATH: OUR_BIN,
              CNI_IFNAME: "eth0",
              CNI_CONTAINERID: `k${i}`,
              CNI_NETNS: ctr.path,
              CNI_ARGS: "",
            };
            await killedAfter(ms, path.join(OUR_BIN, String(conf["type"])), [], env, JSON.stringify(conf));
            for (let d = 0; d < 2; d++) {
              const r = await call(String(conf["type"]), "DEL", JSON.stringify(conf), { CNI_CONTAINERID: `k${i}`, CNI_NETNS: ctr.path });
              assert.equal(r.code, 0, `DEL ${d + 1} after a kill at ${ms} ms: ${r.stdout}${r.stderr}`);
            }
          }
          assert.deepEqual(nsState(ctr), ["lo"], `container after a kill at ${ms} ms and DEL`);
          assert.deepEqual(host.allocations(network), [], `allocations after a kill at ${ms} ms and DEL`);
        }
        assert.deepEqual(nsState(host.ns), hostBefore, "host links and addresses");
        assert.equal(firewallState(host), fwBefore, "host firewall");
        assert.deepEqual(
          readdirSync(path.join(host.cacheDir))
            .flatMap((d) => filesUnder(path.join(host.cacheDir, d)))
            .filter((f) => f.includes(`kp${tag}`)),
          [],
          "cache entries",
        );
      });
    }

    test("DEL three times: with prevResult, without, and with the netns gone (every main plugin this kernel can run, and a meta chain)", async () => {
      hostVeth(`kd${tag}`);
      const confs: Array<Record<string, unknown>> = [
        {
          cniVersion: "1.0.0",
          name: `db${tag}`,
          type: "bridge",
          bridge: `db${tag}`,
          isGateway: true,
          ipMasq: true,
          ipam: host.hostLocal(["10.236.1.0/24"]),
        },
        { cniVersion: "1.0.0", name: `dp${tag}`, type: "ptp", ipMasq: true, ipam: host.hostLocal(["10.236.2.0/24"]) },
        { cniVersion: "1.0.0", name: `dm${tag}`, type: "macvlan", master: `kd${tag}`, ipam: host.hostLocal(["10.236.3.0/24"]) },
        { cniVersion: "1.0.0", name: `dt${tag}`, type: "tap", ipam: host.hostLocal(["10.236.4.0/24"]) },
        { cniVersion: "1.0.0", name: `dl${tag}`, type: "loopback" },
        { cniVersion: "1.0.0", name: `dh${tag}`, type: "host-device", device: `dh${tag}`, ipam: host.hostLocal(["10.236.6.0/24"]) },
        ...(lacking.ipvlan
          ? []
          : [{ cniVersion: "1.0.0", name: `di${tag}`, type: "ipvlan", master: `kd${tag}`, ipam: host.hostLocal(["10.236.7.0/24"]) }]),
        ...(lacking.vlan
          ? []
          : [{ cniVersion: "1.0.0", name: `dv${tag}`, type: "vlan", master: `kd${tag}`, vlanId: 200, ipam: host.hostLocal(["10.236.8.0/24"]) }]),
        ...(lacking.dummy ? [] : [{ cniVersion: "1.0.0", name: `dd${tag}`, type: "dummy", ipam: host.hostLocal(["10.236.9.0/24"]) }]),
      ];
      for (const conf of confs) {
        const type = String(conf["type"]);
        for (const variant of ["with prevResult", "without prevResult", "netns gone"] as const) {
          if (type === "host-device") hostVeth(`dh${tag}`); // (a veth taken into a namespace that is deleted goes with it)
          const ctr = host.container(`tscni-rd-${tag}-${type}-${variant.length}`);
          const env = { CNI_CONTAINERID: `d-${variant.length}`, CNI_NETNS: ctr.path };
          const add = await call(type, "ADD", JSON.stringify(conf), env);
          assert.equal(add.code, 0, `${type} ADD: ${add.stdout}${add.stderr}`);
          const delConf = variant === "with prevResult" ? { ...conf, prevResult: JSON.parse(add.stdout) } : conf;
          if (variant === "netns gone") ctr.delete();
          for (let d = 0; d < 3; d++) {
            const r = await call(type, "DEL", JSON.stringify(delConf), env);
            assert.equal(r.code, 0, `${type} DEL ${d + 1} (${variant}): ${r.stdout}${r.stderr}`);
          }
          if (variant !== "netns gone") assert.deepEqual(nsState(ctr), ["lo"], `${type} (${variant})`);
          assert.deepEqual(host.allocations(String(conf["name"])), [], `${type} (${variant})`);
        }
      }
      // A meta chain through libcni: DEL with the cached result, then with the cache gone, then with the netns gone.
      const net = host.writeNetwork({
        cniVersion: "1.0.0",
        name: `dc${tag}`,
        plugins: [
          { type: "bridge", bridge: `dc${tag}`, isGateway: true, ipam: host.hostLocal(["10.236.5.0/24"]) },
          { type: "portmap", capabilities: { portMappings: true } },
          { type: "tuning" },
          { type: "bandwidth", ingressRate: 800000, ingressBurst: 100000 },
          { type: "firewall" },
        ],
      });
      const ctr = host.container(`tscni-rd-${tag}-chain`);
      await host.add(net, ctr, { CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 23000, containerPort: 80, protocol: "tcp" }] }) });
      const caps = { CAP_ARGS: JSON.stringify({ portMappings: [{ hostPort: 23000, containerPort: 80, protocol: "tcp" }] }) };
      await host.must("del", net, ctr, caps);
      await host.must("del", net, ctr, caps);
      ctr.delete();
      await host.must("del", net, ctr.path, caps);
      assert.deepEqual(host.allocations(net), []);
    });
  });

  describe("hostile names and paths", () => {
    test("container IDs, ifnames, network names: refused with a well-known error, or contained in the state dirs", async () => {
      const root = path.join(stateRoot, "names");
      const store = path.join(root, "store");
      mkdirSync(store, { recursive: true });
      const ctr = host.container(`tscni-rn-${tag}`);
      const hostile = ["..", "../x", "a/b", "/etc/passwd", "x\ny", "a".repeat(300), "-rf", ".", "x y", "é"];
      let n = 0;
      for (const value of hostile) {
        const variants: Array<{ env: Record<string, string>; name: string }> = [
          { env: { CNI_CONTAINERID: value, CNI_IFNAME: "eth0" }, name: `hn${tag}` },
          { env: { CNI_CONTAINERID: `hn${++n}`, CNI_IFNAME: value }, name: `hn${tag}` },
          { env: { CNI_CONTAINERID: `hn${++n}` }, name: value },
        ];
        for (const v of variants) {
          for (const type of ["host-local", "bridge"]) {
            const conf = JSON.stringify({
              cniVersion: "1.0.0",
              name: v.name,
              type,
              bridge: `hn${tag}`,
              ipam: { type: "host-local", subnet: "10.237.0.0/24", dataDir: store },
            });
            const r = await call(type, "ADD", conf, { CNI_NETNS: ctr.path, ...v.env }, root);
            if (r.code !== 0) {
              assert.equal(checkErrorOutput(r.stdout, r.stderr, r.code), undefined, `${type} with ${JSON.stringify(v)}`);
            } else {
              const del = await call(type, "DEL", conf, { CNI_NETNS: ctr.path, ...v.env }, root);
              assert.equal(del.code, 0, `${type} DEL with ${JSON.stringify(v)}: ${del.stdout}${del.stderr}`);
            }
          }
        }
      }
      // Everything written is under the store (each network's own directory), nothing beside it or above it.
      assert.deepEqual(readdirSync(root), ["store"]);
      for (const f of filesUnder(store)) {
        const real = path.resolve(store, f);
        assert.ok(real.startsWith(store + path.sep), `${f} is inside the store`);
      }
      assert.deepEqual(nsState(ctr), ["lo"]);
    });

    test("dataDirs with `..` and symlinks: the store is where the path resolves, nowhere else", async () => {
      const root = path.join(stateRoot, "paths");
      mkdirSync(path.join(root, "real"), { recursive: true });
      mkdirSync(path.join(root, "a", "b"), { recursive: true });
      symlinkSync(path.join(root, "real"), path.join(root, "link"));
      const cases = [
        { dataDir: path.join(root, "a", "b", "..", "..", "dotted"), expect: path.join(root, "dotted") },
        { dataDir: path.join(root, "link"), expect: path.join(root, "real") },
        { dataDir: "rel/dir", expect: path.join(root, "a", "b", "rel", "dir") }, // relative to the caller's directory, as Go
      ];
      for (const [i, c] of cases.entries()) {
        const name = `hp${tag}${i}`;
        const conf = JSON.stringify({
          cniVersion: "1.0.0",
          name,
          type: "host-local",
          ipam: { type: "host-local", subnet: "10.238.0.0/24", dataDir: c.dataDir },
        });
        const env = { CNI_CONTAINERID: `hp${i}`, CNI_NETNS: "/run/netns/none" };
        const add = await call("host-local", "ADD", conf, env, path.join(root, "a", "b"));
        assert.equal(add.code, 0, add.stdout + add.stderr);
        assert.ok(existsSync(path.join(c.expect, name, "10.238.0.2")), `${c.dataDir}: the allocation is under ${c.expect}`);
        const del = await call("host-local", "DEL", conf, env, path.join(root, "a", "b"));
        assert.equal(del.code, 0, del.stdout + del.stderr);
      }
      assert.deepEqual(readdirSync(root).sort(), ["a", "dotted", "link", "real"]);
    });

    test("file modes: the host-local store, the result cache and tuning's backups are Go's or stricter", async () => {
      const ctr = host.container(`tscni-rm-${tag}`);
      const store = path.join(stateRoot, "modes-ipam");
      const tuningDir = path.join(stateRoot, "modes-tuning");
      const net = host.writeNetwork({
        cniVersion: "1.0.0",
        name: `md${tag}`,
        plugins: [
          { type: "bridge", bridge: `md${tag}`, isGateway: true, ipam: { type: "host-local", subnet: "10.239.0.0/24", dataDir: store } },
          { type: "tuning", mtu: 1400, dataDir: tuningDir },
        ],
      });
      await host.add(net, ctr);
      const mode = (p: string) => statSync(p).mode & 0o777;
      const noMoreThan = (p: string, max: number) => assert.equal(mode(p) & ~max, 0, `${p}: mode ${mode(p).toString(8)} exceeds ${max.toString(8)}`);
      noMoreThan(path.join(store, net), 0o755);
      // (The lock file: 0750, as Go's host-local creates it; the allocations 0644 as 1.1.1's or 0600 as newer ones.)
      for (const f of filesUnder(path.join(store, net))) noMoreThan(path.join(store, net, f), f === "lock" ? 0o750 : 0o644);
      const results = path.join(host.cacheDir, "results");
      noMoreThan(results, 0o700);
      for (const f of filesUnder(results)) noMoreThan(path.join(results, f), 0o600);
      for (const f of filesUnder(tuningDir)) noMoreThan(path.join(tuningDir, f), f.endsWith(".json") ? 0o600 : 0o700);
      await host.must("del", net, ctr);
    });
  });
});
