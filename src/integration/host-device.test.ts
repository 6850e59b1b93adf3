/**
 * host-device in real namespaces: a veth end in a test-made host namespace (its peer in a third namespace, so
 * traffic can be tried) is moved into a container and given back on DEL under its original name, with its original
 * MTU, alias, addresses and up state (Go 1.1.1 gives it back down, without addresses, alias left set). Also: the
 * other selectors (kernelpath through the namespace's own sysfs, hwaddr), DEL without CNI_NETNS or after the
 * container's namespace is gone — a veth is destroyed with it, while a physical device is handed back to the host
 * by the kernel, simulated here by moving it back by hand before the namespace goes — always releasing the IPAM
 * address, CHECK on a healthy and a broken attachment, bad configs, and GC (spec 1.1.0): the device of an attachment
 * not among the valid ones is given back as DEL would and its address released, valid ones and other networks' stay.
 *
 * Against Debian's Go 1.1.1 host-device: the same config gives the same container view and result shape, each
 * one's DEL returns what the other's ADD moved, and ours works with Go's host-local.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, containerIdOf, Host, ipIn, pingable, pluginDir, type Result } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping host-device integration tests: ${skip}`);
const goSkip = skip ?? skipReason(true, existsSync(path.join(GO_BIN, "host-device")) ? undefined : "Go's host-device is not in /usr/lib/cni");
if (!skip && goSkip) console.log(`# skipping host-device differential tests: ${goSkip}`);

type Json = Record<string, unknown>;

const ip = (ns: Netns, ...args: string[]) => execFileSync("ip", ["-n", ns.name, ...args], { encoding: "utf8" });

/** How a device looks: MTU, up, alias, addresses (IPv6 link-local aside: they follow the MAC). */
function deviceView(ns: Netns, dev: string): Json | undefined {
  const [link] = ipIn(ns, ["addr", "show", "dev", dev]);
  const [detail] = ipIn(ns, ["-d", "link", "show", "dev", dev]);
  if (!link || !detail) return undefined;
  const addresses = (link["addr_info"] as Json[])
    .filter((a) => !String(a["local"]).startsWith("fe80"))
    .map((a) => `${String(a["local"])}/${String(a["prefixlen"])}`)
    .sort();
  return { mtu: link["mtu"], up: (link["flags"] as string[]).includes("UP"), alias: detail["ifalias"] ?? "", mac: link["address"], addresses };
}

