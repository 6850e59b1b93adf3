import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseIP } from "#ip/ip.js";
import { ErrorCode } from "#spec/errors.js";
import { assertCniError } from "#testing/cni-error.js";
import { DEFAULT_DATA_DIR, parseGCConfig, parseHostLocalConfig, rangeContains, rangeSetToString } from "./config.js";
import { parseResolvConfText } from "./dns.js";

const stdin = (ipam: unknown, extra: Record<string, unknown> = {}, cniVersion = "1.0.0") =>
  Buffer.from(JSON.stringify({ cniVersion, name: "net1", type: "host-local", ipam, ...extra }));
const parse = (ipam: unknown, extra?: Record<string, unknown>, cniArgs = "", cniVersion?: string) =>
  parseHostLocalConfig(stdin(ipam, extra, cniVersion), cniArgs);
const ranges = (...sets: unknown[][]) => ({ type: "host-local", ranges: sets });

const throwsCni = assertCniError;

describe("host-local config: ranges", () => {
  test("an IPv4 subnet defaults to .1-.254 with gateway .1", () => {
    const conf = parse(ranges([{ subnet: "10.1.2.0/24" }]));
    const r = conf.rangeSets[0]!.ranges[0]!;
    assert.equal(r.subnet.text, "10.1.2.0/24");
    assert.equal(r.rangeStart.text, "10.1.2.1");
    assert.equal(r.rangeEnd.text, "10.1.2.254");
    assert.equal(r.gateway.text, "10.1.2.1");
    assert.equal(r.source, "ipam.ranges[0][0]");
    assert.equal(conf.dataDir, DEFAULT_DATA_DIR);
    assert.equal(conf.network, "net1");
  });
  test("an IPv6 subnet ends at its last address", () => {
    const r = parse(ranges([{ subnet: "fd00:1::/64" }])).rangeSets[0]!.ranges[0]!;
    assert.equal(r.rangeStart.text, "fd00:1::1");
    assert.equal(r.rangeEnd.text, "fd00:1::ffff:ffff:ffff:ffff");
    assert.equal(r.gateway.text, "fd00:1::1");
  });
  test("explicit rangeStart, rangeEnd and gateway are kept (keys match case-insensitively, as Go)", () => {
    const r = parse(ranges([{ Subnet: "10.0.0.0/16", RangeStart: "10.0.1.10", rangeEnd: "10.0.1.20", gateway: "10.0.255.254" }])).rangeSets[0]!
      .ranges[0]!;
    assert.equal(`${r.rangeStart.text}-${r.rangeEnd.text} gw ${r.gateway.text}`, "10.0.1.10-10.0.1.20 gw 10.0.255.254");
    assert.ok(rangeContains(r, parseIP("10.0.1.15")));
    assert.ok(!rangeContains(r, parseIP("10.0.1.21")));
    assert.ok(!rangeContains(r, parseIP("fd00::1")));
  });
  test("a gateway outside the subnet is kept and the range starts at the subnet's first address, as Go 1.1.1", () => {
    const r = parse(ranges([{ subnet: "10.0.0.0/24", gateway: "10.0.1.1" }])).rangeSets[0]!.ranges[0]!;
    assert.equal(`${r.rangeStart.text}-${r.rangeEnd.text} gw ${r.gateway.text}`, "10.0.0.1-10.0.0.254 gw 10.0.1.1");
  });
  test("empty strings mean unset, as Go's net.IP", () => {
    const r = parse(ranges([{ subnet: "10.0.0.0/30", rangeStart: "", gateway: "" }])).rangeSets[0]!.ranges[0]!;
    assert.equal(`${r.rangeStart.text}-${r.rangeEnd.text}`, "10.0.0.1-10.0.0.2");
  });
  const bad: Array<[string, unknown, string]> = [
    ["subnet is not a CIDR", { subnet: "10.0.0.0/33" }, 'invalid range: subnet "10.0.0.0/33" is not a valid CIDR (ipam.ranges[0][0])'],
    ["subnet is missing", { rangeStart: "10.0.0.1" }, "invalid range: subnet is missing (ipam.ranges[0][0])"],
    [
      "/31 is too small",
      { subnet: "10.0.0.0/31" },
      "invalid range: subnet 10.0.0.0/31 is too small to allocate from (a /31 or /32 has no usable addresses) (ipam.ranges[0][0])",
    ],
    [
      "/128 is too small",
      { subnet: "fd00::/128" },
      "invalid range: subnet fd00::/128 is too small to allocate from (a /127 or /128 has no usable addresses) (ipam.ranges[0][0])",
    ],
    [
      "host bits",
      { subnet: "10.0.0.5/24" },
      "invalid range: subnet 10.0.0.5/24 has host bits set; for a prefix length of 24 the network address is 10.0.0.0 (ipam.ranges[0][0])",
    ],
    ["gateway not an IP", { subnet: "10.0.0.0/24", gateway: "router" }, 'invalid range: gateway "router" is not an IP address (ipam.ranges[0][0])'],
    [
      "rangeStart outside the subnet",
      { subnet: "10.0.0.0/24", rangeStart: "10.0.1.5" },
      "invalid range: rangeStart 10.0.1.5 is not in subnet 10.0.0.0/24 (ipam.ranges[0][0])",
    ],
    [
      "rangeEnd of another family",
      { subnet: "10.0.0.0/24", rangeEnd: "fd00::5" },
      "invalid range: rangeEnd fd00::5 is not in subnet 10.0.0.0/24 (ipam.ranges[0][0])",
    ],
    [
      "rangeStart after rangeEnd",
      { subnet: "10.0.0.0/24", rangeStart: "10.0.0.50", rangeEnd: "10.0.0.20" },
      "invalid range: rangeStart 10.0.0.50 is after rangeEnd 10.0.0.20 (ipam.ranges[0][0])",
    ],
    ["subnet of the wrong type", { subnet: 10 }, 'invalid "ipam.ranges[0][0].subnet": 10 (want a string)'],
  ];
  for (const [name, range, msg] of bad) {
    test(`rejects: ${name} (code 7)`, () => throwsCni(() => parse(ranges([range])), ErrorCode.InvalidNetworkConfig, msg));
  }
  test("range set errors: empty, mixed families, overlapping ranges", () => {
    throwsCni(() => parse(ranges([])), 7, "invalid range set: ipam.ranges[0] is empty");
    throwsCni(
      () => parse(ranges([{ subnet: "10.0.0.0/24" }, { subnet: "fd00::/64" }])),
      7,
      "invalid range set: ipam.ranges[0] mixes IPv4 and IPv6 ranges (10.0.0.0/24 and fd00::/64)",
    );
    throwsCni(
      () => parse(ranges([{ subnet: "10.0.0.0/16" }, { subnet: "10.0.5.0/24" }])),
      7,
      "invalid range set: ranges 10.0.0.1-10.0.255.254 (ipam.ranges[0][0]) and 10.0.5.1-10.0.5.254 (ipam.ranges[0][1]) overlap",
    );
    throwsCni(() => parse({ ranges: "10.0.0.0/24" }), 7, 'invalid "ipam.ranges": "10.0.0.0/24" (want a list)');
    throwsCni(() => parse({ ranges: ["10.0.0.0/24"] }), 7, 'invalid "ipam.ranges[0]": "10.0.0.0/24" (want a list)');
  });
  test("two ranges of one subnet that do not overlap are fine", () => {
    const set = parse(
      ranges([
        { subnet: "10.0.0.0/24", rangeStart: "10.0.0.10", rangeEnd: "10.0.0.19" },
        { subnet: "10.0.0.0/24", rangeStart: "10.0.0.20", rangeEnd: "10.0.0.29" },
      ]),
    ).rangeSets[0]!;
    assert.equal(rangeSetToString(set), "10.0.0.10-10.0.0.19,10.0.0.20-10.0.0.29");
  });
  test("range sets must not overlap each other", () => {
    throwsCni(
      () => parse(ranges([{ subnet: "10.0.0.0/24" }], [{ subnet: "10.0.0.0/25" }])),
      7,
      "range set 0 overlaps with 1: 10.0.0.1-10.0.0.254 (ipam.ranges[0][0]) and 10.0.0.1-10.0.0.126 (ipam.ranges[1][0])",
    );
  });
  test("no ranges at all", () => {
    throwsCni(() => parse({ type: "host-local" }), 7, "no IP ranges specified: set ipam.ranges, ipam.subnet or runtimeConfig.ipRanges");
  });
  test("a missing ipam key", () => {
    throwsCni(() => parseHostLocalConfig(Buffer.from('{"cniVersion":"1.0.0","name":"n"}'), ""), 7, "IPAM config missing 'ipam' key");
  });
  test("order: runtimeConfig.ipRanges, then the legacy single range, then ipam.ranges", () => {
    const conf = parse(
      { subnet: "10.2.0.0/24", gateway: "10.2.0.254", ranges: [[{ subnet: "10.3.0.0/24" }]] },
      { runtimeConfig: { ipRanges: [[{ subnet: "10.1.0.0/24" }]] } },
    );
    assert.deepEqual(
      conf.rangeSets.map((s) => [s.source, s.ranges[0]!.subnet.text, s.ranges[0]!.gateway.text]),
      [
        ["runtimeConfig.ipRanges[0]", "10.1.0.0/24", "10.1.0.1"],
        ["ipam", "10.2.0.0/24", "10.2.0.254"],
        ["ipam.ranges[0]", "10.3.0.0/24", "10.3.0.1"],
      ],
    );
  });
  test("legacy keys without a subnet are ignored, as Go", () => {
    const conf = parse({ rangeStart: "10.9.9.9", ranges: [[{ subnet: "10.3.0.0/24" }]] });
    assert.equal(conf.rangeSets.length, 1);
  });
  test("spec 0.2.0 allows one range set per family", () => {
    assert.equal(parse(ranges([{ subnet: "10.0.0.0/24" }], [{ subnet: "fd00::/64" }]), {}, "", "0.2.0").rangeSets.length, 2);
    throwsCni(
      () => parse(ranges([{ subnet: "10.0.0.0/24" }], [{ subnet: "10.1.0.0/24" }]), {}, "", "0.2.0"),
      7,
      "CNI version 0.2.0 does not support more than 1 address per family",
    );
    assert.equal(parse(ranges([{ subnet: "10.0.0.0/24" }], [{ subnet: "10.1.0.0/24" }]), {}, "", "0.3.0").rangeSets.length, 2);
  });
});

