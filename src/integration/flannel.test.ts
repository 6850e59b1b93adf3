/**
 * The flannel meta plugin in real namespaces, with a subnet.env written by the test (as flanneld would): the
 * delegated bridge gets the node's flannel subnet (gateway on the bridge, FLANNEL_MTU, masquerading when flanneld
 * does not) and the container a route to the flannel network; the rendered config is saved under dataDir and DEL
 * works from it after subnet.env is gone; CHECK passes on a healthy attachment and fails on a broken one or when
 * the node's subnet changed; bad subnet files and delegate overrides are CNI errors naming what is wrong; a failed
 * delegate ADD leaves nothing. A mixed chain delegates to Debian's Go bridge and host-local.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Cleanup, GO_BIN, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, containerIdOf, Host, ipIn, pingable, pluginDir, type Result } from "#testing/rig.js";

const skip = skipReason();
if (skip) console.log(`# skipping flannel integration tests: ${skip}`);
const goSkip = skip ?? skipReason(true);

type Json = Record<string, unknown>;

describe("flannel", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  after(() => cleanup.run());

  /** A test host with a subnet.env for node subnet 10.<x>.3.0/24 of flannel network 10.<x>.0.0/16, and a flannel network. */
  function setup(cniPath?: string, delegate: Json = {}, ipam: Json = {}) {
    const n = ++seq;
    const x = 240 + n;
    const host = new Host(cleanup, `tscni-fl-${tag}-${n}`, cniPath);
    const dir = cleanup.dir("tscni-flannel-");
    const subnetFile = path.join(dir, "subnet.env");
    const writeEnv = (subnet = `10.${x}.3.1/24`) =>
      writeFileSync(subnetFile, `FLANNEL_NETWORK=10.${x}.0.0/16\nFLANNEL_SUBNET=${subnet}\nFLANNEL_MTU=1410\nFLANNEL_IPMASQ=false\n`);
    writeEnv();
    const dataDir = path.join(dir, "data");
    const bridge = `fl${tag}${n}`;
    const net = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `fl${tag}${n}`,
      plugins: [{ type: "flannel", subnetFile, dataDir, delegate: { bridge, ...delegate }, ipam: { dataDir: host.dataDir, ...ipam } }],
    });
    const saved = () => (existsSync(dataDir) ? readdirSync(dataDir) : []);
    return { n, x, host, subnetFile, writeEnv, dataDir, bridge, net, saved };
  }

  test("the delegated bridge gets the flannel subnet and route; DEL works from the saved config after subnet.env is gone", async () => {
    const s = setup();
    const ctr = s.host.container(`tscni-flc-${tag}-${s.n}`);
    const r = await s.host.add(s.net, ctr);
    assert.deepEqual(r.ips, [{ address: `10.${s.x}.3.2/24`, gateway: `10.${s.x}.3.1`, interface: 2 }]);
    assert.deepEqual(r.routes, [{ dst: `10.${s.x}.0.0/16` }]);
    assert.deepEqual(
      r.interfaces!.map((i) => i.name),
      [s.bridge, r.interfaces![1]!.name, "eth0"],
    );

    const [br] = s.host.ipJson(["addr", "show", "dev", s.bridge]);
    assert.equal(br!["mtu"], 1410, "FLANNEL_MTU");
    assert.ok(
      (br!["addr_info"] as Json[]).some((a) => a["local"] === `10.${s.x}.3.1` && a["prefixlen"] === 24),
      "the gateway is on the bridge",
    );
    const [eth0] = ipIn(ctr, ["addr", "show", "dev", "eth0"]);
    assert.equal(eth0!["mtu"], 1410);
    assert.ok(ipIn(ctr, ["route", "show"]).some((rt) => rt["dst"] === `10.${s.x}.0.0/16` && rt["gateway"] === `10.${s.x}.3.1`));
    assert.ok(await pingable(ctr, `10.${s.x}.3.1`));
    assert.match(s.host.natRules(), /-j MASQUERADE/, "flanneld does not masquerade (FLANNEL_IPMASQ=false), so the delegate does");

    const id = containerIdOf(ctr);
    assert.deepEqual(s.saved(), [id]);
    const saved = JSON.parse(readFileSync(path.join(s.dataDir, id), "utf8")) as Json;
    assert.deepEqual(saved, {
      bridge: s.bridge,
      cniVersion: "1.0.0",
      ipMasq: true,
      ipam: { dataDir: s.host.dataDir, ranges: [[{ subnet: `10.${s.x}.3.0/24` }]], routes: [{ dst: `10.${s.x}.0.0/16` }], type: "host-local" },
      isGateway: true,
      mtu: 1410,
      name: s.net,
      type: "bridge",
    });

    await s.host.must("check", s.net, ctr);
    rmSync(s.subnetFile);
    await s.host.must("check", s.net, ctr); // subnet.env says nothing about the attachment
    await s.host.must("del", s.net, ctr);
    assert.deepEqual(s.saved(), []);
    assert.deepEqual(s.host.allocations(s.net), []);
    assert.deepEqual(s.host.veths(), []);
    assert.doesNotMatch(s.host.natRules(), /CNI-/);
    assert.deepEqual(
      ipIn(ctr, ["link", "show"]).map((l) => l["ifname"]),
      ["lo"],
    );
    await s.host.must("del", s.net, ctr);
  });

  test("DEL when a crash left the saved config empty, torn or gone: the delegate rendered again is deleted, the file removed; CHECK says it is unusable", async () => {
    for (const torn of ["", '{"cniVersion":"1.0.0","na', undefined]) {
      const s = setup();
      const ctr = s.host.container(`tscni-flt-${tag}-${s.n}`);
      await s.host.add(s.net, ctr);
      const id = containerIdOf(ctr);
      // (Gone: a power loss kept the delegate's reservation and lost the saved file's rename.)
      if (torn === undefined) rmSync(path.join(s.dataDir, id));
      else writeFileSync(path.join(s.dataDir, id), torn);
      const check = await s.host.cnitool("check", s.net, ctr);
      assert.notEqual(check.code, 0);
      assert.match(check.stdout + check.stderr, torn === undefined ? /no saved delegate config/ : /the saved delegate config .* is unusable/);
      await s.host.must("del", s.net, ctr);
      assert.deepEqual(s.saved(), [], "the unusable file is gone");
      assert.deepEqual(s.host.allocations(s.net), [], "the address was released through the rendered delegate");
      assert.deepEqual(s.host.veths(), []);
    }
  });

  test("CHECK fails on a broken attachment, and when the node's subnet changed since ADD", async () => {
    const s = setup();
    const ctr = s.host.container(`tscni-flc-${tag}-${s.n}`);
    await s.host.add(s.net, ctr);
    s.writeEnv(`10.${s.x}.9.1/24`);
    const moved = await s.host.cnitool("check", s.net, ctr);
    assert.notEqual(moved.code, 0);
    assert.match(moved.stdout + moved.stderr, /this node's flannel subnet changed since ADD/);
    s.writeEnv();
    await s.host.must("check", s.net, ctr);
    ctr.exec("ip", ["route", "del", `10.${s.x}.0.0/16`]);
    const broken = await s.host.cnitool("check", s.net, ctr);
    assert.notEqual(broken.code, 0);
    assert.match(broken.stdout + broken.stderr, new RegExp(`route 10\\.${s.x}\\.0\\.0/16 is missing`));
    await s.host.must("del", s.net, ctr);
    assert.deepEqual([s.saved(), s.host.allocations(s.net)], [[], []]);
  });

  test("bad subnet files and delegate overrides: one CNI error naming what is wrong, nothing saved or made", async () => {
    const s = setup();
    const ctr = s.host.container(`tscni-flc-${tag}-${s.n}`);
    const bin = path.join(OUR_BIN, "flannel");
    const base = {
      cniVersion: "1.0.0",
      name: s.net,
      type: "flannel",
      subnetFile: s.subnetFile,
      dataDir: s.dataDir,
      ipam: { dataDir: s.host.dataDir },
    };
    const run = async (conf: Json, code: number, msg: RegExp) => {
      const r = await s.host.plugin(bin, "ADD", conf, { CNI_NETNS: ctr.path });
      assert.equal(r.code, 1, JSON.stringify(conf));
      const e = cniError(r);
      assert.equal(e.code, code, r.stdout);
      assert.match(e.msg, msg);
    };
    await run({ ...base, delegate: { name: "x" } }, 7, /^invalid "delegate\.name": "x"/);
    await run({ ...base, delegate: { ipam: {} } }, 7, /^invalid "delegate\.ipam"/);
    await run({ ...base, delegate: { type: 1 } }, 7, /^invalid "delegate\.type": 1/);
    await run({ ...base, delegate: "bridge" }, 7, /^invalid "delegate": "bridge"/);
    writeFileSync(s.subnetFile, "FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.2.1/24\n");
    await run(base, 7, /is missing FLANNEL_MTU, FLANNEL_IPMASQ$/);
    writeFileSync(s.subnetFile, "FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.2.1\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n");
    await run(base, 7, /^invalid FLANNEL_SUBNET in .*subnet\.env: "10\.1\.2\.1"/);
    rmSync(s.subnetFile);
    await run(base, 11, /subnet\.env \("subnetFile"\) does not exist/);
    assert.deepEqual([s.saved(), ipIn(ctr, ["link", "show"]).length, s.host.allocations(s.net)], [[], 1, []]);

    // STATUS (1.1.0): no subnet.env means the plugin cannot serve ADDs (code 50); with one, the delegate answers.
    const status = await s.host.plugin(bin, "STATUS", { ...base, cniVersion: "1.1.0" }, {});
    assert.equal(status.code, 1);
    assert.equal(cniError(status).code, 50);
    s.writeEnv();
    const ok = await s.host.plugin(bin, "STATUS", { ...base, cniVersion: "1.1.0" }, {});
    assert.equal(ok.code, 0, ok.stdout);
    const del = await s.host.plugin(bin, "DEL", base, { CNI_NETNS: ctr.path });
    assert.equal(del.code, 0, `DEL of what was never added: ${del.stdout}`);
  });

  test("a delegate ADD that fails leaves nothing, not even the saved config", async () => {
    const s = setup(undefined, {}, { routes: [{ dst: "10.250.0.0/16", gw: "192.0.2.1" }] });
    const ctr = s.host.container(`tscni-flc-${tag}-${s.n}`);
    const r = await s.host.cnitool("add", s.net, ctr);
    assert.notEqual(r.code, 0);
    assert.match(r.stdout + r.stderr, /192\.0\.2\.1/);
    assert.deepEqual([s.saved(), s.host.allocations(s.net), s.host.veths()], [[], [], []]);
  });

  test("mixed chain: our flannel delegating to Go's bridge and host-local", { skip: goSkip }, async () => {
    const s = setup(
      pluginDir(cleanup, {
        flannel: path.join(OUR_BIN, "flannel"),
        bridge: path.join(GO_BIN, "bridge"),
        "host-local": path.join(GO_BIN, "host-local"),
      }),
    );
    const ctr = s.host.container(`tscni-flc-${tag}-${s.n}`);
    const r: Result = await s.host.add(s.net, ctr);
    assert.equal(r.ips![0]!.address, `10.${s.x}.3.2/24`);
    assert.ok(await pingable(ctr, `10.${s.x}.3.1`));
    // Our CHECK delegates to Go's bridge, whose 1.1.1 CHECK cannot pass flannel's gateway-less routes (it wants them
    // without a gateway in the container, fixed upstream after 1.1.1): that exact failure is the one accepted.
    const check = await s.host.cnitool("check", s.net, ctr);
    assert.equal(check.code, 1);
    assert.match(check.stdout + check.stderr, new RegExp(`Expected Route \\{Dst:\\{IP:10\\.${s.x}\\.0\\.0 Mask:ffff0000\\} GW:<nil>\\} not found`));
    rmSync(s.subnetFile);
    await s.host.must("del", s.net, ctr);
    assert.deepEqual([s.saved(), s.host.allocations(s.net), s.host.veths()], [[], [], []]);
    assert.doesNotMatch(s.host.natRules(), /CNI-/);
  });
});