/** A container whose new interfaces skip IPv6 DAD (a second per ADD otherwise; both implementations wait it out). */
function containerOf(host: Host, name: string): Netns {
  const ctr = host.container(name);
  ctr.exec("sysctl", ["-q", "-w", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"]);
  return ctr;
}

const linkNames = (ns: Netns): string[] =>
  ipIn(ns, ["link", "show"])
    .map((l) => String(l["ifname"]))
    .filter((n) => n !== "lo")
    .sort();

/** Routes of the container as `dst via gw dev D`, IPv6 link-local and multicast aside. */
const routesOf = (ns: Netns): string[] =>
  [4, 6]
    .flatMap((f) => ipIn(ns, [`-${f}`, "route", "show"]))
    .filter((r) => !String(r["dst"]).startsWith("fe80") && !String(r["dst"]).startsWith("ff00"))
    .map((r) =>
      [r["dst"], r["gateway"] ? `via ${String(r["gateway"])}` : "", `dev ${String(r["dev"])}`, r["protocol"] ? `proto ${String(r["protocol"])}` : ""]
        .filter(Boolean)
        .join(" "),
    )
    .sort();

describe("host-device", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  /**
   * A test host with a device `hd<tag><n>` to hand out: a veth end with MTU 1400, an alias, an IPv4 and an IPv6
   * address, up; its peer (address .100 in the IPAM subnet) in a namespace of its own.
   */
  function setup(cniPath?: string) {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-hd-${tag}-${n}`, cniPath);
    const peer = cleanup.netns(`tscni-hdp-${tag}-${n}`);
    const dev = `hd${tag}${n}`;
    ip(host.ns, "link", "add", dev, "mtu", "1400", "type", "veth", "peer", "name", "peer0", "netns", peer.path);
    ip(host.ns, "addr", "add", "192.0.2.5/24", "dev", dev);
    ip(host.ns, "addr", "add", "2001:db8:5::5/64", "dev", dev, "nodad");
    ip(host.ns, "link", "set", dev, "up", "alias", "uplink");
    ip(peer, "link", "set", "peer0", "up");
    ip(peer, "addr", "add", `10.${200 + n}.0.100/24`, "dev", "peer0");
    const records = path.join(host.dataDir, "host-device");
    const network = (keys: Json, cniVersion = "1.1.0", ipam = true) =>
      host.writeNetwork({
        cniVersion,
        name: `hd${tag}${n}`,
        plugins: [
          {
            type: "host-device",
            dataDir: records,
            ...keys,
            ...(ipam ? { ipam: host.hostLocal([`10.${200 + n}.0.0/24`, `fd00:${200 + n}::/64`], { routes: [{ dst: "198.51.100.0/24" }] }) } : {}),
          },
        ],
      });
    const before = deviceView(host.ns, dev)!;
    const records_ = () => (existsSync(records) ? readdirSync(records) : []);
    return { n, host, peer, dev, network, before, records: records_, subnet: `10.${200 + n}.0` };
  }

  test("a device is moved in, configured, checked, and given back as it was", async () => {
    const s = setup();
    const net = s.network({ device: s.dev }, "1.1.0");
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    const r = await s.host.add(net, ctr, { CNI_IFNAME: "net1" });
    assert.deepEqual(r.interfaces, [{ name: "net1", mac: s.before["mac"], sandbox: ctr.path }]);
    assert.deepEqual(
      r.ips!.map((i) => [i.address, i.interface]),
      [
        [`${s.subnet}.2/24`, 0],
        [`fd00:${200 + s.n}::2/64`, 0],
      ],
    );
    assert.equal(linkNames(s.host.ns).includes(s.dev), false, "gone from the host");
    assert.deepEqual(deviceView(ctr, "net1"), {
      mtu: 1400,
      up: true,
      alias: s.dev,
      mac: s.before["mac"],
      addresses: [`${s.subnet}.2/24`, `fd00:${200 + s.n}::2/64`],
    });
    assert.ok(routesOf(ctr).includes(`198.51.100.0/24 via ${s.subnet}.1 dev net1`), routesOf(ctr).join("\n"));
    assert.ok(await pingable(ctr, `${s.subnet}.100`), "the device carries traffic in the container");
    assert.equal(s.records().length, 1, "a record of the device's host settings");

    await s.host.must("check", net, ctr, { CNI_IFNAME: "net1" });
    await s.host.must("status", net, ctr);

    // The container changes its MTU (as tuning would): DEL still gives the original back.
    ip(ctr, "link", "set", "net1", "mtu", "1300");
    ip(ctr, "addr", "del", `${s.subnet}.2/24`, "dev", "net1");
    const broken = await s.host.cnitool("check", net, ctr, { CNI_IFNAME: "net1" });
    assert.notEqual(broken.code, 0);
    assert.match(broken.stdout + broken.stderr, new RegExp(`address ${s.subnet}\\.2/24 is missing from net1`));

    await s.host.must("del", net, ctr, { CNI_IFNAME: "net1" });
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, "name, MTU, alias, addresses and up state as before ADD");
    assert.deepEqual(linkNames(ctr), []);
    assert.deepEqual(s.host.allocations(net), []);
    assert.deepEqual(s.records(), []);
    await s.host.must("del", net, ctr, { CNI_IFNAME: "net1" });
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, "a second DEL changes nothing");
  });

  test("kernelpath (the namespace's own sysfs) and hwaddr select the device; no IPAM: the interface only", async () => {
    const s = setup();
    // /sys/devices/virtual/net of the test host lists lo and the device; "hd…" sorts first, as Go 1.1.1 needs.
    for (const [keys, label] of [
      [{ kernelpath: "/sys/devices/virtual" }, "k"],
      [{ hwaddr: String(s.before["mac"]).toUpperCase() }, "h"],
    ] as const) {
      const net = s.network(keys, "1.0.0", false);
      const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}${label}`);
      const r = await s.host.add(net, ctr);
      assert.deepEqual(r, { cniVersion: "1.0.0", interfaces: [{ name: "eth0", mac: s.before["mac"], sandbox: ctr.path }] });
      assert.deepEqual(linkNames(ctr), ["eth0"]);
      await s.host.must("check", net, ctr);
      await s.host.must("del", net, ctr);
      assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, label);
    }
  });

  test("the container's namespace is deleted: a veth goes with it; DEL still releases the address and succeeds", async () => {
    const s = setup();
    const net = s.network({ device: s.dev });
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    await s.host.add(net, ctr);
    assert.equal(s.host.allocations(net).length, 2);
    ctr.delete();
    await s.host.must("del", net, ctr);
    assert.deepEqual(s.host.allocations(net), [], "Go 1.1.1 fails this DEL and keeps the addresses");
    assert.deepEqual(s.records(), []);
    assert.deepEqual(linkNames(s.host.ns), [], "the veth was destroyed with the namespace; nothing else touched");
    await s.host.must("del", net, ctr);
  });

  test("the container's namespace is deleted after the kernel handed the device back (as it does a physical one)", async () => {
    const s = setup();
    const net = s.network({ device: s.dev });
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    await s.host.add(net, ctr);
    // What the kernel does with a physical device when its namespace is destroyed: back to the root namespace,
    // under the name it had in the container, down, without addresses.
    ip(ctr, "link", "set", "eth0", "mtu", "1280");
    ip(ctr, "link", "set", "eth0", "netns", s.host.ns.path);
    ctr.delete();
    assert.deepEqual(linkNames(s.host.ns), ["eth0"]);
    await s.host.must("del", net, ctr);
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, "found by its record, renamed and restored");
    assert.deepEqual(s.host.allocations(net), []);
    assert.deepEqual(s.records(), []);
  });

  /** The network's config as GC gets it (spec 1.1.0), with `valid` as the valid attachments. */
  const gcConfig = (s: ReturnType<typeof setup>, valid: Array<{ containerID: string; ifname: string }>, name = `hd${tag}${s.n}`) => ({
    cniVersion: "1.1.0",
    name,
    type: "host-device",
    device: s.dev,
    dataDir: path.join(s.host.dataDir, "host-device"),
    ipam: s.host.hostLocal([`10.${200 + s.n}.0.0/24`, `fd00:${200 + s.n}::/64`], { routes: [{ dst: "198.51.100.0/24" }] }),
    "cni.dev/valid-attachments": valid,
  });
  const runGc = async (s: ReturnType<typeof setup>, config: Json) => {
    const r = await s.host.plugin(path.join(OUR_BIN, "host-device"), "GC", config, { CNI_CONTAINERID: "", CNI_IFNAME: "" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
  };

  test("GC gives back the device of an attachment that is gone, and releases its address; a valid one, or another network's, stays", async () => {
    const s = setup();
    const net = s.network({ device: s.dev });
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    const id = containerIdOf(ctr);
    await s.host.add(net, ctr, { CNI_IFNAME: "net1" });
    const inside = deviceView(ctr, "net1");

    await runGc(s, gcConfig(s, [{ containerID: id, ifname: "net1" }]));
    await runGc(s, gcConfig(s, [], `other${tag}${s.n}`));
    assert.deepEqual(deviceView(ctr, "net1"), inside, "valid, or not this network's: left in the container");
    assert.equal(s.records().length, 1);
    assert.equal(s.host.allocations(net).length, 2);

    await runGc(s, gcConfig(s, [{ containerID: id, ifname: "eth0" }]));
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, "given back under its name with its MTU, alias, addresses and up state");
    assert.deepEqual(linkNames(ctr), []);
    assert.deepEqual(s.records(), []);
    assert.deepEqual(s.host.allocations(net), [], "IPAM got GC too");
    await runGc(s, gcConfig(s, []));
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, "a second GC changes nothing");
  });

  test("GC after the container's namespace is gone: a physical device handed back by the kernel is restored; records go", async () => {
    const s = setup();
    const net = s.network({ device: s.dev });
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    await s.host.add(net, ctr);
    ip(ctr, "link", "set", "eth0", "netns", s.host.ns.path); // as the kernel returns a physical device
    ctr.delete();
    await runGc(s, gcConfig(s, []));
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before, "found by its record, renamed and restored");
    assert.deepEqual([s.records(), s.host.allocations(net)], [[], []]);
  });

  test("GC without the valid-attachments list knows nothing stale and keeps the device", async () => {
    const s = setup();
    const net = s.network({ device: s.dev });
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    await s.host.add(net, ctr);
    const { "cni.dev/valid-attachments": _none, ...config } = gcConfig(s, []);
    await runGc(s, config);
    assert.deepEqual(linkNames(ctr), ["eth0"]);
    assert.equal(s.records().length, 1);
    await s.host.must("del", net, ctr);
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before);
  });

  test("DEL without CNI_NETNS releases the address and returns the device (Go 1.1.1 does neither)", async () => {
    const s = setup();
    const config = {
      cniVersion: "1.0.0",
      name: `hd${tag}${s.n}`,
      type: "host-device",
      device: s.dev,
      dataDir: path.join(s.host.dataDir, "host-device"),
      ipam: s.host.hostLocal([`10.${200 + s.n}.0.0/24`]),
    };
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    const bin = path.join(OUR_BIN, "host-device");
    const add = await s.host.plugin(bin, "ADD", config, { CNI_NETNS: ctr.path, CNI_IFNAME: "eth1" });
    assert.equal(add.code, 0, add.stdout);
    const del = await s.host.plugin(bin, "DEL", config, { CNI_NETNS: "", CNI_IFNAME: "eth1" });
    assert.equal(del.code, 0, del.stdout);
    assert.deepEqual(s.host.allocations(config.name), []);
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before);
    assert.deepEqual(linkNames(ctr), []);
  });

  test("a failed ADD (a route IPAM asks for cannot be added) gives the device back as it was and releases the address", async () => {
    const s = setup();
    const config = {
      cniVersion: "1.0.0",
      name: `hd${tag}${s.n}`,
      type: "host-device",
      device: s.dev,
      dataDir: path.join(s.host.dataDir, "host-device"),
      ipam: s.host.hostLocal([`10.${200 + s.n}.0.0/24`], { routes: [{ dst: "10.250.0.0/16", gw: "192.0.2.1" }] }),
    };
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    const r = await s.host.plugin(path.join(OUR_BIN, "host-device"), "ADD", config, { CNI_NETNS: ctr.path, CNI_IFNAME: "eth1" });
    assert.equal(r.code, 1);
    assert.match(cniError(r).msg, /192\.0\.2\.1/);
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before);
    assert.deepEqual([linkNames(ctr), s.host.allocations(config.name), s.records()], [[], [], []]);
  });

  test("DEL when the interface is gone from the container succeeds", async () => {
    const s = setup();
    const net = s.network({ device: s.dev }, "1.0.0", false);
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    await s.host.add(net, ctr);
    ip(ctr, "link", "del", "eth0");
    await s.host.must("del", net, ctr);
    await s.host.must("del", net, ctr);
    assert.deepEqual(s.records(), []);
  });

  test("bad configs: one CNI error naming the keys, nothing moved", async () => {
    const s = setup();
    const ctr = containerOf(s.host, `tscni-hdc-${tag}-${s.n}`);
    const bin = path.join(OUR_BIN, "host-device");
    const base = { cniVersion: "1.0.0", name: `hd${tag}${s.n}`, type: "host-device", dataDir: path.join(s.host.dataDir, "host-device") };
    const cases: Array<[Json, RegExp]> = [
      [{ device: s.dev, hwaddr: s.before["mac"] }, /^specify only one of "device" and "hwaddr"$/],
      [{}, /^specify either "device", "hwaddr", "kernelpath" or "pciBusID"$/],
      [{ device: "nosuch0" }, /^invalid "device": "nosuch0" \(no such interface in the host namespace/],
      [{ hwaddr: "02:00:00:00:00:99" }, /^invalid "hwaddr": "02:00:00:00:00:99"/],
      [{ kernelpath: "/etc" }, /^invalid "kernelpath": "\/etc"/],
      [{ pciBusID: "0000:ff:1f.7" }, /^invalid "pciBusID": "0000:ff:1f\.7" \(no such PCI device/],
    ];
    for (const [keys, msg] of cases) {
      const r = await s.host.plugin(bin, "ADD", { ...base, ...keys }, { CNI_NETNS: ctr.path });
      assert.equal(r.code, 1, JSON.stringify(keys));
      const e = cniError(r);
      assert.equal(e.code, 7, r.stdout);
      assert.match(e.msg, msg);
    }
    assert.deepEqual(linkNames(ctr), []);
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before);
    const del = await s.host.plugin(bin, "DEL", { ...base, device: s.dev }, { CNI_NETNS: ctr.path });
    assert.equal(del.code, 0, `DEL of what was never added: ${del.stdout}`);
    assert.deepEqual(deviceView(s.host.ns, s.dev), s.before);
  });
});

