import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Result100 } from "#spec/result/index.js";
import { changesBetween, kernelAssigned, leftoverProblems, type NsSnapshot, parseIpAddrJson, presenceProblems, sharedHostLinks } from "./state.js";

const NS = "/run/netns/c";

/** `ip -json -details addr show` of a host namespace with a bridge and a veth enslaved to it (trimmed). */
const HOST_JSON = JSON.stringify([
  {
    ifindex: 1,
    ifname: "lo",
    flags: ["LOOPBACK", "UP"],
    address: "00:00:00:00:00:00",
    addr_info: [
      { family: "inet", local: "127.0.0.1", prefixlen: 8 },
      { family: "inet6", local: "::1", prefixlen: 128 },
    ],
  },
  {
    ifindex: 2,
    ifname: "cni0",
    address: "16:49:D4:C1:4A:A9",
    linkinfo: { info_kind: "bridge" },
    addr_info: [
      { family: "inet", local: "10.1.0.1", prefixlen: 24 },
      { family: "inet6", local: "fe80::1449:d4ff:fec1:4aa9", prefixlen: 64 },
    ],
  },
  { ifindex: 4, ifname: "veth1", address: "32:47:78:b0:e1:7d", master: "cni0", linkinfo: { info_kind: "veth" }, addr_info: [], link: "eth0" },
]);

const snapshot = (links: Array<{ name: string; mac?: string; kind?: string; master?: string; addresses?: string[] }>): NsSnapshot =>
  new Map(links.map((l) => [l.name, { addresses: [], ...l }]));

const bridgeResult: Result100 = {
  cniVersion: "1.1.0",
  interfaces: [
    { name: "cni0", mac: "16:49:d4:c1:4a:a9" },
    { name: "veth1", mac: "32:47:78:b0:e1:7d" },
    { name: "eth0", mac: "02:00:00:00:00:03", sandbox: NS },
  ],
  ips: [{ interface: 2, address: "10.1.0.5/24" }],
};
const messages = (problems: Array<{ message: string }>) => problems.map((p) => p.message);

describe("namespace snapshots", () => {
  test("ip -json -details addr show: links with kind, master, lower-case MAC and canonical addresses", () => {
    const s = parseIpAddrJson(HOST_JSON);
    assert.deepEqual([...s.keys()], ["lo", "cni0", "veth1"]);
    assert.deepEqual(s.get("cni0"), {
      name: "cni0",
      mac: "16:49:d4:c1:4a:a9",
      kind: "bridge",
      addresses: ["10.1.0.1/24", "fe80::1449:d4ff:fec1:4aa9/64"],
    });
    assert.deepEqual(s.get("veth1"), { name: "veth1", mac: "32:47:78:b0:e1:7d", kind: "veth", master: "cni0", addresses: [] });
    assert.deepEqual(parseIpAddrJson(""), new Map());
  });

  test("the kernel's own addresses: IPv6 link-local anywhere, loopback's on lo", () => {
    const s = parseIpAddrJson(HOST_JSON);
    assert.equal(kernelAssigned(s.get("lo")!, "127.0.0.1/8"), true);
    assert.equal(kernelAssigned(s.get("lo")!, "::1/128"), true);
    assert.equal(kernelAssigned(s.get("cni0")!, "fe80::1/64"), true);
    assert.equal(kernelAssigned(s.get("cni0")!, "127.0.0.1/8"), false);
    assert.equal(kernelAssigned(s.get("cni0")!, "10.1.0.1/24"), false);
  });

  test("what a refused request left: new links, new addresses (the kernel's aside)", () => {
    const before = snapshot([{ name: "lo" }, { name: "eth0", addresses: ["10.0.0.2/24"] }]);
    const after = snapshot([
      { name: "lo", addresses: ["127.0.0.1/8"] },
      { name: "eth0", addresses: ["10.0.0.2/24", "10.0.0.3/24", "fe80::1/64"] },
      { name: "veth9", kind: "veth" },
    ]);
    assert.deepEqual(changesBetween(before, after), ["new address 10.0.0.3/24 on eth0", "new link veth9 (veth)"]);
    assert.deepEqual(changesBetween(after, after), []);
  });
});

