import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { jsonEqual, parseJson } from "#go-json/json.js";
import { crashKind, nullResults } from "#testing/null-results.js";
import { ALL_VERSIONS } from "../versions.js";
import {
  convertResult,
  createResult,
  createResultFromBytes,
  familyOf,
  getResultAsVersion,
  marshalResult,
  printResult,
  type Result,
  type Result020,
  type Result040,
  type Result100,
  resultShapeMismatch,
  resultToJson,
  toCurrentResult,
  type Version020,
  type Version040,
  type Version100,
} from "./index.js";

// ---------------------------------------------------------------------------------------------------------------
// Fixtures: the canonical data of the upstream types020/040/100 tests (checklist 6.3-6.5).

const DNS = {
  nameservers: ["1.2.3.4", "1::cafe"],
  domain: "acompany.com",
  search: ["somedomain.com", "otherdomain.net"],
  options: ["foo", "bar"],
};

const result020 = (cniVersion: Version020): Result020 => ({
  cniVersion,
  ip4: { ip: "1.2.3.30/24", gateway: "1.2.3.1", routes: [{ dst: "15.5.6.0/24", gw: "15.5.6.8" }] },
  ip6: { ip: "abcd:1234:ffff::cdde/64", gateway: "abcd:1234:ffff::1", routes: [{ dst: "1111:dddd::/80", gw: "1111:dddd::aaaa" }] },
  dns: structuredClone(DNS),
});

const result040 = (cniVersion: Version040 = "0.3.1"): Result040 => ({
  cniVersion,
  interfaces: [{ name: "eth0", mac: "00:11:22:33:44:55", sandbox: "/proc/3553/ns/net" }],
  ips: [
    { version: "4", interface: 0, address: "1.2.3.30/24", gateway: "1.2.3.1" },
    { version: "6", interface: 0, address: "abcd:1234:ffff::cdde/64", gateway: "abcd:1234:ffff::1" },
  ],
  routes: [
    { dst: "15.5.6.0/24", gw: "15.5.6.8" },
    { dst: "1111:dddd::/80", gw: "1111:dddd::aaaa" },
  ],
  dns: structuredClone(DNS),
});

const result100 = (cniVersion: Version100 = "1.1.0"): Result100 => ({
  cniVersion,
  interfaces: [
    {
      name: "eth0",
      mac: "00:11:22:33:44:55",
      mtu: 1500,
      sandbox: "/proc/3553/ns/net",
      pciID: "8086:9a01",
      socketPath: "/path/to/vhost/fd",
    },
  ],
  ips: [
    { interface: 0, address: "1.2.3.30/24", gateway: "1.2.3.1" },
    { interface: 0, address: "abcd:1234:ffff::cdde/64", gateway: "abcd:1234:ffff::1" },
  ],
  routes: [
    { dst: "15.5.6.0/24", gw: "15.5.6.8" },
    { dst: "1111:dddd::/80", gw: "1111:dddd::aaaa" },
  ],
  dns: structuredClone(DNS),
});

// Exact MarshalIndent bytes. 0.x keeps Go struct field order; 1.x goes through a map, so keys are sorted.
const DNS_STRUCT_PRETTY = `    "dns": {
        "nameservers": [
            "1.2.3.4",
            "1::cafe"
        ],
        "domain": "acompany.com",
        "search": [
            "somedomain.com",
            "otherdomain.net"
        ],
        "options": [
            "foo",
            "bar"
        ]
    }`;

const pretty020 = (v: string) => `{
    "cniVersion": "${v}",
    "ip4": {
        "ip": "1.2.3.30/24",
        "gateway": "1.2.3.1",
        "routes": [
            {
                "dst": "15.5.6.0/24",
                "gw": "15.5.6.8"
            }
        ]
    },
    "ip6": {
        "ip": "abcd:1234:ffff::cdde/64",
        "gateway": "abcd:1234:ffff::1",
        "routes": [
            {
                "dst": "1111:dddd::/80",
                "gw": "1111:dddd::aaaa"
            }
        ]
    },
${DNS_STRUCT_PRETTY}
}`;

const pretty040 = (v: string) => `{
    "cniVersion": "${v}",
    "interfaces": [
        {
            "name": "eth0",
            "mac": "00:11:22:33:44:55",
            "sandbox": "/proc/3553/ns/net"
        }
    ],
    "ips": [
        {
            "version": "4",
            "interface": 0,
            "address": "1.2.3.30/24",
            "gateway": "1.2.3.1"
        },
        {
            "version": "6",
            "interface": 0,
            "address": "abcd:1234:ffff::cdde/64",
            "gateway": "abcd:1234:ffff::1"
        }
    ],
    "routes": [
        {
            "dst": "15.5.6.0/24",
            "gw": "15.5.6.8"
        },
        {
            "dst": "1111:dddd::/80",
            "gw": "1111:dddd::aaaa"
        }
    ],
${DNS_STRUCT_PRETTY}
}`;

