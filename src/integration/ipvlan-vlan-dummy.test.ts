/**
 * The ipvlan, vlan and dummy plugins (ours: dist/bin, with our host-local). Each link kind is probed in a
 * throw-away namespace; what needs the kind (ADD, CHECK, DEL of a real link, reachability, ipvlan's chained
 * mode) skips with the kernel's reason where it is missing, and on such a kernel ADD must fail with that
 * reason and leave nothing (no link, no address). What needs no such link always runs: VERSION, bad configs
 * (one CNI error naming the key), and DEL with the netns, the link or vlan's master gone. Below the kernel,
 * the requests these plugins send are pinned byte for byte to iproute2's (src/net/netlink/rtnetlink-messages.test.ts).
 */

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ALL_VERSIONS } from "#spec/versions.js";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { type LinkKind, linkKindMissing } from "#testing/kernel.js";
import { cniError, Host, ipIn, pingable, type Result } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping ipvlan/vlan/dummy integration tests: ${skip}`);

type Json = Record<string, unknown>;
type Kind = LinkKind;

const tag = runTag();
const lacking: Record<Kind, string | undefined> = skip
  ? { ipvlan: skip, vlan: skip, dummy: skip }
  : { ipvlan: linkKindMissing("ipvlan", tag), vlan: linkKindMissing("vlan", tag), dummy: linkKindMissing("dummy", tag) };
for (const [kind, reason] of Object.entries(lacking))
  if (reason && !skip) console.log(`# ${kind}: the tests that need ${kind} links skip: ${reason}`);

/** The container's link as `ip -d` shows it. */
function linkOf(ctr: Netns, name = "eth0"): Json | undefined {
  const l = ipIn(ctr, ["-d", "link", "show"]).find((x) => x["ifname"] === name);
  if (!l) return undefined;
  const info = (l["linkinfo"] ?? {}) as Json;
  const data = (info["info_data"] ?? {}) as Json;
  return { kind: info["info_kind"], mode: data["mode"], id: data["id"], mtu: l["mtu"], up: (l["flags"] as string[]).includes("UP") };
}

const addresses = (ctr: Netns, dev = "eth0"): string[] =>
  ipIn(ctr, ["addr", "show", "dev", dev]).flatMap((l) =>
    (l["addr_info"] as Json[]).filter((a) => a["scope"] === "global").map((a) => `${String(a["local"])}/${String(a["prefixlen"])}`),
  );

