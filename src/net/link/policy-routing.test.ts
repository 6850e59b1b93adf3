import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { kernelRouteWords, parseRoute, parseRule, sourceRuleWords } from "./policy-routing.js";

describe("policy routing from ip -N -json", () => {
  test("rules: source with or without a length, numeric tables, from all", () => {
    assert.deepEqual(parseRule({ priority: 32765, src: "10.9.0.2", table: "100" }, 4), {
      family: 4,
      priority: 32765,
      src: "10.9.0.2/32",
      table: 100,
    });
    assert.deepEqual(parseRule({ priority: 10, src: "fd00::", srclen: 64, table: "7" }, 6), { family: 6, priority: 10, src: "fd00::/64", table: 7 });
    assert.deepEqual(parseRule({ priority: 0, src: "all", table: "255" }, 4), { family: 4, priority: 0, table: 255 });
  });

  test("routes: default, host and prefix destinations with every attribute", () => {
    assert.deepEqual(parseRoute({ type: "1", dst: "default", gateway: "10.9.0.1", dev: "v0", table: "100", protocol: "3", scope: "0", flags: [] }), {
      family: 4,
      type: 1,
      dst: "0.0.0.0/0",
      gw: "10.9.0.1",
      dev: "v0",
      table: 100,
      protocol: 3,
      scope: 0,
    });
    assert.deepEqual(parseRoute({ type: "2", dst: "fd09::2", dev: "v0", table: "255", protocol: "2", scope: "0", metric: 0, pref: "medium" }), {
      family: 6,
      type: 2,
      dst: "fd09::2/128",
      dev: "v0",
      table: 255,
      protocol: 2,
      scope: 0,
      metric: 0,
      pref: "medium",
    });
    assert.deepEqual(
      parseRoute({
        type: "1",
        dst: "10.9.0.0/24",
        dev: "v0",
        table: "254",
        protocol: "2",
        scope: "253",
        prefsrc: "10.9.0.2",
        metrics: [{ mtu: 1400 }],
      }),
      { family: 4, type: 1, dst: "10.9.0.0/24", dev: "v0", table: 254, protocol: 2, scope: 253, src: "10.9.0.2", mtu: 1400 },
    );
  });

  test("route words re-create the route in another table", () => {
    const r = parseRoute({ type: "1", dst: "fd09::/64", dev: "eth0", table: "254", protocol: "2", scope: "0", metric: 256, pref: "medium" });
    assert.deepEqual(kernelRouteWords(r, 100), [
      "fd09::/64",
      "dev",
      "eth0",
      "proto",
      "2",
      "scope",
      "0",
      "metric",
      "256",
      "pref",
      "medium",
      "table",
      "100",
    ]);
    const local = parseRoute({ type: "2", dst: "10.0.0.2", dev: "eth0", table: "255", protocol: "2", scope: "254", prefsrc: "10.0.0.2" });
    assert.deepEqual(kernelRouteWords(local), [
      "local",
      "10.0.0.2/32",
      "dev",
      "eth0",
      "proto",
      "2",
      "scope",
      "254",
      "src",
      "10.0.0.2",
      "table",
      "255",
    ]);
  });

  test("source rule words carry the family in the address", () => {
    assert.deepEqual(sourceRuleWords({ src: "10.0.0.2/32", table: 100 }), ["from", "10.0.0.2/32", "table", "100"]);
    assert.deepEqual(sourceRuleWords({ src: "fd00::2/128", table: 101, priority: 32765 }), [
      "from",
      "fd00::2/128",
      "table",
      "101",
      "priority",
      "32765",
    ]);
  });
});