const pretty100 = (v: string) => `{
    "cniVersion": "${v}",
    "dns": {
        "domain": "acompany.com",
        "nameservers": [
            "1.2.3.4",
            "1::cafe"
        ],
        "options": [
            "foo",
            "bar"
        ],
        "search": [
            "somedomain.com",
            "otherdomain.net"
        ]
    },
    "interfaces": [
        {
            "mac": "00:11:22:33:44:55",
            "mtu": 1500,
            "name": "eth0",
            "pciID": "8086:9a01",
            "sandbox": "/proc/3553/ns/net",
            "socketPath": "/path/to/vhost/fd"
        }
    ],
    "ips": [
        {
            "address": "1.2.3.30/24",
            "gateway": "1.2.3.1",
            "interface": 0
        },
        {
            "address": "abcd:1234:ffff::cdde/64",
            "gateway": "abcd:1234:ffff::1",
            "interface": 0
        }
    ],
    "routes": [
        {
            "dst": "15.5.6.0/24",
            "gw": "15.5.6.8"
        },
        {
            "dst": "1111:dddd::/80",
            "gw": "1111:dddd::aaaa"
        }
    ]
}`;

const DNS_COMPACT_STRUCT =
  '{"nameservers":["1.2.3.4","1::cafe"],"domain":"acompany.com","search":["somedomain.com","otherdomain.net"],"options":["foo","bar"]}';
const DNS_COMPACT_SORTED =
  '{"domain":"acompany.com","nameservers":["1.2.3.4","1::cafe"],"options":["foo","bar"],"search":["somedomain.com","otherdomain.net"]}';
const ROUTES_COMPACT = '[{"dst":"15.5.6.0/24","gw":"15.5.6.8"},{"dst":"1111:dddd::/80","gw":"1111:dddd::aaaa"}]';

/** Asserts that fn throws an Error whose message is exactly `message`. */
const throwsMessage = (fn: () => unknown, message: string) =>
  assert.throws(fn, (e: unknown) => {
    assert.equal((e as Error).message, message);
    return true;
  });

// ---------------------------------------------------------------------------------------------------------------

describe("familyOf (creator registrations)", () => {
  test("exact version membership", () => {
    assert.deepEqual(["", "0.1.0", "0.2.0"].map(familyOf), ["020", "020", "020"]);
    assert.deepEqual(["0.3.0", "0.3.1", "0.4.0"].map(familyOf), ["040", "040", "040"]);
    assert.deepEqual(["1.0.0", "1.1.0"].map(familyOf), ["100", "100"]);
    assert.deepEqual(["1.0", "0.4", "1.2.0", "0.5.0", "0.4567.0", "v1.0.0"].map(familyOf), Array(6).fill(undefined));
  });
});

describe("types 0.1.0 / 0.2.0 (checklist 6.3)", () => {
  test("encodes a 0.2.0 result with exact bytes", () => {
    assert.equal(marshalResult(result020("0.2.0"), true), pretty020("0.2.0"));
    assert.equal(printResult(result020("0.2.0"), "0.2.0"), pretty020("0.2.0"));
  });
  test("encodes a 0.1.0 result", () => {
    assert.equal(marshalResult(result020("0.1.0"), true), pretty020("0.1.0"));
  });
  test("0.2.0 -> 0.1.0 and 0.1.0 -> 0.2.0", () => {
    assert.equal(printResult(result020("0.2.0"), "0.1.0"), pretty020("0.1.0"));
    assert.equal(printResult(result020("0.1.0"), "0.2.0"), pretty020("0.2.0"));
  });
  test("conversion within the family is a deep copy", () => {
    const from = result020("0.2.0");
    const to = convertResult(from, "0.1.0") as Result020;
    to.ip4!.routes![0]!.gw = "9.9.9.9";
    to.dns!.nameservers!.push("x");
    assert.equal(from.ip4!.routes![0]!.gw, "15.5.6.8");
    assert.deepEqual(from.dns, DNS);
  });
  test('create("", {"cniVersion": ""}) gives a 0.1.0 result', () => {
    const r = createResult("", { cniVersion: "" });
    assert.equal(r.cniVersion, "0.1.0");
    assert.equal(marshalResult(r), '{"cniVersion":"0.1.0","dns":{}}');
  });
  test("createResultFromBytes of a version-less result gives 0.1.0", () => {
    const r = createResultFromBytes('{"ip4":{"ip":"10.0.0.2/8"}}');
    assert.deepEqual(r, { cniVersion: "0.1.0", dns: {}, ip4: { ip: "10.0.0.2/8" } });
  });
  test("decodes the full 0.2.0 JSON", () => {
    const r = createResultFromBytes(pretty020("0.2.0"));
    assert.deepEqual(r, result020("0.2.0"));
    assert.equal(marshalResult(r, true), pretty020("0.2.0"));
  });
  test("dns is always present in 0.x output ({} when empty)", () => {
    assert.equal(
      marshalResult({ cniVersion: "0.2.0", ip4: { ip: "10.0.0.2/24" } } as Result020),
      '{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24"},"dns":{}}',
    );
    assert.equal(
      marshalResult({ cniVersion: "0.2.0", ip4: { ip: "10.0.0.2/24" } } as Result020, true),
      '{\n    "cniVersion": "0.2.0",\n    "ip4": {\n        "ip": "10.0.0.2/24"\n    },\n    "dns": {}\n}',
    );
  });
  test("0.2.0 -> 0.4.0: ips with version, routes concatenated, no interfaces", () => {
    const r = getResultAsVersion(result020("0.2.0"), "0.4.0");
    assert.equal(
      marshalResult(r),
      '{"cniVersion":"0.4.0","ips":[{"version":"4","address":"1.2.3.30/24","gateway":"1.2.3.1"},' +
        '{"version":"6","address":"abcd:1234:ffff::cdde/64","gateway":"abcd:1234:ffff::1"}],' +
        `"routes":${ROUTES_COMPACT},"dns":${DNS_COMPACT_STRUCT}}`,
    );
  });
  test("0.2.0 -> 1.0.0: the same without version keys, keys sorted", () => {
    const r = getResultAsVersion(result020("0.2.0"), "1.0.0");
    assert.equal(
      marshalResult(r),
      `{"cniVersion":"1.0.0","dns":${DNS_COMPACT_SORTED},"ips":[{"address":"1.2.3.30/24","gateway":"1.2.3.1"},` +
        `{"address":"abcd:1234:ffff::cdde/64","gateway":"abcd:1234:ffff::1"}],"routes":${ROUTES_COMPACT}}`,
    );
  });
  test("0.1.0 -> 0.3.0 and 1.1.0 are registered too", () => {
    assert.equal(getResultAsVersion(result020("0.1.0"), "0.3.0").cniVersion, "0.3.0");
    assert.equal(getResultAsVersion(result020("0.1.0"), "1.1.0").cniVersion, "1.1.0");
  });
  test("an IPv6-only 0.2.0 result goes up with one IP", () => {
    const r = getResultAsVersion({ cniVersion: "0.2.0", ip6: { ip: "abcd::2/64" } } as Result020, "0.4.0") as Result040;
    assert.deepEqual(r.ips, [{ version: "6", address: "abcd::2/64" }]);
    assert.equal(marshalResult(r), '{"cniVersion":"0.4.0","ips":[{"version":"6","address":"abcd::2/64"}],"dns":{}}');
  });
  test("route 1.1 fields are kept by 0.2.0 parsing and printing", () => {
    const r = createResultFromBytes('{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","routes":[{"dst":"0.0.0.0/0","mtu":1400,"table":0}]}}');
    assert.equal(marshalResult(r), '{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","routes":[{"dst":"0.0.0.0/0","mtu":1400,"table":0}]},"dns":{}}');
  });
});

