/**
 * The portmap plugin as a runtime drives it: a conflist of our bridge, host-local and portmap run by cnitool
 * (our libcni) in a test-made host namespace, with both backends and both address families; traffic through
 * the mapped port from the host's own address, from 127.0.0.1 and from the container itself (hairpin);
 * and the plugin binary run directly for what cnitool never sends (DEL without prevResult or netns, GC, bad
 * configs). The Go 1.1.1 portmap is the oracle: the same chain leaves byte-identical `iptables-save -t nat`
 * output, and each implementation's DEL removes the other's rules.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { dnatChainName } from "#plugins/meta/portmap/iptables.js";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { fetchFrom, startHelloServer } from "#testing/published-port.js";
import { cniError, containerIdOf, Host, type Result } from "#testing/rig.js";

const skip = skipReason(true, existsSync(path.join(OUR_BIN, "portmap")) ? undefined : "dist/bin/portmap is not built");
if (skip) console.log(`# skipping portmap integration tests: ${skip}`);

const OUR_PORTMAP = path.join(OUR_BIN, "portmap");
const GO_PORTMAP = path.join(GO_BIN, "portmap");
const BRIDGE = path.join(OUR_BIN, "bridge");
const HAVE_CONNTRACK = spawnSync("conntrack", ["--version"]).status === 0;
const IPTABLES_NFT = /nf_tables/.test(spawnSync("iptables", ["--version"], { encoding: "utf8" }).stdout ?? "");

type Json = Record<string, unknown>;
type Backend = "iptables" | "nftables";

const tcp = (hostPort: number, containerPort: number, extra: Json = {}) => ({ hostPort, containerPort, protocol: "tcp", ...extra });
const udp = (hostPort: number, containerPort: number, extra: Json = {}) => ({ hostPort, containerPort, protocol: "udp", ...extra });
const capArgs = (portMappings: Json[]) => ({ CAP_ARGS: JSON.stringify({ portMappings }) });

/** Sends one UDP datagram from `ns` (creating a conntrack entry). */
async function sendUdp(ns: Netns, host: string, port: number): Promise<void> {
  const script = "const s = require('dgram').createSocket('udp4'); s.send('x', Number(process.argv[2]), process.argv[1], () => s.close());";
  const r = await ns.run(process.execPath, ["-e", script, host, String(port)]);
  assert.equal(r.code, 0, r.stderr);
}

