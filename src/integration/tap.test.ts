/**
 * The tap plugin (ours: dist/bin, with our host-local) in namespaces the test makes: a persistent tap in the
 * container with the configured MAC, MTU, owner, group and queues, a port of a bridge in the container's
 * namespace when `bridge` is set (where the Go plugin looks for it: the tap lives in the container), addressed
 * by IPAM or only brought up; CHECK passes and notices a changed MAC; DEL removes it, succeeds again and with
 * the netns gone; bad configs fail before anything is made. There is no Go tap in Debian's 1.1.1 to compare with.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, describe, test } from "node:test";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, Host, ipIn } from "#testing/rig.js";

// /dev/net/tun is the kernel's tun/tap driver: a kernel feature, so its absence skips everywhere (CI too).
const skip = skipReason() ?? (existsSync("/dev/net/tun") ? undefined : "this kernel has no tun/tap driver (/dev/net/tun does not exist)");
if (skip) console.log(`# skipping tap integration tests: ${skip}`);

type Json = Record<string, unknown>;

/** The container's tap as `ip -d` shows it. */
function tapOf(ctr: Netns, name = "eth0"): Json | undefined {
  const l = ipIn(ctr, ["-d", "link", "show"]).find((x) => x["ifname"] === name);
  if (!l) return undefined;
  const info = (l["linkinfo"] ?? {}) as Json;
  const data = (info["info_data"] ?? {}) as Json;
  return {
    kind: info["info_kind"],
    type: data["type"],
    multiQueue: data["multi_queue"],
    persist: data["persist"],
    user: data["user"],
    group: data["group"],
    mtu: l["mtu"],
    mac: l["address"],
    up: (l["flags"] as string[]).includes("UP"),
    master: l["master"],
  };
}

const addresses = (ctr: Netns, dev = "eth0"): string[] =>
  ipIn(ctr, ["addr", "show", "dev", dev]).flatMap((l) =>
    (l["addr_info"] as Json[]).filter((a) => a["scope"] === "global").map((a) => `${String(a["local"])}/${String(a["prefixlen"])}`),
  );

