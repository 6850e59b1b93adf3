/**
 * static driven as a runtime drives it (the built binary, CNI_* environment, config on stdin), and compared
 * with Go's static (/usr/lib/cni, spec <= 1.0.0) where both run.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GO_BIN, goPluginAvailable, OUR_BIN, type PluginCall, runPlugin } from "#testing/plugin-run.js";

const ours = (call: PluginCall, config: unknown) => runPlugin(OUR_BIN, "static", call, config);
const go = (call: PluginCall, config: unknown) => runPlugin(GO_BIN, "static", call, config);

const ipam = {
  type: "static",
  addresses: [{ address: "10.90.0.5/24", gateway: "10.90.0.1" }, { address: "fd90::5/64" }],
  routes: [{ dst: "0.0.0.0/0" }, { dst: "10.91.0.0/16", gw: "10.90.0.254" }],
  dns: { nameservers: ["10.90.0.53"], domain: "example.com", search: ["example.com"], options: ["ndots:2"] },
};
const conf = (cniVersion: string, extra: Record<string, unknown> = {}, ipamConf: unknown = ipam) => ({
  cniVersion,
  name: "staticnet",
  type: "static",
  ipam: ipamConf,
  ...extra,
});

describe("static binary", () => {
  test("ADD in every version's shape", async () => {
    const dns = { nameservers: ["10.90.0.53"], domain: "example.com", search: ["example.com"], options: ["ndots:2"] };
    const routes = [{ dst: "0.0.0.0/0" }, { dst: "10.91.0.0/16", gw: "10.90.0.254" }];
    const v1ips = [{ address: "10.90.0.5/24", gateway: "10.90.0.1" }, { address: "fd90::5/64" }];
    const v0ips = [
      { version: "4", address: "10.90.0.5/24", gateway: "10.90.0.1" },
      { version: "6", address: "fd90::5/64" },
    ];
    for (const [version, ips] of [
      ["0.3.1", v0ips],
      ["0.4.0", v0ips],
      ["1.0.0", v1ips],
      ["1.1.0", v1ips],
    ] as const) {
      const r = await ours({ command: "ADD", containerID: "c" }, conf(version));
      assert.equal(r.exitCode, 0, r.stdout);
      assert.deepEqual(r.json, { cniVersion: version, ips, routes, dns }, version);
    }
  });

  test("CNI_ARGS IP appends and GATEWAY applies to it; args.cni.ips and runtimeConfig.ips replace", async () => {
    let r = await ours({ command: "ADD", containerID: "c", args: "IP=10.92.0.5/24;GATEWAY=10.92.0.1" }, conf("1.0.0"));
    assert.deepEqual(r.json.ips, [
      { address: "10.90.0.5/24", gateway: "10.90.0.1" },
      { address: "fd90::5/64" },
      { address: "10.92.0.5/24", gateway: "10.92.0.1" },
    ]);
    r = await ours({ command: "ADD", containerID: "c", args: "IP=10.92.0.5/24" }, conf("1.0.0", { args: { cni: { ips: ["10.93.0.5/24"] } } }));
    assert.deepEqual(r.json.ips, [{ address: "10.93.0.5/24" }]);
    r = await ours(
      { command: "ADD", containerID: "c" },
      conf("1.0.0", { args: { cni: { ips: ["10.93.0.5/24"] } }, runtimeConfig: { ips: ["10.94.0.5/24", "fd94::5/64"] } }),
    );
    assert.deepEqual(r.json.ips, [{ address: "10.94.0.5/24" }, { address: "fd94::5/64" }]);
  });

  test("CHECK compares configured gateways with the prevResult", async () => {
    const prev = (gateway: string) => ({ cniVersion: "1.0.0", ips: [{ address: "10.90.0.5/24", gateway }, { address: "fd90::5/64" }] });
    let r = await ours({ command: "CHECK", containerID: "c" }, conf("1.0.0", { prevResult: prev("10.90.0.1") }));
    assert.equal(r.exitCode, 0, r.stdout);
    r = await ours({ command: "CHECK", containerID: "c" }, conf("1.0.0", { prevResult: prev("10.90.0.2") }));
    assert.deepEqual(r.json, { code: 999, msg: "static: Failed to match addr 10.90.0.5 on interface eth0" });
    r = await ours({ command: "CHECK", containerID: "c" }, conf("1.0.0"));
    assert.deepEqual(r.json, { code: 7, msg: "Required prevResult missing" });
    r = await ours(
      { command: "CHECK", containerID: "c" },
      conf("1.0.0", { prevResult: { cniVersion: "1.0.0", ips: [{ address: "10.99.0.1/24" }] } }),
    );
    assert.equal(r.exitCode, 0, "configured addresses missing from the prevResult are not checked, as Go");
  });

  test("DEL does nothing, repeatedly, whatever the ipam config says", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await ours({ command: "DEL", containerID: "c", netns: "" }, conf("1.0.0", {}, { type: "static", addresses: [{ address: "bogus" }] }));
      assert.equal(r.exitCode, 0, r.stdout);
      assert.equal(r.stdout, "");
    }
  });

  test("STATUS and GC succeed at 1.1.0", async () => {
    assert.equal((await ours({ command: "STATUS" }, conf("1.1.0"))).exitCode, 0);
    assert.equal((await ours({ command: "GC" }, conf("1.1.0"))).exitCode, 0);
  });

  test("bad input: CNI error JSON with the right code, never a stack trace", async () => {
    const cases: Array<[unknown, string, number, string]> = [
      [
        conf("1.0.0", {}, { addresses: [{ address: "10.0.0.5" }] }),
        "",
        7,
        "the 'address' field is expected to be in CIDR notation, got: '10.0.0.5' (ipam.addresses[0].address)",
      ],
      [
        conf("1.0.0", {}, { addresses: [{ address: "10.0.0.5/24", gateway: "gw" }] }),
        "",
        7,
        'invalid gateway "gw": not an IP address (ipam.addresses[0].gateway)',
      ],
      [
        conf("1.0.0", { runtimeConfig: { ips: ["10.0.0.5"] } }),
        "",
        7,
        "an entry in the 'ips' field is NOT in CIDR notation, got: '10.0.0.5' (runtimeConfig.ips[0])",
      ],
      [
        conf("0.2.0", {}, { addresses: [{ address: "10.0.0.5/24" }, { address: "10.0.0.6/24" }] }),
        "",
        7,
        "CNI version 0.2.0 does not support more than 1 address per family",
      ],
      [conf("1.0.0"), "IP=10.0.0.5", 4, "the 'ip' field is expected to be in CIDR notation, got: '10.0.0.5' (CNI_ARGS IP)"],
      [conf("1.0.0"), "FOO=bar", 4, 'ARGS: unknown args ["FOO=bar"]'],
      [{ cniVersion: "1.0.0", name: "n", type: "static" }, "", 7, "IPAM config missing 'ipam' key"],
    ];
    for (const [config, args, code, msg] of cases) {
      const r = await ours({ command: "ADD", containerID: "c", args }, config);
      assert.equal(r.exitCode, 1);
      assert.deepEqual(r.json, { code, msg });
      assert.equal(r.stderr, "");
    }
  });
});

const skipGo = goPluginAvailable("static") ? undefined : "Go's static is not installed in /usr/lib/cni";
describe("static: same output as Go's static", { skip: skipGo }, () => {
  const scenarios: Array<[string, unknown, string]> = [
    ["plain 0.3.1", conf("0.3.1"), ""],
    ["plain 0.4.0", conf("0.4.0"), ""],
    ["plain 1.0.0", conf("1.0.0"), ""],
    [
      "CNI_ARGS IP and GATEWAY (the gateway only reaches CNI_ARGS addresses)",
      conf("1.0.0"),
      "IP=10.92.0.5/24,10.90.0.9/24;GATEWAY=10.92.0.1,10.90.0.254",
    ],
    ["args.cni.ips", conf("1.0.0", { args: { cni: { ips: ["10.93.0.5/24"] } } }), "IgnoreUnknown=1;FOO=bar"],
    ["runtimeConfig.ips", conf("1.0.0", { runtimeConfig: { ips: ["10.94.0.5/24"] } }), ""],
  ];
  for (const [name, config, args] of scenarios) {
    test(name, async () => {
      const mine = await ours({ command: "ADD", containerID: "c", args }, config);
      const theirs = await go({ command: "ADD", containerID: "c", args }, config);
      assert.equal(theirs.exitCode, 0, theirs.stdout);
      assert.deepEqual(mine.json, theirs.json);
    });
  }
  test("CHECK agrees", async () => {
    for (const gateway of ["10.90.0.1", "10.90.0.2"]) {
      const config = conf("1.0.0", { prevResult: { cniVersion: "1.0.0", ips: [{ address: "10.90.0.5/24", gateway }] } });
      const mine = await ours({ command: "CHECK", containerID: "c" }, config);
      const theirs = await go({ command: "CHECK", containerID: "c" }, config);
      assert.equal(mine.exitCode, theirs.exitCode, gateway);
      assert.deepEqual(mine.json, theirs.json, gateway);
    }
  });
});
