/**
 * The ptp plugin as a runtime drives it: the built binaries through cnitool, in namespaces made by the
 * test (a "host" namespace per scenario, so forwarding sysctls, veths and firewall rules never touch the
 * real host). IPAM is host-local from CNI_PATH=dist/bin:/usr/lib/cni (ours when built, else Go's).
 * A differential test runs Go's /usr/lib/cni/ptp on the same conflist and compares what each leaves.
 */

import assert from "node:assert/strict";
import { existsSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { containerIdForNetns } from "#runtime/container-ids.js";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { Host, type Iface, type IPConf, MIXED_PATH, type Result } from "#testing/rig.js";

const skip = skipReason(true, existsSync(path.join(GO_BIN, "ptp")) ? undefined : "Go's ptp is not in /usr/lib/cni");
if (skip) console.log(`# skipping ptp integration tests: ${skip}`);

const OUR_HOST_LOCAL = existsSync(path.join(OUR_BIN, "host-local"));

/** ptp results always name both interfaces and the addresses. */
type PtpResult = Result & Required<Pick<Result, "interfaces" | "ips">>;

/** Writes a conflist in `host` whose first plugin is ptp with `ptp` keys and a host-local IPAM over `ranges`. */
function ptpNetwork(host: Host, name: string, cniVersion: string, ranges: string[], ptp: Record<string, unknown> = {}): string {
  const routes = ranges.map((r) => ({ dst: r.includes(":") ? "::/0" : "0.0.0.0/0" }));
  return host.writeNetwork({ cniVersion, name, plugins: [{ type: "ptp", ...ptp, ipam: host.hostLocal(ranges, { routes }) }] });
}

type Json = Record<string, unknown>;
const ipJson = (ns: Netns, args: string[]) => ns.ipJson(args) as Json[];

/** Link-local addresses derive from random MACs; leave them out of comparisons. */
const isLinkLocal = (local: string) => /^fe80:/i.test(local) || /^169\.254\./.test(local);

function addressesOf(ns: Netns, dev: string): string[] {
  const [link] = ipJson(ns, ["addr", "show", "dev", dev]);
  const infos = (link?.["addr_info"] ?? []) as Json[];
  return infos
    .filter((a) => !isLinkLocal(String(a["local"])))
    .map(
      (a) => `${String(a["local"])}/${String(a["prefixlen"])}${a["broadcast"] ? ` brd ${String(a["broadcast"])}` : ""} scope ${String(a["scope"])}`,
    )
    .sort();
}

/** Routes of a family as `dst via gw dev D proto P scope S src X metric M`, with `dev` renamed by `rename`. */
function routesOf(ns: Netns, family: 4 | 6, rename: (dev: string) => string = (d) => d): string[] {
  return ipJson(ns, [`-${family}`, "route", "show"])
    .map((r) =>
      [
        String(r["dst"]),
        r["gateway"] ? `via ${String(r["gateway"])}` : "",
        r["dev"] ? `dev ${rename(String(r["dev"]))}` : "",
        r["protocol"] ? `proto ${String(r["protocol"])}` : "",
        r["scope"] ? `scope ${String(r["scope"])}` : "",
        r["prefsrc"] ? `src ${String(r["prefsrc"])}` : "",
        r["metric"] !== undefined ? `metric ${String(r["metric"])}` : "",
      ]
        .filter(Boolean)
        .join(" "),
    )
    .sort();
}

function linkState(ns: Netns, dev: string) {
  const [link] = ipJson(ns, ["link", "show", "dev", dev]);
  assert.ok(link, `link ${dev} exists`);
  return { mtu: link["mtu"], txqlen: link["txqlen"], operstate: link["operstate"], flags: link["flags"] };
}

/** Retries `probe` until it passes or `ms` runs out (IPv6 DAD on the host's gateway address takes ~1-2 s). */
async function eventually(probe: () => Promise<{ code: number; stdout: string; stderr: string }>, ms = 6000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await probe();
    if (r.code === 0 || Date.now() > deadline) return r;
    await sleep(200);
  }
}

const ping = (ns: Netns, addr: string) => eventually(() => ns.run("ping", ["-c", "1", "-W", "1", addr]));
const addrOnly = (cidr: string) => cidr.split("/")[0]!;

