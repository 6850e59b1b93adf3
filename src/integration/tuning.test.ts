/**
 * The tuning plugin chained after bridge + host-local, as a runtime drives it (cnitool, our libcni) and run
 * directly for what cnitool never sends (DEL before the bridge's, DEL without a namespace, duplicate JSON
 * keys), and GC (spec 1.1.0) of the backups of attachments that are gone. Every test has its own "host"
 * namespace. The differential test runs Go's 1.1.1 chain and ours on the same config and compares what they did
 * to the container, the backup files and the results.
 */

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, containerIdOf, Host, ipIn, pluginDir, type Result, type RunResult } from "#testing/rig.js";

const skip = skipReason(true);
if (skip) console.log(`# skipping tuning integration tests: ${skip}`);

const TUNING = path.join(OUR_BIN, "tuning");
type Json = Record<string, unknown>;

/** The settings tuning can change, as the kernel reports them. */
interface LinkState {
  mac: string;
  mtu: number;
  promisc: boolean;
  allmulti: boolean;
  txqlen: number;
}

function linkState(ns: Netns, dev: string): LinkState {
  const l = ipIn(ns, ["link", "show", "dev", dev])[0]!;
  const flags = l["flags"] as string[];
  return {
    mac: String(l["address"]),
    mtu: Number(l["mtu"]),
    promisc: flags.includes("PROMISC"),
    allmulti: flags.includes("ALLMULTI"),
    txqlen: Number(l["txqlen"] ?? 0),
  };
}

const sysctlIn = (ns: Netns, key: string): string => ns.sysctl(key);

