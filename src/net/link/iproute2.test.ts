import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { quoteRestoreWord } from "../firewall/iptables.js";
import { NetNS } from "../netns.js";
import { addressesFromJson, linkFromJson } from "./iproute2.js";
import { routeWords, vethAddWords } from "./links.js";

describe("iproute2 words", () => {
  test("a veth pair is created with each end in its namespace and txqueuelen 0 (as Go's netlink does)", () => {
    const words = vethAddWords({ name: "eth0", ns: NetNS.host, peerName: "veth01234567", peerNs: NetNS.host, mtu: 1400, mac: "02:00:00:00:00:01" });
    assert.deepEqual(words, [
      "link",
      "add",
      "name",
      "eth0",
      "mtu",
      "1400",
      "address",
      "02:00:00:00:00:01",
      "txqueuelen",
      "0",
      "type",
      "veth",
      "peer",
      "name",
      "veth01234567",
      "mtu",
      "1400",
      "txqueuelen",
      "0",
      "netns",
      `/proc/${process.pid}/ns/net`,
    ]);
  });
  test("a route with every field", () => {
    assert.deepEqual(
      routeWords({ dst: "10.0.0.0/8", gw: "10.1.0.1", dev: "eth0", src: "10.1.0.2", scope: "link", table: 100, metric: 5, mtu: 1400, advmss: 1300 }),
      [
        "10.0.0.0/8",
        "via",
        "10.1.0.1",
        "dev",
        "eth0",
        "src",
        "10.1.0.2",
        "scope",
        "link",
        "table",
        "100",
        "metric",
        "5",
        "mtu",
        "1400",
        "advmss",
        "1300",
      ],
    );
    assert.deepEqual(routeWords({ dst: "0.0.0.0/0", gw: "10.1.0.1" }), ["0.0.0.0/0", "via", "10.1.0.1"]);
  });
  test("iptables-restore words are quoted only when needed", () => {
    assert.equal(quoteRestoreWord("CNI-abc"), "CNI-abc");
    assert.equal(quoteRestoreWord("!"), "!");
    assert.equal(quoteRestoreWord("224.0.0.0/4"), "224.0.0.0/4");
    assert.equal(quoteRestoreWord('name: "n" id: "c"'), '"name: \\"n\\" id: \\"c\\""');
  });
});

describe("reading ip -json output", () => {
  const bridgePort = {
    ifindex: 5,
    link_index: 2,
    ifname: "veth1",
    flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
    mtu: 1400,
    operstate: "UP",
    address: "02:00:00:00:00:05",
    promiscuity: 1,
    master: "cni0",
    linkinfo: { info_kind: "veth", info_slave_kind: "bridge", info_slave_data: { hairpin: true, isolated: false } },
  };
  test("a bridge port", () => {
    assert.deepEqual(linkFromJson(bridgePort), {
      index: 5,
      name: "veth1",
      mtu: 1400,
      mac: "02:00:00:00:00:05",
      up: true,
      operstate: "UP",
      promisc: false,
      allmulti: false,
      txqlen: 0,
      kind: "veth",
      master: "cni0",
      peerIndex: 2,
      bridgePort: { hairpin: true, isolated: false },
    });
  });
  test("promisc is the PROMISC flag (what was asked for), not the promiscuity count of a bridge port", () => {
    assert.equal(linkFromJson(bridgePort).promisc, false);
    assert.equal(linkFromJson({ ...bridgePort, flags: ["BROADCAST", "PROMISC", "UP"] }).promisc, true);
  });
  test("addresses with their flags", () => {
    assert.deepEqual(
      addressesFromJson({
        addr_info: [
          { family: "inet", local: "10.1.0.2", prefixlen: 24, scope: "global" },
          { family: "inet6", local: "fd00::2", prefixlen: 64, scope: "global", tentative: true },
          { family: "inet6", local: "fd00::3", prefixlen: 64, scope: "global", dadfailed: true, tentative: true },
        ],
      }),
      [
        { cidr: "10.1.0.2/24", family: 4, scope: "global", tentative: false, dadFailed: false },
        { cidr: "fd00::2/64", family: 6, scope: "global", tentative: true, dadFailed: false },
        { cidr: "fd00::3/64", family: 6, scope: "global", tentative: true, dadFailed: true },
      ],
    );
    assert.deepEqual(addressesFromJson({}), []);
  });
});