describe("ptp plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  let n = 0;
  /** A container namespace with lo up, removed at the end. */
  const container = () => cleanup.netns(`tscni-ptp-c${n++}-${tag}`);

  before(() => {
    host = new Host(cleanup, `tscni-ptp-h-${tag}`);
  });
  after(() => cleanup.run());

  test("ADD, CHECK, DEL, DEL again: dual-stack, mtu, dns, iptables ipMasq", async () => {
    const dns = { nameservers: ["10.243.0.53"], search: ["ptp.test"] };
    const net = ptpNetwork(host, `ptpds${tag}`, "1.0.0", ["10.243.0.0/24", "fd43::/64"], { mtu: 1400, ipMasq: true, ipMasqBackend: "iptables", dns });
    const ctr = container();
    const result = await host.add<PtpResult>(net, ctr);

    // Result: [host veth, container veth], every IP on the container (index 1), IPAM routes, conf DNS.
    assert.equal(result.cniVersion, "1.0.0");
    assert.equal(result.interfaces.length, 2);
    const [hostIf, ctrIf] = result.interfaces as [Iface, Iface];
    assert.match(hostIf.name, /^veth[0-9a-f]{8}$/);
    assert.equal(hostIf.sandbox, undefined);
    assert.match(hostIf.mac ?? "", /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    assert.deepEqual({ name: ctrIf.name, sandbox: ctrIf.sandbox }, { name: "eth0", sandbox: ctr.path });
    assert.deepEqual(result.ips, [
      { address: "10.243.0.2/24", gateway: "10.243.0.1", interface: 1 },
      { address: "fd43::2/64", gateway: "fd43::1", interface: 1 },
    ]);
    assert.deepEqual(result.routes, [{ dst: "0.0.0.0/0" }, { dst: "::/0" }]);
    assert.deepEqual(result.dns, dns);

    // Container: the kernel's connected routes are replaced by the gateway /32 (/128) and subnet-via-gateway.
    assert.equal(linkState(ctr, "eth0").mtu, 1400);
    assert.equal(linkState(ctr, "eth0").operstate, "UP");
    assert.equal((ctr.ipJson(["link", "show", "dev", "eth0"]) as Json[])[0]!["address"], ctrIf.mac);
    assert.deepEqual(addressesOf(ctr, "eth0"), ["10.243.0.2/24 brd 10.243.0.255 scope global", "fd43::2/64 scope global"]);
    assert.deepEqual(routesOf(ctr, 4), [
      "10.243.0.0/24 via 10.243.0.1 dev eth0 src 10.243.0.2",
      "10.243.0.1 dev eth0 scope link src 10.243.0.2",
      "default via 10.243.0.1 dev eth0",
    ]);
    const v6 = routesOf(ctr, 6);
    assert.ok(v6.includes("fd43::/64 via fd43::1 dev eth0 src fd43::2 metric 1024"), v6.join("\n"));
    assert.ok(v6.includes("fd43::1 dev eth0 src fd43::2 metric 1024"), v6.join("\n"));
    assert.ok(v6.includes("default via fd43::1 dev eth0 metric 1024"), v6.join("\n"));
    assert.ok(!v6.some((r) => r.startsWith("fd43::/64 dev eth0 proto kernel")), "connected IPv6 route removed");

    // Host: the gateways on the host veth, a host-scope route per container address, forwarding on.
    assert.deepEqual(host.veths(), [hostIf.name]);
    assert.equal(linkState(host.ns, hostIf.name).mtu, 1400);
    assert.deepEqual(addressesOf(host.ns, hostIf.name), ["10.243.0.1/32 scope global", "fd43::1/128 scope global"]);
    assert.ok(routesOf(host.ns, 4).includes(`10.243.0.2 dev ${hostIf.name} scope host`), routesOf(host.ns, 4).join("\n"));
    assert.ok(routesOf(host.ns, 6).includes(`fd43::2 dev ${hostIf.name} metric 1024`), routesOf(host.ns, 6).join("\n"));
    assert.equal(host.ns.exec("cat", ["/proc/sys/net/ipv4/ip_forward"]).trim(), "1");
    assert.equal(host.ns.exec("cat", ["/proc/sys/net/ipv6/conf/all/forwarding"]).trim(), "1");

    // ipMasq (iptables): per-container chain jumped to from POSTROUTING, for both families.
    const id = containerIdForNetns(ctr.path);
    for (const [family, src, dst] of [
      [4, "10.243.0.2/32", "10.243.0.0/24"],
      [6, "fd43::2/128", "fd43::/64"],
    ] as const) {
      const rules = host.natRuleLines(family).filter((l) => l.includes(`id: \\"${id}\\"`));
      assert.equal(rules.length, 3, rules.join("\n"));
      assert.ok(rules.some((l) => l.startsWith(`-A POSTROUTING -s ${src} `)));
      assert.ok(rules.some((l) => l.includes(`-d ${dst} `) && l.endsWith("-j ACCEPT")));
      assert.ok(rules.some((l) => l.endsWith("-j MASQUERADE")));
    }
    assert.deepEqual(host.allocations(net), ["10.243.0.2", "fd43::2"]);

    await host.must("check", net, ctr.path);

    await host.must("del", net, ctr.path);
    assert.deepEqual(host.veths(), []);
    assert.deepEqual(
      ipJson(ctr, ["link", "show"]).map((l) => l["ifname"]),
      ["lo"],
    );
    assert.deepEqual(
      host.natRuleLines(4).filter((l) => l.includes(id)),
      [],
    );
    assert.deepEqual(
      host.natRuleLines(6).filter((l) => l.includes(id)),
      [],
    );
    assert.ok(!host.ns.exec("iptables-save", ["-t", "nat"]).includes(":CNI-"), "the per-container chain is gone");
    assert.deepEqual(host.allocations(net), []);

    await host.must("del", net, ctr.path);
  });

  test("CHECK notices a missing point-to-point route", async () => {
    const net = ptpNetwork(host, `ptpck${tag}`, "1.0.0", ["10.244.0.0/24"]);
    const ctr = container();
    await host.add<PtpResult>(net, ctr);
    await host.must("check", net, ctr.path);
    ctr.exec("ip", ["route", "del", "10.244.0.0/24"]);
    const r = await host.cnitool("check", net, ctr);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /route 10\.244\.0\.0\/24 via 10\.244\.0\.1 dev eth0 is missing/);
    await host.must("del", net, ctr.path);
  });

  test("DEL after the container namespace is gone releases the IP and the ipMasq rules", async () => {
    const net = ptpNetwork(host, `ptpgone${tag}`, "1.0.0", ["10.245.0.0/24", "fd45::/64"], { ipMasq: true });
    const ctr = container();
    const result = await host.add<PtpResult>(net, ctr);
    const id = containerIdForNetns(ctr.path);
    assert.equal(host.natRuleLines(4).filter((l) => l.includes(id)).length, 3);
    ctr.delete();
    // (the kernel destroys a namespace in the background: its veth goes a moment later)
    for (let i = 0; i < 100 && host.veths().includes(result.interfaces![0]!.name); i++) await sleep(50);
    assert.deepEqual(
      host.veths().filter((v) => v === result.interfaces![0]!.name),
      [],
      "the veth died with the namespace",
    );

    await host.must("del", net, ctr.path);
    assert.deepEqual(host.allocations(net), []);
    assert.deepEqual(
      host.natRuleLines(4).filter((l) => l.includes(id)),
      [],
      "iptables rules found from the cached result",
    );
    assert.deepEqual(
      host.natRuleLines(6).filter((l) => l.includes(id)),
      [],
    );
    await host.must("del", net, ctr.path);
  });

  test("ADD onto an existing interface name fails and leaves nothing behind", async () => {
    const net = ptpNetwork(host, `ptpdup${tag}`, "1.0.0", ["10.246.0.0/24"], { ipMasq: true });
    const ctr = container();
    ctr.exec("ip", ["link", "add", "eth0", "type", "veth", "peer", "name", "peer0"]);
    const before = host.veths();

    const r = await host.cnitool("add", net, ctr);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /eth0.*already exists/);
    assert.deepEqual(host.veths(), before, "no host veth left");
    assert.deepEqual(host.allocations(net), [], "IPAM allocation rolled back");
    assert.deepEqual(
      host.natRuleLines(4).filter((l) => l.includes(containerIdForNetns(ctr.path))),
      [],
    );
    assert.deepEqual(
      ipJson(ctr, ["link", "show"])
        .map((l) => l["ifname"])
        .sort(),
      ["eth0", "lo", "peer0"],
      "the existing interface is untouched",
    );
  });

  test("ipMasq with the nftables backend", async () => {
    const net = ptpNetwork(host, `ptpnft${tag}`, "1.0.0", ["10.247.0.0/24", "fd47::/64"], { ipMasq: true, ipMasqBackend: "nftables" });
    const ctr = container();
    const id = containerIdForNetns(ctr.path);
    await host.add<PtpResult>(net, ctr);
    const rules = host
      .nftMasqRules()
      .split("\n")
      .filter((l) => l.includes(`id: ${id}`));
    assert.equal(rules.length, 2, host.nftMasqRules());
    assert.ok(
      rules.some((l) => /ip saddr 10\.247\.0\.2 ip daddr != 10\.247\.0\.0\/24 masquerade/.test(l)),
      rules.join("\n"),
    );
    assert.ok(
      rules.some((l) => /ip6 saddr fd47::2 ip6 daddr != fd47::\/64 masquerade/.test(l)),
      rules.join("\n"),
    );
    assert.deepEqual(
      host.natRuleLines(4).filter((l) => l.includes(id)),
      [],
      "no iptables rules with the nftables backend",
    );

    await host.must("check", net, ctr.path);
    await host.must("del", net, ctr.path);
    assert.ok(!host.nftMasqRules().includes(id), host.nftMasqRules());
    await host.must("del", net, ctr.path);
  });

  for (const version of ["0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const) {
    const needOurs = version === "1.1.0" && !OUR_HOST_LOCAL;
    test(`result in the ${version} shape`, {
      skip: needOurs ? "Go's host-local speaks at most 1.0.0 and dist/bin/host-local is not built" : undefined,
    }, async () => {
      const octet = 248 + ["0.3.1", "0.4.0", "1.0.0", "1.1.0"].indexOf(version);
      const net = ptpNetwork(host, `ptpv${version.replaceAll(".", "")}${tag}`, version, [`10.${octet}.0.0/24`]);
      const ctr = container();
      const result = await host.add<PtpResult>(net, ctr);
      assert.equal(result.cniVersion, version);
      assert.equal(result.interfaces.length, 2);
      const ipEntry: IPConf = { address: `10.${octet}.0.2/24`, gateway: `10.${octet}.0.1`, interface: 1 };
      if (version < "1.0.0") ipEntry.version = "4";
      assert.deepEqual(result.ips, [ipEntry]);
      assert.deepEqual(result.routes, [{ dst: "0.0.0.0/0" }]);
      if (version >= "0.4.0") await host.must("check", net, ctr.path);
      if (version >= "1.1.0") await host.must("status", net, ctr.path);
      await host.must("del", net, ctr.path);
      assert.deepEqual(host.allocations(net), []);
    });
  }

  test("GC (1.1.0) removes the nftables masquerade rules of attachments it does not know", {
    skip: OUR_HOST_LOCAL ? undefined : "needs dist/bin/host-local for spec 1.1.0",
  }, async () => {
    const net = ptpNetwork(host, `ptpgc${tag}`, "1.1.0", ["10.252.0.0/24"], { ipMasq: true, ipMasqBackend: "nftables" });
    const known = container();
    const stale = container();
    await host.add<PtpResult>(net, known);
    const staleResult = await host.add<PtpResult>(net, stale);
    // Forget the stale attachment, as if the runtime had lost it: only GC can find its leftovers.
    rmSync(path.join(host.cacheDir, "results", `${net}-${containerIdForNetns(stale.path)}-eth0`));
    assert.ok(host.nftMasqRules().includes(containerIdForNetns(stale.path)));

    await host.must("gc", net, known.path);
    // cnitool's gc passes no valid attachments: the cached one is deleted by DEL, the forgotten one by GC.
    assert.equal(host.nftMasqRules(), "", "no masquerade rules left");
    assert.deepEqual(
      host.veths().filter((v) => v !== staleResult.interfaces![0]!.name),
      [],
    );
  });

  test("reachability: container to gateway and container to container, IPv4 and IPv6", async () => {
    const net = ptpNetwork(host, `ptpping${tag}`, "1.0.0", ["10.253.0.0/24", "fd53::/64"]);
    const a = container();
    const b = container();
    const ra = await host.add<PtpResult>(net, a);
    const rb = await host.add<PtpResult>(net, b);
    const [a4, a6] = ra.ips.map((i) => addrOnly(i.address));
    const [b4, b6] = rb.ips.map((i) => addrOnly(i.address));
    for (const [from, to] of [
      [a, "10.253.0.1"],
      [a, "fd53::1"],
      [a, b4!],
      [b, a4!],
      [a, b6!],
      [b, a6!],
    ] as const) {
      const r = await ping(from, to);
      assert.equal(r.code, 0, `ping ${to} from ${from.name}: ${r.stdout}${r.stderr}`);
    }
    await host.must("del", net, a.path);
    await host.must("del", net, b.path);
  });

  test("bad configs are CNI errors with code 7 naming the key", async () => {
    const ctr = container();
    const base = {
      cniVersion: "1.0.0",
      name: `ptpbad${tag}`,
      type: "ptp",
      ipam: { type: "host-local", subnet: "10.254.0.0/24", dataDir: host.dataDir },
    };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base, ipam: undefined }, /"ipam"/],
      [{ ...base, ipam: { subnet: "10.254.0.0/24" } }, /"ipam".*ipam\.type/],
      [{ ...base, mtu: 70000 }, /"mtu": 70000/],
      [{ ...base, mtu: -1 }, /"mtu": -1/],
      [{ ...base, mtu: "1400" }, /"mtu": "1400"/],
      [{ ...base, ipMasqBackend: "pf" }, /"ipMasqBackend": "pf"/],
      [{ ...base, ipMasq: "yes" }, /"ipMasq": "yes"/],
    ];
    for (const command of ["ADD", "DEL"]) {
      for (const [conf, key] of cases) {
        const r = await host.ns.run(path.join(OUR_BIN, "ptp"), [], {
          env: { ...process.env, CNI_COMMAND: command, CNI_CONTAINERID: "badconf", CNI_NETNS: ctr.path, CNI_IFNAME: "eth0", CNI_PATH: MIXED_PATH },
          input: JSON.stringify(conf),
        });
        assert.equal(r.code, 1, `${command} ${JSON.stringify(conf)}`);
        const err = JSON.parse(r.stdout) as { code: number; msg: string };
        assert.equal(err.code, 7, r.stdout);
        assert.match(err.msg, key);
      }
    }
    assert.deepEqual(
      ipJson(ctr, ["link", "show"]).map((l) => l["ifname"]),
      ["lo"],
    );
    assert.deepEqual(host.allocations(`ptpbad${tag}`), []);
  });
});