describe("tuning plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  let goPath: string;

  before(() => {
    goPath = pluginDir(cleanup, {
      bridge: path.join(GO_BIN, "bridge"),
      "host-local": path.join(GO_BIN, "host-local"),
      tuning: path.join(GO_BIN, "tuning"),
    });
  });
  after(() => cleanup.run());

  /** A fresh host (our plugins by default), a data directory for tuning and a network [bridge, tuning]. */
  const setup = (tuning: Json, opts: { cniPath?: string; cniVersion?: string; subnet?: string } = {}) => {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-th-${tag}-${n}`, opts.cniPath ?? OUR_BIN);
    const dataDir = cleanup.dir("tscni-tuning-");
    const tuningConf = { type: "tuning", dataDir, ...tuning };
    const name = host.writeNetwork({
      cniVersion: opts.cniVersion ?? "1.0.0",
      name: `tn${tag}${n}`,
      plugins: [{ type: "bridge", bridge: `tt${tag}${n}`, isGateway: true, ipam: host.hostLocal([opts.subnet ?? "10.231.0.0/24"]) }, tuningConf],
    });
    return { host, name, dataDir, tuningConf, ctr: host.container(`tscni-tc-${tag}-${n}`) };
  };

  /** Runs our tuning directly in `host` with a CNI environment and raw stdin text. */
  const runTuning = (host: Host, command: string, stdin: string, env: Record<string, string>, binary = TUNING): Promise<RunResult> =>
    host.ns.run(binary, [], {
      env: { ...process.env, CNI_COMMAND: command, CNI_PATH: OUR_BIN, CNI_IFNAME: "eth0", CNI_ARGS: "", ...env },
      input: stdin,
    });

  /** The stdin a runtime gives tuning in the chain: its config with name, version and the prevResult. */
  const tuningStdin = (name: string, tuningConf: Json, prevResult: Result | undefined, cniVersion = "1.0.0") =>
    JSON.stringify({ cniVersion, name, ...tuningConf, ...(prevResult ? { prevResult } : {}) });

  test("ADD, CHECK, DEL (restores), DEL again, DEL without a namespace: every key", async () => {
    const newMac = "0a:58:0a:e7:00:99";
    const { host, name, dataDir, tuningConf, ctr } = setup({
      capabilities: { mac: true },
      sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1", "net/ipv4/conf/IFNAME/rp_filter": "2", "net.core.somaxconn": "1234" },
      mtu: 1400,
      promisc: true,
      allmulti: true,
      txQLen: 77,
    });
    const id = containerIdOf(ctr);
    const capArgs = JSON.stringify({ mac: newMac });
    const r = await host.add(name, ctr, { CAP_ARGS: capArgs });

    // The result is bridge's, with the container interface's new MAC.
    const eth0 = r.interfaces!.find((i) => i.name === "eth0" && i.sandbox)!;
    assert.equal(eth0.mac, newMac);
    assert.equal(r.interfaces!.length, 3);
    assert.equal(r.ips![0]!.interface, 2);

    assert.deepEqual(linkState(ctr, "eth0"), { mac: newMac, mtu: 1400, promisc: true, allmulti: true, txqlen: 77 });
    assert.equal(sysctlIn(ctr, "net.ipv4.conf.eth0.arp_notify"), "1");
    assert.equal(sysctlIn(ctr, "net.ipv4.conf.eth0.rp_filter"), "2");
    assert.equal(sysctlIn(ctr, "net.core.somaxconn"), "1234");

    // The backup holds the originals of what changed (bridge's veth: MTU 1500, txqueuelen 0, allmulti off).
    const backupPath = path.join(dataDir, `${id}_eth0.json`);
    const backup = JSON.parse(readFileSync(backupPath, "utf8")) as Json;
    assert.deepEqual(Object.keys(backup), ["mac", "promisc", "mtu", "allmulti", "txQLen"]);
    const originalMac = String(backup["mac"]);
    assert.match(originalMac, /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    assert.notEqual(originalMac, newMac);
    assert.deepEqual(backup, { mac: originalMac, promisc: false, mtu: 1500, allmulti: false, txQLen: 0 });

    // CHECK passes, then catches a change.
    await host.must("check", name, ctr, { CAP_ARGS: capArgs });
    ctr.exec("ip", ["link", "set", "dev", "eth0", "mtu", "1450"]);
    const bad = await host.cnitool("check", name, ctr, { CAP_ARGS: capArgs });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /configured MTU of eth0 is 1400, current value is 1450/);
    ctr.exec("ip", ["link", "set", "dev", "eth0", "mtu", "1400"]);
    ctr.exec("sh", ["-c", "echo 0 > /proc/sys/net/ipv4/conf/eth0/arp_notify"]);
    assert.match((await host.cnitool("check", name, ctr, { CAP_ARGS: capArgs })).stderr, /arp_notify is 1, current value is 0/);

    // DEL of tuning alone (a runtime's chain DEL runs it before bridge removes the veth): everything restored.
    const stdin = tuningStdin(name, { ...tuningConf, runtimeConfig: { mac: newMac } }, r);
    const del = await runTuning(host, "DEL", stdin, { CNI_CONTAINERID: id, CNI_NETNS: ctr.path });
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal(del.stdout, "");
    assert.deepEqual(linkState(ctr, "eth0"), { mac: originalMac, mtu: 1500, promisc: false, allmulti: false, txqlen: 0 });
    assert.equal(existsSync(backupPath), false, "backup removed");
    assert.equal(sysctlIn(ctr, "net.ipv4.conf.eth0.rp_filter"), "2", "sysctls are not restored (as in Go)");

    // DEL again, and the whole chain's DEL (tuning finds no backup; bridge removes the veth); then again.
    assert.equal((await runTuning(host, "DEL", stdin, { CNI_CONTAINERID: id, CNI_NETNS: ctr.path })).code, 0);
    await host.must("del", name, ctr, { CAP_ARGS: capArgs });
    await host.must("del", name, ctr, { CAP_ARGS: capArgs });

    // DEL without a namespace, and with one that is gone: success, and a stale backup goes.
    const stale = await host.add(name, ctr, { CAP_ARGS: capArgs });
    assert.equal(existsSync(backupPath), true);
    const noNs = await runTuning(host, "DEL", tuningStdin(name, tuningConf, undefined), { CNI_CONTAINERID: id, CNI_NETNS: "" });
    assert.equal(noNs.code, 0, noNs.stdout);
    assert.equal(existsSync(backupPath), false);
    const gone = await runTuning(host, "DEL", tuningStdin(name, tuningConf, stale), {
      CNI_CONTAINERID: id,
      CNI_NETNS: `/run/netns/tscni-none-${tag}`,
    });
    assert.equal(gone.code, 0, gone.stdout);
    await host.must("del", name, ctr);
  });

  test("MAC from CNI_ARGS and args.cni, a 0.3.1 config, prevResult passed through untouched without a MAC", async () => {
    const { host, name, ctr } = setup({ args: { cni: { mtu: 1300 } } }, { cniVersion: "0.3.1", subnet: "10.232.0.0/24" });
    const r = await host.add(name, ctr, { CNI_ARGS: "IgnoreUnknown=1;MAC=0a:58:00:00:00:31" });
    assert.equal(r.cniVersion, "0.3.1");
    assert.equal((r.ips![0] as { version?: string }).version, "4");
    assert.equal(r.interfaces!.find((i) => i.sandbox)!.mac, "0a:58:00:00:00:31");
    assert.deepEqual([linkState(ctr, "eth0").mac, linkState(ctr, "eth0").mtu], ["0a:58:00:00:00:31", 1300]);
    await host.must("del", name, ctr);

    // No MAC: the prevResult comes back as bridge made it.
    const plain = setup({ sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1" } }, { subnet: "10.233.0.0/24" });
    const bridgeOnly = plain.host.writeNetwork({
      cniVersion: "1.0.0",
      name: `${plain.name}b`,
      plugins: [{ type: "bridge", bridge: `tu${tag}${seq}`, ipam: plain.host.hostLocal(["10.234.0.0/24"]) }],
    });
    const prev = await plain.host.add(bridgeOnly, plain.ctr);
    const direct = await runTuning(plain.host, "ADD", tuningStdin(bridgeOnly, plain.tuningConf, prev), {
      CNI_CONTAINERID: containerIdOf(plain.ctr),
      CNI_NETNS: plain.ctr.path,
    });
    assert.equal(direct.code, 0, direct.stdout);
    assert.deepEqual(JSON.parse(direct.stdout), prev);
    await plain.host.must("del", bridgeOnly, plain.ctr);
  });

  test("bad configs: code 7 and nothing applied", async () => {
    const { host, name, dataDir, ctr } = setup({}, { subnet: "10.235.0.0/24" });
    const prev = await host.add(name, ctr);
    const id = containerIdOf(ctr);
    const env = { CNI_CONTAINERID: id, CNI_NETNS: ctr.path };
    const before = linkState(ctr, "eth0");
    const arpNotify = sysctlIn(ctr, "net.ipv4.conf.eth0.arp_notify");
    const good = { "net.ipv4.conf.IFNAME.arp_notify": arpNotify === "1" ? "0" : "1" };

    const cases: Array<[string, RegExp]> = [
      [
        tuningStdin(name, { type: "tuning", dataDir, mtu: 1280, sysctl: { ...good, "net.ipv4.conf.IFNAME.no_such_key": "1" } }, prev),
        /"sysctl": "net\.ipv4\.conf\.IFNAME\.no_such_key" \(no such sysctl in the container/,
      ],
      [
        tuningStdin(name, { type: "tuning", dataDir, mtu: 1280, sysctl: { ...good, "kernel.hostname": "x" } }, prev),
        /"sysctl": "kernel\.hostname" \(only network sysctls/,
      ],
      [
        `{"cniVersion":"1.0.0","name":"${name}","type":"tuning","dataDir":"${dataDir}","mtu":1280,` +
          `"sysctl":{"net.ipv4.conf.IFNAME.arp_notify":"1","net.ipv4.conf.IFNAME.arp_notify":"0"},"prevResult":${JSON.stringify(prev)}}`,
        /"sysctl": "net\.ipv4\.conf\.IFNAME\.arp_notify" \(the same sysctl key is given twice\)/,
      ],
      [tuningStdin(name, { type: "tuning", dataDir, mtu: 1280, sysctl: good, mac: "ff:ff:ff:ff:ff:ff" }, prev), /"mac".*multicast/],
      [tuningStdin(name, { type: "tuning", dataDir, mtu: -3, sysctl: good }, prev), /"mtu": -3/],
      [tuningStdin(name, { type: "tuning", dataDir, mtu: 1280, sysctl: good }, undefined), /Required prevResult missing/],
    ];
    for (const [stdin, msg] of cases) {
      const r = await runTuning(host, "ADD", stdin, env);
      assert.equal(r.code, 1, stdin);
      const err = cniError(r);
      assert.equal(err.code, 7, JSON.stringify(err));
      assert.match(err.msg, msg);
      assert.deepEqual(linkState(ctr, "eth0"), before, "link untouched");
      assert.equal(sysctlIn(ctr, "net.ipv4.conf.eth0.arp_notify"), arpNotify, "sysctl untouched");
      assert.equal(existsSync(path.join(dataDir, `${id}_eth0.json`)), false, "no backup");
    }

    // A failure in the kernel after the sysctls were written (an MTU above the veth's maximum) undoes them.
    const r = await runTuning(host, "ADD", tuningStdin(name, { type: "tuning", dataDir, mtu: 70000, sysctl: good }, prev), env);
    assert.equal(r.code, 1);
    assert.match(cniError(r).msg, /mtu|MTU/);
    assert.deepEqual(linkState(ctr, "eth0"), before);
    assert.equal(sysctlIn(ctr, "net.ipv4.conf.eth0.arp_notify"), arpNotify, "sysctl put back");
    assert.equal(existsSync(path.join(dataDir, `${id}_eth0.json`)), false, "backup removed");

    // A value the kernel refuses: the sysctls written before it are put back, the link is not touched.
    const refused = await runTuning(
      host,
      "ADD",
      tuningStdin(
        name,
        {
          type: "tuning",
          dataDir,
          mtu: 1280,
          sysctl: { ...good, "net.ipv4.conf.IFNAME.rp_filter": "not-a-number" },
        },
        prev,
      ),
      env,
    );
    assert.equal(refused.code, 1);
    assert.match(cniError(refused).msg, /cannot write "not-a-number" to \/proc\/sys\/net\/ipv4\/conf\/eth0\/rp_filter/);
    assert.deepEqual(linkState(ctr, "eth0"), before);
    assert.equal(sysctlIn(ctr, "net.ipv4.conf.eth0.arp_notify"), arpNotify, "sysctl put back");
    await host.must("del", name, ctr);
  });

  test("GC drops the backups of this network's attachments that are gone; valid ones, other networks' and Go's stay", async () => {
    const { host, name, dataDir, tuningConf, ctr } = setup({ mtu: 1400 }, { subnet: "10.237.0.0/24" });
    const second = host.container(`tscni-tc-${tag}-${seq}b`);
    await host.add(name, ctr);
    await host.add(name, second);
    const [kept, gone] = [containerIdOf(ctr), containerIdOf(second)];
    const goBackup = path.join(dataDir, "go-made-container_eth0.json"); // Go writes no network file
    writeFileSync(goBackup, `{"mtu": 1500}`);
    const listing = () => readdirSync(dataDir).sort();
    assert.deepEqual(
      listing(),
      [`${kept}_eth0.json`, `${kept}_eth0.network`, `${gone}_eth0.json`, `${gone}_eth0.network`, "go-made-container_eth0.json"].sort(),
    );
    assert.equal(readFileSync(path.join(dataDir, `${kept}_eth0.network`), "utf8"), `${name}\n`);

    const gc = (network: string, valid?: Array<{ containerID: string; ifname: string }>) =>
      runTuning(
        host,
        "GC",
        JSON.stringify({ cniVersion: "1.1.0", name: network, ...tuningConf, ...(valid ? { "cni.dev/valid-attachments": valid } : {}) }),
        { CNI_CONTAINERID: "", CNI_IFNAME: "" },
      );
    for (const r of [await gc(name), await gc(`other${tag}`, [])]) assert.equal(r.code, 0, r.stdout);
    assert.equal(listing().length, 5, "no list, or another network: nothing is stale");

    const r = await gc(name, [{ containerID: kept, ifname: "eth0" }]);
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(listing(), [`${kept}_eth0.json`, `${kept}_eth0.network`, "go-made-container_eth0.json"].sort());
    assert.equal(linkState(second, "eth0").mtu, 1400, "GC restores nothing: the attachment is gone");

    await host.must("del", name, ctr);
    await host.must("del", name, second);
    assert.deepEqual(listing(), ["go-made-container_eth0.json"], "DEL takes the network file with the backup");
  });

  test("differential against Go 1.1.1: same container state, backup file and result; each restores the other's backup", async () => {
    const tuning = {
      sysctl: { "net.ipv4.conf.IFNAME.arp_notify": "1", "net.ipv4.conf.all.rp_filter": "2" },
      mac: "0a:58:0a:ee:00:05",
      mtu: 1400,
      promisc: true,
      allmulti: true,
    };
    const go = setup(tuning, { cniPath: goPath, subnet: "10.236.0.0/24" });
    const ours = setup(tuning, {
      cniPath: pluginDir(cleanup, { bridge: path.join(GO_BIN, "bridge"), "host-local": path.join(GO_BIN, "host-local"), tuning: TUNING }),
      subnet: "10.236.0.0/24",
    });
    const goResult = await go.host.add(go.name, go.ctr);
    const ourResult = await ours.host.add(ours.name, ours.ctr);

    const strip = (r: Result) => ({
      ...r,
      interfaces: r.interfaces!.map((i) => ({
        ...i,
        mac: i.sandbox ? i.mac : "*",
        name: i.sandbox ? i.name : "*",
        sandbox: i.sandbox ? "*" : undefined,
      })),
    });
    assert.deepEqual(strip(ourResult), strip(goResult));
    assert.deepEqual(linkState(ours.ctr, "eth0"), linkState(go.ctr, "eth0"));
    for (const key of ["net.ipv4.conf.eth0.arp_notify", "net.ipv4.conf.all.rp_filter"])
      assert.equal(sysctlIn(ours.ctr, key), sysctlIn(go.ctr, key), key);
    const backupText = (x: typeof go) => readFileSync(path.join(x.dataDir, `${containerIdOf(x.ctr)}_eth0.json`), "utf8");
    const goBackup = backupText(go);
    const ourBackup = backupText(ours);
    const macOf = (text: string) => String((JSON.parse(text) as Json)["mac"]);
    assert.equal(ourBackup.replace(macOf(ourBackup), "MAC"), goBackup.replace(macOf(goBackup), "MAC"), "same file format");

    // Swap: our DEL restores Go's backup and Go's DEL restores ours.
    const del = (x: typeof go, binary: string, prev: Result) =>
      runTuning(x.host, "DEL", tuningStdin(x.name, x.tuningConf, prev), { CNI_CONTAINERID: containerIdOf(x.ctr), CNI_NETNS: x.ctr.path }, binary);
    assert.equal((await del(go, TUNING, goResult)).code, 0);
    assert.equal((await del(ours, path.join(GO_BIN, "tuning"), ourResult)).code, 0);
    for (const x of [go, ours]) {
      const state = linkState(x.ctr, "eth0");
      assert.equal(state.mac, macOf(x === go ? goBackup : ourBackup));
      assert.deepEqual([state.mtu, state.promisc, state.allmulti], [1500, false, false]);
      assert.equal(existsSync(path.join(x.dataDir, `${containerIdOf(x.ctr)}_eth0.json`)), false);
    }
    await go.host.must("del", go.name, go.ctr);
    await ours.host.must("del", ours.name, ours.ctr);
  });
});
