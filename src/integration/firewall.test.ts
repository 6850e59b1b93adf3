/**
 * The firewall plugin chained after bridge + host-local (all ours: dist/bin), in test-made "host" namespaces:
 * iptables and nftables backends, ADD/CHECK/DEL/DEL again, DEL without prevResult or netns, ingress policies
 * (rules and real traffic), GC, firewalld absent, bad configs; and differential tests against Debian's Go 1.1.1
 * firewall (cniVersion 1.0.0): identical filter tables for the same container ID, each one's DEL removes the
 * other's rules and each CHECK accepts the other's.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { nftAttachmentComment } from "#plugins/meta/firewall/nftables.js";
import { type ChainList, chainAdd, chainRun, runPlugin } from "#testing/chain.js";
import { Cleanup, GO_BIN, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, containerIdOf, Host, pingable, pluginDir, type Result } from "#testing/rig.js";

const skip = skipReason(true);
if (skip) console.log(`# skipping firewall integration tests: ${skip}`);

type Json = Record<string, unknown>;
const FIREWALL = path.join(OUR_BIN, "firewall");

describe("firewall plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  /** Our bridge and host-local with Go's firewall: the Go side of the differential tests. */
  let goPath: string;

  before(() => {
    goPath = pluginDir(cleanup, {
      bridge: path.join(OUR_BIN, "bridge"),
      "host-local": path.join(OUR_BIN, "host-local"),
      firewall: path.join(GO_BIN, "firewall"),
    });
  });
  after(() => cleanup.run());

  /** A fresh host namespace, a bridge name and a records directory for one test. */
  const newHost = (cniPath = OUR_BIN) => {
    const n = ++seq;
    return { host: new Host(cleanup, `tscni-fh-${tag}-${n}`, cniPath), br: `tf${tag}${n}`, records: cleanup.dir("tscni-fwrec-"), n };
  };

  /** bridge (gateway) + host-local over `subnets` + firewall with `fw` keys. */
  const chain = (host: Host, name: string, br: string, fw: Json, subnets: string[], cniVersion = "1.0.0"): ChainList => ({
    cniVersion,
    name,
    plugins: [
      { type: "bridge", bridge: br, isGateway: true, ipam: host.hostLocal(subnets, { routes: [{ dst: "0.0.0.0/0" }] }) },
      { type: "firewall", ...fw },
    ],
  });
  const write = (host: Host, list: ChainList) => host.writeNetwork(list as unknown as Json);

  /** The filter tables (v4 then v6) as iptables-save prints them, without comments and counters. */
  const filterTables = (host: Host) => {
    const save = (cmd: string) =>
      host.ns
        .exec(cmd, ["-t", "filter"])
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .map((l) => l.replace(/ \[\d+:\d+\]$/, ""))
        .join("\n");
    return `${save("iptables-save")}\n${save("ip6tables-save")}`;
  };
  const v4Rules = (host: Host) => host.ns.exec("iptables", ["-S"]).trim().split("\n");
  const v6Rules = (host: Host) => host.ns.exec("ip6tables", ["-S"]).trim().split("\n");
  const records = (dir: string, net: string) => (existsSync(path.join(dir, net)) ? readdirSync(path.join(dir, net)) : []);
  /** Our nftables table (empty when there is none). */
  const nftTable = (host: Host) =>
    spawnSync("ip", ["netns", "exec", host.ns.name, "nft", "list", "table", "inet", "cni_plugins_firewall"], { encoding: "utf8" }).stdout;

  test("iptables, dual-stack: ADD writes Go's rules, CHECK passes, DEL removes the per-address rules, DEL again is fine", async () => {
    const { host, br, records: rec } = newHost();
    const net = write(host, chain(host, `fn${tag}a`, br, { backend: "iptables", dataDir: rec }, ["10.202.0.0/24", "fd20:202::/64"]));
    const ctr = host.container(`tscni-fc-${tag}-a`);
    const r = await host.add(net, ctr);
    assert.deepEqual(
      r.ips!.map((i) => i.address),
      ["10.202.0.2/24", "fd20:202::2/64"],
      "the prevResult goes through",
    );
    assert.deepEqual(v4Rules(host), [
      "-P INPUT ACCEPT",
      "-P FORWARD ACCEPT",
      "-P OUTPUT ACCEPT",
      "-N CNI-ADMIN",
      "-N CNI-FORWARD",
      '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN',
      "-A CNI-FORWARD -d 10.202.0.2/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s 10.202.0.2/32 -j ACCEPT",
    ]);
    assert.deepEqual(v6Rules(host).slice(-2), [
      "-A CNI-FORWARD -d fd20:202::2/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s fd20:202::2/128 -j ACCEPT",
    ]);
    assert.deepEqual(records(rec, net), [`${containerIdOf(ctr)}:eth0`]);

    // A second container: its rules are appended, the jumps are not repeated.
    const ctr2 = host.container(`tscni-fc-${tag}-a2`);
    await host.add(net, ctr2);
    assert.equal(v4Rules(host).filter((l) => l.includes("-j CNI-FORWARD")).length, 1);
    assert.equal(v4Rules(host).at(-1), "-A CNI-FORWARD -s 10.202.0.3/32 -j ACCEPT");

    await host.must("check", net, ctr);
    await host.must("del", net, ctr);
    const after = filterTables(host);
    assert.doesNotMatch(after, /10\.202\.0\.2\/32|fd20:202::2\/128/);
    assert.match(after, /-s 10\.202\.0\.3\/32 -j ACCEPT/, "the other container keeps its rules");
    assert.match(after, /-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD/, "shared chains and jumps stay");
    assert.deepEqual(records(rec, net), [`${containerIdOf(ctr2)}:eth0`]);
    await host.must("del", net, ctr);
    await host.must("del", net, ctr2);
    assert.doesNotMatch(filterTables(host), /-[sd] \S+ .*ACCEPT/);
  });

  test("CHECK fails when a per-address rule is gone, and does not create anything", async () => {
    const { host, br, records: rec } = newHost();
    const net = write(host, chain(host, `fn${tag}k`, br, { backend: "iptables", dataDir: rec }, ["10.202.9.0/24"]));
    const ctr = host.container(`tscni-fc-${tag}-k`);
    await host.add(net, ctr);
    host.ns.exec("iptables", ["-D", "CNI-FORWARD", "-s", "10.202.9.2/32", "-j", "ACCEPT"]);
    const before = filterTables(host);
    const check = await host.cnitool("check", net, ctr);
    assert.notEqual(check.code, 0);
    assert.match(check.stderr, /firewall \(iptables\) rules are missing: iptables rule "-A CNI-FORWARD -s 10\.202\.9\.2\/32 -j ACCEPT" not found/);
    assert.equal(filterTables(host), before);
    await host.must("del", net, ctr);
  });

  test("DEL without prevResult and without CNI_NETNS removes the rules from the attachment record; without a record it is a no-op", async () => {
    const { host, br, records: rec } = newHost();
    const list = chain(host, `fn${tag}b`, br, { backend: "iptables", dataDir: rec }, ["10.202.1.0/24", "fd20:212::/64"]);
    const ctr = host.container(`tscni-fc-${tag}-b`);
    const env = { CNI_CONTAINERID: `fwdel-${tag}`, CNI_NETNS: ctr.path };
    await chainAdd(host, OUR_BIN, list, env);
    assert.match(filterTables(host), /10\.202\.1\.2\/32/);
    const del = await runPlugin(host, OUR_BIN, list, 1, "DEL", { ...env, CNI_NETNS: "" });
    assert.equal(del.code, 0, del.stdout);
    assert.doesNotMatch(filterTables(host), /10\.202\.1\.2\/32|fd20:212::2\/128/);
    assert.deepEqual(records(rec, list.name), []);
    const again = await runPlugin(host, OUR_BIN, list, 1, "DEL", { ...env, CNI_NETNS: "" });
    assert.equal(again.code, 0, again.stdout);
    const gone = await runPlugin(host, OUR_BIN, list, 1, "DEL", { ...env, CNI_NETNS: "/run/netns/tscni-no-such-ns" });
    assert.equal(gone.code, 0, gone.stdout);
    await runPlugin(host, OUR_BIN, list, 0, "DEL", env);
  });

  test("differential with Go 1.1.1 (1.0.0): the same container ID gives identical filter tables; each removes and checks the other's", async () => {
    const ours = newHost();
    const go = newHost(goPath);
    const fw = (rec: string) => ({ dataDir: rec });
    const listOurs = chain(ours.host, `fn${tag}d`, `tfd${tag}`, fw(ours.records), ["10.202.2.0/24", "fd20:222::/64"]);
    const listGo = chain(go.host, `fn${tag}d`, `tfd${tag}`, fw(go.records), ["10.202.2.0/24", "fd20:222::/64"]);
    const ctrA = ours.host.container(`tscni-fc-${tag}-d1`);
    const ctrB = go.host.container(`tscni-fc-${tag}-d2`);
    const id = `fwdiff-${tag}`;
    const rA = await chainAdd(ours.host, OUR_BIN, listOurs, { CNI_CONTAINERID: id, CNI_NETNS: ctrA.path });
    const rB = await chainAdd(go.host, goPath, listGo, { CNI_CONTAINERID: id, CNI_NETNS: ctrB.path });
    assert.deepEqual(rA.ips, rB.ips);
    assert.equal(filterTables(ours.host), filterTables(go.host));
    assert.match(filterTables(go.host), /-A CNI-FORWARD -s fd20:222::2\/128 -j ACCEPT/);

    // Each CHECK accepts the other's rules (the firewall step: ours on Go's host, Go's on ours).
    const checkOursOnGo = await runPlugin(go.host, OUR_BIN, listGo, 1, "CHECK", { CNI_CONTAINERID: id, CNI_NETNS: ctrB.path }, rB);
    assert.equal(checkOursOnGo.code, 0, checkOursOnGo.stdout);
    const checkGoOnOurs = await runPlugin(ours.host, goPath, listOurs, 1, "CHECK", { CNI_CONTAINERID: id, CNI_NETNS: ctrA.path }, rA);
    assert.equal(checkGoOnOurs.code, 0, checkGoOnOurs.stdout);

    // Go's DEL removes ours; ours removes Go's; what is left is the same.
    const goDel = await runPlugin(ours.host, goPath, listOurs, 1, "DEL", { CNI_CONTAINERID: id, CNI_NETNS: ctrA.path }, rA);
    assert.equal(goDel.code, 0, goDel.stdout);
    const ourDel = await runPlugin(go.host, OUR_BIN, listGo, 1, "DEL", { CNI_CONTAINERID: id, CNI_NETNS: ctrB.path }, rB);
    assert.equal(ourDel.code, 0, ourDel.stdout);
    assert.doesNotMatch(filterTables(ours.host), /10\.202\.2\.2|fd20:222::2/);
    assert.equal(filterTables(ours.host), filterTables(go.host));
    await chainRun(ours.host, OUR_BIN, listOurs, "DEL", { CNI_CONTAINERID: id, CNI_NETNS: ctrA.path }, rA);
    await chainRun(go.host, goPath, listGo, "DEL", { CNI_CONTAINERID: id, CNI_NETNS: ctrB.path }, rB);
  });

  test("ingressPolicy: Go's isolation rules; Go 1.1.1's same-bridge rules count as present; isolated adds the same-bridge drop", async () => {
    const { host, br, records: rec } = newHost();
    const net = write(
      host,
      chain(host, `fn${tag}i`, br, { backend: "iptables", ingressPolicy: "same-bridge", dataDir: rec }, ["10.202.3.0/24", "fd20:232::/64"]),
    );
    const ctr = host.container(`tscni-fc-${tag}-i`);
    await host.add(net, ctr);
    const v4 = v4Rules(host);
    const shared = '"CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)"';
    assert.deepEqual(
      v4.filter((l) => l.startsWith("-A FORWARD")),
      [
        `-A FORWARD -m comment --comment ${shared} -j CNI-ISOLATION-STAGE-1`,
        '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      ],
    );
    assert.deepEqual(
      v4.filter((l) => l.startsWith("-A CNI-ISOLATION")),
      [
        `-A CNI-ISOLATION-STAGE-1 -i ${br} ! -o ${br} -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j CNI-ISOLATION-STAGE-2`,
        `-A CNI-ISOLATION-STAGE-1 -m comment --comment ${shared} -j RETURN`,
        `-A CNI-ISOLATION-STAGE-2 -o ${br} -m comment --comment ${shared} -j DROP`,
        `-A CNI-ISOLATION-STAGE-2 -m comment --comment ${shared} -j RETURN`,
      ],
    );
    assert.deepEqual(
      v6Rules(host).filter((l) => l.includes("ISOLATION")),
      v4.filter((l) => l.includes("ISOLATION")),
    );
    await host.must("check", net, ctr);
    await host.must("del", net, ctr);
    assert.match(filterTables(host), /CNI-ISOLATION-STAGE-2 -o/, "isolation rules are never torn down (as in Go)");

    // After Go 1.1.1's same-bridge rules, ours adds no duplicates; its CHECK accepts them.
    const go = newHost(goPath);
    const goNet = write(go.host, chain(go.host, `fn${tag}j`, go.br, { ingressPolicy: "same-bridge", dataDir: go.records }, ["10.202.4.0/24"]));
    const c1 = go.host.container(`tscni-fc-${tag}-j1`);
    await go.host.add(goNet, c1);
    const goRules = v4Rules(go.host);
    assert.ok(
      goRules.some((l) => l.includes('(ingressPolicy: same-bridge)" -j RETURN')),
      "Go 1.1.1's comment",
    );
    const c2 = go.host.container(`tscni-fc-${tag}-j2`);
    await go.host.add(
      goNet,
      c2,
      {},
      pluginDir(cleanup, { bridge: path.join(OUR_BIN, "bridge"), "host-local": path.join(OUR_BIN, "host-local"), firewall: FIREWALL }),
    );
    const mixed = v4Rules(go.host);
    assert.deepEqual(
      mixed.filter((l) => l.includes("ISOLATION")),
      goRules.filter((l) => l.includes("ISOLATION")),
    );
    assert.deepEqual(
      mixed.filter((l) => !l.includes("ISOLATION")),
      [
        ...goRules.filter((l) => !l.includes("ISOLATION")),
        ...["-A CNI-FORWARD -d 10.202.4.3/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", "-A CNI-FORWARD -s 10.202.4.3/32 -j ACCEPT"],
      ],
    );

    // isolated: the drop within the bridge comes first in stage 1.
    const iso = newHost();
    const isoNet = write(
      iso.host,
      chain(iso.host, `fn${tag}o`, iso.br, { backend: "iptables", ingressPolicy: "isolated", dataDir: iso.records }, ["10.202.5.0/24"]),
    );
    await iso.host.add(isoNet, iso.host.container(`tscni-fc-${tag}-o`));
    assert.deepEqual(
      v4Rules(iso.host)
        .filter((l) => l.startsWith("-A CNI-ISOLATION-STAGE-1"))
        .slice(0, 2),
      [
        `-A CNI-ISOLATION-STAGE-1 -i ${iso.br} -o ${iso.br} -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j DROP`,
        `-A CNI-ISOLATION-STAGE-1 -i ${iso.br} ! -o ${iso.br} -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j CNI-ISOLATION-STAGE-2`,
      ],
    );
  });

  for (const backend of ["iptables", "nftables"] as const) {
    test(`ingressPolicy same-bridge (${backend}) really stops traffic between two bridges; open lets it through`, async () => {
      const { host, records: rec, n } = newHost();
      const netA = write(
        host,
        chain(host, `fn${tag}x${n}`, `tx${tag}${n}a`, { backend, ingressPolicy: "same-bridge", dataDir: rec }, [`10.203.${n}.0/24`]),
      );
      const netB = write(host, chain(host, `fn${tag}y${n}`, `tx${tag}${n}b`, { backend, ingressPolicy: "open", dataDir: rec }, [`10.204.${n}.0/24`]));
      const a = host.container(`tscni-fc-${tag}-x${n}`);
      const b = host.container(`tscni-fc-${tag}-y${n}`);
      await host.add(netA, a);
      await host.add(netB, b);
      assert.ok(await pingable(a, `10.204.${n}.2`), "open: bridge A reaches bridge B");
      // Now B's network isolates too: traffic between the two policy bridges is dropped.
      write(host, chain(host, netB, `tx${tag}${n}b`, { backend, ingressPolicy: "same-bridge", dataDir: rec }, [`10.204.${n}.0/24`]));
      const b2 = host.container(`tscni-fc-${tag}-z${n}`);
      await host.add(netB, b2);
      assert.equal(await pingable(a, `10.204.${n}.3`, 3), false, "same-bridge: A does not reach B");
      assert.ok(await pingable(a, `10.203.${n}.1`), "the own gateway stays reachable");
      for (const [net, c] of [
        [netA, a],
        [netB, b],
        [netB, b2],
      ] as const)
        await host.must("del", net, c);
    });
  }

  test("nftables backend, dual-stack: its own table, CHECK, DEL (by comment, no prevResult needed), DEL again", async () => {
    const { host, br, records: rec } = newHost();
    const list = chain(host, `fn${tag}n`, br, { backend: "nftables", ingressPolicy: "isolated", dataDir: rec }, ["10.202.6.0/24", "fd20:262::/64"]);
    const ctr = host.container(`tscni-fc-${tag}-n`);
    const env = { CNI_CONTAINERID: `fwnft-${tag}`, CNI_NETNS: ctr.path };
    const result = await chainAdd(host, OUR_BIN, list, env);
    const comment = nftAttachmentComment(list.name, "eth0", env.CNI_CONTAINERID);
    const ruleset = nftTable(host);
    for (const rule of [
      `ip daddr 10.202.6.2 ct state established,related accept comment "${comment}"`,
      `ip saddr 10.202.6.2 accept comment "${comment}"`,
      `ip6 daddr fd20:262::2 ct state established,related accept comment "${comment}"`,
      `ip6 saddr fd20:262::2 accept comment "${comment}"`,
      'jump admin comment "CNI firewall plugin admin overrides"',
      "iifname . oifname @isolated_same_bridge drop",
      `elements = { "${br}" . "${br}" }`,
    ])
      assert.ok(ruleset.includes(rule), `${rule}\n${ruleset}`);
    assert.equal(filterTables(host).includes("CNI-FORWARD"), false, "no iptables rules");
    // ADD again (a retried ADD) replaces the attachment's rules instead of duplicating them.
    const again = await runPlugin(host, OUR_BIN, list, 1, "ADD", env, result);
    assert.equal(again.code, 0, again.stdout);
    assert.equal(nftTable(host).split(comment).length - 1, 4);
    await chainRun(host, OUR_BIN, list, "CHECK", env, result);

    const del = await runPlugin(host, OUR_BIN, list, 1, "DEL", { ...env, CNI_NETNS: "" });
    assert.equal(del.code, 0, del.stdout);
    assert.ok(!nftTable(host).includes(comment));
    assert.match(nftTable(host), /chain admin/, "the table and the admin chain stay");
    const check = await runPlugin(host, OUR_BIN, list, 1, "CHECK", env, result);
    assert.match(cniError(check).msg, /no rule for traffic to 10\.202\.6\.2/);
    assert.equal((await runPlugin(host, OUR_BIN, list, 1, "DEL", env, result)).code, 0);
    await chainRun(host, OUR_BIN, list, "DEL", env, result);
  });

  for (const backend of ["iptables", "nftables"] as const) {
    test(`GC (1.1.0, ${backend}) removes the rules of attachments that are not valid and leaves the live ones`, async () => {
      const { host, br, records: rec } = newHost();
      const list = chain(host, `fn${tag}g${backend[0]}`, br, { backend, dataDir: rec }, ["10.202.7.0/24", "fd20:272::/64"], "1.1.0");
      const net = write(host, list);
      const keep = host.container(`tscni-fc-${tag}-g${backend[0]}1`);
      const stale = host.container(`tscni-fc-${tag}-g${backend[0]}2`);
      await host.add(net, keep);
      await host.add(net, stale);
      const rules = () => `${filterTables(host)}\n${nftTable(host)}`;
      assert.match(rules(), /10\.202\.7\.3/);
      const gc = await host.plugin(
        FIREWALL,
        "GC",
        {
          cniVersion: "1.1.0",
          name: net,
          ...list.plugins[1],
          "cni.dev/valid-attachments": [{ containerID: containerIdOf(keep), ifname: "eth0" }],
        },
        {},
      );
      assert.equal(gc.code, 0, gc.stdout + gc.stderr);
      const after = rules();
      assert.doesNotMatch(after, /10\.202\.7\.3|fd20:272::3/, "stale rules removed");
      assert.match(after, /10\.202\.7\.2/, "live rules untouched");
      assert.match(after, /fd20:272::2/);
      assert.deepEqual(records(rec, net), [`${containerIdOf(keep)}:eth0`]);
      await host.must("del", net, keep);
      await host.must("del", net, stale);
      assert.doesNotMatch(rules(), /10\.202\.7\.\d/);
    });
  }

  test("no backend: iptables when firewalld is absent; backend firewalld: a clear error on ADD, nothing left behind, DEL succeeds", async () => {
    const { host, br, records: rec } = newHost();
    const net = write(host, chain(host, `fn${tag}f`, br, { dataDir: rec }, ["10.202.8.0/24"]));
    const ctr = host.container(`tscni-fc-${tag}-f`);
    await host.add(net, ctr);
    assert.match(filterTables(host), /-A CNI-FORWARD -s 10\.202\.8\.2\/32 -j ACCEPT/);
    await host.must("del", net, ctr);

    const list = chain(host, `fn${tag}fd`, `${br}d`, { backend: "firewalld", dataDir: rec }, ["10.202.18.0/24"]);
    const c2 = host.container(`tscni-fc-${tag}-fd`);
    const env = { CNI_CONTAINERID: `fwfwd-${tag}`, CNI_NETNS: c2.path };
    const bridgeResult = JSON.parse((await runPlugin(host, OUR_BIN, list, 0, "ADD", env)).stdout) as Result;
    const before = filterTables(host);
    const add = await runPlugin(host, OUR_BIN, list, 1, "ADD", env, bridgeResult);
    const err = cniError(add);
    assert.equal(err.code, 999);
    assert.match(err.msg, /backend "firewalld": firewalld is not running/);
    assert.match(err.details ?? "", /org\.fedoraproject\.FirewallD1/);
    assert.equal(filterTables(host), before);
    assert.deepEqual(records(rec, list.name), []);
    const del = await runPlugin(host, OUR_BIN, list, 1, "DEL", env, bridgeResult);
    assert.equal(del.code, 0, del.stdout);
    await runPlugin(host, OUR_BIN, list, 0, "DEL", env, bridgeResult);

    // STATUS (1.1.0): ready with iptables, not with an absent firewalld (code 50).
    const status = (keys: Json) => host.plugin(FIREWALL, "STATUS", { cniVersion: "1.1.0", name: list.name, type: "firewall", ...keys }, {});
    assert.equal((await status({})).code, 0);
    assert.equal((await status({ backend: "nftables" })).code, 0);
    const down = cniError(await status({ backend: "firewalld" }));
    assert.equal(down.code, 50);
    assert.match(down.msg, /"firewalld" is not usable/);
  });

  test("iptablesAdminChainName: the admin jump goes to the named chain", async () => {
    const { host, br, records: rec } = newHost();
    const net = write(
      host,
      chain(host, `fn${tag}m`, br, { backend: "iptables", iptablesAdminChainName: "MY-ADMIN", dataDir: rec }, ["10.202.10.0/24"]),
    );
    const ctr = host.container(`tscni-fc-${tag}-m`);
    await host.add(net, ctr);
    const v4 = v4Rules(host);
    assert.ok(v4.includes("-N MY-ADMIN"));
    assert.ok(v4.includes('-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j MY-ADMIN'));
    assert.ok(!v4.includes("-N CNI-ADMIN"));
    await host.must("check", net, ctr);
    await host.must("del", net, ctr);
  });

  test("bad configs: code 7 naming the key and value, nothing applied; versions before 0.4.0 are refused", async () => {
    const { host, br, records: rec } = newHost();
    const list = chain(host, `fn${tag}w`, br, { backend: "iptables", dataDir: rec }, ["10.202.11.0/24"]);
    const ctr = host.container(`tscni-fc-${tag}-w`);
    const env = { CNI_CONTAINERID: `fwbad-${tag}`, CNI_NETNS: ctr.path };
    const prev = JSON.parse((await runPlugin(host, OUR_BIN, list, 0, "ADD", env)).stdout) as Result;
    const before = filterTables(host);
    const cases: Array<[Json, RegExp]> = [
      [{ backend: "ebtables" }, /"backend": "ebtables"/],
      [{ ingressPolicy: "closed" }, /"ingressPolicy": "closed"/],
      [{ iptablesAdminChainName: "bad name" }, /"iptablesAdminChainName": "bad name"/],
      [{ dataDir: "relative" }, /"dataDir": "relative"/],
    ];
    for (const [keys, expected] of cases) {
      const bad: ChainList = { ...list, plugins: [list.plugins[0]!, { ...list.plugins[1]!, ...keys }] };
      const r = await runPlugin(host, OUR_BIN, bad, 1, "ADD", env, prev);
      const e = cniError(r);
      assert.equal(e.code, 7, JSON.stringify(e));
      assert.match(e.msg, expected);
    }
    const noPrev = await runPlugin(host, OUR_BIN, list, 1, "ADD", env);
    assert.equal(cniError(noPrev).code, 7);
    assert.match(cniError(noPrev).msg, /missing prevResult/);
    const ingressWithoutBridge: ChainList = { ...list, plugins: [list.plugins[0]!, { ...list.plugins[1]!, ingressPolicy: "isolated" }] };
    const noBridge = await runPlugin(host, OUR_BIN, ingressWithoutBridge, 1, "ADD", env, { ...prev, interfaces: [] });
    assert.match(cniError(noBridge).msg, /"ingressPolicy": "isolated" needs the bridge/);
    const old = await runPlugin(host, OUR_BIN, { ...list, cniVersion: "0.3.1" }, 1, "ADD", env, prev);
    assert.equal(cniError(old).code, 1);
    assert.equal(filterTables(host), before);
    assert.deepEqual(records(rec, list.name), []);
    await runPlugin(host, OUR_BIN, list, 0, "DEL", env, prev);
  });
});