describe("ipvlan, vlan and dummy plugins", { skip }, () => {
  const cleanup = new Cleanup();
  let seq = 0;
  after(() => cleanup.run());

  /** A host whose uplink is a veth pair: `u<tag>a` (the master) and its peer `u<tag>b` with 10.246.0.1/24. */
  function newHost() {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-lk-${tag}-${n}`, OUR_BIN);
    const master = `u${tag}a`;
    host.ns.exec("ip", ["link", "add", master, "type", "veth", "peer", "name", `u${tag}b`]);
    host.ns.exec("ip", ["addr", "add", "10.246.0.1/24", "dev", `u${tag}b`]);
    for (const l of [master, `u${tag}b`]) host.ns.exec("ip", ["link", "set", l, "up"]);
    return { host, master, n, ctr: host.container(`tscni-lkc-${tag}-${n}`) };
  }

  const plugins: Record<Kind, (master: string) => Json> = {
    ipvlan: (master) => ({ type: "ipvlan", master, mode: "l2" }),
    vlan: (master) => ({ type: "vlan", master, vlanId: 7, mtu: 1400 }),
    dummy: () => ({ type: "dummy" }),
  };
  const expectedLink: Record<Kind, Json> = {
    ipvlan: { kind: "ipvlan", mode: "l2", id: undefined, mtu: 1500, up: true },
    vlan: { kind: "vlan", mode: undefined, id: 7, mtu: 1400, up: true },
    dummy: { kind: "dummy", mode: undefined, id: undefined, mtu: 1500, up: true },
  };

  test("VERSION: every spec version, as the Go plugins", async () => {
    const { host } = newHost();
    for (const type of ["macvlan", "ipvlan", "vlan", "dummy", "tap"]) {
      const r = await host.plugin(`${OUR_BIN}/${type}`, "VERSION", { cniVersion: "1.0.0" }, {});
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout).supportedVersions, [...ALL_VERSIONS], type);
    }
  });

  for (const kind of ["ipvlan", "vlan", "dummy"] as const) {
    test(`${kind}: ADD, CHECK, DEL and DEL again with a real ${kind} link`, { skip: lacking[kind] }, async () => {
      const { host, master, n, ctr } = newHost();
      const net = host.writeNetwork({
        cniVersion: "1.0.0",
        name: `lk${tag}${n}`,
        plugins: [
          {
            ...plugins[kind](master),
            dns: { nameservers: ["10.246.0.53"] },
            ipam: host.hostLocal(["10.246.0.0/24"], { routes: [{ dst: "0.0.0.0/0" }] }),
          },
        ],
      });
      const r = await host.add(net, ctr);
      assert.deepEqual(r.interfaces, [{ name: "eth0", mac: ipIn(ctr, ["link", "show", "dev", "eth0"])[0]!["address"], sandbox: ctr.path }]);
      assert.deepEqual(r.ips, [{ address: "10.246.0.2/24", gateway: "10.246.0.1", interface: 0 }]);
      // dummy keeps IPAM's DNS (none here); the others give the config's.
      assert.deepEqual(r.dns, kind === "dummy" ? undefined : { nameservers: ["10.246.0.53"] });
      assert.deepEqual(linkOf(ctr), expectedLink[kind]);
      assert.deepEqual(addresses(ctr), ["10.246.0.2/24"]);
      if (kind === "ipvlan") assert.ok(await pingable(ctr, "10.246.0.1"), "the ipvlan reaches the gateway on the master's peer");
      await host.must("check", net, ctr);
      await host.must("del", net, ctr);
      assert.equal(linkOf(ctr), undefined);
      assert.deepEqual(host.allocations(net), []);
      await host.must("del", net, ctr);
    });

    test(`${kind}: on a kernel without ${kind} links ADD fails with the kernel's reason and leaves nothing`, {
      skip: lacking[kind] ? undefined : `this kernel has ${kind} links`,
    }, async () => {
      const { host, master, n, ctr } = newHost();
      const network = `lf${tag}${n}`;
      const config = { cniVersion: "1.0.0", name: network, ...plugins[kind](master), ipam: host.hostLocal(["10.246.0.0/24"]) };
      const r = await host.plugin(`${OUR_BIN}/${kind}`, "ADD", config, { CNI_NETNS: ctr.path });
      assert.equal(r.code, 1);
      const err = cniError(r);
      assert.match(err.msg, new RegExp(`create ${kind} .*: Error: Unknown device type\\.$`));
      assert.deepEqual(
        ipIn(ctr, ["link", "show"]).map((l) => l["ifname"]),
        ["lo"],
      );
      assert.deepEqual(host.allocations(network), []);
      assert.deepEqual(
        host
          .ipJson(["link", "show"])
          .map((l) => l["ifname"])
          .filter((x) => String(x).startsWith("veth")),
        [],
      );
    });

    test(`${kind}: DEL succeeds with the netns gone, the link gone, and no netns`, async () => {
      const { host, master, n, ctr } = newHost();
      const config = { cniVersion: "1.0.0", name: `ld${tag}${n}`, ...plugins[kind](master), ipam: host.hostLocal(["10.246.0.0/24"]) };
      for (const netns of [ctr.path, "/run/netns/tscni-gone-" + tag, ""]) {
        const r = await host.plugin(`${OUR_BIN}/${kind}`, "DEL", config, { CNI_NETNS: netns });
        assert.equal(r.code, 0, `${netns}: ${r.stdout}`);
      }
    });
  }

  test("vlan: DEL succeeds once the master is gone (Go's needs it), and CHECK names what is missing", async () => {
    const { host, master, n, ctr } = newHost();
    const config = { cniVersion: "1.0.0", name: `lm${tag}${n}`, type: "vlan", master, vlanId: 7, ipam: host.hostLocal(["10.246.0.0/24"]) };
    host.ns.exec("ip", ["link", "del", master]);
    const del = await host.plugin(`${OUR_BIN}/vlan`, "DEL", config, { CNI_NETNS: ctr.path });
    assert.equal(del.code, 0, del.stdout);
    // static IPAM passes its own CHECK without an allocation, so what the vlan plugin checks is reached.
    const prevResult: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: ctr.path }],
      ips: [{ address: "10.246.0.5/24", interface: 0 }],
    };
    const staticIpam = { type: "static", addresses: [{ address: "10.246.0.5/24" }] };
    const check = await host.plugin(`${OUR_BIN}/vlan`, "CHECK", { ...config, ipam: staticIpam, prevResult }, { CNI_NETNS: ctr.path });
    assert.match(cniError(check).msg, /^invalid "master": "u\w+a" \(no such interface in the host namespace\)$/);
  });

  test("ipvlan chained: the prevResult's one interface is the master and its addresses are used, without IPAM", {
    skip: lacking.ipvlan,
  }, async () => {
    const { host, master, n, ctr } = newHost();
    const prevResult: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: master }],
      ips: [{ address: "10.246.0.9/24", gateway: "10.246.0.1", interface: 0 }],
    };
    const config = { cniVersion: "1.0.0", name: `lc${tag}${n}`, type: "ipvlan", prevResult };
    const r = await host.plugin(`${OUR_BIN}/ipvlan`, "ADD", config, { CNI_NETNS: ctr.path });
    assert.equal(r.code, 0, r.stdout);
    const result = JSON.parse(r.stdout) as Result;
    assert.deepEqual(result.ips, [{ address: "10.246.0.9/24", gateway: "10.246.0.1", interface: 0 }]);
    assert.equal(result.interfaces!.length, 1);
    assert.deepEqual(addresses(ctr), ["10.246.0.9/24"]);
    const del = await host.plugin(`${OUR_BIN}/ipvlan`, "DEL", { ...config, prevResult: result }, { CNI_NETNS: ctr.path });
    assert.equal(del.code, 0, del.stdout);
    assert.equal(linkOf(ctr), undefined);
  });

  test("bad configs: one CNI error naming the key, nothing made", async () => {
    const { host, master, n, ctr } = newHost();
    const ipam = host.hostLocal(["10.246.0.0/24"]);
    const common = { cniVersion: "1.0.0", name: `lx${tag}${n}` };
    const twoInterfaces: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "a" }, { name: "b" }],
      ips: [{ address: "10.246.0.9/24", interface: 0 }],
    };
    const cases: Array<[Kind, Json, RegExp]> = [
      ["ipvlan", { type: "ipvlan", master, mode: "bridge", ipam }, /^invalid "mode": "bridge" \(want one of "l2", "l3", "l3s"\)$/],
      ["ipvlan", { type: "ipvlan", master: "nosuch0", ipam }, /^invalid "master": "nosuch0" \(no such interface in the host namespace\)$/],
      ["ipvlan", { type: "ipvlan", ipam }, /^invalid "master": "" \(not set, and the host namespace has no default route to take it from\)$/],
      [
        "ipvlan",
        { type: "ipvlan", master, mtu: 9000, ipam },
        /^invalid "mtu": 9000 \(want 0 for the master's MTU, or at most the MTU of master "u\w+a" \(1500\)\)$/,
      ],
      [
        "ipvlan",
        { type: "ipvlan", master },
        /^invalid "ipam": missing \(ipvlan needs an IPAM plugin, or a prevResult with addresses when chained\)$/,
      ],
      [
        "ipvlan",
        { type: "ipvlan", prevResult: twoInterfaces },
        /^invalid "master": "" \(not set, and the prevResult does not hold exactly one named interface/,
      ],
      ["vlan", { type: "vlan", master, vlanId: 4095, ipam }, /^invalid "vlanId": 4095 \(want a VLAN ID from 0 to 4094\)$/],
      ["vlan", { type: "vlan", master, vlanId: -1, ipam }, /^invalid "vlanId": -1/],
      ["vlan", { type: "vlan", master, ipam }, /^invalid "vlanId": null \(required: the VLAN ID, 0 to 4094\)$/],
      ["vlan", { type: "vlan", vlanId: 7, ipam }, /^invalid "master": null \(required: the interface to create the VLAN on\)$/],
      ["vlan", { type: "vlan", master: "nosuch0", vlanId: 7, ipam }, /^invalid "master": "nosuch0" \(no such interface in the host namespace\)$/],
      ["vlan", { type: "vlan", master, vlanId: 7, mtu: 1501, ipam }, /^invalid "mtu": 1501 \(want 0 for the master's MTU, or at most/],
      ["vlan", { type: "vlan", master, vlanId: 7 }, /^invalid "ipam": missing \(vlan needs an IPAM plugin: set ipam.type\)$/],
      ["vlan", { type: "vlan", master, vlanId: "7", ipam }, /^invalid "vlanId": "7" \(want an integer\)$/],
      ["dummy", { type: "dummy" }, /^invalid "ipam": missing \(a dummy interface needs an IPAM plugin: set ipam.type\)$/],
    ];
    for (const [kind, config, message] of cases) {
      const r = await host.plugin(`${OUR_BIN}/${kind}`, "ADD", { ...common, ...config }, { CNI_NETNS: ctr.path });
      assert.equal(r.code, 1, JSON.stringify(config));
      const err = cniError(r);
      assert.equal(err.code, 7, err.msg);
      assert.match(err.msg, message);
    }
    assert.deepEqual(
      ipIn(ctr, ["link", "show"]).map((l) => l["ifname"]),
      ["lo"],
    );
    assert.deepEqual(host.allocations(common.name), []);
  });
});