describe("types 0.3.x / 0.4.0 (checklist 6.4)", () => {
  test("Print() of the 0.3.1 result, exact bytes", () => {
    assert.equal(marshalResult(result040("0.3.1"), true), pretty040("0.3.1"));
    assert.equal(printResult(result040("0.3.1"), "0.3.1"), pretty040("0.3.1"));
  });
  test("decodes its own output", () => {
    assert.deepEqual(createResultFromBytes(pretty040("0.3.1")), result040("0.3.1"));
    assert.deepEqual(createResult("0.4.0", parseJson(pretty040("0.4.0"))), result040("0.4.0"));
  });
  test("GetAsVersion(0.1.0) gives the 0.1.0 JSON", () => {
    assert.equal(printResult(result040("0.3.1"), "0.1.0"), pretty020("0.1.0"));
  });
  test("0.3.x <-> 0.4.0 is lossless", () => {
    for (const [from, to] of [
      ["0.3.0", "0.3.1"],
      ["0.3.1", "0.4.0"],
      ["0.4.0", "0.3.0"],
      ["0.3.1", "0.3.0"],
      ["0.4.0", "0.3.1"],
    ] as const) {
      const r = convertResult(result040(from), to);
      assert.deepEqual(r, result040(to), `${from} -> ${to}`);
    }
  });
  for (const withGateways of [true, false]) {
    test(`0.2.0 -> 0.4.0 -> 0.2.0 round trip (${withGateways ? "with" : "without"} route gateways)`, () => {
      const original = result020("0.2.0");
      if (!withGateways) {
        delete original.ip4!.routes![0]!.gw;
        delete original.ip6!.routes![0]!.gw;
      }
      const up = convertResult(original, "0.4.0");
      const back = getResultAsVersion(up, "0.2.0");
      assert.ok(jsonEqual(JSON.parse(marshalResult(back)), JSON.parse(marshalResult(original))));
      assert.equal(marshalResult(back, true), marshalResult(original, true));
    });
  }
  test("ip interface index 0 survives encoding; absent index is omitted", () => {
    const withIndex: Result040 = { cniVersion: "0.4.0", ips: [{ version: "4", interface: 0, address: "10.1.2.3/24" }] };
    assert.equal(marshalResult(withIndex), '{"cniVersion":"0.4.0","ips":[{"version":"4","interface":0,"address":"10.1.2.3/24"}],"dns":{}}');
    const without: Result040 = { cniVersion: "0.4.0", ips: [{ version: "4", address: "10.1.2.3/24" }] };
    assert.equal(marshalResult(without), '{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{}}');
    const decoded = createResultFromBytes('{"cniVersion":"0.4.0","ips":[{"version":"4","interface":0,"address":"10.1.2.3/24"}]}') as Result040;
    assert.equal(decoded.ips![0]!.interface, 0);
    const decodedNoIndex = createResultFromBytes('{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}]}') as Result040;
    assert.equal("interface" in decodedNoIndex.ips![0]!, false);
  });
  test("version is always emitted, even empty", () => {
    const r = createResultFromBytes('{"cniVersion":"0.4.0","ips":[{"address":"10.1.2.3/24","interface":-1}]}');
    assert.equal(marshalResult(r), '{"cniVersion":"0.4.0","ips":[{"version":"","interface":-1,"address":"10.1.2.3/24"}],"dns":{}}');
  });
  test("no IPs: conversion to 0.2.0 fails", () => {
    const r: Result040 = { cniVersion: "0.4.0" };
    throwsMessage(() => getResultAsVersion(r, "0.2.0"), "cannot convert: no valid IP addresses");
    throwsMessage(() => printResult({ cniVersion: "0.3.1", ips: [], routes: [] } as Result040, "0.1.0"), "cannot convert: no valid IP addresses");
  });
  test("IPs whose version string is neither 4 nor 6 are not converted down", () => {
    const r: Result040 = { cniVersion: "0.4.0", ips: [{ version: "", address: "10.0.0.2/24" }] };
    throwsMessage(() => getResultAsVersion(r, "0.2.0"), "cannot convert: no valid IP addresses");
  });
  test("down to 0.2.0: first IP of each family; routes follow their family or are dropped; extras dropped", () => {
    const r: Result040 = {
      cniVersion: "0.4.0",
      interfaces: [{ name: "eth0" }],
      ips: [
        { version: "4", interface: 0, address: "10.0.0.2/24", gateway: "10.0.0.1" },
        { version: "4", interface: 0, address: "10.0.1.2/24" },
      ],
      routes: [
        { dst: "0.0.0.0/0", gw: "10.0.0.1", mtu: 1400, advmss: 1300, priority: 5, table: 100, scope: 0 },
        { dst: "::/0", gw: "abcd::1" },
        { dst: "192.168.0.0/16" },
      ],
    };
    const down = getResultAsVersion(r, "0.2.0") as Result020;
    assert.deepEqual(down, {
      cniVersion: "0.2.0",
      dns: {},
      ip4: { ip: "10.0.0.2/24", gateway: "10.0.0.1", routes: [{ dst: "0.0.0.0/0", gw: "10.0.0.1" }, { dst: "192.168.0.0/16" }] },
    });
    assert.equal(
      marshalResult(down),
      '{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","gateway":"10.0.0.1","routes":[{"dst":"0.0.0.0/0","gw":"10.0.0.1"},{"dst":"192.168.0.0/16"}]},"dns":{}}',
    );
  });
  test("malformed addresses are Go unmarshal errors", () => {
    assert.throws(() => createResult("0.4.0", { cniVersion: "0.4.0", ips: [{ address: 5 }] }), /^DecodeError: json: cannot unmarshal/);
    throwsMessage(
      () => createResult("0.4.0", { cniVersion: "0.4.0", ips: [{ version: "4", address: "10.0.0.1" }] }),
      "invalid CIDR address: 10.0.0.1",
    );
    throwsMessage(
      () => createResult("0.4.0", { cniVersion: "0.4.0", ips: [{ address: "10.0.0.1/8", gateway: "10.0.0.x" }] }),
      "invalid IP address: 10.0.0.x",
    );
    assert.throws(
      () => createResult("0.4.0", { cniVersion: "0.4.0", ips: [{ version: 4, address: "10.0.0.1/8" }] }),
      /json: cannot unmarshal number into Go struct field/,
    );
    assert.throws(() => createResult("0.4.0", { cniVersion: "0.4.0", interfaces: {} }), /json: cannot unmarshal object into Go struct field/);
  });
});

