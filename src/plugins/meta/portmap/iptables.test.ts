import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseCIDR } from "#ip/ip.js";
import { splitListedRule, TableListing } from "#net/firewall/iptables-rules.js";
import { forwardTarget, loadPortMapConf } from "./config.js";
import { containerChain, dnatChainName, dnatComment, entryPortLists, forwardChains, markDef, oldSnatChainName, staleDnatChains } from "./iptables.js";

const NET = "rtestnet";
const ID = "rtestcid0123456789";
const CHAIN = "CNI-DN-c723d1892dbba901e937f";

function target(extra: Record<string, unknown>, mappings: unknown[], container = "10.77.0.10/24", id = ID) {
  const n = loadPortMapConf(
    Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: NET, type: "portmap", runtimeConfig: { portMappings: mappings }, ...extra })),
  );
  return forwardTarget(n, id, parseCIDR(container));
}

const MAPPINGS = [
  { hostPort: 8080, containerPort: 80, protocol: "tcp" },
  { hostPort: 5353, containerPort: 53, protocol: "udp", hostIP: "10.0.0.1" },
  { hostPort: 9090, containerPort: 90, protocol: "sctp" },
];

/** What `iptables -S` / `ip6tables -S` printed for the Go 1.1.1 plugin with MAPPINGS (observed on this machine). */
const GO_V4 = [
  `-A CNI-HOSTPORT-SETMARK -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000`,
  `-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE`,
  `-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ`,
  `-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT`,
  `-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT`,
  `-A ${CHAIN} -s 10.77.0.0/24 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK`,
  `-A ${CHAIN} -s 127.0.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK`,
  `-A ${CHAIN} -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.77.0.10:80`,
  `-A ${CHAIN} -s 10.77.0.0/24 -d 10.0.0.1/32 -p udp -m udp --dport 5353 -j CNI-HOSTPORT-SETMARK`,
  `-A ${CHAIN} -s 127.0.0.1/32 -d 10.0.0.1/32 -p udp -m udp --dport 5353 -j CNI-HOSTPORT-SETMARK`,
  `-A ${CHAIN} -d 10.0.0.1/32 -p udp -m udp --dport 5353 -j DNAT --to-destination 10.77.0.10:53`,
  `-A ${CHAIN} -s 10.77.0.0/24 -p sctp -m sctp --dport 9090 -j CNI-HOSTPORT-SETMARK`,
  `-A ${CHAIN} -s 127.0.0.1/32 -p sctp -m sctp --dport 9090 -j CNI-HOSTPORT-SETMARK`,
  `-A ${CHAIN} -p sctp -m sctp --dport 9090 -j DNAT --to-destination 10.77.0.10:90`,
  `-A CNI-HOSTPORT-DNAT -p sctp -m comment --comment "dnat name: \\"rtestnet\\" id: \\"rtestcid0123456789\\"" -m multiport --dports 9090 -j ${CHAIN}`,
  `-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"rtestnet\\" id: \\"rtestcid0123456789\\"" -m multiport --dports 8080 -j ${CHAIN}`,
  `-A CNI-HOSTPORT-DNAT -p udp -m comment --comment "dnat name: \\"rtestnet\\" id: \\"rtestcid0123456789\\"" -m multiport --dports 5353 -j ${CHAIN}`,
];

const listedOf = (t: ReturnType<typeof target>) => forwardChains(t).flatMap((c) => [...c.rules, ...c.entries].map((r) => r.listed));

