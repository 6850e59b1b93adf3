/**
 * The loopback plugin in real namespaces: our binary run directly (and once through cnitool), with Go's
 * loopback as the reference for the 1.0.0 result. Runs inside a test-made "host" namespace.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, Host, ipIn, type Result } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping loopback integration tests: ${skip}`);

const LOOPBACK = path.join(OUR_BIN, "loopback");
const GO_LOOPBACK = path.join(GO_BIN, "loopback");

describe("loopback plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  const setup = () => {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-lh-${tag}-${n}`, OUR_BIN);
    const ctr = host.container(`tscni-lc-${tag}-${n}`);
    ctr.exec("ip", ["link", "set", "lo", "down"]);
    return { host, ctr };
  };
  const conf = (cniVersion: string, extra: Record<string, unknown> = {}) => ({ cniVersion, name: `lo${tag}`, type: "loopback", ...extra });
  const loUp = (ctr: Netns) => (ipIn(ctr, ["link", "show", "dev", "lo"])[0]!["flags"] as string[]).includes("UP");
  const run = (host: Host, command: string, cniVersion: string, netns: string, extra: Record<string, unknown> = {}, binary = LOOPBACK) =>
    host.plugin(binary, command, conf(cniVersion, extra), { CNI_NETNS: netns, CNI_IFNAME: "eth7" });

  const expected: Record<string, (sandbox: string) => unknown> = {
    "0.1.0": () => ({ cniVersion: "0.1.0", ip4: { ip: "127.0.0.1/8" }, ip6: { ip: "::1/128" }, dns: {} }),
    "0.2.0": () => ({ cniVersion: "0.2.0", ip4: { ip: "127.0.0.1/8" }, ip6: { ip: "::1/128" }, dns: {} }),
    "0.3.1": (sandbox) => ({
      cniVersion: "0.3.1",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox }],
      ips: [
        { version: "4", interface: 0, address: "127.0.0.1/8" },
        { version: "6", interface: 0, address: "::1/128" },
      ],
      dns: {},
    }),
    "0.4.0": (sandbox) => ({
      cniVersion: "0.4.0",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox }],
      ips: [
        { version: "4", interface: 0, address: "127.0.0.1/8" },
        { version: "6", interface: 0, address: "::1/128" },
      ],
      dns: {},
    }),
    "1.0.0": (sandbox) => ({
      cniVersion: "1.0.0",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox }],
      ips: [
        { interface: 0, address: "127.0.0.1/8" },
        { interface: 0, address: "::1/128" },
      ],
    }),
    "1.1.0": (sandbox) => ({
      cniVersion: "1.1.0",
      interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox }],
      ips: [
        { interface: 0, address: "127.0.0.1/8" },
        { interface: 0, address: "::1/128" },
      ],
    }),
  };

  for (const version of Object.keys(expected)) {
    test(`${version}: ADD brings lo up (CNI_IFNAME ignored) and reports it; CHECK; DEL brings it down`, async () => {
      const { host, ctr } = setup();
      const add = await run(host, "ADD", version, ctr.path);
      assert.equal(add.code, 0, add.stdout + add.stderr);
      assert.ok(loUp(ctr));
      assert.deepEqual(JSON.parse(add.stdout), expected[version]!(ctr.path));
      if (version >= "0.4.0") {
        const check = await run(host, "CHECK", version, ctr.path, { prevResult: JSON.parse(add.stdout) });
        assert.equal(check.code, 0, check.stdout + check.stderr);
      }
      const del = await run(host, "DEL", version, ctr.path);
      assert.equal(del.code, 0, del.stdout + del.stderr);
      assert.equal(loUp(ctr), false);
      const again = await run(host, "DEL", version, ctr.path);
      assert.equal(again.code, 0, again.stdout + again.stderr);
    });
  }

  test("the 1.0.0 result matches Go's loopback (Go always adds an empty dns)", {
    skip: existsSync(GO_LOOPBACK) ? undefined : "no Go loopback",
  }, async () => {
    const { host, ctr } = setup();
    const ours = await run(host, "ADD", "1.0.0", ctr.path);
    ctr.exec("ip", ["link", "set", "lo", "down"]);
    const go = await run(host, "ADD", "1.0.0", ctr.path, {}, GO_LOOPBACK);
    assert.equal(go.code, 0, go.stdout + go.stderr);
    const { dns, ...goResult } = JSON.parse(go.stdout) as Result;
    assert.deepEqual(dns, {});
    assert.deepEqual(JSON.parse(ours.stdout), goResult);
  });

  test("CHECK fails when lo is down", async () => {
    const { host, ctr } = setup();
    const add = await run(host, "ADD", "1.0.0", ctr.path);
    ctr.exec("ip", ["link", "set", "lo", "down"]);
    const check = await run(host, "CHECK", "1.0.0", ctr.path, { prevResult: JSON.parse(add.stdout) });
    assert.equal(check.code, 1);
    assert.match(cniError(check).msg, /loopback interface is down/);
  });

  test("DEL of a namespace that is gone, or with no CNI_NETNS, succeeds", async () => {
    const { host, ctr } = setup();
    ctr.delete();
    const gone = await run(host, "DEL", "1.0.0", ctr.path);
    assert.equal(gone.code, 0, gone.stdout + gone.stderr);
    const empty = await run(host, "DEL", "1.0.0", "");
    assert.equal(empty.code, 0, empty.stdout + empty.stderr);
  });

  test("ADD into a namespace that does not exist is an error", async () => {
    const { host } = setup();
    const r = await run(host, "ADD", "1.0.0", `/run/netns/tscni-none-${tag}`);
    assert.equal(r.code, 1);
    assert.match(cniError(r).msg, /does not exist/);
  });

  test("chained after another plugin, ADD passes the prevResult through", async () => {
    const { host, ctr } = setup();
    const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: ctr.path }], ips: [{ address: "10.9.0.2/24", interface: 0 }] };
    const r = await run(host, "ADD", "1.0.0", ctr.path, { prevResult });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), prevResult);
    assert.ok(loUp(ctr));
  });

  test("a non-loopback address on lo is an error", async () => {
    const { host, ctr } = setup();
    ctr.exec("ip", ["addr", "add", "192.0.2.1/32", "dev", "lo"]);
    const r = await run(host, "ADD", "1.0.0", ctr.path);
    assert.equal(r.code, 1);
    assert.match(cniError(r).msg, /non-loopback address "192\.0\.2\.1"/);
  });

  test("through cnitool: ADD, CHECK, DEL, DEL", async () => {
    const { host, ctr } = setup();
    const net = host.writeNetwork({ cniVersion: "1.1.0", name: `lonet${tag}`, plugins: [{ type: "loopback" }] });
    const r = await host.add(net, ctr);
    assert.deepEqual(r, expected["1.1.0"]!(ctr.path));
    await host.must("check", net, ctr);
    await host.must("del", net, ctr);
    assert.equal(loUp(ctr), false);
    await host.must("del", net, ctr);
  });
});