describe("types 1.0.0 / 1.1.0 (checklist 6.5)", () => {
  test("Print() of the 1.1.0 result: keys sorted, exact bytes", () => {
    assert.equal(marshalResult(result100(), true), pretty100("1.1.0"));
    assert.equal(printResult(result100(), "1.1.0"), pretty100("1.1.0"));
  });
  test("decodes its own output", () => {
    assert.deepEqual(createResultFromBytes(pretty100("1.1.0")), result100());
  });
  test("-> 1.0.0 is identical except the version, and back", () => {
    const r100 = getResultAsVersion(result100(), "1.0.0");
    assert.equal(marshalResult(r100, true), pretty100("1.0.0"));
    assert.deepEqual(getResultAsVersion(r100, "1.1.0"), result100());
  });
  test("-> 0.1.0 prints the 0.1.0 JSON", () => {
    assert.equal(printResult(result100(), "0.1.0"), pretty020("0.1.0"));
  });
  test("-> 0.4.0: version from the address family, 1.x interface fields dropped", () => {
    assert.equal(printResult(result100(), "0.4.0"), pretty040("0.4.0"));
    assert.deepEqual(getResultAsVersion(result100(), "0.4.0"), result040("0.4.0"));
    assert.deepEqual(getResultAsVersion(result100("1.0.0"), "0.3.0"), result040("0.3.0"));
  });
  test("0.3.1 -> 1.1.0 -> 0.3.1 is lossless", () => {
    const up = getResultAsVersion(result040("0.3.1"), "1.1.0");
    assert.deepEqual(getResultAsVersion(up, "0.3.1"), result040("0.3.1"));
  });
  test("interface index 0 kept and absent index omitted", () => {
    assert.equal(
      marshalResult({ cniVersion: "1.1.0", ips: [{ interface: 0, address: "10.1.2.3/24" }] }),
      '{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24","interface":0}]}',
    );
    assert.equal(
      marshalResult({ cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24" }] }),
      '{"cniVersion":"1.1.0","ips":[{"address":"10.1.2.3/24"}]}',
    );
    assert.throws(() => createResult("1.1.0", { cniVersion: "1.1.0", ips: [{ address: 5 }] }), /^DecodeError: json: cannot unmarshal/);
  });
  test("dns is omitted when empty in 1.x", () => {
    assert.equal(marshalResult({ cniVersion: "1.1.0", dns: {} }), '{"cniVersion":"1.1.0"}');
    assert.equal(marshalResult({ cniVersion: "1.0.0" }, true), '{\n    "cniVersion": "1.0.0"\n}');
    assert.equal(marshalResult({ cniVersion: "1.1.0", dns: { domain: "x" } }), '{"cniVersion":"1.1.0","dns":{"domain":"x"}}');
    assert.equal(marshalResult({ cniVersion: "1.1.0", dns: { nameservers: [], search: [] } }), '{"cniVersion":"1.1.0"}');
    // ... while 0.x emits {} for the same data
    assert.equal(
      printResult({ cniVersion: "1.1.0", ips: [{ address: "10.0.0.2/24" }] }, "0.4.0"),
      '{\n    "cniVersion": "0.4.0",\n    "ips": [\n        {\n            "version": "4",\n            "address": "10.0.0.2/24"\n        }\n    ],\n    "dns": {}\n}',
    );
  });
  test("empty lists are omitted", () => {
    assert.equal(marshalResult({ cniVersion: "1.1.0", interfaces: [], ips: [], routes: [] }), '{"cniVersion":"1.1.0"}');
    assert.equal(marshalResult({ cniVersion: "0.4.0", interfaces: [], ips: [], routes: [] } as Result040), '{"cniVersion":"0.4.0","dns":{}}');
  });
  test("1.x interfaces: name always, empty fields and mtu 0 omitted", () => {
    assert.equal(
      marshalResult({ cniVersion: "1.1.0", interfaces: [{ name: "" }, { name: "lo", mtu: 0, mac: "" }] }),
      '{"cniVersion":"1.1.0","interfaces":[{"name":""},{"name":"lo"}]}',
    );
    const decoded = createResultFromBytes('{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","mtu":0,"sandbox":""}]}');
    assert.deepEqual(decoded, { cniVersion: "1.1.0", dns: {}, interfaces: [{ name: "eth0" }] });
  });
  test("1.x -> 0.x version comes from the address family (IPv4-mapped counts as 4)", () => {
    const r = createResultFromBytes('{"cniVersion":"1.1.0","ips":[{"address":"::ffff:10.0.0.2/120"},{"address":"abcd::2/64"}]}');
    assert.deepEqual((getResultAsVersion(r, "0.4.0") as Result040).ips, [
      { version: "4", address: "10.0.0.2/24" },
      { version: "6", address: "abcd::2/64" },
    ]);
  });
  test("1.0.0 <-> 1.1.0 keeps every field", () => {
    const r: Result100 = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", mtu: 9000, socketPath: "/s", pciID: "p" }],
      routes: [{ dst: "10.0.0.0/8", scope: 253, table: 0 }],
    };
    assert.deepEqual(convertResult(r, "1.1.0"), { ...r, cniVersion: "1.1.0", dns: {} });
  });
});

describe("routes (checklist 6.2)", () => {
  const ROUTE = '{"dst":"1.2.3.0/24","gw":"1.2.3.1","mtu":1500,"advmss":1340,"priority":100,"table":50,"scope":253}';
  test("all fields decode and encode (0.x struct order)", () => {
    const r = createResultFromBytes(`{"cniVersion":"0.4.0","routes":[${ROUTE}]}`) as Result040;
    assert.deepEqual(r.routes, [{ dst: "1.2.3.0/24", gw: "1.2.3.1", mtu: 1500, advmss: 1340, priority: 100, table: 50, scope: 253 }]);
    assert.equal(marshalResult(r), `{"cniVersion":"0.4.0","routes":[${ROUTE}],"dns":{}}`);
  });
  test("1.x prints route keys sorted", () => {
    const r = createResultFromBytes(`{"cniVersion":"1.1.0","routes":[${ROUTE}]}`);
    assert.equal(
      marshalResult(r),
      '{"cniVersion":"1.1.0","routes":[{"advmss":1340,"dst":"1.2.3.0/24","gw":"1.2.3.1","mtu":1500,"priority":100,"scope":253,"table":50}]}',
    );
  });
  test("mtu/advmss/priority omitted when 0; table/scope 0 emitted", () => {
    const r = createResultFromBytes('{"cniVersion":"0.4.0","routes":[{"dst":"1.2.3.0/24","mtu":0,"advmss":0,"priority":0,"table":0,"scope":0}]}');
    assert.equal(marshalResult(r), '{"cniVersion":"0.4.0","routes":[{"dst":"1.2.3.0/24","table":0,"scope":0}],"dns":{}}');
    const r2 = createResultFromBytes('{"cniVersion":"0.4.0","routes":[{"dst":"1.2.3.0/24","table":null,"gw":""}]}');
    assert.equal(marshalResult(r2), '{"cniVersion":"0.4.0","routes":[{"dst":"1.2.3.0/24"}],"dns":{}}');
  });
  test("1.1 route fields survive 0.4.0 <-> 1.1.0 and are dropped going to 0.2.0", () => {
    const r = createResultFromBytes(`{"cniVersion":"1.1.0","ips":[{"address":"1.2.3.4/24"}],"routes":[${ROUTE}]}`);
    const r040 = getResultAsVersion(r, "0.4.0") as Result040;
    assert.deepEqual(r040.routes![0], { dst: "1.2.3.0/24", gw: "1.2.3.1", mtu: 1500, advmss: 1340, priority: 100, table: 50, scope: 253 });
    assert.deepEqual((getResultAsVersion(r040, "1.0.0") as Result100).routes, r040.routes);
    assert.deepEqual((getResultAsVersion(r, "0.2.0") as Result020).ip4!.routes, [{ dst: "1.2.3.0/24", gw: "1.2.3.1" }]);
  });
  test("dst keeps host bits; addresses are canonicalised", () => {
    const r = createResultFromBytes(
      '{"cniVersion":"1.1.0","ips":[{"address":"ABCD:0:0::1/64","gateway":"ABCD::FFFF"}],"routes":[{"dst":"10.1.2.3/8","gw":"::ffff:10.0.0.1"}]}',
    ) as Result100;
    assert.deepEqual(r.ips, [{ address: "abcd::1/64", gateway: "abcd::ffff" }]);
    assert.deepEqual(r.routes, [{ dst: "10.1.2.3/8", gw: "10.0.0.1" }]);
  });
  test("bad route addresses", () => {
    throwsMessage(
      () => createResultFromBytes('{"cniVersion":"1.1.0","routes":[{ "dst": "1.2.3.0/24", "gw": "1.2.3.x" }]}'),
      "invalid IP address: 1.2.3.x",
    );
    throwsMessage(() => createResultFromBytes('{"cniVersion":"1.1.0","routes":[{ "dst": "1.2.3.4/99" }]}'), "invalid CIDR address: 1.2.3.4/99");
    assert.throws(
      () => createResultFromBytes('{"cniVersion":"1.1.0","routes":[{ "dst": 1 }]}'),
      /^DecodeError: json: cannot unmarshal number into Go struct field/,
    );
    assert.throws(
      () => createResultFromBytes('{"cniVersion":"1.1.0","routes":[{ "dst": "1.2.3.0/24", "mtu": "1" }]}'),
      /^DecodeError: json: cannot unmarshal string into Go struct field .* of type int$/,
    );
    assert.throws(
      () => createResultFromBytes('{"cniVersion":"1.1.0","routes":[{ "dst": "1.2.3.0/24", "mtu": 1.5 }]}'),
      /^DecodeError: json: cannot unmarshal number 1.5 into Go struct field .* of type int$/,
    );
  });
});

describe("createResult / createResultFromBytes (create.Create, checklist 2.1)", () => {
  test("unsupported CNI result version", () => {
    throwsMessage(() => createResult("1.2.0", {}), 'unsupported CNI result version "1.2.0"');
    throwsMessage(() => createResult("5678.456", { cniVersion: "5678.456" }), 'unsupported CNI result version "5678.456"');
    throwsMessage(() => createResultFromBytes('{"cniVersion":"0.5.0"}'), 'unsupported CNI result version "0.5.0"');
  });
  test("the declared version must be in the creator's family", () => {
    throwsMessage(
      () => createResult("1.1.0", { cniVersion: "5678.456" }),
      'result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is "5678.456"',
    );
    throwsMessage(
      () => createResult("1.1.0", { cniVersion: "0.2.0", ip4: { ip: "1.2.3.30/24", gateway: "1.2.3.1" } }),
      'result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is "0.2.0"',
    );
    throwsMessage(() => createResult("1.0.0", {}), 'result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is ""');
    throwsMessage(
      () => createResult("0.4.0", { cniVersion: "1.0.0" }),
      'result type supports [0.3.0 0.3.1 0.4.0] but unmarshalled CNIVersion is "1.0.0"',
    );
    throwsMessage(() => createResult("0.2.0", { cniVersion: "0.4.0" }), 'result type supports [ 0.1.0 0.2.0] but unmarshalled CNIVersion is "0.4.0"');
  });
  test("the requested version only picks the family", () => {
    assert.equal(createResult("1.0.0", { cniVersion: "1.1.0" }).cniVersion, "1.1.0");
    assert.equal(createResult("0.3.0", { cniVersion: "0.4.0" }).cniVersion, "0.4.0");
    assert.equal(createResult("0.2.0", {}).cniVersion, "0.1.0");
  });
  test("prevResult vector: a stray version in a 1.0.0 ip is ignored", () => {
    const prev = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", mac: "00:11:22:33:44:55", sandbox: "/proc/3553/ns/net", pciID: "8086:9a01", socketPath: "/path/to/vhost/fd" }],
      ips: [{ version: "4", interface: 0, address: "1.2.3.30/24", gateway: "1.2.3.1" }],
    };
    assert.deepEqual(createResult("1.0.0", prev), {
      cniVersion: "1.0.0",
      dns: {},
      interfaces: [{ name: "eth0", mac: "00:11:22:33:44:55", sandbox: "/proc/3553/ns/net", pciID: "8086:9a01", socketPath: "/path/to/vhost/fd" }],
      ips: [{ interface: 0, address: "1.2.3.30/24", gateway: "1.2.3.1" }],
    });
  });
  test("keys match case-insensitively (Go decoding)", () => {
    const r = createResultFromBytes('{"CNIVersion":"1.0.0","IPs":[{"Address":"10.0.0.2/24","GATEWAY":"10.0.0.1"}],"Interfaces":[{"NAME":"eth0"}]}');
    assert.deepEqual(r, { cniVersion: "1.0.0", dns: {}, ips: [{ address: "10.0.0.2/24", gateway: "10.0.0.1" }], interfaces: [{ name: "eth0" }] });
  });
  test("unknown keys are ignored; null means absent", () => {
    const r = createResultFromBytes('{"cniVersion":"1.1.0","foo":"bar","ips":null,"dns":null,"routes":[{"dst":"10.0.0.0/8","gw":null}]}');
    assert.deepEqual(r, { cniVersion: "1.1.0", dns: {}, routes: [{ dst: "10.0.0.0/8" }] });
  });
  test("type errors are reported before the version check", () => {
    assert.throws(
      () => createResult("1.1.0", { cniVersion: "0.2.0", ips: 5 }),
      /^DecodeError: json: cannot unmarshal number into Go struct field Result.ips/,
    );
    assert.throws(
      () => createResult("1.1.0", { cniVersion: 1 }),
      /json: cannot unmarshal number into Go struct field Result.cniVersion of type string/,
    );
  });
  test("non-object JSON", () => {
    assert.throws(() => createResult("1.1.0", []), { message: "json: cannot unmarshal array into Go value of type types100.Result" });
    assert.throws(() => createResult("0.4.0", "x"), { message: "json: cannot unmarshal string into Go value of type types040.Result" });
    throwsMessage(() => createResult("1.1.0", null), 'result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is ""');
    assert.equal(createResult("0.1.0", null).cniVersion, "0.1.0");
  });
  test("createResultFromBytes: syntax errors come from the version decoding", () => {
    throwsMessage(() => createResultFromBytes("{"), "decoding version from network config: unexpected end of JSON input");
    throwsMessage(
      () => createResultFromBytes('{"cniVersion":1}'),
      "decoding version from network config: json: cannot unmarshal number into Go struct field .cniVersion of type string",
    );
  });
  test("createResultFromBytes accepts Uint8Array", () => {
    assert.equal(createResultFromBytes(Buffer.from('{"cniVersion":"1.0.0"}')).cniVersion, "1.0.0");
  });
});