describe("host-device: ours against Go's 1.1.1", { skip: goSkip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  /** A test host with a device `hg<tag><n>` (a veth end with MTU 1450 and an address), a container and a network. */
  function side(cniPath: string, keys?: Json, cniVersion = "1.0.0") {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-hg-${tag}-${n}`, cniPath);
    const dev = `hg${tag}${n}`;
    ip(host.ns, "link", "add", dev, "mtu", "1450", "type", "veth", "peer", "name", `hg${tag}${n}p`);
    ip(host.ns, "addr", "add", "192.0.2.7/24", "dev", dev);
    ip(host.ns, "link", "set", dev, "up");
    const ctr = containerOf(host, `tscni-hgc-${tag}-${n}`);
    const net = host.writeNetwork({
      cniVersion,
      name: `hg${tag}`,
      plugins: [
        {
          type: "host-device",
          dataDir: path.join(host.dataDir, "host-device"),
          dns: { nameservers: ["10.210.0.53"] },
          ...(keys ?? {
            device: dev,
            ipam: host.hostLocal(["10.210.0.0/24", "fd00:210::/64"], { routes: [{ dst: "198.51.100.0/24" }, { dst: "2001:db8:9::/48" }] }),
          }),
        },
      ],
    });
    return { host, dev, ctr, net };
  }

  /** The result with what differs per run (MAC, sandbox path) replaced, and Go's empty `dns` dropped. */
  const shape = (r: Result): Json => ({
    ...r,
    interfaces: r.interfaces!.map((i) => ({ ...i, mac: i.mac ? "<mac>" : undefined, sandbox: i.sandbox ? "<netns>" : undefined })),
    dns: r.dns && Object.keys(r.dns).length ? r.dns : undefined,
  });
  const view = (ctr: Netns) => ({
    links: linkNames(ctr),
    device: { ...deviceView(ctr, "eth0"), mac: "<mac>", alias: "<original name>" },
    routes: routesOf(ctr),
  });

  test("the same config gives the same container view and result; each DEL returns what the other's ADD moved", async () => {
    const ours = side(pluginDir(cleanup, { "host-device": path.join(OUR_BIN, "host-device"), "host-local": path.join(OUR_BIN, "host-local") }));
    const go = side(GO_BIN);
    const rOurs = await ours.host.add(ours.net, ours.ctr);
    const rGo = await go.host.add(go.net, go.ctr);
    assert.deepEqual(shape(rOurs), shape(rGo));
    assert.deepEqual(view(ours.ctr), view(go.ctr));
    assert.equal(deviceView(ours.ctr, "eth0")!["alias"], ours.dev, "the alias names the original device, as Go's");
    await ours.host.must("check", ours.net, ours.ctr);
    // Go 1.1.1 fails CHECK on its own attachment: it wants an IPAM route without a gateway to have none in the
    // container, where its ADD gave it the IPAM gateway (as ours does). That exact failure is the one accepted.
    const goCheck = await go.host.cnitool("check", go.net, go.ctr);
    assert.equal(goCheck.code, 1);
    assert.match(goCheck.stderr + goCheck.stdout, /Expected Route \{Dst:\{IP:198\.51\.100\.0 Mask:ffffff00\} GW:<nil>\} not found in routing table/);

    // Go's DEL returns what our ADD moved (by the alias), and ours what Go's moved.
    await ours.host.must("del", ours.net, ours.ctr, {}, GO_BIN);
    assert.ok(linkNames(ours.host.ns).includes(ours.dev), "Go gave our device back by its alias");
    await go.host.must("del", go.net, go.ctr, {}, ours.host.cniPath);
    assert.ok(linkNames(go.host.ns).includes(go.dev));
    assert.deepEqual(deviceView(go.host.ns, go.dev)!["mtu"], 1450);
    assert.deepEqual([ours.host.allocations(ours.net), go.host.allocations(go.net)], [[], []]);
  });

  test("without IPAM, selected by kernelpath, at 0.3.1: the same result and container view", async () => {
    const sides = [
      side(pluginDir(cleanup, { "host-device": path.join(OUR_BIN, "host-device") }), { kernelpath: "/sys/devices/virtual" }, "0.3.1"),
      side(GO_BIN, { kernelpath: "/sys/devices/virtual" }, "0.3.1"),
    ];
    const [rOurs, rGo] = [await sides[0]!.host.add(sides[0]!.net, sides[0]!.ctr), await sides[1]!.host.add(sides[1]!.net, sides[1]!.ctr)];
    assert.deepEqual(shape(rOurs), shape(rGo));
    assert.deepEqual(view(sides[0]!.ctr), view(sides[1]!.ctr));
    for (const s of sides) await s.host.must("del", s.net, s.ctr);
    assert.ok(sides.every((s) => linkNames(s.host.ns).includes(s.dev)));
  });

  test("mixed: our host-device with Go's host-local", async () => {
    const s = side(pluginDir(cleanup, { "host-device": path.join(OUR_BIN, "host-device"), "host-local": path.join(GO_BIN, "host-local") }));
    const before = deviceView(s.host.ns, s.dev);
    const r = await s.host.add(s.net, s.ctr);
    assert.deepEqual(
      r.ips!.map((i) => i.address),
      ["10.210.0.2/24", "fd00:210::2/64"],
    );
    await s.host.must("check", s.net, s.ctr);
    await s.host.must("del", s.net, s.ctr);
    assert.deepEqual(deviceView(s.host.ns, s.dev), before);
    assert.deepEqual(s.host.allocations(s.net), []);
  });
});