describe("tap plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  const newHost = () => {
    const n = ++seq;
    return { host: new Host(cleanup, `tscni-tp-${tag}-${n}`, OUR_BIN), n };
  };

  test("a tap with MAC, MTU, owner, group and queues, on a bridge of the container, with an address: CHECK, DEL, DEL again", async () => {
    const { host, n } = newHost();
    const ctr = host.container(`tscni-tpc-${tag}`);
    const bridge = `br${tag}`;
    ctr.exec("ip", ["link", "add", bridge, "type", "bridge"]);
    const plugin = {
      type: "tap",
      mac: "02:00:00:00:07:01",
      mtu: 1400,
      owner: 4242,
      group: 4343,
      multiQueue: true,
      bridge,
      dns: { nameservers: ["10.245.0.53"] },
      ipam: host.hostLocal(["10.245.0.0/24"], { routes: [{ dst: "10.99.0.0/16" }] }),
    };
    const net = host.writeNetwork({ cniVersion: "1.0.0", name: `tp${tag}${n}`, plugins: [plugin] });
    const r = await host.add(net, ctr);
    assert.deepEqual(r, {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", mac: "02:00:00:00:07:01", sandbox: ctr.path }],
      ips: [{ address: "10.245.0.2/24", gateway: "10.245.0.1", interface: 0 }],
      routes: [{ dst: "10.99.0.0/16" }],
      dns: { nameservers: ["10.245.0.53"] },
    });
    assert.deepEqual(tapOf(ctr), {
      kind: "tun",
      type: "tap",
      multiQueue: true,
      persist: true,
      user: 4242,
      group: 4343,
      mtu: 1400,
      mac: "02:00:00:00:07:01",
      up: true,
      master: bridge,
    });
    assert.deepEqual(addresses(ctr), ["10.245.0.2/24"]);
    assert.equal(ctr.sysctl("net.ipv4.conf.eth0.arp_notify"), "1");
    assert.ok(ipIn(ctr, ["route", "show"]).some((x) => x["dst"] === "10.99.0.0/16" && x["gateway"] === "10.245.0.1"));
    assert.deepEqual(
      ipIn(ctr, ["link", "show"])
        .map((l) => l["ifname"])
        .sort(),
      [bridge, "eth0", "lo"].sort(),
      "no temporary link left",
    );

    await host.must("check", net, ctr);
    ctr.exec("ip", ["link", "set", "eth0", "nomaster"]);
    assert.match((await host.cnitool("check", net, ctr)).stderr, /on no bridge, expected a port of/);
    ctr.exec("ip", ["link", "set", "eth0", "master", bridge]);
    ctr.exec("ip", ["link", "set", "eth0", "address", "02:00:00:00:07:02"]);
    assert.match((await host.cnitool("check", net, ctr)).stderr, /MAC is 02:00:00:00:07:02, prevResult says 02:00:00:00:07:01/);

    await host.must("del", net, ctr);
    assert.equal(tapOf(ctr), undefined);
    assert.deepEqual(host.allocations(net), []);
    await host.must("del", net, ctr);
  });

  test("L2 (no IPAM): a plain tap brought up; DEL with the netns gone", async () => {
    const { host, n } = newHost();
    const ctr = host.container(`tscni-tpl-${tag}`);
    const net = host.writeNetwork({ cniVersion: "0.4.0", name: `tl${tag}${n}`, plugins: [{ type: "tap", capabilities: { mac: true } }] });
    const r = await host.add(net, ctr, { CNI_IFNAME: "tap0", CAP_ARGS: JSON.stringify({ mac: "02:00:00:00:07:03" }) });
    assert.deepEqual(r.interfaces, [{ name: "tap0", mac: "02:00:00:00:07:03", sandbox: ctr.path }]);
    assert.equal(r.ips, undefined);
    assert.deepEqual(tapOf(ctr, "tap0"), {
      kind: "tun",
      type: "tap",
      multiQueue: false,
      persist: true,
      user: undefined,
      group: undefined,
      mtu: 1500,
      mac: "02:00:00:00:07:03",
      up: true,
      master: undefined,
    });
    await host.must("check", net, ctr, { CNI_IFNAME: "tap0" });
    ctr.delete();
    await host.must("del", net, ctr.path, { CNI_IFNAME: "tap0" });
  });

  test("bad configs and a taken name: one CNI error, nothing left in the container", async () => {
    const { host, n } = newHost();
    const ctr = host.container(`tscni-tpx-${tag}`);
    ctr.exec("ip", ["link", "add", `v${tag}a`, "type", "veth", "peer", "name", `v${tag}b`]);
    const base = { cniVersion: "1.0.0", name: `tx${tag}${n}`, type: "tap", ipam: host.hostLocal(["10.245.0.0/24"]) };
    const cases: Array<[Json, RegExp, number?, string?]> = [
      [{ ...base, bridge: "nosuch0" }, /^invalid "bridge": "nosuch0" \(no such bridge in the container namespace/],
      [{ ...base, bridge: `v${tag}a` }, /^invalid "bridge": "v\w+a" \("v\w+a" in the container namespace is a veth, not a bridge\)$/],
      [{ ...base, owner: -1 }, /^invalid "owner": -1 \(want an integer from 0 to 4294967295\)$/],
      [{ ...base, group: "wheel" }, /^invalid "group": "wheel" \(want an integer from 0 to 4294967295\)$/],
      [{ ...base, mtu: 10 }, /^invalid "mtu": 10 \(want 0 for the default, or 68 to 65535\)$/],
      [{ ...base, mac: "nope" }, /^invalid "mac": "nope"/],
      [{ ...base, multiQueue: "yes" }, /^invalid "multiQueue": "yes" \(want true or false\)$/],
      [base, /container interface name provided \(v\w+a\) already exists/, 999, `v${tag}a`],
    ];
    for (const [config, message, code = 7, ifName = "eth0"] of cases) {
      const r = await host.plugin(`${OUR_BIN}/tap`, "ADD", config, { CNI_NETNS: ctr.path, CNI_IFNAME: ifName });
      assert.equal(r.code, 1, JSON.stringify(config));
      const err = cniError(r);
      assert.equal(err.code, code, err.msg);
      assert.match(err.msg, message);
    }
    assert.deepEqual(
      ipIn(ctr, ["link", "show"])
        .map((l) => l["ifname"])
        .sort(),
      ["lo", `v${tag}a`, `v${tag}b`].sort(),
    );
    assert.deepEqual(host.allocations(`tx${tag}${n}`), []);
  });
});