describe("convertResult / getResultAsVersion (checklist 2.3)", () => {
  test("same version returns the same object", () => {
    const r = result100();
    assert.equal(convertResult(r, "1.1.0"), r);
    assert.equal(getResultAsVersion(r, "1.1.0"), r);
    const old = result020("0.1.0");
    assert.equal(convertResult(old, ""), old); // "" means 0.1.0
  });
  test('"" target means 0.1.0', () => {
    assert.equal(getResultAsVersion(result100("1.0.0"), "").cniVersion, "0.1.0");
    assert.equal(printResult(result100("1.0.0"), ""), pretty020("0.1.0"));
  });
  test("unknown versions have no converter", () => {
    throwsMessage(() => convertResult(result100(), "1.2.0"), "no converter for CNI result version 1.1.0 to 1.2.0");
    throwsMessage(() => convertResult(result040("0.4.0"), "0.4567.0"), "no converter for CNI result version 0.4.0 to 0.4567.0");
    throwsMessage(() => convertResult(result040("0.4.0"), "1.0"), "no converter for CNI result version 0.4.0 to 1.0");
    throwsMessage(
      () => convertResult({ cniVersion: "0.4567.0" } as unknown as Result100, "1.1.0"),
      "no converter for CNI result version 0.4567.0 to 1.1.0",
    );
    throwsMessage(() => printResult(result100(), "0.5.0"), "no converter for CNI result version 1.1.0 to 0.5.0");
  });
  test("a result without cniVersion takes its family's implemented version first", () => {
    assert.equal(marshalResult(getResultAsVersion({ ...result100(), cniVersion: "" }, "1.0.0"), true), pretty100("1.0.0"));
    assert.equal(getResultAsVersion({ ...result100(), cniVersion: "" }, "1.1.0").cniVersion, "1.1.0");
    assert.equal(marshalResult(getResultAsVersion({ ...result020(""), cniVersion: "" }, "0.1.0"), true), pretty020("0.1.0"));
    assert.equal(getResultAsVersion({ ...result040(), cniVersion: "" }, "0.4.0").cniVersion, "0.4.0");
  });
  test("conversions do not share mutable state with their input", () => {
    const from = result040("0.4.0");
    const to = convertResult(from, "1.1.0") as Result100;
    to.interfaces![0]!.name = "changed";
    to.routes![0]!.gw = "9.9.9.9";
    to.dns!.search!.push("x");
    assert.deepEqual(from, result040("0.4.0"));
  });
  test("resultShapeMismatch names a key, at any depth, that its version's results do not have, and the keys there", () => {
    for (const r of [result020("0.2.0"), result040("0.3.0"), result040("0.4.0"), result100("1.0.0"), result100("1.1.0")]) {
      assert.equal(resultShapeMismatch(r), undefined);
    }
    const mismatch = (r: unknown) => resultShapeMismatch(r as Result);
    assert.equal(
      mismatch({ ...result100("1.0.0"), ip4: { ip: "10.0.0.2/24" } }),
      `the result is labelled cniVersion "1.0.0" but has "ip4", which results of that version do not have (a result takes: cniVersion, interfaces, ips, routes, dns)`,
    );
    assert.equal(
      mismatch({ cniVersion: "1.1.0", ips: [{ address: "10.0.0.2/24" }, { address: "10.0.0.3/24", gatway: "10.0.0.1" }] }),
      `the result is labelled cniVersion "1.1.0" but ips[1] has "gatway", which results of that version do not have (ips[1] takes: interface, address, gateway)`,
    );
    assert.equal(
      mismatch({ cniVersion: "1.1.0", ips: [{ version: "4", address: "10.0.0.2/24" }] }),
      `the result is labelled cniVersion "1.1.0" but ips[0] has "version", which results of that version do not have (ips[0] takes: interface, address, gateway)`,
    );
    assert.equal(
      mismatch({ cniVersion: "0.4.0", interfaces: [{ name: "eth0", mtu: 1500 }] }),
      `the result is labelled cniVersion "0.4.0" but interfaces[0] has "mtu", which results of that version do not have (interfaces[0] takes: name, mac, sandbox)`,
    );
    assert.match(
      mismatch({ cniVersion: "0.2.0", ip4: { ip: "10.0.0.2/24", routes: [{ dst: "0.0.0.0/0", gateway: "x" }] } }) ?? "",
      /ip4\.routes\[0\] has "gateway"/,
    );
    assert.match(
      mismatch({ cniVersion: "1.0.0", dns: { nameserver: [] } }) ?? "",
      /dns has "nameserver".*\(dns takes: nameservers, domain, search, options\)/,
    );
    assert.equal(
      mismatch({ cniVersion: "0.3.1", ips: [{ address: "10.0.0.2/24" }] }),
      `the result is labelled cniVersion "0.3.1" but has an IP without "version"`,
    );
    assert.equal(
      mismatch({ cniVersion: "1.0" }),
      `the result is labelled cniVersion "1.0", which is not a CNI version (want one of 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)`,
    );
    assert.match(mismatch({ ips: [] }) ?? "", /^the result has no cniVersion \(want one of 0\.1\.0, /);
    assert.equal(mismatch({ cniVersion: "", ip4: { ip: "10.0.0.2/24" } }), undefined, "a version-less result has the 0.2.0 shape");
    assert.match(mismatch({ cniVersion: "", ips: [] }) ?? "", /labelled cniVersion "" but has "ips"/);
  });
  test("every registered pair converts the canonical data", () => {
    const all = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"];
    const sample = (v: string): Result =>
      familyOf(v) === "020" ? result020(v as Version020) : familyOf(v) === "040" ? result040(v as Version040) : result100(v as Version100);
    for (const from of all) {
      for (const to of all) {
        const out = convertResult(sample(from), to);
        assert.equal(out.cniVersion, to, `${from} -> ${to}`);
        assert.equal(familyOf(out.cniVersion), familyOf(to));
      }
    }
  });
  test("toCurrentResult converts anything to 1.1.0", () => {
    assert.deepEqual(toCurrentResult(result040("0.3.1")), {
      ...result100(),
      interfaces: [{ name: "eth0", mac: "00:11:22:33:44:55", sandbox: "/proc/3553/ns/net" }],
    });
    assert.equal(toCurrentResult(result020("0.2.0")).cniVersion, "1.1.0");
  });
});

describe("marshalResult / resultToJson", () => {
  test("compact form", () => {
    assert.equal(
      marshalResult(result100()),
      `{"cniVersion":"1.1.0","dns":${DNS_COMPACT_SORTED},"interfaces":[{"mac":"00:11:22:33:44:55","mtu":1500,"name":"eth0","pciID":"8086:9a01","sandbox":"/proc/3553/ns/net","socketPath":"/path/to/vhost/fd"}],` +
        `"ips":[{"address":"1.2.3.30/24","gateway":"1.2.3.1","interface":0},{"address":"abcd:1234:ffff::cdde/64","gateway":"abcd:1234:ffff::1","interface":0}],"routes":${ROUTES_COMPACT}}`,
    );
  });
  test("printResult has no trailing newline", () => {
    assert.ok(!printResult(result100(), "1.1.0").endsWith("\n"));
  });
  test("resultToJson gives the shape of the result's own version", () => {
    assert.deepEqual(Object.keys(resultToJson(result040("0.4.0"))), ["cniVersion", "interfaces", "ips", "routes", "dns"]);
    assert.deepEqual(Object.keys(resultToJson(result020("0.2.0"))), ["cniVersion", "ip4", "ip6", "dns"]);
    assert.deepEqual(Object.keys(resultToJson({ cniVersion: "1.1.0" })), ["cniVersion"]);
  });
  test("a version-less 0.x result omits cniVersion", () => {
    assert.equal(marshalResult({ cniVersion: "", ip4: { ip: "10.0.0.2/8" } } as Result020), '{"ip4":{"ip":"10.0.0.2/8"},"dns":{}}');
  });
  test("HTML characters in strings are escaped", () => {
    assert.equal(
      marshalResult({ cniVersion: "1.1.0", interfaces: [{ name: "a<b>&" }] }),
      '{"cniVersion":"1.1.0","interfaces":[{"name":"a\\u003cb\\u003e\\u0026"}]}',
    );
  });
});

// Results with null entries: Go's libcni conversions dereference them (containernetworking/cni PRs #1191, #1192).
describe("results with null entries (cni#1191, cni#1192): every version, every conversion", () => {
  for (const from of ALL_VERSIONS) {
    test(`created as ${from}, converted to every version and printed: a result or an error, never a crash`, () => {
      for (const { label, result } of nullResults(from)) {
        let created: Result;
        try {
          created = createResult(from, result);
        } catch (e) {
          assert.equal(crashKind(e), undefined, `${label}, created as ${from}`);
          continue;
        }
        for (const to of ALL_VERSIONS) {
          try {
            const converted = convertResult(created, to);
            const printed = JSON.parse(printResult(converted, to)) as Record<string, unknown>;
            // What is printed has no null entry left: a reader after us meets none.
            assert.ok(!JSON.stringify(printed).includes("null"), `${label}, ${from} -> ${to}: ${JSON.stringify(printed)}`);
            toCurrentResult(converted);
          } catch (e) {
            assert.equal(crashKind(e), undefined, `${label}, ${from} -> ${to}`);
          }
        }
      }
    });
  }
  test("an entry that is null is refused with a message, as bytes too", () => {
    for (const { label, result } of nullResults("1.1.0")) {
      try {
        createResultFromBytes(JSON.stringify(result));
      } catch (e) {
        assert.equal(crashKind(e), undefined, label);
      }
    }
  });
});
