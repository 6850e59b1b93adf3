/**
 * cluster-ipam against a real etcd cluster: three members of Debian's etcd-server on 127.0.0.1, started by this
 * file with ports the kernel picked and data directories under a temp dir (tmpfs when there is one), stopped by
 * PID at the end whatever happens. Most calls run in-process through the plugin's exported handlers with a
 * per-call CmdArgs (IPAM never opens the netns, so the netns paths are fake), many at once, as a runtime with
 * tscni's plugins in-process would; the shipped binary (dist/bin/cluster-ipam) is exec'd where its output and
 * exit codes are the point. Simulated nodes are `ipam.nodeName`s.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { runCnitool } from "#cnitool/cnitool.js";
import { EtcdCluster, etcdMissing } from "#demo/etcd-cluster.js";
import { parsePoolLocation } from "#plugins/ipam/cluster-ipam/config.js";
import { EtcdClient, etcdRequestsSent } from "#plugins/ipam/cluster-ipam/etcd.js";
import { add, check, del, gc, openStore, status } from "#plugins/ipam/cluster-ipam/main.js";
import type { CmdArgs } from "#skel/skel.js";
import { CniError } from "#spec/errors.js";
import type { Result100 } from "#spec/result/types100.js";
import { Cleanup, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { runPlugin } from "#testing/plugin-run.js";
import { Host, ipIn, pluginDir } from "#testing/rig.js";

const skip = skipReason(false, etcdMissing(), spawnSync("openssl", ["version"]).status === 0 ? undefined : "openssl is not installed");
if (skip) console.log(`# skipping cluster-ipam tests: ${skip}`);

type Json = Record<string, unknown>;
const NODES = ["node-a", "node-b", "node-c"];

describe("cluster-ipam on a 3-member etcd cluster", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  const base = mkdtempSync(path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), "tscni-cipam-"));
  cleanup.add(() => rmSync(base, { recursive: true, force: true }));
  const lockDir = path.join(base, "locks");
  let cluster: EtcdCluster;
  let seq = 0;

  before(async () => {
    cluster = await EtcdCluster.start({ baseDir: path.join(base, "etcd"), members: 3, name: `t${tag}` });
    cleanup.add(() => cluster.stop());
  });
  after(() => cleanup.run());

  /** A network config of a fresh network (unique name) on the cluster, for `node`. */
  const network = (ipam: Json = {}, top: Json = {}) => {
    const name = `cipam-${tag}-${++seq}`;
    return (node: string, extra: Json = {}): Json => ({
      cniVersion: "1.1.0",
      name,
      type: "bridge",
      ipam: {
        type: "cluster-ipam",
        nodeName: node,
        lockDir,
        etcd: { endpoints: cluster.endpoints },
        ranges: [[{ subnet: "10.70.0.0/16" }]],
        ...ipam,
        ...extra,
      },
      ...top,
    });
  };
  const args = (conf: Json, containerID: string, ifName = "eth0", cniArgs = ""): CmdArgs => ({
    containerID,
    netns: `/run/netns/fake-${containerID}`,
    ifName,
    args: cniArgs,
    path: OUR_BIN,
    netnsOverride: "",
    stdinData: Buffer.from(JSON.stringify(conf)),
    env: { CNI_COMMAND: "ADD", TSCNI_RESIDENT: "exec" },
    stderr: process.stderr,
  });
  const addrs = (r: Result100) => r.ips!.map((ip) => ip.address.split("/")[0]!);
  const storeOf = (conf: Json) => openStore(parsePoolLocation(Buffer.from(JSON.stringify(conf))));
  /** Runs `fn` and resolves to its result or the CNI error it threw. */
  const settle = <T>(p: Promise<T>): Promise<T | CniError> => p.catch((e: unknown) => CniError.from(e));

  test("3 nodes x 200 concurrent ADDs: 600 distinct addresses from each node's own blocks; all DELs empty the pool", async () => {
    const conf = network();
    const t0 = Date.now();
    const sent0 = etcdRequestsSent();
    const results = await Promise.all(NODES.flatMap((node) => Array.from({ length: 200 }, (_, i) => settle(add(args(conf(node), `${node}-c${i}`))))));
    const took = Date.now() - t0;
    const failures = results.filter((r) => r instanceof CniError);
    assert.deepEqual(failures.map((f) => (f as CniError).msg).slice(0, 3), []);
    const all = (results as Result100[]).map((r) => addrs(r)[0]!);
    assert.equal(new Set(all).size, 600, "600 distinct addresses");
    const roundTrips = (etcdRequestsSent() - sent0) / 600;
    console.log(`# 600 ADDs (in-process, 3 nodes x 200 at once): ${took} ms, ${roundTrips.toFixed(2)} etcd round trips per allocation`);
    assert.ok(roundTrips < 3, `round trips per allocation: ${roundTrips}`);

    const store = storeOf(conf("node-a"));
    const blocks = await store.blocks();
    const owner = new Map(blocks.map((b) => [b.cidr, b.node]));
    for (const node of NODES) {
      const mine = await store.allocations(node);
      assert.equal(mine.length, 200);
      const own = mine.filter((a) => owner.get(a.block.replace(/-(\d+)$/, "/$1")) === node).length;
      assert.ok(own / mine.length >= 0.9, `${node}: ${own} of 200 from its own blocks`);
      assert.ok(blocks.filter((b) => b.node === node).length <= 5, `${node} claimed no more blocks than it needs (200 / 62 per /26)`);
    }

    const dels = await Promise.all(NODES.flatMap((node) => Array.from({ length: 200 }, (_, i) => settle(del(args(conf(node), `${node}-c${i}`))))));
    assert.deepEqual(
      dels.filter((r) => r instanceof CniError),
      [],
    );
    assert.deepEqual(await store.allocations(), [], "no address is allocated");
    const loc = parsePoolLocation(Buffer.from(JSON.stringify(conf("node-a"))));
    const handles = await new EtcdClient({ ...loc.etcd }).range({ key: `${loc.keyPrefix}handles/`, prefix: true, countOnly: true });
    assert.equal(handles.count, 0, "no handle is left");
    // DEL again: already released is success.
    await del(args(conf("node-a"), "node-a-c0"));
  });

  test("an etcd member killed with SIGKILL mid-run: no failed and no duplicated allocation", async () => {
    const conf = network({ ranges: [[{ subnet: "10.71.0.0/16" }]] });
    let done = 0;
    let killed: Promise<void> | undefined;
    const results = await Promise.all(
      NODES.flatMap((node) =>
        Array.from({ length: 100 }, async (_, i) => {
          const r = await settle(add(args(conf(node), `${node}-k${i}`)));
          if (++done === 60) killed = cluster.kill(0, "SIGKILL");
          return r;
        }),
      ),
    );
    await killed;
    assert.deepEqual(
      results.filter((r) => r instanceof CniError).map((e) => (e as CniError).msg),
      [],
    );
    const got = (results as Result100[]).map((r) => addrs(r)[0]!);
    assert.equal(new Set(got).size, 300);
    const store = storeOf(conf("node-a"));
    const records = await store.allocations();
    assert.equal(records.length, 300, "one record per attachment: no address allocated twice, none leaked by a repeated request");
    assert.deepEqual(records.map((r) => r.ip).sort(), [...got].sort());
    cluster.startMember(0);
    await cluster.waitHealthy();
    await Promise.all(NODES.flatMap((node) => Array.from({ length: 100 }, (_, i) => del(args(conf(node), `${node}-k${i}`)))));
    assert.equal((await store.allocations()).length, 0);
  });

  test('a pool smaller than the demand: the surplus fails with "no IP addresses available"; with as many addresses as pods every pod gets one', async () => {
    // 10.72.0.0/27 in /29 blocks: .2-.30 without the gateway .1: 29 addresses in 4 blocks for 3 nodes.
    const conf = network({ ranges: [[{ subnet: "10.72.0.0/27" }]], blockSize: 29 });
    const over = await Promise.all(NODES.flatMap((node) => Array.from({ length: 12 }, (_, i) => settle(add(args(conf(node), `${node}-o${i}`))))));
    const failed = over.filter((r): r is CniError => r instanceof CniError);
    assert.equal(over.length - failed.length, 29, "every address handed out");
    assert.equal(failed.length, 7);
    for (const f of failed) assert.match(f.msg, /^no IP addresses available in range set 10\.72\.0\.1-10\.72\.0\.30: all 29 addresses are allocated/);
    assert.equal(new Set((over.filter((r) => !(r instanceof CniError)) as Result100[]).map((r) => addrs(r)[0])).size, 29);
    const store = storeOf(conf("node-a"));
    await Promise.all(NODES.flatMap((node) => Array.from({ length: 12 }, (_, i) => del(args(conf(node), `${node}-o${i}`)))));
    assert.equal((await store.allocations()).length, 0);

    const pods = NODES.flatMap((node, n) => Array.from({ length: n === 2 ? 9 : 10 }, (_, i) => ({ node, id: `${node}-e${i}` })));
    assert.equal(pods.length, 29);
    const exact = await Promise.all(pods.map((p) => settle(add(args(conf(p.node), p.id)))));
    assert.deepEqual(
      exact.filter((r) => r instanceof CniError).map((e) => (e as CniError).msg),
      [],
    );
    const blocks = await store.blocks();
    assert.equal(blocks.length, 4);
    assert.ok(
      blocks.some((b) => b.borrowed > 0),
      "a node borrowed from another node's block once no block was free",
    );
    const statusErr = await settle(status(args(conf("node-a"), "")));
    assert.ok(
      statusErr instanceof CniError &&
        statusErr.code === 50 &&
        /no free address in range set 10\.72\.0\.1-10\.72\.0\.30 \(29 addresses, all allocated\)/.test(statusErr.msg),
      String(statusErr),
    );
  });

  test("more nodes than blocks fill a pool at once: every address handed out once, the next ADD is refused as exhausted", async () => {
    // 10.73.0.0/24 in /29 blocks: 253 addresses (without .0, .1, .255) in 32 blocks, wanted by 64 nodes at once, so
    // half the nodes borrow, all racing for the last free addresses of the others' blocks.
    const conf = network({ ranges: [[{ subnet: "10.73.0.0/24" }]], blockSize: 29 });
    const pods = Array.from({ length: 253 }, (_, i) => ({ node: `fill-${i % 64}`, id: `fill-${i}` }));
    const results = await Promise.all(pods.map((p) => settle(add(args(conf(p.node), p.id)))));
    assert.deepEqual(
      results
        .filter((r) => r instanceof CniError)
        .map((e) => (e as CniError).msg)
        .slice(0, 3),
      [],
    );
    assert.equal(new Set((results as Result100[]).map((r) => addrs(r)[0])).size, 253);
    const next = await settle(add(args(conf("fill-extra"), "fill-extra")));
    assert.ok(
      next instanceof CniError &&
        /^no IP addresses available in range set 10\.73\.0\.1-10\.73\.0\.254: all 253 addresses are allocated/.test(next.msg),
      String(next),
    );
    // Any 20 pods go; 20 new pods on other nodes get exactly their addresses.
    const freed = pods.filter((_, i) => i % 12 === 0).slice(0, 20);
    const freedIPs = new Set(freed.map((p) => addrs(results[pods.indexOf(p)] as Result100)[0]));
    await Promise.all(freed.map((p) => del(args(conf(p.node), p.id))));
    const again = await Promise.all(Array.from({ length: 20 }, (_, i) => settle(add(args(conf(`fill-${1 + (i % 11)}`), `again-${i}`)))));
    assert.deepEqual(
      again.filter((r) => r instanceof CniError).map((e) => (e as CniError).msg),
      [],
    );
    assert.deepEqual(new Set((again as Result100[]).map((r) => addrs(r)[0])), freedIPs);
  });

  test("one round trip: a node's next ADD takes the free address it remembers; a DEL with the ADD's result deletes it", async () => {
    const conf = network({ ranges: [[{ subnet: "10.74.0.0/24" }]] });
    const store = storeOf(conf("node-a"));
    await add(args(conf("node-a"), "rt-warm")); // node-a claims its block and remembers it
    let sent = etcdRequestsSent();
    const second = await add(args(conf("node-a"), "rt-1"));
    assert.equal(etcdRequestsSent() - sent, 1, "the second ADD: one transaction");
    // An address someone else took meanwhile (here: a record put by hand) only costs the guess: the next is used.
    const taken = `10.74.0.${Number(addrs(second)[0]!.split(".")[3]) + 1}`;
    const rec = (await store.allocations()).find((a) => a.containerID === "rt-1")!;
    await add(args(conf("node-a"), "rt-2", "eth0", `IP=${taken}`)); // requested: no guess, the usual path
    sent = etcdRequestsSent();
    const third = await add(args(conf("node-a"), "rt-3"));
    assert.notEqual(addrs(third)[0], taken);
    assert.ok(etcdRequestsSent() - sent <= 2, `a stale guess costs at most the usual round trips (${etcdRequestsSent() - sent})`);

    // DEL with prevResult: one transaction; DEL again (nothing left) and a prevResult naming an address of
    // another attachment release nothing of anyone else.
    const withPrev = (id: string, r: Result100) => args({ ...conf("node-a"), prevResult: r }, id);
    sent = etcdRequestsSent();
    await del(withPrev("rt-1", second));
    assert.equal(etcdRequestsSent() - sent, 1, "DEL with the ADD's result: one transaction");
    assert.equal(
      (await store.allocations()).some((a) => a.ip === rec.ip),
      false,
    );
    await del(withPrev("rt-1", second));
    await del(withPrev("rt-x", third)); // rt-3's address, named by another attachment's DEL
    assert.ok(
      (await store.allocations()).some((a) => a.containerID === "rt-3" && a.ip === addrs(third)[0]),
      "rt-3 keeps its address",
    );
  });

  test("a node silent longer than nodeGraceSeconds: its blocks go to a node that finds none free; back, it takes nothing another owns", async () => {
    // 10.76.0.0/27 in /29 blocks: 29 addresses in 4 blocks. "gone" takes 3 and falls silent; after the grace period
    // "fresh" takes 2 (so it is recent); node-b then wants every address left (27).
    const conf = network({ ranges: [[{ subnet: "10.76.0.0/27" }]], blockSize: 29, nodeGraceSeconds: 1 });
    const store = storeOf(conf("node-a"));
    for (let i = 0; i < 3; i++) await add(args(conf("gone"), `gone-${i}`));
    await sleep(1300);
    const fresh = [await add(args(conf("fresh"), "fresh-0")), await add(args(conf("fresh"), "fresh-1"))].map((r) => addrs(r)[0]!);
    // "fresh" stands for a node that keeps calling through the test: its record stays recent however slow this is.
    await storeOf(conf("fresh")).markAlive(new Date(Date.now() + 60_000));
    const b: Result100[] = [];
    for (let i = 0; i < 27; i++) b.push(await add(args(conf("node-b"), `b-${i}`)));
    const all = await store.allocations();
    assert.equal(all.length, 29);
    assert.equal(all.filter((a) => a.node === "gone").length, 0, "the silent node's allocations were released");
    assert.deepEqual(
      all
        .filter((a) => a.node === "fresh")
        .map((a) => a.ip)
        .sort(),
      [...fresh].sort(),
      "a recent node keeps what it has",
    );
    const blocks = await store.blocks();
    assert.ok(!blocks.some((x) => x.node === "gone"), "no block is the silent node's any more");
    assert.equal(blocks.filter((x) => x.node === "fresh").length, 1);
    assert.equal(new Set(b.map((r) => addrs(r)[0])).size, 27);
    assert.ok(!(await store.liveness()).has("gone"), "the reclaimed node's record went with its blocks");

    // It comes back (its hint still names its old block): the pool is full, and it hands out nothing of anyone's.
    const back = await settle(add(args(conf("gone"), "gone-3")));
    assert.ok(back instanceof CniError && /^no IP addresses available/.test(back.msg), String(back));
    const after = await store.allocations();
    assert.equal(new Set(after.map((a) => a.ip)).size, after.length);
    assert.equal(after.length, 29);
    // A node's GC says it is alive too; with the option off nothing is ever reclaimed (the other tests).
    await gc(args({ ...conf("gone"), "cni.dev/valid-attachments": [] }, ""));
    const seen = (await store.liveness()).get("gone")?.seen;
    assert.ok(seen !== undefined && Date.now() - Date.parse(seen) < 5000, `gone's record: ${seen}`);
    // So does its STATUS (what runtimes poll), even when the answer is "the pool is full".
    const polled = await settle(status(args(conf("poller"), "")));
    assert.ok(polled instanceof CniError && polled.code === 50, String(polled));
    assert.ok((await store.liveness()).has("poller"), "STATUS wrote the node's record");
  });

  test("requested IPs are honoured and refused clearly when taken or excluded; dual stack in one transaction", async () => {
    const conf = network({ ranges: [[{ subnet: "10.73.0.0/24" }], [{ subnet: "fd73::/64" }]], exclude: ["10.73.0.100"] });
    const r1 = await add(args(conf("node-a"), "req1", "eth0", "IgnoreUnknown=1;IP=10.73.0.50"));
    assert.equal(addrs(r1)[0], "10.73.0.50");
    assert.equal(r1.ips![1]!.address.endsWith("/64"), true);
    assert.equal(r1.ips![0]!.gateway, "10.73.0.1");
    const taken = await settle(add(args(conf("node-b"), "req2", "eth0", "IP=10.73.0.50")));
    assert.ok(taken instanceof CniError);
    assert.equal(taken.msg, "requested IP address 10.73.0.50 is already allocated to container req1 (eth0) on node node-a");
    const excluded = await settle(add(args(conf("node-b"), "req3", "eth0", "IP=10.73.0.100")));
    assert.ok(
      excluded instanceof CniError &&
        /requested IP 10\.73\.0\.100 cannot be allocated: 10\.73\.0\.100 is excluded \(ipam\.exclude\[0\]\)/.test(excluded.msg),
      String(excluded),
    );
    const auto = await settle(add(args(conf("node-b"), "req4")));
    assert.ok(!(auto instanceof CniError), String(auto));
    const fromRuntime = await add(args({ ...conf("node-b"), runtimeConfig: { ips: ["fd73::99"] } }, "req5"));
    assert.equal(addrs(fromRuntime)[1], "fd73::99");
    const store = storeOf(conf("node-a"));
    assert.deepEqual((await store.allocations()).map((a) => a.containerID).sort(), ["req1", "req1", "req4", "req4", "req5", "req5"]);
    // A retried ADD of the same attachment gets the same addresses back.
    assert.deepEqual(addrs(await add(args(conf("node-a"), "req1"))), addrs(r1));
    await check(args(conf("node-a"), "req1"));
  });

  test("a dual-stack ADD that cannot complete leaves nothing behind", async () => {
    const conf = network({ ranges: [[{ subnet: "10.74.0.0/24" }], [{ subnet: "fd74::/64", rangeStart: "fd74::10", rangeEnd: "fd74::11" }]] });
    await add(args(conf("node-a"), "ds1"));
    await add(args(conf("node-b"), "ds2"));
    const third = await settle(add(args(conf("node-c"), "ds3")));
    assert.ok(third instanceof CniError && /no IP addresses available in range set fd74::10-fd74::11/.test(third.msg), String(third));
    const records = await storeOf(conf("node-a")).allocations();
    assert.deepEqual(records.map((r) => r.containerID).sort(), ["ds1", "ds1", "ds2", "ds2"], "no IPv4 address of ds3 left");
  });

  test("an ADD whose answer is lost after etcd committed it: retried, the same attachment gets the same address, never a second one", async () => {
    // A proxy in front of one member that forwards every request but drops the answers of writing transactions.
    let dropping = 0;
    const target = new URL(cluster.endpoints[1]!);
    const proxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const out = http.request({ host: target.hostname, port: target.port, path: req.url, method: "POST", headers: req.headers }, (up) => {
          const answer: Buffer[] = [];
          up.on("data", (c: Buffer) => answer.push(c));
          up.on("end", () => {
            if (dropping > 0 && req.url === "/v3/kv/txn" && body.includes("request_put") && body.includes("create_revision")) {
              dropping--;
              req.socket.destroy(); // committed, but the caller never hears of it
              return;
            }
            res.writeHead(up.statusCode ?? 500, up.headers).end(Buffer.concat(answer));
          });
        });
        out.end(body);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    cleanup.add(() => proxy.close());
    const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const conf = network({ ranges: [[{ subnet: "10.75.0.0/24" }]] });
    // One round only (the call's budget is the request's), so a lost answer fails the call.
    const viaProxy = (node: string) => conf(node, { etcd: { endpoints: [proxied], requestTimeoutMs: 800, callTimeoutMs: 800 } });
    const store = storeOf(conf("node-a"));
    await add(args(conf("node-a"), "warm")); // node-a has its block: the proxied ADDs only read and take an address

    // Every answer lost: the ADD fails with code 11 within its timeout; the retry finds the committed address.
    dropping = 1000;
    const t0 = Date.now();
    const lost = await settle(add(args(viaProxy("node-a"), "lost1")));
    assert.ok(lost instanceof CniError && lost.code === 11, String(lost));
    assert.ok(Date.now() - t0 < 2000);
    const committed = await store.allocations();
    const lost1 = committed.filter((r) => r.containerID === "lost1");
    assert.equal(lost1.length, 1, "etcd committed the first attempt");
    const retried = await add(args(conf("node-a"), "lost1"));
    assert.equal(addrs(retried)[0], lost1[0]!.ip);
    assert.equal((await store.allocations()).length, 2);

    // One answer lost: the client repeats the request, finds its own record and succeeds with it.
    dropping = 1;
    const once = await add(args(viaProxy("node-a"), "lost2"));
    const records = await store.allocations();
    assert.equal(records.length, 3);
    assert.equal(records.find((r) => r.containerID === "lost2")!.ip, addrs(once)[0]);
  });

  test("GC releases exactly this node's allocations not in cni.dev/valid-attachments", async () => {
    const conf = network({ ranges: [[{ subnet: "10.76.0.0/24" }]] });
    for (let i = 0; i < 6; i++) await add(args(conf("node-a"), `gc-a${i}`));
    for (let i = 0; i < 2; i++) await add(args(conf("node-b"), `gc-b${i}`));
    const valid = ["gc-a0", "gc-a1", "gc-a2", "gc-b0"].map((containerID) => ({ containerID, ifname: "eth0" }));
    await gc(args({ ...conf("node-a"), "cni.dev/valid-attachments": valid }, ""));
    const left = (await storeOf(conf("node-a")).allocations()).map((a) => a.containerID).sort();
    assert.deepEqual(left, ["gc-a0", "gc-a1", "gc-a2", "gc-b0", "gc-b1"]);
  });

  test("the shipped binary: ADD, CHECK, STATUS, GC, DEL as a runtime runs them; bad input is one CNI error", async () => {
    const conf = network({
      ranges: [[{ subnet: "10.77.0.0/24" }], [{ subnet: "fd77::/64" }]],
      routes: [{ dst: "0.0.0.0/0" }],
      dns: { nameservers: ["10.77.0.53"] },
    });
    const c = conf("node-a");
    const added = await runPlugin(OUR_BIN, "cluster-ipam", { command: "ADD", containerID: "bin1" }, c);
    assert.equal(added.exitCode, 0, added.stdout + added.stderr);
    assert.equal(added.json.ips.length, 2);
    assert.deepEqual(added.json.routes, [{ dst: "0.0.0.0/0" }]);
    assert.deepEqual(added.json.dns, { nameservers: ["10.77.0.53"] });
    assert.equal((await runPlugin(OUR_BIN, "cluster-ipam", { command: "CHECK", containerID: "bin1" }, c)).exitCode, 0);
    assert.equal((await runPlugin(OUR_BIN, "cluster-ipam", { command: "STATUS" }, c)).exitCode, 0);
    const checkOther = await runPlugin(OUR_BIN, "cluster-ipam", { command: "CHECK", containerID: "bin2" }, c);
    assert.equal(checkOther.json.code, 999);
    assert.match(checkOther.json.msg, /no address is allocated to container bin2 \(eth0\)/);
    assert.equal(
      (await runPlugin(OUR_BIN, "cluster-ipam", { command: "GC" }, { ...c, "cni.dev/valid-attachments": [{ containerID: "bin1", ifname: "eth0" }] }))
        .exitCode,
      0,
    );
    assert.equal((await storeOf(c).allocations()).length, 2, "GC kept the valid attachment");
    for (let i = 0; i < 2; i++) assert.equal((await runPlugin(OUR_BIN, "cluster-ipam", { command: "DEL", containerID: "bin1" }, c)).exitCode, 0);
    assert.equal((await storeOf(c).allocations()).length, 0);

    const bad = await runPlugin(OUR_BIN, "cluster-ipam", { command: "ADD", containerID: "bin3" }, conf("node-a", { blockSize: 8 }));
    assert.equal(bad.exitCode, 1);
    assert.deepEqual(bad.json, { code: 7, msg: 'invalid "ipam.blockSize": 8 (want an IPv4 prefix length from 20 to 32)' });
    const noEtcd = await runPlugin(
      OUR_BIN,
      "cluster-ipam",
      { command: "ADD", containerID: "bin3" },
      { ...c, ipam: { ...(c["ipam"] as Json), etcd: undefined } },
    );
    assert.equal(noEtcd.json.code, 7);
  });

  test("cnitool ipam (and cluster-ipam admin): blocks and allocations per node, release-node frees a dead node's blocks and addresses", async () => {
    const conf = network({ ranges: [[{ subnet: "10.78.0.0/24" }]] });
    for (const node of NODES) for (let i = 0; i < 3; i++) await add(args(conf(node), `ct-${node}-${i}`));
    const confDir = path.join(base, `conf-${seq}`);
    mkdirSync(confDir);
    const c = conf("node-a");
    writeFileSync(
      path.join(confDir, "10-c.conflist"),
      JSON.stringify({ cniVersion: "1.1.0", name: c["name"], plugins: [{ type: "bridge", bridge: "x", ipam: c["ipam"] }] }),
    );
    const cnitool = async (...argv: string[]) => {
      let out = "";
      let err = "";
      const code = await runCnitool(argv, {
        env: { NETCONFPATH: confDir, TSCNI_RESIDENT: "exec" },
        cwd: base,
        stdout: (s) => (out += s),
        stderr: (s) => (err += s),
      });
      return { code, out, err };
    };
    const blocks = await cnitool("ipam", "blocks", String(c["name"]));
    assert.equal(blocks.code, 0, blocks.err);
    assert.match(blocks.out, /^NODE\s+BLOCK\s+USED\s+BORROWED\s+CLAIMED$/m);
    assert.match(blocks.out, /^node-b\s+10\.78\.0\.\d+\/26\s+3\s+0\s/m);
    assert.match(blocks.out, /3 block\(s\): node-a 1, node-b 1, node-c 1/);
    const allocs = await cnitool("ipam", "allocations", String(c["name"]), "--node", "node-c", "--format", "json");
    assert.deepEqual((JSON.parse(allocs.out) as Json[]).map((a) => a["containerID"]).sort(), ["ct-node-c-0", "ct-node-c-1", "ct-node-c-2"]);
    // The same commands as the plugin program's own subcommand, as a node without cnitool would run them.
    const program = spawnSync(path.join(OUR_BIN, "cluster-ipam"), ["admin", "blocks", String(c["name"]), "--format", "json"], {
      env: { ...process.env, NETCONFPATH: confDir, TSCNI_RESIDENT: "exec" },
      encoding: "utf8",
    });
    assert.equal(program.status, 0, program.stderr);
    assert.deepEqual((JSON.parse(program.stdout) as Json[]).map((b) => b["node"]).sort(), ["node-a", "node-b", "node-c"]);
    const nodes = await cnitool("ipam", "nodes", String(c["name"]));
    assert.equal(nodes.code, 0, nodes.err);
    assert.match(nodes.out, /^NODE\s+BLOCKS\s+USED\s+LAST SEEN$/m);
    assert.match(nodes.out, /^node-c\s+1\s+3\s+-$/m); // no nodeGraceSeconds: no liveness record
    const released = await cnitool("ipam", "release-node", String(c["name"]), "node-c");
    assert.equal(released.code, 0, released.err);
    assert.match(released.out, /^node node-c: released 3 address\(es\) and 1 block\(s\): 10\.78\.0\.\d+\/26$/m);
    const after = await cnitool("ipam", "blocks", String(c["name"]), "--format", "json");
    assert.deepEqual((JSON.parse(after.out) as Json[]).map((b) => b["node"]).sort(), ["node-a", "node-b"]);
    const missingNet = await cnitool("ipam", "blocks", "nonet");
    assert.equal(missingNet.code, 1);
  });

  test("all members stopped: code 11 within the timeout and a bridge ADD leaves nothing; restarted: blocks and allocations intact", async () => {
    const conf = network({ ranges: [[{ subnet: "10.79.0.0/24" }]] });
    for (let i = 0; i < 3; i++) await add(args(conf(NODES[i]!), `down-${i}`));
    const store = storeOf(conf("node-a"));
    const before = {
      blocks: (await store.blocks()).map((b) => [b.cidr, b.node, b.used]),
      allocations: (await store.allocations()).map((a) => [a.ip, a.containerID, a.node]),
    };

    await cluster.stopMembers();
    // A call budget of one round: the call fails as soon as its request has (by default it would wait 100 s).
    const c = conf("node-a", { etcd: { endpoints: cluster.endpoints, requestTimeoutMs: 1500, callTimeoutMs: 1500 } });
    const t0 = Date.now();
    const r = await runPlugin(OUR_BIN, "cluster-ipam", { command: "ADD", containerID: "down-x" }, c);
    const took = Date.now() - t0;
    assert.equal(r.exitCode, 1);
    assert.equal(r.json.code, 11, r.stdout);
    assert.match(
      r.json.msg,
      /^cluster-ipam: ADD: etcd is unreachable: etcd did not answer within 1500 ms \(requestTimeoutMs\): http:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/,
    );
    assert.ok(took < 1500 + 1500, `answered after ${took} ms`);
    const st = await runPlugin(OUR_BIN, "cluster-ipam", { command: "STATUS" }, c);
    assert.equal(st.json.code, 50);
    assert.match(st.json.msg, /etcd is unreachable/);
    // STATUS with the default call budget (100 s of repeats for an ADD): sent once, answered within requestTimeoutMs.
    const polled = conf("node-a", { etcd: { endpoints: cluster.endpoints, requestTimeoutMs: 1500 } });
    const t1 = Date.now();
    const st1 = await runPlugin(OUR_BIN, "cluster-ipam", { command: "STATUS" }, polled);
    assert.equal(st1.json.code, 50, st1.stdout);
    assert.match(st1.json.msg, /etcd is unreachable: etcd did not answer within 1500 ms \(requestTimeoutMs\)/);
    assert.ok(Date.now() - t1 < 1500 + 1500, `STATUS answered after ${Date.now() - t1} ms`);

    // bridge delegating to cluster-ipam: the IPAM error comes back, and no link or address is left.
    const host = new Host(
      cleanup,
      `tscni-cip-${tag}`,
      pluginDir(cleanup, { bridge: path.join(OUR_BIN, "bridge"), "cluster-ipam": path.join(OUR_BIN, "cluster-ipam") }),
    );
    const ctr = host.container(`tscni-cipc-${tag}`);
    const bridgeConf = { ...c, type: "bridge", bridge: `cb${tag}`, isGateway: true };
    const br = await host.plugin(path.join(OUR_BIN, "bridge"), "ADD", bridgeConf, { CNI_NETNS: ctr.path, CNI_CONTAINERID: "down-bridge" });
    assert.equal(br.code, 1);
    assert.equal((JSON.parse(br.stdout) as { code: number }).code, 11, br.stdout);
    assert.deepEqual(
      ipIn(ctr, ["link", "show"])
        .map((l) => l["ifname"])
        .filter((n) => n !== "lo"),
      [],
      "nothing in the container",
    );
    assert.deepEqual(host.veths(), [], "no veth on the host");

    await cluster.restart();
    const afterRestart = {
      blocks: (await store.blocks()).map((b) => [b.cidr, b.node, b.used]),
      allocations: (await store.allocations()).map((a) => [a.ip, a.containerID, a.node]),
    };
    assert.deepEqual(afterRestart, before);
    assert.equal(
      (await store.allocations()).some((a) => a.containerID.startsWith("down-x") || a.containerID === "down-bridge"),
      false,
    );
  });

  test("TLS with client certificates and a user: the binary (Bun) and in-process (Node) both connect; a wrong password is code 7", async () => {
    const dir = path.join(base, "tls");
    mkdirSync(dir);
    const files = makeCertificates(dir);
    const tlsCluster = await EtcdCluster.start({ baseDir: path.join(dir, "etcd"), members: 1, name: `s${tag}`, tls: files });
    cleanup.add(() => tlsCluster.stop());
    await enableAuth(tlsCluster.endpoints[0]!, files, "root", "rootpw");
    const conf = network({
      ranges: [[{ subnet: "10.80.0.0/24" }]],
      etcd: {
        endpoints: tlsCluster.endpoints,
        certFile: files.clientCertFile,
        keyFile: files.clientKeyFile,
        caFile: files.caFile,
        username: "root",
        password: "rootpw",
      },
    });
    const c = conf("node-a");
    const viaBinary = await runPlugin(OUR_BIN, "cluster-ipam", { command: "ADD", containerID: "tls1" }, c);
    assert.equal(viaBinary.exitCode, 0, viaBinary.stdout + viaBinary.stderr);
    const inProcess = await add(args(c, "tls2"));
    assert.notEqual(addrs(inProcess)[0], viaBinary.json.ips[0].address.split("/")[0]);
    assert.equal((await storeOf(c).allocations()).length, 2);
    const wrong = conf("node-a", { etcd: { ...(c["ipam"] as { etcd: Json }).etcd, password: "nope" } });
    const denied = await runPlugin(OUR_BIN, "cluster-ipam", { command: "ADD", containerID: "tls3" }, wrong);
    assert.equal(denied.json.code, 7, denied.stdout);
    assert.match(denied.json.msg, /authentication as "root" failed/);
    const noCert = conf("node-a", { etcd: { endpoints: tlsCluster.endpoints, caFile: files.caFile, requestTimeoutMs: 1000 } });
    const refused = await runPlugin(OUR_BIN, "cluster-ipam", { command: "ADD", containerID: "tls4" }, noCert);
    assert.equal(refused.exitCode, 1, "no client certificate: refused");
    tlsCluster.stop();
  });
});

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function makeCertificates(dir: string) {
  const run = (...a: string[]) => {
    const r = spawnSync("openssl", a, { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${a.join(" ")}: ${r.stderr}`);
  };
  run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=tscni-test-ca", "-keyout", "ca.key", "-out", "ca.crt");
  writeFileSync(path.join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
  writeFileSync(path.join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  // etcd 3.4's gateway refuses client certificates with a Common Name once authentication is on (the CN would
  // name a user): the client's certificate has none, and the user comes from username/password.
  for (const [name, subject] of [
    ["server", "/CN=127.0.0.1"],
    ["client", "/O=tscni-cni"],
  ] as const) {
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", `${name}.key`, "-out", `${name}.csr`);
    run(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.crt`,
    );
  }
  const f = (n: string) => path.join(dir, n);
  return {
    certFile: f("server.crt"),
    keyFile: f("server.key"),
    caFile: f("ca.crt"),
    clientCertFile: f("client.crt"),
    clientKeyFile: f("client.key"),
  };
}

/** Adds user `name` with the root role and turns authentication on (etcd's auth API through the gateway). */
async function enableAuth(endpoint: string, files: ReturnType<typeof makeCertificates>, name: string, password: string) {
  const { readFileSync } = await import("node:fs");
  const https = await import("node:https");
  const post = (p: string, body: Json) =>
    new Promise<string>((resolve, reject) => {
      const req = https.request(
        new URL(p, endpoint),
        {
          method: "POST",
          cert: readFileSync(files.clientCertFile),
          key: readFileSync(files.clientKeyFile),
          ca: readFileSync(files.caFile),
          agent: false,
        },
        (res) => {
          let s = "";
          res
            .setEncoding("utf8")
            .on("data", (c: string) => (s += c))
            .on("end", () => (res.statusCode === 200 ? resolve(s) : reject(new Error(`${p}: ${s}`))));
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(body));
    });
  await post("/v3/auth/user/add", { name, password });
  await post("/v3/auth/user/grant", { user: name, role: "root" });
  await post("/v3/auth/enable", {});
}