/** The conntrack entries of UDP flows to `port` in `ns`. */
const udpFlows = (ns: Netns, port: number): string[] =>
  spawnSync("ip", ["netns", "exec", ns.name, "conntrack", "-L", "-p", "udp", "--orig-port-dst", String(port)], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((l) => l.includes(`dport=${port}`));

describe("portmap plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  /** A fresh host namespace (our plugins only) and unique names for one test. */
  const newHost = () => {
    const n = ++seq;
    return { host: new Host(cleanup, `tscni-ph-${tag}-${n}`, OUR_BIN), br: `tp${tag}${n}`, net: `pm${tag}n${n}`, n };
  };

  /** bridge (gateway, hairpin) + host-local + portmap, dual-stack unless told. */
  const writeChain = (host: Host, net: string, br: string, portmap: Json = {}, subnets = ["10.203.0.0/24", "fd20:203::/64"], cniVersion = "1.0.0") =>
    host.writeNetwork({
      cniVersion,
      name: net,
      plugins: [
        { type: "bridge", bridge: br, isGateway: true, hairpinMode: true, ipam: host.hostLocal(subnets) },
        { type: "portmap", capabilities: { portMappings: true }, ...portmap },
      ],
    });

  const nat = (host: Host) => host.natRules();

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: ADD, traffic (host address, 127.0.0.1, IPv6, hairpin), CHECK, DEL, DEL again`, async () => {
      const { host, br, net } = newHost();
      const dataDir = cleanup.dir("tscni-pm-data-");
      writeChain(host, net, br, { backend, dataDir });
      const ctr = host.container(`tscni-pc-${tag}-${seq}`);
      const id = containerIdOf(ctr);
      const maps = capArgs([tcp(8080, 80), udp(5353, 53), tcp(8443, 80, { hostIP: "fd20:203::1" })]);

      const r = await host.add(net, ctr, maps);
      assert.deepEqual(
        r.ips?.map((i) => i.address),
        ["10.203.0.2/24", "fd20:203::2/64"],
        "portmap passes the prevResult through",
      );
      if (backend === "iptables") {
        const rules = nat(host);
        assert.match(
          rules,
          new RegExp(
            `^-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\\\"${net}\\\\" id: \\\\"${id}\\\\"" -m multiport --dports 8080,8443 -j ${dnatChainName(net, id)}$`,
            "m",
          ),
        );
        assert.match(
          rules,
          new RegExp(
            `^-A ${dnatChainName(net, id)} -d fd20:203::1/128 -p tcp -m tcp --dport 8443 -j DNAT --to-destination \\[fd20:203::2\\]:80$`,
            "m",
          ),
        );
        assert.doesNotMatch(host.nftRuleset(), /cni_hostport/);
      } else {
        const ruleset = host.nftRuleset();
        assert.match(ruleset, new RegExp(`tcp dport 8080 dnat to 10\\.203\\.0\\.2:80 comment "${id}"`));
        assert.match(ruleset, new RegExp(`ip6 daddr fd20:203::1 tcp dport 8443 dnat to \\[fd20:203::2\\]:80 comment "${id}"`));
        assert.doesNotMatch(nat(host), /CNI-HOSTPORT/);
        assert.deepEqual(readdirSync(path.join(dataDir, net)), [id]);
      }
      assert.equal(host.sysctl(`net.ipv4.conf.${br}.route_localnet`), "1");

      await startHelloServer(cleanup, ctr);
      assert.equal(await fetchFrom(host.ns, "10.203.0.1", 8080), "hello", "from the host's own address");
      assert.equal(await fetchFrom(host.ns, "127.0.0.1", 8080), "hello", "from 127.0.0.1 (route_localnet, masquerade)");
      assert.equal(await fetchFrom(host.ns, "fd20:203::1", 8080), "hello", "over IPv6");
      assert.equal(await fetchFrom(host.ns, "fd20:203::1", 8443), "hello", "to a hostIP");
      assert.equal(await fetchFrom(ctr, "10.203.0.1", 8080), "hello", "hairpin: the container through its own host port");
      assert.match(await fetchFrom(host.ns, "10.203.0.1", 8443, 1), /^failed/, "an IPv6 hostIP does not forward IPv4");

      await host.must("check", net, ctr, maps);
      await host.must("del", net, ctr, maps);
      assert.doesNotMatch(nat(host), /CNI-DN-/);
      assert.doesNotMatch(host.nftRuleset(), /comment "cnitool-/);
      if (backend === "nftables") assert.deepEqual(readdirSync(path.join(dataDir, net)), []);
      assert.match(await fetchFrom(host.ns, "10.203.0.1", 8080, 1), /^failed/, "no forwarding after DEL");
      await host.must("del", net, ctr, maps);
    });

    test(`${backend}: an IPv4-only network passes CHECK (Go 1.1.1's fails), and CHECK notices a missing rule`, async () => {
      const { host, br, net } = newHost();
      writeChain(host, net, br, { backend, dataDir: cleanup.dir("tscni-pm-data-") }, ["10.203.1.0/24"]);
      const ctr = host.container(`tscni-pc-${tag}-${seq}`);
      const maps = capArgs([tcp(8080, 80)]);
      await host.add(net, ctr, maps);
      await host.must("check", net, ctr, maps);
      if (backend === "iptables") {
        host.ns.exec("iptables", ["-t", "nat", "-F", dnatChainName(net, containerIdOf(ctr))]);
      } else {
        host.ns.exec("nft", ["flush", "chain", "ip", "cni_hostport", "hostports"]);
      }
      const r = await host.cnitool("check", net, ctr, maps);
      assert.notEqual(r.code, 0, "CHECK must fail when the DNAT rules are gone");
      await host.must("del", net, ctr, maps);
    });
  }

  test("no portMappings: ADD, CHECK and DEL do nothing at all", async () => {
    const { host, br, net } = newHost();
    writeChain(host, net, br);
    const ctr = host.container(`tscni-pc-${tag}-${seq}`);
    await host.add(net, ctr);
    assert.doesNotMatch(nat(host), /CNI-/);
    assert.equal(host.nftRuleset().trim(), "");
    await host.must("check", net, ctr);
    await host.must("del", net, ctr);
    assert.doesNotMatch(nat(host), /CNI-/);
  });

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: DEL run directly without prevResult and without netns removes the forwarding`, async () => {
      const { host, br, net } = newHost();
      const dataDir = cleanup.dir("tscni-pm-data-");
      writeChain(host, net, br, { backend, dataDir });
      const ctr = host.container(`tscni-pc-${tag}-${seq}`);
      const id = containerIdOf(ctr);
      const mappings = [tcp(8080, 80)];
      await host.add(net, ctr, capArgs(mappings));
      const conf = { cniVersion: "1.0.0", name: net, type: "portmap", backend, dataDir, runtimeConfig: { portMappings: mappings } };
      for (let i = 0; i < 2; i++) {
        const r = await host.plugin(OUR_PORTMAP, "DEL", conf, { CNI_NETNS: "", CNI_CONTAINERID: id });
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.doesNotMatch(nat(host), /CNI-DN-/);
        assert.doesNotMatch(host.nftRuleset(), new RegExp(`comment "${id}"`));
      }
      await host.must("del", net, ctr, capArgs(mappings));
    });
  }

  test("iptables-nft: ADD, CHECK, DEL and GC of a container with mappings start no tool (rules and flows over netlink)", {
    skip: IPTABLES_NFT ? false : "iptables here is not iptables-nft",
  }, async () => {
    const { host, br, net } = newHost();
    writeChain(host, net, br, {}, ["10.203.4.0/24", "fd20:204::/64"]);
    const ctr = host.container(`tscni-pc-${tag}-${seq}`);
    const id = containerIdOf(ctr);
    const mappings = [tcp(8080, 80), udp(5353, 53)];
    const prevResult = await host.add(net, ctr, capArgs(mappings));
    const trace = path.join(cleanup.dir("tscni-pm-trace-"), "calls.jsonl");
    const env = { CNI_NETNS: ctr.path, CNI_CONTAINERID: id, TSCNI_RESIDENT: "exec", TSCNI_TRACE_PHASES: trace };
    const conf = { cniVersion: "1.1.0", name: net, type: "portmap", runtimeConfig: { portMappings: mappings }, prevResult };
    // A second ADD finds everything there; a firewall reload's loss is put back; CHECK; DEL; GC of nothing valid.
    for (const [command, extra] of [
      ["ADD", {}],
      ["CHECK", {}],
      ["DEL", {}],
      ["GC", { "cni.dev/valid-attachments": [] }],
    ] as const) {
      if (command === "CHECK") spawnSync("ip", ["netns", "exec", host.ns.name, "iptables", "-t", "nat", "-F", "CNI-HOSTPORT-SETMARK"]);
      const r = await host.plugin(OUR_PORTMAP, command === "CHECK" ? "ADD" : command, { ...conf, ...extra }, env);
      assert.equal(r.code, 0, `${command}: ${r.stdout}${r.stderr}`);
      if (command === "CHECK") {
        assert.match(nat(host), /-A CNI-HOSTPORT-SETMARK .*--set-xmark 0x2000\/0x2000/, "the flushed rule is back");
        const c = await host.plugin(OUR_PORTMAP, "CHECK", conf, env);
        assert.equal(c.code, 0, c.stdout + c.stderr);
      }
    }
    assert.doesNotMatch(nat(host), /CNI-DN-/);
    const calls = readFileSync(trace, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { command: string; phases: Array<{ kind: string; label: string }> });
    assert.equal(calls.length, 5);
    assert.deepEqual(
      calls.flatMap((c) => c.phases.filter((p) => p.kind === "spawn").map((p) => `${c.command}: ${p.label}`)),
      [],
    );
    assert.ok(
      calls.every((c) => c.phases.some((p) => p.kind === "netlink")),
      "the calls did their work over netlink",
    );
    await host.must("del", net, ctr, capArgs(mappings));
  });

  test("bad configs are refused with code 7 naming the key and value, and nothing is applied", async () => {
    const { host } = newHost();
    const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address: "10.203.2.2/24", interface: 0 }] };
    const base = { cniVersion: "1.0.0", name: "pmbad", type: "portmap", prevResult };
    const cases: Array<[Json, RegExp]> = [
      [{ runtimeConfig: { portMappings: [tcp(8080, 80), tcp(70000, 80)] } }, /"runtimeConfig\.portMappings\[1\]\.hostPort": 70000/],
      [
        { runtimeConfig: { portMappings: [tcp(8080, 80), { hostPort: 1, containerPort: 1, protocol: "icmp" }] } },
        /"runtimeConfig\.portMappings\[1\]\.protocol": "icmp"/,
      ],
      [{ runtimeConfig: { portMappings: [tcp(8080, 80, { hostIP: "1.2.3" })] } }, /"runtimeConfig\.portMappings\[0\]\.hostIP": "1\.2\.3"/],
      [{ backend: "ebpf", runtimeConfig: { portMappings: [tcp(8080, 80)] } }, /"backend": "ebpf"/],
      [
        { backend: "nftables", conditionsV4: ["-s", "1.2.3.4"], runtimeConfig: { portMappings: [tcp(8080, 80)] } },
        /nftables backend was requested but configuration contains iptables-specific options \[conditionsV4\]/,
      ],
    ];
    for (const [extra, msg] of cases) {
      const r = await host.plugin(OUR_PORTMAP, "ADD", { ...base, ...extra }, { CNI_NETNS: "/proc/self/ns/net", CNI_NETNS_OVERRIDE: "1" });
      assert.notEqual(r.code, 0);
      const e = cniError(r);
      assert.equal(e.code, 7, r.stdout);
      assert.match(e.msg, msg);
    }
    const notChained = await host.plugin(
      OUR_PORTMAP,
      "ADD",
      { ...base, prevResult: undefined, runtimeConfig: { portMappings: [tcp(8080, 80)] } },
      { CNI_NETNS: "/proc/self/ns/net", CNI_NETNS_OVERRIDE: "1" },
    );
    assert.match(cniError(notChained).msg, /must be called as chained plugin/);
    assert.doesNotMatch(nat(host), /CNI-/);
    assert.equal(host.nftRuleset().trim(), "");
  });

  test("an ADD that fails part-way (IPv6 rules refused) removes what it made", async () => {
    const { host } = newHost();
    const id = "halfway";
    const prevResult = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: "/x" }],
      ips: [
        { address: "10.203.9.2/24", interface: 0 },
        { address: "fd20:209::2/64", interface: 0 },
      ],
    };
    const conf = {
      cniVersion: "1.0.0",
      name: `pm${tag}half`,
      type: "portmap",
      conditionsV6: ["--no-such-option"],
      prevResult,
      runtimeConfig: { portMappings: [tcp(8080, 80)] },
    };
    const r = await host.plugin(OUR_PORTMAP, "ADD", conf, { CNI_NETNS: "/proc/self/ns/net", CNI_NETNS_OVERRIDE: "1", CNI_CONTAINERID: id });
    assert.notEqual(r.code, 0);
    assert.match(cniError(r).msg, /ip6tables/);
    assert.doesNotMatch(nat(host), /CNI-DN-/, "the IPv4 chain made before the failure is gone again");
  });

  test("UDP conntrack entries to a mapped port are flushed after ADD and after DEL", {
    skip: HAVE_CONNTRACK ? false : "conntrack is not installed",
  }, async () => {
    const { host, br, net } = newHost();
    writeChain(host, net, br, {}, ["10.203.3.0/24"]);
    const first = host.container(`tscni-pc-${tag}-${seq}a`);
    const second = host.container(`tscni-pc-${tag}-${seq}b`);
    await host.add(net, first, capArgs([tcp(8080, 80)])); // the nat table makes the namespace track connections
    await sendUdp(host.ns, "10.203.3.1", 5353);
    assert.equal(udpFlows(host.ns, 5353).length, 1, "a flow to the not yet mapped port");
    await host.add(net, second, capArgs([udp(5353, 53)]));
    assert.deepEqual(udpFlows(host.ns, 5353), [], "ADD forgot the stale flow");
    await sendUdp(host.ns, "10.203.3.1", 5353);
    assert.match(udpFlows(host.ns, 5353).join("\n"), /src=10\.203\.3\.\d+ dst=10\.203\.3\.1 sport=53 /, "the new flow is DNATed to the container");
    await host.must("del", net, second, capArgs([udp(5353, 53)]));
    assert.deepEqual(udpFlows(host.ns, 5353), [], "DEL forgot the flow to the container");
    await host.must("del", net, first, capArgs([tcp(8080, 80)]));
  });

  describe("against Go 1.1.1 portmap (cniVersion 1.0.0)", () => {
    const ID = `pmdiff${tag}`;
    /** Two host namespaces with our bridge and a container each, attached under the same container ID. */
    async function twin(subnets: string[]) {
      const pair = [newHost(), newHost()];
      const net = `pm${tag}diff`;
      const br = `tp${tag}d${seq}`;
      const results: Result[] = [];
      for (const [i, { host }] of pair.entries()) {
        const ctr = host.container(`tscni-pc-${tag}-d${seq}-${i}`);
        const conf = { cniVersion: "1.0.0", name: net, type: "bridge", bridge: br, isGateway: true, ipam: host.hostLocal(subnets) };
        const r = await host.plugin(BRIDGE, "ADD", conf, { CNI_NETNS: ctr.path, CNI_CONTAINERID: ID });
        assert.equal(r.code, 0, r.stdout + r.stderr);
        results.push(JSON.parse(r.stdout) as Result);
      }
      assert.deepEqual(results[0]!.ips, results[1]!.ips);
      return { ours: pair[0]!.host, go: pair[1]!.host, net, br, prevResult: results[0]! };
    }
    const run = async (host: Host, binary: string, command: string, conf: Json) => {
      const r = await host.plugin(binary, command, conf, {
        CNI_NETNS: command === "DEL" ? "" : "/proc/self/ns/net",
        CNI_NETNS_OVERRIDE: "1",
        CNI_CONTAINERID: ID,
      });
      assert.equal(r.code, 0, `${binary} ${command}: ${r.stdout}${r.stderr}`);
    };

    const configs: Array<[string, Json, string[]]> = [
      [
        "many mappings, protocols and hostIPs",
        {
          runtimeConfig: {
            portMappings: [
              tcp(8080, 80),
              udp(5353, 53, { hostIP: "10.203.4.1" }),
              tcp(8443, 443, { hostIP: "::" }),
              { hostPort: 9000, containerPort: 9000, protocol: "sctp" },
              tcp(7000, 70, { hostIP: "fd20:204::1" }),
              ...Array.from({ length: 16 }, (_, i) => udp(20000 + i, 2000 + i)),
            ],
          },
        },
        ["10.203.4.0/24", "fd20:204::/64"],
      ],
      [
        "markMasqBit and conditions",
        {
          markMasqBit: 5,
          conditionsV4: ["!", "-s", "192.0.2.0/24"],
          conditionsV6: ["-m", "comment", "--comment", "v6 entry"],
          runtimeConfig: { portMappings: [tcp(8080, 80), udp(53, 5353)] },
        },
        ["10.203.5.0/24", "fd20:205::/64"],
      ],
      ["snat off", { snat: false, runtimeConfig: { portMappings: [tcp(8080, 80)] } }, ["10.203.6.0/24", "fd20:206::/64"]],
    ];
    for (const [what, keys, subnets] of configs) {
      test(`${what}: identical iptables-save, our CHECK accepts Go's rules, each DEL removes the other's`, async () => {
        const { ours, go, net, br, prevResult } = await twin(subnets);
        const conf = { cniVersion: "1.0.0", name: net, type: "portmap", ...keys, prevResult };
        await run(ours, OUR_PORTMAP, "ADD", conf);
        await run(go, GO_PORTMAP, "ADD", conf);
        const rules = nat(ours);
        assert.match(rules, /CNI-DN-/);
        assert.equal(rules, nat(go), "the same iptables-save -t nat output");
        if (keys["snat"] !== false) assert.equal(ours.sysctl(`net.ipv4.conf.${br}.route_localnet`), go.sysctl(`net.ipv4.conf.${br}.route_localnet`));

        await run(go, OUR_PORTMAP, "CHECK", conf);
        // Go 1.1.1's CHECK looks for each family's rules in both iptables and ip6tables, so it never passes;
        // it fails the same way on our rules as on its own.
        const goCheck = async (host: Host) => {
          const r = await host.plugin(GO_PORTMAP, "CHECK", conf, { CNI_NETNS: "/proc/self/ns/net", CNI_NETNS_OVERRIDE: "1", CNI_CONTAINERID: ID });
          return { code: r.code, out: r.stdout };
        };
        assert.deepEqual(await goCheck(ours), await goCheck(go));
        // A second ADD changes nothing.
        await run(ours, OUR_PORTMAP, "ADD", conf);
        assert.equal(nat(ours), rules);

        const delConf = { ...conf, prevResult: undefined };
        await run(ours, GO_PORTMAP, "DEL", delConf);
        await run(go, OUR_PORTMAP, "DEL", delConf);
        assert.doesNotMatch(nat(ours), /CNI-DN-/);
        assert.equal(nat(ours), nat(go), "the same leftovers: only the shared top-level chains");
      });
    }
  });

  describe("GC", () => {
    const prev = (address: string) => ({ cniVersion: "1.1.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address, interface: 0 }] });
    const addDirect = async (host: Host, conf: Json, id: string, address: string) => {
      const r = await host.plugin(
        OUR_PORTMAP,
        "ADD",
        { ...conf, prevResult: prev(address) },
        { CNI_NETNS: "/proc/self/ns/net", CNI_NETNS_OVERRIDE: "1", CNI_CONTAINERID: id },
      );
      assert.equal(r.code, 0, r.stdout + r.stderr);
    };
    const gc = async (host: Host, conf: Json, valid?: string[]) => {
      const body = valid ? { ...conf, "cni.dev/valid-attachments": valid.map((containerID) => ({ containerID, ifname: "eth0" })) } : conf;
      const r = await host.plugin(OUR_PORTMAP, "GC", body, {});
      assert.equal(r.code, 0, r.stdout + r.stderr);
    };

    for (const backend of ["iptables", "nftables"] as const satisfies readonly Backend[]) {
      test(`${backend}: stale attachments are removed, live ones and other networks' untouched`, async () => {
        const { host } = newHost();
        const dataDir = cleanup.dir("tscni-pm-data-");
        const conf = (name: string) => ({
          cniVersion: "1.1.0",
          name,
          type: "portmap",
          backend,
          dataDir,
          runtimeConfig: { portMappings: [tcp(8080, 80)] },
        });
        const [a, b] = [`pm${tag}gca`, `pm${tag}gcb`];
        await addDirect(host, conf(a), "live", "10.203.7.2/24");
        await addDirect(host, conf(a), "stale", "10.203.7.3/24");
        await addDirect(host, conf(b), "other", "10.203.8.2/24");
        const present = (id: string, net: string) =>
          backend === "iptables" ? nat(host).includes(`:${dnatChainName(net, id)} `) : host.nftRuleset().includes(`comment "${id}"`);

        await gc(host, { cniVersion: "1.1.0", name: a, type: "portmap", backend, dataDir }); // no valid-attachments: nothing is known stale
        assert.ok(present("stale", a));
        await gc(host, { cniVersion: "1.1.0", name: a, type: "portmap", backend, dataDir }, ["live"]);
        assert.equal(present("stale", a), false, "the stale attachment's forwarding is gone");
        assert.ok(present("live", a), "the live attachment keeps its forwarding");
        assert.ok(present("other", b), "another network's attachment is not this GC's business");
        if (backend === "iptables") assert.doesNotMatch(nat(host), /id: \\"stale\\"/);
        else assert.deepEqual(readdirSync(path.join(dataDir, a)), ["live"]);

        const status = await host.plugin(OUR_PORTMAP, "STATUS", { cniVersion: "1.1.0", name: a, type: "portmap", backend }, {});
        assert.equal(status.code, 0, status.stdout + status.stderr);
      });
    }
  });
});
