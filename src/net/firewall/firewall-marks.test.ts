import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { describeMark, type FirewallMark, marksMissingFrom } from "./firewall-marks.js";

const NAT = [
  "-P PREROUTING ACCEPT",
  "-P POSTROUTING ACCEPT",
  "-N CNI-HOSTPORT-DNAT",
  "-N CNI-DN-abc",
  "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
  '-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"n\\" id: \\"c\\"" -m multiport --dports 8080 -j CNI-DN-abc',
];
const FILTER = ["-P INPUT ACCEPT", "-A INPUT -i br0 -p udp -m udp --dport 53 -j ACCEPT"];

describe("firewall marks", () => {
  const listings = {
    iptables: new Map<string, readonly string[] | undefined>([
      ["4/nat", NAT],
      ["4/filter", FILTER],
      ["6/nat", undefined],
    ]),
    nftChains: new Set(["ip cni_hostport hostports"]),
  };

  test("a chain counts when it exists (built-in or -N) and, with `from`, a rule there jumps to it", () => {
    const marks: FirewallMark[] = [
      { kind: "iptables", family: 4, table: "nat", chain: "CNI-HOSTPORT-DNAT", from: "PREROUTING" },
      { kind: "iptables", family: 4, table: "nat", chain: "CNI-HOSTPORT-DNAT", from: "OUTPUT" },
      { kind: "iptables", family: 4, table: "nat", chain: "CNI-DN-abc", from: "CNI-HOSTPORT-DNAT" },
      { kind: "iptables", family: 4, table: "nat", chain: "CNI-DN-ab" },
      { kind: "iptables", family: 4, table: "nat", chain: "POSTROUTING" },
    ];
    assert.deepEqual(marksMissingFrom(marks, listings), [marks[1], marks[3]]);
  });

  test("an exact rule, an nftables chain, and a table that could not be listed (everything in it missing)", () => {
    const marks: FirewallMark[] = [
      { kind: "iptables-rule", family: 4, table: "filter", rule: "-A INPUT -i br0 -p udp -m udp --dport 53 -j ACCEPT" },
      { kind: "iptables-rule", family: 4, table: "filter", rule: "-A INPUT -i br0 -p tcp -m tcp --dport 53 -j ACCEPT" },
      { kind: "nftables", family: "ip", table: "cni_hostport", chain: "hostports" },
      { kind: "nftables", family: "ip6", table: "cni_hostport", chain: "hostports" },
      { kind: "iptables", family: 6, table: "nat", chain: "POSTROUTING" },
    ];
    assert.deepEqual(
      marksMissingFrom(marks, listings),
      marks.slice(1).filter((m) => m !== marks[2]),
    );
    assert.deepEqual(marksMissingFrom([marks[2]!], { ...listings, nftChains: undefined }), [marks[2]], "nftables not listable");
  });

  test("described for logs", () => {
    assert.equal(
      describeMark({ kind: "iptables", family: 6, table: "nat", chain: "X", from: "POSTROUTING" }),
      "ip6tables nat chain X (jumped to from POSTROUTING)",
    );
    assert.equal(describeMark({ kind: "nftables", family: "inet", table: "t", chain: "c" }), "nftables chain inet t c");
  });
});