describe("ptp compared with Go's ptp", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let ours: Host;
  let go: Host;

  /** A plugin directory with our ptp and Go's host-local, so only ptp differs between the two runs. */
  let oursPath: string;

  before(() => {
    oursPath = cleanup.dir("tscni-ptp-bin-");
    symlinkSync(path.join(OUR_BIN, "ptp"), path.join(oursPath, "ptp"));
    symlinkSync(path.join(GO_BIN, "host-local"), path.join(oursPath, "host-local"));
    ours = new Host(cleanup, `tscni-ptp-ho-${tag}`, oursPath);
    go = new Host(cleanup, `tscni-ptp-hg-${tag}`, GO_BIN);
  });
  after(() => cleanup.run());

  /** Everything an observer sees of one attachment, with the random parts (MACs, veth name, ids) taken out. */
  function view(h: Host, ctr: Netns, result: PtpResult) {
    const veth = result.interfaces![0]!.name;
    const id = containerIdForNetns(ctr.path);
    const rename = (d: string) => (d === veth ? "VETH" : d);
    const normaliseRule = (l: string) => l.replaceAll(id, "ID").replace(/CNI-[0-9a-f]{24}/g, "CNI-CHAIN");
    return {
      result: {
        ...result,
        interfaces: result.interfaces.map((i) => ({ name: i.name === veth ? "VETH" : i.name, sandbox: i.sandbox ? "SANDBOX" : undefined })),
      },
      container: {
        link: linkState(ctr, "eth0"),
        addresses: addressesOf(ctr, "eth0"),
        routes4: routesOf(ctr, 4),
        routes6: routesOf(ctr, 6),
        links: ipJson(ctr, ["link", "show"]).map((l) => l["ifname"]),
      },
      host: {
        link: linkState(h.ns, veth),
        addresses: addressesOf(h.ns, veth),
        routes4: routesOf(h.ns, 4, rename),
        routes6: routesOf(h.ns, 6, rename),
        nat4: h.natRuleLines(4).map(normaliseRule),
        nat6: h.natRuleLines(6).map(normaliseRule),
        forwarding: [h.ns.exec("cat", ["/proc/sys/net/ipv4/ip_forward"]).trim(), h.ns.exec("cat", ["/proc/sys/net/ipv6/conf/all/forwarding"]).trim()],
        acceptRA: h.ns.exec("cat", [`/proc/sys/net/ipv6/conf/${veth}/accept_ra`]).trim(),
      },
    };
  }

  /** The host after DEL: no veth, no nat rules, no allocations. */
  function afterDel(h: Host, network: string) {
    return { veths: h.veths(), nat4: h.natRuleLines(4), nat6: h.natRuleLines(6), allocated: h.allocations(network) };
  }

  const keys = { mtu: 1450, ipMasq: true, dns: { nameservers: ["10.240.0.53"] } };

  test("the same conflist leaves the same container and host state", async () => {
    const name = `ptpdiff${tag}`;
    ptpNetwork(ours, name, "1.0.0", ["10.240.0.0/24", "fd40::/64"], keys);
    ptpNetwork(go, name, "1.0.0", ["10.240.0.0/24", "fd40::/64"], keys);
    const ctrOurs = cleanup.netns(`tscni-ptp-co-${tag}`);
    const ctrGo = cleanup.netns(`tscni-ptp-cg-${tag}`);

    const [rOurs, rGo] = [await ours.add<PtpResult>(name, ctrOurs), await go.add<PtpResult>(name, ctrGo)];
    const vOurs = view(ours, ctrOurs, rOurs);
    const vGo = view(go, ctrGo, rGo);
    assert.deepEqual(vOurs.result, vGo.result);
    assert.deepEqual(vOurs.container, vGo.container);
    assert.deepEqual(vOurs.host, vGo.host);

    // Each CHECKs its own work and the other's: the states are interchangeable.
    await ours.must("check", name, ctrOurs.path);
    await go.must("check", name, ctrGo.path);
    for (const [h, ctr, otherPath] of [
      [ours, ctrOurs, GO_BIN],
      [go, ctrGo, oursPath],
    ] as const) {
      const r = await h.cnitool("check", name, ctr, {}, otherPath);
      assert.equal(r.code, 0, `CHECK with ${otherPath}: ${r.stderr}`);
    }

    await ours.must("del", name, ctrOurs.path);
    await go.must("del", name, ctrGo.path);
    assert.deepEqual(afterDel(ours, name), afterDel(go, name));
    assert.deepEqual(afterDel(ours, name), { veths: [], nat4: [], nat6: [], allocated: [] });
  });

  test("Go's ptp removes what ours made, and ours removes what Go's made", async () => {
    const name = `ptpswap${tag}`;
    for (const [maker, removerPath] of [
      [ours, GO_BIN],
      [go, oursPath],
    ] as const) {
      ptpNetwork(maker, name, "1.0.0", ["10.239.0.0/24", "fd39::/64"], keys);
      const ctr = cleanup.netns(`tscni-ptp-s${maker === ours ? "o" : "g"}-${tag}`);
      await maker.add<PtpResult>(name, ctr);
      // Same host namespace, config and cache; the other implementation's DEL.
      const r = await maker.cnitool("del", name, ctr, {}, removerPath);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(afterDel(maker, name), { veths: [], nat4: [], nat6: [], allocated: [] });
      assert.deepEqual(
        ipJson(ctr, ["link", "show"]).map((l) => l["ifname"]),
        ["lo"],
      );
    }
  });
});
