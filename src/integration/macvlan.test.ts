/**
 * The macvlan plugin (ours: dist/bin, with our host-local) as a runtime drives it, in namespaces the test
 * makes: a "host" whose uplink is a veth pair (the macvlans sit on one end, the other end holds the gateway
 * address), and containers. Two containers in bridge mode reach each other and the gateway; CHECK passes and
 * notices what changed; DEL removes the link and releases the address, and succeeds again, and with the
 * netns gone. L2 mode, `linkInContainer`, the default route's interface as master, the MAC from the runtime,
 * and bad configs (one CNI error naming the key, nothing changed) too.
 */

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, containerIdOf, Host, ipIn, pingable } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping macvlan integration tests: ${skip}`);

type Json = Record<string, unknown>;

/** The container's link as `ip -d` shows it: kind, mode, parent, MTU, state, MAC. */
function containerLink(ctr: Netns, name = "eth0"): Json | undefined {
  const l = ipIn(ctr, ["-d", "link", "show"]).find((x) => x["ifname"] === name);
  if (!l) return undefined;
  const info = (l["linkinfo"] ?? {}) as Json;
  return {
    kind: info["info_kind"],
    mode: (info["info_data"] as Json | undefined)?.["mode"],
    mtu: l["mtu"],
    up: (l["flags"] as string[]).includes("UP"),
    mac: l["address"],
    parent: l["link"] ?? (l["link_index"] !== undefined ? `index ${String(l["link_index"])}` : undefined),
  };
}

/** The container's global addresses, `addr/prefix`. */
const addresses = (ctr: Netns, dev = "eth0"): string[] =>
  ipIn(ctr, ["addr", "show", "dev", dev]).flatMap((l) =>
    (l["addr_info"] as Json[]).filter((a) => a["scope"] === "global").map((a) => `${String(a["local"])}/${String(a["prefixlen"])}`),
  );

describe("macvlan plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  /**
   * A host with an uplink: veth `u<tag>a` (the macvlans' master, up) and its peer `u<tag>b` holding
   * `gateway/24`, both in the host namespace.
   */
  function newHost(gateway = "10.241.0.1") {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-mv-${tag}-${n}`, OUR_BIN);
    const master = `u${tag}a`;
    const peer = `u${tag}b`;
    host.ns.exec("ip", ["link", "add", master, "type", "veth", "peer", "name", peer]);
    host.ns.exec("ip", ["addr", "add", `${gateway}/24`, "dev", peer]);
    host.ns.exec("ip", ["link", "set", master, "up"]);
    host.ns.exec("ip", ["link", "set", peer, "up"]);
    return { host, master, peer, n };
  }
  const hostIndexOf = (host: Host, name: string) => Number(host.ipJson(["link", "show", "dev", name])[0]!["ifindex"]);

  test("STATUS (1.1.0) of macvlan, ipvlan and vlan: code 50 while a host master is missing (no link is made: any kernel)", async () => {
    const { host, master, n } = newHost();
    for (const type of ["macvlan", "ipvlan", "vlan"]) {
      const conf = (m: string, extra: Json = {}) => ({
        cniVersion: "1.1.0",
        name: `st-${type}-${n}`,
        type,
        master: m,
        ...(type === "vlan" ? { vlanId: 7 } : {}),
        ...extra,
        ipam: host.hostLocal(["10.241.9.0/24"]),
      });
      assert.equal((await host.plugin(`${OUR_BIN}/${type}`, "STATUS", conf(master), {})).code, 0, `${type} with its master`);
      const missing = await host.plugin(`${OUR_BIN}/${type}`, "STATUS", conf("gone0"), {});
      assert.equal(missing.code, 1, type);
      assert.deepEqual(JSON.parse(missing.stdout), {
        code: 50,
        msg: `${type}: the master "gone0" does not exist here: an ADD could not create its link`,
      });
      // A master in the container is not the host's to look for.
      assert.equal((await host.plugin(`${OUR_BIN}/${type}`, "STATUS", conf("gone0", { linkInContainer: true }), {})).code, 0, type);
    }
  });

  test("two containers in bridge mode: addresses, each other and the gateway, CHECK, DEL, DEL again, DEL with the netns gone", async () => {
    const { host, master, n } = newHost();
    const net = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `mv${tag}${n}`,
      plugins: [{ type: "macvlan", master, mode: "bridge", mtu: 1400, ipam: host.hostLocal(["10.241.0.0/24"], { routes: [{ dst: "0.0.0.0/0" }] }) }],
    });
    const a = host.container(`tscni-mva-${tag}`);
    const b = host.container(`tscni-mvb-${tag}`);
    const ra = await host.add(net, a);
    const rb = await host.add(net, b);
    assert.deepEqual(ra.interfaces, [{ name: "eth0", mac: containerLink(a)!["mac"], sandbox: a.path }]);
    assert.deepEqual(ra.ips, [{ address: "10.241.0.2/24", gateway: "10.241.0.1", interface: 0 }]);
    assert.deepEqual(ra.routes, [{ dst: "0.0.0.0/0" }]);
    assert.deepEqual(containerLink(a), {
      kind: "macvlan",
      mode: "bridge",
      mtu: 1400,
      up: true,
      mac: ra.interfaces![0]!.mac,
      parent: `index ${hostIndexOf(host, master)}`,
    });
    assert.deepEqual(addresses(b), ["10.241.0.3/24"]);
    assert.equal(a.sysctl("net.ipv4.conf.eth0.arp_notify"), "1");
    assert.equal(a.sysctl("net.ipv6.conf.eth0.ndisc_notify"), "1");
    assert.deepEqual(host.veths(), [], "nothing of the containers is left in the host (the temporary name never was there)");
    assert.ok(await pingable(a, "10.241.0.3"), "a reaches b through the master in bridge mode");
    assert.ok(await pingable(b, "10.241.0.1"), "b reaches the gateway on the master's peer");
    assert.ok(await pingable(a, "10.241.0.1"));
    assert.ok(rb.interfaces![0]!.mac !== ra.interfaces![0]!.mac);

    await host.must("check", net, a);
    await host.must("check", net, b);

    await host.must("del", net, a);
    assert.equal(containerLink(a), undefined, "the macvlan is gone");
    assert.deepEqual(host.allocations(net), ["10.241.0.3"], "a's address is released, b's kept");
    await host.must("del", net, a);
    const check = await host.cnitool("check", net, a);
    assert.notEqual(check.code, 0, "CHECK after DEL fails");

    b.delete();
    await host.must("del", net, b.path);
    assert.deepEqual(host.allocations(net), []);
  });

  test("CHECK notices a different mode, a changed MAC and a lost address", async () => {
    const { host, master, n } = newHost();
    const plugin = { type: "macvlan", master, mode: "private", ipam: host.hostLocal(["10.241.0.0/24"]) };
    const net = host.writeNetwork({ cniVersion: "1.0.0", name: `mc${tag}${n}`, plugins: [plugin] });
    const ctr = host.container(`tscni-mvc-${tag}`);
    await host.add(net, ctr);
    await host.must("check", net, ctr);
    // The same attachment checked against a config that says bridge.
    host.writeNetwork({ cniVersion: "1.0.0", name: net, plugins: [{ ...plugin, mode: "bridge" }] });
    const mode = await host.cnitool("check", net, ctr);
    assert.match(mode.stderr + mode.stdout, /has mode "private", expected "bridge"/);
    host.writeNetwork({ cniVersion: "1.0.0", name: net, plugins: [plugin] });
    ctr.exec("ip", ["addr", "flush", "dev", "eth0", "scope", "global"]);
    assert.match((await host.cnitool("check", net, ctr)).stderr, /address 10\.241\.0\.2\/24 is missing from eth0/);
    ctr.exec("ip", ["link", "set", "eth0", "address", "02:00:00:00:00:99"]);
    assert.match((await host.cnitool("check", net, ctr)).stderr, /MAC is 02:00:00:00:00:99/);
    await host.must("del", net, ctr);
  });

  test("L2 (no IPAM), the MAC from the runtime, the master from the default route, and linkInContainer", async () => {
    const { host, peer, n } = newHost();
    host.ns.exec("ip", ["route", "add", "default", "via", "10.241.0.254", "dev", peer]);
    // No master: the default route's interface (the uplink's peer end here). MAC: capability `mac` over CNI_ARGS.
    const l2 = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `ml${tag}${n}`,
      plugins: [{ type: "macvlan", mode: "vepa", capabilities: { mac: true } }],
    });
    const ctr = host.container(`tscni-mvl-${tag}`);
    const r = await host.add(l2, ctr, { CAP_ARGS: JSON.stringify({ mac: "02:00:00:00:00:21" }), CNI_ARGS: "IgnoreUnknown=1;MAC=02:00:00:00:00:22" });
    assert.deepEqual(r, { cniVersion: "1.0.0", interfaces: [{ name: "eth0", mac: "02:00:00:00:00:21", sandbox: ctr.path }] });
    assert.deepEqual(containerLink(ctr), {
      kind: "macvlan",
      mode: "vepa",
      mtu: 1500,
      up: true,
      mac: "02:00:00:00:00:21",
      parent: `index ${hostIndexOf(host, peer)}`,
    });
    assert.deepEqual(addresses(ctr), []);
    await host.must("check", l2, ctr);
    await host.must("del", l2, ctr);

    // linkInContainer: the master is a link of the container itself, and the macvlan is made there.
    ctr.exec("ip", ["link", "add", `c${tag}a`, "type", "veth", "peer", "name", `c${tag}b`]);
    const inside = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `mi${tag}${n}`,
      plugins: [{ type: "macvlan", master: `c${tag}a`, linkInContainer: true, mode: "passthru", ipam: host.hostLocal(["10.242.0.0/24"]) }],
    });
    const r2 = await host.add(inside, ctr, { CNI_IFNAME: "net1" });
    assert.equal(r2.interfaces![0]!.name, "net1");
    assert.deepEqual(containerLink(ctr, "net1"), {
      kind: "macvlan",
      mode: "passthru",
      mtu: 1500,
      up: true,
      mac: r2.interfaces![0]!.mac,
      parent: `c${tag}a`,
    });
    assert.deepEqual(addresses(ctr, "net1"), ["10.242.0.2/24"]);
    await host.must("check", inside, ctr, { CNI_IFNAME: "net1" });
    await host.must("del", inside, ctr, { CNI_IFNAME: "net1" });
    assert.equal(containerLink(ctr, "net1"), undefined);
  });

  test("DEL succeeds when the master (and with it the macvlan) is gone, and with no netns at all", async () => {
    const { host, master, n } = newHost();
    const net = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `md${tag}${n}`,
      plugins: [{ type: "macvlan", master, ipam: host.hostLocal(["10.241.0.0/24"]) }],
    });
    const ctr = host.container(`tscni-mvd-${tag}`);
    await host.add(net, ctr);
    host.ns.exec("ip", ["link", "del", master]);
    assert.equal(containerLink(ctr), undefined, "the kernel removed the macvlan with its master");
    await host.must("del", net, ctr);
    assert.deepEqual(host.allocations(net), []);
    const direct = await host.plugin(`${OUR_BIN}/macvlan`, "DEL", { cniVersion: "1.0.0", name: net, type: "macvlan", master }, { CNI_NETNS: "" });
    assert.equal(direct.code, 0, direct.stdout);
  });

  test("STATUS and GC go to IPAM: GC frees the address of an attachment no longer valid", async () => {
    const { host, master, n } = newHost();
    const network = `mg${tag}${n}`;
    const config = { cniVersion: "1.1.0", name: network, type: "macvlan", master, ipam: host.hostLocal(["10.241.0.0/24"]) };
    const ctr = host.container(`tscni-mvg-${tag}`);
    const add = await host.plugin(`${OUR_BIN}/macvlan`, "ADD", config, { CNI_NETNS: ctr.path, CNI_CONTAINERID: "gc-1" });
    assert.equal(add.code, 0, add.stdout);
    const status = await host.plugin(`${OUR_BIN}/macvlan`, "STATUS", config, { CNI_CONTAINERID: "", CNI_IFNAME: "" });
    assert.equal(status.code, 0, status.stdout);
    const keep = await host.plugin(
      `${OUR_BIN}/macvlan`,
      "GC",
      { ...config, "cni.dev/valid-attachments": [{ containerID: "gc-1", ifname: "eth0" }] },
      { CNI_CONTAINERID: "", CNI_IFNAME: "" },
    );
    assert.equal(keep.code, 0, keep.stdout);
    assert.deepEqual(host.allocations(network), ["10.241.0.2"]);
    const gc = await host.plugin(`${OUR_BIN}/macvlan`, "GC", { ...config, "cni.dev/valid-attachments": [] }, { CNI_CONTAINERID: "", CNI_IFNAME: "" });
    assert.equal(gc.code, 0, gc.stdout);
    assert.deepEqual(host.allocations(network), []);
  });

  test("bad configs: one CNI error naming the key, and nothing changed", async () => {
    const { host, master, n } = newHost();
    const ctr = host.container(`tscni-mvx-${tag}`);
    const base = { cniVersion: "1.0.0", name: `mx${tag}${n}`, type: "macvlan", master, ipam: host.hostLocal(["10.241.0.0/24"]) };
    const cases: Array<[Json, RegExp, number?]> = [
      [{ ...base, master: "nosuch0" }, /^invalid "master": "nosuch0" \(no such interface in the host namespace\)$/],
      [{ ...base, master: undefined }, /^invalid "master": "" \(not set, and the host namespace has no default route to take it from\)$/],
      [{ ...base, master: "a/b" }, /^invalid "master": "a\/b"/],
      [{ ...base, mode: "l2" }, /^invalid "mode": "l2" \(want one of "bridge", "private", "vepa", "passthru", "source"\)$/],
      [{ ...base, mtu: 9000 }, /^invalid "mtu": 9000 \(want 0 for the master's MTU, or at most the MTU of master "u\w+a" \(1500\)\)$/],
      [{ ...base, mtu: -1 }, /^invalid "mtu": -1/],
      [{ ...base, mtu: "1400" }, /^invalid "mtu": "1400" \(want an integer\)$/],
      [{ ...base, mac: "02:00:00:00:00" }, /^invalid "mac": "02:00:00:00:00" \(want a MAC address/],
      [{ ...base, runtimeConfig: { mac: "01:00:5e:00:00:01" } }, /^invalid "runtimeConfig\.mac": "01:00:5e:00:00:01" \(a multicast MAC/],
      [{ ...base, bcqueuelen: -1 }, /^invalid "bcqueuelen": -1/],
      [{ ...base, linkInContainer: true }, /^invalid "master": "u\w+a" \(no such interface in the container namespace/],
    ];
    for (const [config, message, code = 7] of cases) {
      const r = await host.plugin(`${OUR_BIN}/macvlan`, "ADD", config, { CNI_NETNS: ctr.path, CNI_CONTAINERID: containerIdOf(ctr) });
      assert.equal(r.code, 1, JSON.stringify(config));
      const err = cniError(r);
      assert.equal(err.code, code, err.msg);
      assert.match(err.msg, message);
    }
    const args = await host.plugin(`${OUR_BIN}/macvlan`, "ADD", base, { CNI_NETNS: ctr.path, CNI_ARGS: "K8S_POD_NAME=x" });
    assert.equal(cniError(args).code, 4, "CNI_ARGS with a key macvlan does not know, without IgnoreUnknown");
    assert.deepEqual(
      ipIn(ctr, ["link", "show"]).map((l) => l["ifname"]),
      ["lo"],
    );
    assert.deepEqual(host.allocations(`mx${tag}${n}`), []);
  });
});
