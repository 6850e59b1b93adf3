/**
 * The vrf plugin chained after bridge + host-local (all ours: dist/bin). What needs VRF support in the
 * kernel (ADD, CHECK, DEL with a real VRF, two interfaces in one VRF, moved routes and IPv6 addresses) skips
 * with the reason when `ip link add x type vrf table 10` fails; what does not (a clean failure on such a
 * kernel, DEL with nothing to do, bad configs) always runs. The plan logic is unit-tested in plugins/meta/vrf.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { type ChainList, chainAdd, chainRun, runPlugin } from "#testing/chain.js";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, Host, ipIn, type Result } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping vrf integration tests: ${skip}`);

type Json = Record<string, unknown>;

/** Why VRFs cannot be made here (undefined when they can), from a throw-away namespace. */
function vrfMissing(cleanup: Cleanup, tag: string): string | undefined {
  const probe = cleanup.netns(`tscni-vrfprobe-${tag}`);
  const r = spawnSync("ip", ["-n", probe.name, "link", "add", "x", "type", "vrf", "table", "10"], { encoding: "utf8" });
  return r.status === 0 ? undefined : `this kernel has no VRF support (ip link add x type vrf table 10: ${r.stderr.trim()})`;
}

describe("vrf plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  let noVrf: string | undefined;
  before(() => {
    noVrf = vrfMissing(cleanup, tag);
    if (noVrf) console.log(`# vrf: the tests that need a VRF skip: ${noVrf}`);
  });
  after(() => cleanup.run());

  const newHost = () => {
    const n = ++seq;
    return { host: new Host(cleanup, `tscni-vh-${tag}-${n}`, OUR_BIN), br: `tv${tag}${n}`, n };
  };
  const chain = (host: Host, name: string, br: string, keys: Json, subnets: string[]): ChainList => ({
    cniVersion: "1.0.0",
    name,
    plugins: [
      { type: "bridge", bridge: br, isGateway: true, ipam: host.hostLocal(subnets, { routes: [{ dst: "192.168.77.0/24" }] }) },
      { type: "vrf", ...keys },
    ],
  });
  const links = (ctr: Netns) => ipIn(ctr, ["-d", "link", "show"]);
  const linkNamed = (ctr: Netns, name: string) => links(ctr).find((l) => l["ifname"] === name);

  test("on a kernel without VRF support ADD fails with the kernel's reason and leaves the interface as it was", async (t) => {
    if (!noVrf) return t.skip("this kernel has VRF support");
    const { host, br } = newHost();
    const list = chain(host, `vn${tag}k`, br, { vrfname: "red" }, ["10.206.0.0/24"]);
    const ctr = host.container(`tscni-vc-${tag}-k`);
    const env = { CNI_CONTAINERID: `vrfk-${tag}`, CNI_NETNS: ctr.path };
    const prev = JSON.parse((await runPlugin(host, OUR_BIN, list, 0, "ADD", env)).stdout) as Result;
    const before = links(ctr).map((l) => `${l["ifname"]} ${l["master"] ?? ""}`);
    const add = await runPlugin(host, OUR_BIN, list, 1, "ADD", env, prev);
    const err = cniError(add);
    assert.match(err.msg, /put eth0 into VRF red \(ip link add name red type vrf table 1\)/);
    assert.deepEqual(
      links(ctr).map((l) => `${l["ifname"]} ${l["master"] ?? ""}`),
      before,
    );
    // DEL has nothing to do and says so by succeeding.
    assert.equal((await runPlugin(host, OUR_BIN, list, 1, "DEL", env, prev)).code, 0);
    const check = cniError(await runPlugin(host, OUR_BIN, list, 1, "CHECK", env, prev));
    assert.match(check.msg, /VRF red does not exist/);
    await runPlugin(host, OUR_BIN, list, 0, "DEL", env, prev);
  });

  test("DEL without CNI_NETNS, with the namespace gone, or with no VRF, succeeds", async () => {
    const { host, br } = newHost();
    const list = chain(host, `vn${tag}d`, br, { vrfname: "red" }, ["10.206.1.0/24"]);
    for (const netns of ["", "/run/netns/tscni-no-such-ns", host.container(`tscni-vc-${tag}-d`).path]) {
      const r = await runPlugin(host, OUR_BIN, list, 1, "DEL", { CNI_CONTAINERID: `vrfd-${tag}`, CNI_NETNS: netns });
      assert.equal(r.code, 0, `${netns}: ${r.stdout}`);
    }
  });

  test("bad configs: code 7 naming the key; versions before 0.3.1 are refused", async () => {
    const { host, br } = newHost();
    const ctr = host.container(`tscni-vc-${tag}-w`);
    const env = { CNI_CONTAINERID: `vrfw-${tag}`, CNI_NETNS: ctr.path };
    const cases: Array<[Json, RegExp]> = [
      [{}, /"vrfname": ""/],
      [{ vrfname: "a/b" }, /"vrfname": "a\/b"/],
      [{ vrfname: "red", table: "ten" }, /"table": "ten"/],
      [{ vrfname: "red", table: -1 }, /"table": -1/],
    ];
    for (const [keys, expected] of cases) {
      const e = cniError(
        await runPlugin(host, OUR_BIN, chain(host, `vn${tag}w`, br, keys, ["10.206.2.0/24"]), 1, "ADD", env, { cniVersion: "1.0.0" }),
      );
      assert.equal(e.code, 7, JSON.stringify(e));
      assert.match(e.msg, expected);
    }
    const old = cniError(
      await runPlugin(host, OUR_BIN, { ...chain(host, `vn${tag}w`, br, { vrfname: "red" }, []), cniVersion: "0.3.0" }, 1, "ADD", env, {
        cniVersion: "0.3.0",
      }),
    );
    assert.equal(old.code, 1);
    const noPrev = cniError(await runPlugin(host, OUR_BIN, chain(host, `vn${tag}w`, br, { vrfname: "red" }, []), 1, "ADD", env));
    assert.match(noPrev.msg, /missing prevResult/);
  });

  test("ADD, CHECK, DEL, DEL again: the VRF is created with a free table, the interface and its routes move in", async (t) => {
    if (noVrf) return t.skip(noVrf);
    const { host, br } = newHost();
    const list = chain(host, `vn${tag}a`, br, { vrfname: "red" }, ["10.206.3.0/24", "fd20:263::/64"]);
    const ctr = host.container(`tscni-vc-${tag}-a`);
    const env = { CNI_CONTAINERID: `vrfa-${tag}`, CNI_NETNS: ctr.path };
    const result = await chainAdd(host, OUR_BIN, list, env);
    const vrf = linkNamed(ctr, "red")!;
    assert.equal((vrf["linkinfo"] as Json)["info_kind"], "vrf");
    const table = ((vrf["linkinfo"] as Json)["info_data"] as Json)["table"];
    assert.equal(table, 1);
    assert.equal(linkNamed(ctr, "eth0")!["master"], "red");
    const inTable = ipIn(ctr, ["-N", "route", "show", "table", "all"]).filter((r) => r["table"] === "1");
    assert.ok(
      inTable.some((r) => r["dst"] === "192.168.77.0/24"),
      JSON.stringify(inTable),
    );
    const v6 = (ipIn(ctr, ["-6", "addr", "show", "dev", "eth0", "scope", "global"])[0]!["addr_info"] as Json[]).map((a) => a["local"]);
    assert.deepEqual(v6, ["fd20:263::2"], "the IPv6 address is back");
    await chainRun(host, OUR_BIN, list, "CHECK", env, result);
    await chainRun(host, OUR_BIN, list, "DEL", env, result);
    assert.equal(linkNamed(ctr, "red"), undefined);
    await chainRun(host, OUR_BIN, list, "DEL", env, result);
  });

  test("two interfaces share a VRF; it goes with the last one; a configured table must match", async (t) => {
    if (noVrf) return t.skip(noVrf);
    const { host, br } = newHost();
    const list = chain(host, `vn${tag}b`, br, { vrfname: "blue", table: 55 }, ["10.206.4.0/24"]);
    const ctr = host.container(`tscni-vc-${tag}-b`);
    const e0 = { CNI_CONTAINERID: `vrfb-${tag}`, CNI_NETNS: ctr.path, CNI_IFNAME: "eth0" };
    const e1 = { ...e0, CNI_IFNAME: "eth1" };
    const r0 = await chainAdd(host, OUR_BIN, list, e0);
    const r1 = await chainAdd(host, OUR_BIN, list, e1);
    assert.equal(((linkNamed(ctr, "blue")!["linkinfo"] as Json)["info_data"] as Json)["table"], 55);
    const other = { ...list, plugins: [list.plugins[0]!, { type: "vrf", vrfname: "blue", table: 56 }] };
    const mismatch = cniError(await runPlugin(host, OUR_BIN, other, 1, "CHECK", e0, r0));
    assert.match(mismatch.msg, /uses table 55, not 56/);
    await chainRun(host, OUR_BIN, list, "DEL", e0, r0);
    assert.ok(linkNamed(ctr, "blue"), "eth1 still uses it");
    await chainRun(host, OUR_BIN, list, "DEL", e1, r1);
    assert.equal(linkNamed(ctr, "blue"), undefined);
  });
});