describe("after ADD: what the result reports is there", () => {
  const host = parseIpAddrJson(HOST_JSON);

  test("all there", () => {
    const container = snapshot([{ name: "lo" }, { name: "eth0", mac: "02:00:00:00:00:03", addresses: ["10.1.0.5/24"] }]);
    assert.deepEqual(presenceProblems(bridgeResult, NS, { container, host }), []);
  });

  test("a missing link, another MAC, a missing address", () => {
    const container = snapshot([{ name: "eth0", mac: "02:00:00:00:00:99", addresses: ["10.1.0.6/24"] }]);
    const noVeth = new Map([...host].filter(([name]) => name !== "veth1"));
    assert.deepEqual(messages(presenceProblems(bridgeResult, NS, { container, host: noVeth })), [
      "the result reports interface veth1 in the host namespace, which has no such link",
      "the result reports eth0 with MAC 02:00:00:00:00:03; the link has 02:00:00:00:00:99",
      "ips[0]: 10.1.0.5/24 is not on eth0 (it has 10.1.0.6/24)",
    ]);
  });

  test("addresses compare in canonical form; an IPAM result (no interfaces) has nothing to look for", () => {
    const v6: Result100 = { cniVersion: "1.1.0", interfaces: [{ name: "eth0", sandbox: NS }], ips: [{ interface: 0, address: "FD00:0:0::5/64" }] };
    assert.deepEqual(presenceProblems(v6, NS, { container: snapshot([{ name: "eth0", addresses: ["fd00::5/64"] }]), host }), []);
    assert.deepEqual(presenceProblems({ cniVersion: "1.1.0", ips: [{ address: "10.1.0.5/24" }] }, NS, { container: snapshot([]), host }), []);
  });
});

describe("after DEL: nothing the ADD made is left", () => {
  const before = { container: snapshot([{ name: "lo" }]), host: snapshot([{ name: "lo" }]) };
  const afterAdd = { container: snapshot([{ name: "lo" }, { name: "eth0" }]), host: parseIpAddrJson(HOST_JSON) };

  test("the bridge another reported link was enslaved to is shared and may stay; the veth and eth0 may not", () => {
    assert.deepEqual([...sharedHostLinks(bridgeResult, afterAdd)], ["cni0"]);
    assert.deepEqual(
      leftoverProblems(bridgeResult, NS, before, afterAdd, {
        container: snapshot([{ name: "lo" }]),
        host: snapshot([{ name: "lo" }, { name: "cni0" }]),
      }),
      [],
    );
    assert.deepEqual(
      messages(
        leftoverProblems(bridgeResult, NS, before, afterAdd, {
          container: snapshot([{ name: "lo" }, { name: "eth0" }]),
          host: snapshot([{ name: "lo" }, { name: "cni0" }, { name: "veth1" }]),
        }),
      ),
      [
        "veth1, which the ADD made and reported, is still in the host namespace after DEL",
        "eth0, which the ADD made and reported, is still in the container's namespace after DEL",
      ],
    );
  });

  test("the namespace gone: only the host is looked at", () => {
    assert.deepEqual(messages(leftoverProblems(bridgeResult, NS, before, afterAdd, { host: snapshot([{ name: "veth1" }]) })), [
      "veth1, which the ADD made and reported, is still in the host namespace after DEL",
    ]);
  });

  test("a link that was there before ADD (loopback's lo) stays; the addresses ADD put on it go, the kernel's aside", () => {
    const lo: Result100 = {
      cniVersion: "1.1.0",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: NS }],
      ips: [
        { interface: 0, address: "127.0.0.1/8" },
        { interface: 0, address: "::1/128" },
        { interface: 0, address: "10.9.0.1/32" },
      ],
    };
    const after = snapshot([{ name: "lo", addresses: ["127.0.0.1/8"] }]);
    assert.deepEqual(leftoverProblems(lo, NS, before, afterAdd, { container: after, host: before.host }), []);
    const withExtra = snapshot([{ name: "lo", addresses: ["127.0.0.1/8", "10.9.0.1/32"] }]);
    assert.deepEqual(messages(leftoverProblems(lo, NS, before, afterAdd, { container: withExtra, host: before.host })), [
      "10.9.0.1/32, which the ADD put on lo, is still there after DEL",
    ]);
  });
});
