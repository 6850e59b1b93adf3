import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertCniError } from "#testing/cni-error.js";
import { parseStaticConfig } from "./config.js";

const parse = (ipam: unknown, extra: Record<string, unknown> = {}, cniArgs = "", cniVersion = "1.0.0") =>
  parseStaticConfig(Buffer.from(JSON.stringify({ cniVersion, name: "net1", type: "static", ipam, ...extra })), cniArgs);
const shown = (conf: ReturnType<typeof parse>) => conf.addresses.map((a) => `${a.address.text}${a.gateway ? ` gw ${a.gateway.text}` : ""}`);

const throwsCni = assertCniError;

describe("static config", () => {
  const ipam = {
    type: "static",
    addresses: [{ address: "10.10.0.5/24", gateway: "10.10.0.1" }, { address: "fd00::5/64" }],
    routes: [{ dst: "0.0.0.0/0" }],
    dns: { nameservers: ["10.10.0.1"], domain: "example.com", search: ["example.com"] },
  };
  test("addresses keep their host bits and order; routes and dns are read", () => {
    const conf = parse(ipam);
    assert.deepEqual(shown(conf), ["10.10.0.5/24 gw 10.10.0.1", "fd00::5/64"]);
    assert.deepEqual(conf.routes, [{ dst: "0.0.0.0/0" }]);
    assert.deepEqual(conf.dns, { nameservers: ["10.10.0.1"], domain: "example.com", search: ["example.com"] });
  });
  test("CNI_ARGS IP appends; GATEWAY applies to the CNI_ARGS addresses that contain it (as Go)", () => {
    const conf = parse(ipam, {}, "IP=10.20.0.5/24, 10.10.0.9/24;GATEWAY=10.20.0.1,10.10.0.254");
    assert.deepEqual(shown(conf), ["10.10.0.5/24 gw 10.10.0.1", "fd00::5/64", "10.20.0.5/24 gw 10.20.0.1", "10.10.0.9/24 gw 10.10.0.254"]);
  });
  test("args.cni.ips replaces the list, runtimeConfig.ips replaces it again", () => {
    assert.deepEqual(shown(parse(ipam, { args: { cni: { ips: ["10.30.0.5/16"] } } }, "IP=10.20.0.5/24")), ["10.30.0.5/16"]);
    assert.deepEqual(shown(parse(ipam, { args: { cni: { ips: ["10.30.0.5/16"] } }, runtimeConfig: { ips: ["10.40.0.5/16"] } })), ["10.40.0.5/16"]);
    assert.deepEqual(
      shown(parse(ipam, { runtimeConfig: { ips: [] } })),
      ["10.10.0.5/24 gw 10.10.0.1", "fd00::5/64"],
      "an empty list replaces nothing",
    );
  });
  test("a replaced config address is never parsed, as Go", () => {
    assert.deepEqual(shown(parse({ addresses: [{ address: "bogus" }] }, { runtimeConfig: { ips: ["10.40.0.5/16"] } })), ["10.40.0.5/16"]);
  });
  test("bad values: code 7 for the config, 4 for CNI_ARGS", () => {
    throwsCni(
      () => parse({ addresses: [{ address: "10.0.0.5" }] }),
      7,
      "the 'address' field is expected to be in CIDR notation, got: '10.0.0.5' (ipam.addresses[0].address)",
    );
    throwsCni(
      () => parse({ addresses: [{ address: "10.0.0.5/24", gateway: "x" }] }),
      7,
      'invalid gateway "x": not an IP address (ipam.addresses[0].gateway)',
    );
    throwsCni(
      () => parse({}, { runtimeConfig: { ips: ["10.0.0.5"] } }),
      7,
      "an entry in the 'ips' field is NOT in CIDR notation, got: '10.0.0.5' (runtimeConfig.ips[0])",
    );
    throwsCni(() => parse({}, {}, "IP=10.0.0.5"), 4, "the 'ip' field is expected to be in CIDR notation, got: '10.0.0.5' (CNI_ARGS IP)");
    throwsCni(() => parse({}, {}, "IP=10.0.0.5/24;GATEWAY=gw"), 4, "invalid gateway address: gw (CNI_ARGS GATEWAY)");
    throwsCni(() => parse({}, {}, "MAC=x"), 4, 'ARGS: unknown args ["MAC=x"]');
    throwsCni(() => parseStaticConfig(Buffer.from('{"cniVersion":"1.0.0","name":"n"}'), ""), 7, "IPAM config missing 'ipam' key");
  });
  test("spec 0.2.0 allows one address per family", () => {
    assert.equal(parse(ipam, {}, "", "0.2.0").addresses.length, 2);
    throwsCni(
      () => parse({ addresses: [{ address: "10.0.0.5/24" }, { address: "10.0.0.6/24" }] }, {}, "", "0.2.0"),
      7,
      "CNI version 0.2.0 does not support more than 1 address per family",
    );
  });
});