describe("host-local config: requested IPs, routes, other keys", () => {
  const base = ranges([{ subnet: "10.0.0.0/24" }], [{ subnet: "fd00::/64" }]);
  test("CNI_ARGS IP first, then args.cni.ips, then runtimeConfig.ips; prefixes ignored; duplicates collapse", () => {
    const conf = parse(
      base,
      { args: { cni: { ips: ["fd00::9", "10.0.0.5/24"] } }, runtimeConfig: { ips: ["10.0.0.7/24", "fd00::9"] } },
      "IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.0.0.5",
    );
    assert.deepEqual(
      conf.requestedIPs.map((ip) => ip.text),
      ["10.0.0.5", "fd00::9", "10.0.0.7"],
    );
  });
  test("CNI_ARGS errors are code 4 and name the pair", () => {
    throwsCni(() => parse(base, {}, "FOO=bar"), ErrorCode.InvalidEnvironmentVariables, 'ARGS: unknown args ["FOO=bar"]');
    throwsCni(() => parse(base, {}, "IP=10.0.0.300"), 4, 'ARGS: error parsing value of pair "IP=10.0.0.300": invalid IP address 10.0.0.300');
    throwsCni(() => parse(base, {}, "IP"), 4, 'ARGS: invalid pair "IP"');
    assert.equal(parse(base, {}, "IP=").requestedIPs.length, 0);
  });
  test("bad requested IPs in the config are code 7", () => {
    throwsCni(() => parse(base, { runtimeConfig: { ips: ["nope"] } }), 7, 'invalid "runtimeConfig.ips[0]": "nope" (want an IP address)');
    throwsCni(() => parse(base, { args: { cni: { ips: "10.0.0.1" } } }), 7, 'invalid "args.cni.ips": "10.0.0.1" (want a list)');
  });
  test("routes keep the 1.1 fields; dataDir and resolvConf are read", () => {
    const conf = parse({
      ...base,
      dataDir: "/tmp/x",
      resolvConf: "/etc/r.conf",
      routes: [{ dst: "0.0.0.0/0" }, { dst: "10.9.0.0/16", gw: "10.0.0.254", mtu: 1400, priority: 5, table: 100, scope: 0 }],
    });
    assert.deepEqual(conf.routes, [{ dst: "0.0.0.0/0" }, { dst: "10.9.0.0/16", gw: "10.0.0.254", mtu: 1400, priority: 5, table: 100, scope: 0 }]);
    assert.equal(conf.dataDir, "/tmp/x");
    assert.equal(conf.resolvConf, "/etc/r.conf");
  });
  test("bad routes are code 7 and name the route", () => {
    throwsCni(
      () => parse({ ...base, routes: [{ dst: "nowhere" }] }),
      7,
      'invalid route {"dst":"nowhere"}: invalid CIDR address: nowhere (ipam.routes[0])',
    );
    throwsCni(() => parse({ ...base, routes: [{ gw: "10.0.0.1" }] }), 7, "invalid route: dst is missing (ipam.routes[0])");
  });
  test("GC needs no ranges; missing valid-attachments means none are valid", () => {
    const gc = parseGCConfig(Buffer.from(JSON.stringify({ cniVersion: "1.1.0", name: "n", ipam: { type: "host-local", dataDir: "/d" } })));
    assert.deepEqual(gc, { network: "n", dataDir: "/d", validAttachments: [] });
    const withList = parseGCConfig(
      Buffer.from(JSON.stringify({ cniVersion: "1.1.0", name: "n", ipam: {}, "cni.dev/valid-attachments": [{ containerID: "a", ifname: "eth0" }] })),
    );
    assert.deepEqual(withList.validAttachments, [{ containerID: "a", ifname: "eth0" }]);
  });
});

describe("resolvConf", () => {
  test("nameserver, domain, search, options; comments and short lines skipped", () => {
    const dns = parseResolvConfText(
      "# comment\n; also\nnameserver 1.1.1.1\nnameserver   8.8.8.8 extra\r\ndomain example.com\n" +
        "search a.example b.example\nsearch c.example\noptions ndots:5 rotate\nbogus x\nnameserver\n",
    );
    assert.deepEqual(dns, {
      nameservers: ["1.1.1.1", "8.8.8.8"],
      domain: "example.com",
      search: ["a.example", "b.example", "c.example"],
      options: ["ndots:5", "rotate"],
    });
  });
});