describe("portmap iptables rules", () => {
  test("names: the Go hash formula", () => {
    assert.equal(dnatChainName(NET, ID), CHAIN);
    assert.equal(dnatChainName(NET, ID).length, 28);
    assert.match(oldSnatChainName(NET, ID), /^CNI-SN-c723d1892dbba901e937f$/);
    assert.equal(dnatComment(NET, ID), `dnat name: "rtestnet" id: "rtestcid0123456789"`);
    const long = dnatComment(NET, "x".repeat(300));
    assert.equal(long.length, 255);
    assert.ok(long.endsWith("..."));
  });

  test("mark bits print as Go's %#x/%#x", () => {
    assert.equal(markDef(13), "0x2000/0x2000");
    assert.equal(markDef(0), "0x1/0x1");
    assert.equal(markDef(31), "0x80000000/0x80000000");
  });

  test("the layout iptables-save shows for the Go plugin, IPv4", () => {
    assert.deepEqual(listedOf(target({}, MAPPINGS)), GO_V4);
  });

  test("the arguments are the Go plugin's, in its order", () => {
    const c = containerChain(target({}, MAPPINGS));
    assert.deepEqual(
      c.rules.slice(0, 6).map((r) => r.args),
      [
        ["-p", "tcp", "--dport", "8080", "-s", "10.77.0.10/24", "-j", "CNI-HOSTPORT-SETMARK"],
        ["-p", "tcp", "--dport", "8080", "-s", "127.0.0.1", "-j", "CNI-HOSTPORT-SETMARK"],
        ["-p", "tcp", "--dport", "8080", "-j", "DNAT", "--to-destination", "10.77.0.10:80"],
        ["-p", "udp", "--dport", "5353", "-d", "10.0.0.1", "-s", "10.77.0.10/24", "-j", "CNI-HOSTPORT-SETMARK"],
        ["-p", "udp", "--dport", "5353", "-d", "10.0.0.1", "-s", "127.0.0.1", "-j", "CNI-HOSTPORT-SETMARK"],
        ["-p", "udp", "--dport", "5353", "-d", "10.0.0.1", "-j", "DNAT", "--to-destination", "10.77.0.10:53"],
      ],
    );
    assert.deepEqual(c.entries[0]!.args, [
      "-m",
      "comment",
      "--comment",
      dnatComment(NET, ID),
      "-m",
      "multiport",
      "-p",
      "sctp",
      "--destination-ports",
      "9090",
      "-j",
      CHAIN,
    ]);
    const masq = forwardChains(target({}, MAPPINGS))[1]!;
    assert.equal(masq.entries[0]!.position, "first");
  });

  test("IPv6: no localhost rule, brackets in the DNAT target, a v4 hostIP skipped but its port still in the entry rule", () => {
    const lines = listedOf(target({}, MAPPINGS, "fd77::2/64"));
    assert.deepEqual(
      lines.filter((l) => l!.startsWith(`-A ${CHAIN}`)),
      [
        `-A ${CHAIN} -s fd77::/64 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK`,
        `-A ${CHAIN} -p tcp -m tcp --dport 8080 -j DNAT --to-destination [fd77::2]:80`,
        `-A ${CHAIN} -s fd77::/64 -p sctp -m sctp --dport 9090 -j CNI-HOSTPORT-SETMARK`,
        `-A ${CHAIN} -p sctp -m sctp --dport 9090 -j DNAT --to-destination [fd77::2]:90`,
      ],
    );
    assert.ok(lines.some((l) => l!.includes("-p udp") && l!.includes("--dports 5353")));
  });

  test("snat off: only DNAT rules and no marking chains", () => {
    const t = target({ snat: false }, MAPPINGS);
    assert.deepEqual(
      forwardChains(t).map((c) => c.name),
      ["CNI-HOSTPORT-DNAT", CHAIN],
    );
    assert.ok(containerChain(t).rules.every((r) => r.args.includes("DNAT")));
  });

  test("masqAll marks everything (no localhost rule); an external mark chain replaces SETMARK and MASQ", () => {
    const all = containerChain(target({ masqAll: true }, [MAPPINGS[0]]));
    assert.deepEqual(
      all.rules.map((r) => r.args.join(" ")),
      ["-p tcp --dport 8080 -s 0.0.0.0/0 -j CNI-HOSTPORT-SETMARK", "-p tcp --dport 8080 -j DNAT --to-destination 10.77.0.10:80"],
    );
    assert.equal(all.rules[0]!.listed, `-A ${CHAIN} -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK`);
    const ext = target({ externalSetMarkChain: "KUBE-MARK-MASQ" }, [MAPPINGS[0]]);
    assert.deepEqual(
      forwardChains(ext).map((c) => c.name),
      ["CNI-HOSTPORT-DNAT", CHAIN],
    );
    assert.ok(containerChain(ext).rules[0]!.args.join(" ").endsWith("-j KUBE-MARK-MASQ"));
    const bit = forwardChains(target({ markMasqBit: 5 }, [MAPPINGS[0]]));
    assert.equal(bit[1]!.rules[0]!.listed, "-A CNI-HOSTPORT-MASQ -m mark --mark 0x20/0x20 -j MASQUERADE");
  });

  test("entry rules: per protocol (sorted), blocks of 15 ports, with the family's conditions", () => {
    const many = Array.from({ length: 17 }, (_, i) => ({ hostPort: 1000 + i, containerPort: 80, protocol: "udp" }));
    const t = target({ conditionsV4: ["-d", "192.0.2.9"] }, [...many, { hostPort: 80, containerPort: 80, protocol: "tcp" }]);
    assert.deepEqual(
      entryPortLists(t).map((e) => `${e.protocol} ${e.ports}`),
      [
        "tcp 80",
        `udp ${many
          .slice(0, 15)
          .map((m) => m.hostPort)
          .join(",")}`,
        "udp 1015,1016",
      ],
    );
    const entries = containerChain(t).entries;
    assert.deepEqual(entries[0]!.args.slice(-4), ["-d", "192.0.2.9", "-j", CHAIN]);
    assert.equal(entries[0]!.listed, null, "conditions make the listed form unpredictable");
  });

  test("the same rule twice is set up once", () => {
    const t = target({}, [MAPPINGS[0], MAPPINGS[0]]);
    assert.equal(containerChain(t).rules.length, 3);
    assert.equal(containerChain(t).entries[0]!.args[9], "8080,8080");
  });

  test("listed rules split into words as a shell would", () => {
    assert.deepEqual(splitListedRule(GO_V4[14]!), [
      "-A",
      "CNI-HOSTPORT-DNAT",
      "-p",
      "sctp",
      "-m",
      "comment",
      "--comment",
      `dnat name: "rtestnet" id: "rtestcid0123456789"`,
      "-m",
      "multiport",
      "--dports",
      "9090",
      "-j",
      CHAIN,
    ]);
    assert.deepEqual(splitListedRule(`-A X -m comment --comment "" -j Y`), ["-A", "X", "-m", "comment", "--comment", "", "-j", "Y"]);
  });

  test("GC finds the network's stale chains through the entry comments and keeps valid ones by hash", () => {
    const entry = (net: string, id: string) =>
      `-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"${net}\\" id: \\"${id}\\"" -m multiport --dports 80 -j ${dnatChainName(net, id)}`;
    const cut = `-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"${NET}\\" id: \\"abc..." -m multiport --dports 80 -j ${dnatChainName(NET, "abcdef")}`;
    const nat = new TableListing([
      "-N CNI-HOSTPORT-DNAT",
      `-N ${dnatChainName(NET, "live")}`,
      `-N ${dnatChainName(NET, "dead")}`,
      `-N ${dnatChainName("other", "dead")}`,
      entry(NET, "live"),
      entry(NET, "dead"),
      entry(`${NET}2`, "dead"),
      entry("other", "dead"),
      cut,
      entry(NET, "abcdef"),
    ]);
    assert.deepEqual(staleDnatChains(nat, NET, ["live", "abcdef"]), [dnatChainName(NET, "dead")]);
    assert.deepEqual(
      staleDnatChains(nat, NET, []).sort(),
      [dnatChainName(NET, "live"), dnatChainName(NET, "dead"), dnatChainName(NET, "abcdef")].sort(),
    );
    assert.deepEqual(
      nat.jumpsTo(dnatChainName(NET, "dead")).map((r) => r.line),
      [entry(NET, "dead")],
    );
  });
});
