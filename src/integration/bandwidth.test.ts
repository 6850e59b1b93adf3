/**
 * The bandwidth plugin chained after bridge + host-local, as a runtime drives it (cnitool, our libcni) and run
 * directly for what cnitool never sends. Every test has its own "host" namespace. Besides the kernel state
 * (tbf, ingress redirect, IFB), a TCP transfer between containers shows the limit really shapes traffic; the
 * differential test compares with Go's 1.1.1 plugin, qdisc by qdisc, and lets each CHECK and DEL the other's work.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { acceptedTbfBuffers, parsePsched, tbfParams } from "#net/link/tc.js";
import { ifbName } from "#plugins/meta/bandwidth/config.js";
import { findTool } from "#sys/tool-path.js";
import { Cleanup, GO_BIN, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { cniError, containerIdOf, Host, pluginDir, type Result, type RunResult } from "#testing/rig.js";

const skip = skipReason(true);
if (skip) console.log(`# skipping bandwidth integration tests: ${skip}`);

const BANDWIDTH = path.join(OUR_BIN, "bandwidth");
const GO_BANDWIDTH = path.join(GO_BIN, "bandwidth");
const clock = parsePsched("000003e8 00000040 000f4240 3b9aca00");
type Json = Record<string, unknown>;

/** Whether our plugin is the standalone build with netlink on, whose traffic control goes over netlink (tbf buffers exactly as Go's). */
const overNetlink = (): boolean => realpathSync(BANDWIDTH).endsWith("/tscni") && process.env["TSCNI_NETLINK"] !== "0";

describe("bandwidth plugin", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let seq = 0;
  let goChain: string;

  before(() => {
    goChain = pluginDir(cleanup, { bridge: path.join(GO_BIN, "bridge"), "host-local": path.join(GO_BIN, "host-local") });
  });
  after(() => cleanup.run());

  /** A fresh host and a network [bridge, bandwidth] (capability `bandwidth` on, plus `keys`). */
  const setup = (keys: Json, opts: { cniPath?: string; cniVersion?: string; subnet?: string; bandwidth?: boolean } = {}) => {
    const n = ++seq;
    const host = new Host(cleanup, `tscni-wh-${tag}-${n}`, opts.cniPath ?? OUR_BIN);
    const bandwidthConf = { type: "bandwidth", capabilities: { bandwidth: true }, ...keys };
    const name = host.writeNetwork({
      cniVersion: opts.cniVersion ?? "1.0.0",
      name: `wn${tag}${n}`,
      plugins: [
        { type: "bridge", bridge: `tw${tag}${n}`, isGateway: true, ipam: host.hostLocal([opts.subnet ?? "10.241.0.0/24"]) },
        ...(opts.bandwidth === false ? [] : [bandwidthConf]),
      ],
    });
    return { host, name, bandwidthConf, n };
  };

  const tcJson = (host: Host, args: string[]): Json[] => JSON.parse(host.ns.exec("tc", ["-json", ...args]) || "[]") as Json[];
  const qdiscs = (host: Host, dev: string) => tcJson(host, ["-raw", "qdisc", "show", "dev", dev]);
  const rootTbf = (host: Host, dev: string) =>
    qdiscs(host, dev).find((q) => q["root"] === true && q["kind"] === "tbf")?.["options"] as Json | undefined;
  const linkJson = (host: Host, dev: string): Json | undefined => {
    const r = host.ns.exec("sh", ["-c", `ip -json -d link show dev ${dev} 2>/dev/null || echo '[]'`]);
    return (JSON.parse(r) as Json[])[0];
  };
  const hostVeth = (r: Result) => r.interfaces![1]!.name;

  /** Runs a bandwidth binary directly in `host`. */
  const runBandwidth = (host: Host, command: string, conf: Json, env: Record<string, string>, binary = BANDWIDTH): Promise<RunResult> =>
    host.ns.run(binary, [], {
      env: { ...process.env, CNI_COMMAND: command, CNI_PATH: OUR_BIN, CNI_IFNAME: "eth0", CNI_ARGS: "", ...env },
      input: JSON.stringify(conf),
    });

  /** The tbf numbers of a limit as `tc -raw -json` shows them. */
  const expectTbf = (rateBits: number, burstBits: number) => {
    const p = tbfParams(rateBits, burstBits, clock);
    return { rate: p.rate, limit: p.limit, buffer: p.buffer };
  };
  const tbfOf = (o: Json | undefined) => o && { rate: o["rate"], limit: o["limit"], buffer: parseInt(String(o["burst_raw"]), 16) };
  /**
   * The tbf of `dev` is the one Go makes for a limit: the same rate and limit, and the same buffer, or with the
   * Node build (tc instead of netlink) the nearest one tc can make.
   */
  const assertTbf = (host: Host, dev: string, rateBits: number, burstBits: number) => {
    const have = tbfOf(rootTbf(host, dev));
    const want = expectTbf(rateBits, burstBits);
    if (overNetlink()) return assert.deepEqual(have, want);
    assert.deepEqual([have?.rate, have?.limit], [want.rate, want.limit]);
    assert.ok(acceptedTbfBuffers(tbfParams(rateBits, burstBits, clock), clock).includes(have!.buffer), `buffer ${have!.buffer}, Go's ${want.buffer}`);
  };

  test("ADD, CHECK, DEL, DEL again, DEL without a namespace: ingress and egress limits", async () => {
    const limits = { ingressRate: 1_000_000, ingressBurst: 80_000, egressRate: 2_000_000, egressBurst: 160_000 };
    const { host, name } = setup(limits);
    const ctr = host.container(`tscni-wc-${tag}-a`);
    const id = containerIdOf(ctr);
    const r = await host.add(name, ctr);
    const veth = hostVeth(r);
    const ifb = ifbName(name, id);

    // The IFB is appended to bridge's result, with its MAC.
    assert.equal(r.interfaces!.length, 4);
    assert.equal(r.interfaces![3]!.name, ifb);
    const ifbLink = linkJson(host, ifb)!;
    assert.equal(r.interfaces![3]!.mac, ifbLink["address"]);
    assert.equal((ifbLink["linkinfo"] as Json)["info_kind"], "ifb");
    assert.equal(ifbLink["mtu"], linkJson(host, veth)!["mtu"]);
    assert.ok((ifbLink["flags"] as string[]).includes("UP"));
    assert.equal(ifbLink["txqlen"] ?? 0, 0, "IFB transmit queue length 0, as Go's");
    assert.equal(ifbLink["ifalias"], `cni:bandwidth:${name}/${id}`);

    // Ingress: tbf on the host veth. Egress: ingress qdisc + redirect to the IFB, tbf on the IFB.
    assertTbf(host, veth, 1_000_000, 80_000);
    assertTbf(host, ifb, 2_000_000, 160_000);
    assert.equal(qdiscs(host, veth).find((q) => q["kind"] === "ingress")?.["handle"], "ffff:");
    const filter = tcJson(host, ["filter", "show", "dev", veth, "ingress"]).find((f) => (f["options"] as Json | undefined)?.["actions"]);
    assert.equal(filter?.["protocol"], "all");
    assert.equal(filter?.["pref"], 1);
    const action = ((filter!["options"] as Json)["actions"] as Json[])[0]!;
    assert.deepEqual([action["kind"], action["mirred_action"], action["direction"], action["to_dev"]], ["mirred", "redirect", "egress", ifb]);

    await host.must("check", name, ctr);
    // CHECK notices a changed qdisc and a missing redirect.
    host.ns.exec("tc", ["qdisc", "replace", "dev", ifb, "root", "handle", "1:", "tbf", "rate", "300000bps", "burst", "20000", "limit", "30000"]);
    const bad = await host.cnitool("check", name, ctr);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, new RegExp(`egress limit: the rate on ${ifb} is 300000 bytes/s, expected 250000`));
    host.ns.exec("tc", ["qdisc", "del", "dev", veth, "ingress"]);
    assert.match((await host.cnitool("check", name, ctr)).stderr, /is not redirected to/);

    await host.must("del", name, ctr);
    assert.equal(linkJson(host, ifb), undefined, "IFB deleted");
    await host.must("del", name, ctr);

    // DEL without a namespace (or prevResult) removes the IFB all the same.
    await host.add(name, ctr);
    assert.ok(linkJson(host, ifb));
    const noNs = await runBandwidth(
      host,
      "DEL",
      { cniVersion: "1.0.0", name, type: "bandwidth", egressRate: 1 },
      { CNI_CONTAINERID: id, CNI_NETNS: "" },
    );
    assert.equal(noNs.code, 0, noNs.stdout);
    assert.equal(linkJson(host, ifb), undefined);
    await host.must("del", name, ctr);
  });

  test("over netlink ADD and CHECK run no tc (a tc first in PATH records each run); the tc fallback runs it", async () => {
    const { host, name } = setup({}, { subnet: "10.248.0.0/24", bandwidth: false });
    const ctr = host.container(`tscni-wc-${tag}-notc`);
    const prev = await host.add(name, ctr);
    const shim = cleanup.dir("tscni-tc-shim-");
    const calls = path.join(shim, "calls");
    writeFileSync(path.join(shim, "tc"), `#!/bin/sh\necho "$*" >> ${calls}\nexec ${findTool("tc")} "$@"\n`, { mode: 0o755 });
    // Exec'd, not served by a resident server: the server would not see this PATH.
    const env = { CNI_CONTAINERID: containerIdOf(ctr), CNI_NETNS: ctr.path, PATH: `${shim}:${process.env["PATH"]}`, TSCNI_RESIDENT: "exec" };
    const conf = {
      cniVersion: "1.0.0",
      name,
      type: "bandwidth",
      ingressRate: 1_000_000,
      ingressBurst: 80_000,
      egressRate: 2_000_000,
      egressBurst: 160_000,
    };
    const add = await runBandwidth(host, "ADD", { ...conf, prevResult: prev }, env);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const check = await runBandwidth(host, "CHECK", { ...conf, prevResult: JSON.parse(add.stdout) as Result }, env);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.equal((await runBandwidth(host, "DEL", conf, env)).code, 0);
    const ran = existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n") : [];
    if (overNetlink()) assert.deepEqual(ran, [], "no tc process over netlink");
    else assert.ok(ran.length >= 4, `the tc fallback runs tc: ${ran.join("; ")}`);
    await host.must("del", name, ctr);
  });

  test("limits from the runtime (capability), no limits passes the prevResult through, 0.3.0 config", async () => {
    const { host, name } = setup({}, { cniVersion: "0.3.0", subnet: "10.242.0.0/24" });
    const limited = host.container(`tscni-wc-${tag}-b`);
    const r = await host.add(name, limited, { CAP_ARGS: JSON.stringify({ bandwidth: { ingressRate: 3_000_000, ingressBurst: 120_000 } }) });
    assert.equal(r.cniVersion, "0.3.0");
    assertTbf(host, hostVeth(r), 3_000_000, 120_000);
    assert.equal(linkJson(host, ifbName(name, containerIdOf(limited))), undefined, "no IFB without an egress limit");
    assert.equal(r.interfaces!.length, 3);

    const free = host.container(`tscni-wc-${tag}-c`);
    const plain = await host.add(name, free);
    assert.equal(rootTbf(host, hostVeth(plain)), undefined);
    await host.must("del", name, limited);
    await host.must("del", name, free);
  });

  test("a limit measurably shapes TCP traffic between containers", { timeout: 120_000 }, async (t) => {
    const { host, name } = setup({}, { subnet: "10.243.0.0/24" });
    const rate = 4_000_000; // bits/s = 500 kB/s
    const limit = { rate, burst: 200_000 };
    const ctr = (x: string) => host.container(`tscni-wc-${tag}-${x}`);
    const [src, dst, free, free2] = [ctr("src"), ctr("dst"), ctr("free"), ctr("free2")];
    const cap = (b: Json) => ({ CAP_ARGS: JSON.stringify({ bandwidth: b }) });
    const ipOf = (r: Result) => r.ips![0]!.address.split("/")[0]!;
    await host.add(name, src, cap({ egressRate: limit.rate, egressBurst: limit.burst }));
    const dstIP = ipOf(await host.add(name, dst, cap({ ingressRate: limit.rate, ingressBurst: limit.burst })));
    const freeIP = ipOf(await host.add(name, free));
    await host.add(name, free2);

    const bytes = 1_500_000;
    const baseline = await transfer(free2, free, freeIP, bytes);
    const intoLimited = await transfer(free, dst, dstIP, bytes);
    const outOfLimited = await transfer(src, free, freeIP, bytes);
    const rateBytes = rate / 8;
    t.diagnostic(
      `limit ${rateBytes} B/s; into the limited container ${Math.round(intoLimited.rate)} B/s, out of it ${Math.round(outOfLimited.rate)} B/s; unlimited ${Math.round(baseline.rate)} B/s`,
    );
    for (const [what, m] of [
      ["ingress", intoLimited],
      ["egress", outOfLimited],
    ] as const) {
      assert.ok(m.bytes === bytes, `${what}: all bytes arrived`);
      assert.ok(m.rate > 0.7 * rateBytes && m.rate < 1.15 * rateBytes, `${what}: ${Math.round(m.rate)} B/s, limit ${rateBytes} B/s`);
    }
    assert.ok(baseline.rate > 5 * rateBytes, `unlimited: ${Math.round(baseline.rate)} B/s`);
    for (const c of [src, dst, free, free2]) await host.must("del", name, c);
  });

  test("bad configs: code 7 and nothing applied", async () => {
    const { host, name } = setup({}, { subnet: "10.244.0.0/24", bandwidth: false });
    const ctr = host.container(`tscni-wc-${tag}-bad`);
    const prev = await host.add(name, ctr);
    const id = containerIdOf(ctr);
    const veth = hostVeth(prev);
    const before = JSON.stringify(qdiscs(host, veth));
    const base = { cniVersion: "1.0.0", name, type: "bandwidth", prevResult: prev };
    const cases: Array<[Json, RegExp]> = [
      [{ ingressRate: 1_000_000 }, /"ingressRate": 1000000 \(if a rate is set, "ingressBurst" must be set too\)/],
      [
        { ingressRate: 1_000_000, ingressBurst: 80_000, egressBurst: 80_000 },
        /"egressBurst": 80000 \(if a burst is set, "egressRate" must be set too\)/,
      ],
      [{ runtimeConfig: { bandwidth: { egressRate: 1_000_000 } } }, /"runtimeConfig\.bandwidth\.egressRate": 1000000/],
      [{ egressRate: -8, egressBurst: 80_000 }, /"egressRate": -8/],
      [{ egressRate: 8_000, egressBurst: 2 ** 36 }, /"egressBurst": 68719476736 .*4 GB/],
      [{ egressRate: 8_000, egressBurst: 8_000, prevResult: undefined }, /must be called as chained plugin/],
    ];
    for (const [keys, msg] of cases) {
      const r = await runBandwidth(host, "ADD", { ...base, ...keys }, { CNI_CONTAINERID: id, CNI_NETNS: ctr.path });
      assert.equal(r.code, 1, JSON.stringify(keys));
      const err = cniError(r);
      assert.equal(err.code, 7, JSON.stringify(err));
      assert.match(err.msg, msg);
      assert.equal(JSON.stringify(qdiscs(host, veth)), before, "host veth qdiscs untouched");
      assert.equal(linkJson(host, ifbName(name, id)), undefined, "no IFB");
    }

    // A kernel failure half-way (the IFB name is taken by another device) undoes the ingress tbf.
    host.ns.exec("ip", ["link", "add", ifbName(name, id), "type", "veth", "peer", "name", `tx${tag}`]);
    const r = await runBandwidth(
      host,
      "ADD",
      { ...base, ingressRate: 8_000_000, ingressBurst: 80_000, egressRate: 8_000_000, egressBurst: 80_000 },
      { CNI_CONTAINERID: id, CNI_NETNS: ctr.path },
    );
    assert.equal(r.code, 1);
    assert.match(cniError(r).msg, /File exists|exists/);
    assert.equal(JSON.stringify(qdiscs(host, veth)), before, "ingress tbf removed again");
    // DEL leaves a same-named link that is not an IFB alone.
    assert.equal((await runBandwidth(host, "DEL", base, { CNI_CONTAINERID: id, CNI_NETNS: ctr.path })).code, 0);
    assert.ok(linkJson(host, ifbName(name, id)));
    await host.must("del", name, ctr);
  });

  test("GC removes the IFBs of attachments that are no longer valid (and only this network's, only ours)", async () => {
    const { host, name } = setup({}, { cniVersion: "1.1.0", subnet: "10.245.0.0/24" });
    const egress = { CAP_ARGS: JSON.stringify({ bandwidth: { egressRate: 8_000_000, egressBurst: 80_000 } }) };
    const keep = host.container(`tscni-wc-${tag}-keep`);
    const drop = host.container(`tscni-wc-${tag}-drop`);
    await host.add(name, keep, egress);
    await host.add(name, drop, egress);
    const [keepIfb, dropIfb] = [ifbName(name, containerIdOf(keep)), ifbName(name, containerIdOf(drop))];
    const goStyle = ifbName(name, "made-by-go"); // no alias: GC cannot know whose it is
    const otherNet = ifbName("othernet", "x");
    host.ns.exec("ip", ["link", "add", goStyle, "type", "ifb"]);
    host.ns.exec("ip", ["link", "add", otherNet, "type", "ifb"]);
    host.ns.exec("ip", ["link", "set", "dev", otherNet, "alias", "cni:bandwidth:othernet/x"]);

    const gc = await runBandwidth(
      host,
      "GC",
      {
        cniVersion: "1.1.0",
        name,
        type: "bandwidth",
        "cni.dev/valid-attachments": [{ containerID: containerIdOf(keep), ifname: "eth0" }],
      },
      {},
    );
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    assert.ok(linkJson(host, keepIfb), "valid attachment kept");
    assert.equal(linkJson(host, dropIfb), undefined, "stale attachment's IFB removed");
    assert.ok(linkJson(host, goStyle), "IFB without our alias kept");
    assert.ok(linkJson(host, otherNet), "other network's IFB kept");
    await host.must("del", name, keep);
    await host.must("del", name, drop);
  });

  test("differential against Go 1.1.1: same qdiscs, filter and IFB; each CHECKs and DELs the other's", async () => {
    const run = async (binary: string, limits: Json, subnet: string) => {
      const s = setup({}, { cniPath: goChain, subnet, bandwidth: false });
      const ctr = s.host.container(`tscni-wc-${tag}-d${s.n}`);
      const prev = await s.host.add(s.name, ctr);
      const env = { CNI_CONTAINERID: containerIdOf(ctr), CNI_NETNS: ctr.path };
      const conf = { cniVersion: "1.0.0", name: s.name, type: "bandwidth", ...limits };
      const add = await runBandwidth(s.host, "ADD", { ...conf, prevResult: prev }, env, binary);
      assert.equal(add.code, 0, add.stdout);
      const result = JSON.parse(add.stdout) as Result;
      const veth = hostVeth(prev);
      const ifb = ifbName(s.name, env.CNI_CONTAINERID);
      return { ...s, ctr, env, conf, result, veth, ifb };
    };
    /** What the kernel holds, without names, indexes and our alias; only the first (effective) redirect action. */
    const state = (x: Awaited<ReturnType<typeof run>>) => {
      const strip = (q: Json) => ({ ...q, dev: undefined });
      const link = linkJson(x.host, x.ifb)!;
      const filters = tcJson(x.host, ["filter", "show", "dev", x.veth, "ingress"]).map((f) => {
        const o = f["options"] as Json | undefined;
        const actions = o?.["actions"] as Json[] | undefined;
        const first = actions?.[0] && {
          ...actions[0],
          to_dev: actions[0]["to_dev"] === x.ifb ? "IFB" : actions[0]["to_dev"],
          index: undefined,
          ref: undefined,
          bind: undefined,
        };
        return { ...f, options: o && { ...o, actions: first && [first] } };
      });
      return {
        veth: qdiscs(x.host, x.veth).map(strip),
        ifb: qdiscs(x.host, x.ifb).map(strip),
        filters,
        ifbLink: {
          mtu: link["mtu"],
          flags: link["flags"],
          txqlen: link["txqlen"],
          kind: (link["linkinfo"] as Json)["info_kind"],
          operstate: link["operstate"],
        },
        resultIfb: x.result.interfaces!.map((i) => (i.name === x.ifb ? "IFB" : i.sandbox ? i.name : "*")),
      };
    };
    const check = (x: Awaited<ReturnType<typeof run>>, binary: string) =>
      runBandwidth(x.host, "CHECK", { ...x.conf, prevResult: x.result }, x.env, binary);
    const del = (x: Awaited<ReturnType<typeof run>>, binary: string) => runBandwidth(x.host, "DEL", x.conf, x.env, binary);

    const even = { ingressRate: 1_000_000, ingressBurst: 80_000, egressRate: 2_000_000, egressBurst: 160_000 };
    const go = await run(GO_BANDWIDTH, even, "10.246.0.0/24");
    const ours = await run(BANDWIDTH, even, "10.246.0.0/24");
    assert.deepEqual(state(ours), state(go));
    // Observed Go output: `tbf rate 1Mbit burst 10000b lat 25ms`.
    assert.deepEqual(tbfOf(rootTbf(go.host, go.veth)), { rate: 125000, limit: 13125, buffer: 1_250_000 });
    for (const [x, other] of [
      [go, BANDWIDTH],
      [ours, GO_BANDWIDTH],
    ] as const) {
      const r = await check(x, other);
      assert.equal(r.code, 0, `${other} CHECK: ${r.stdout}${r.stderr}`);
    }

    // Values whose buffer tc cannot express: Go's exact ticks through netlink (standalone build), else the nearest.
    const odd = { ingressRate: 125001 * 8, ingressBurst: 10001 * 8, egressRate: 10_000_000, egressBurst: 2 ** 31 - 1 };
    const goOdd = await run(GO_BANDWIDTH, odd, "10.247.0.0/24");
    const oursOdd = await run(BANDWIDTH, odd, "10.247.0.0/24");
    assert.equal((await check(goOdd, BANDWIDTH)).code, 0, "our CHECK accepts Go's qdiscs");
    assert.equal((await check(oursOdd, BANDWIDTH)).code, 0, "our CHECK accepts our qdiscs");
    if (overNetlink()) {
      assert.deepEqual(state(oursOdd), state(goOdd));
      assert.equal((await check(oursOdd, GO_BANDWIDTH)).code, 0, "Go's CHECK accepts ours");
    } else {
      const [g, o] = [tbfOf(rootTbf(goOdd.host, goOdd.veth))!, tbfOf(rootTbf(oursOdd.host, oursOdd.veth))!];
      assert.deepEqual([o.rate, o.limit], [g.rate, g.limit]);
      assert.ok(Math.abs(o.buffer - g.buffer) <= 125, `tc fallback buffer ${o.buffer} near Go's ${g.buffer}`);
    }
    // Each DELs the other's.
    for (const [x, other] of [
      [go, BANDWIDTH],
      [ours, GO_BANDWIDTH],
      [goOdd, BANDWIDTH],
      [oursOdd, GO_BANDWIDTH],
    ] as const) {
      assert.equal((await del(x, other)).code, 0);
      assert.equal(linkJson(x.host, x.ifb), undefined);
      await x.host.must("del", x.name, x.ctr);
    }
  });
});

/** Sends `bytes` over TCP from `from` to `to` (listening on `toIP`); the receiver's count and rate (bytes/s). */
async function transfer(from: Netns, to: Netns, toIP: string, bytes: number): Promise<{ bytes: number; rate: number }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const server = spawn(
    "ip",
    [
      "netns",
      "exec",
      to.name,
      process.execPath,
      "-e",
      `
    const net = require("net");
    const srv = net.createServer((s) => {
      let n = 0, t0 = 0n;
      s.on("data", (d) => { if (!t0) t0 = process.hrtime.bigint(); n += d.length; });
      s.on("end", () => { console.log(JSON.stringify({ bytes: n, seconds: Number(process.hrtime.bigint() - t0) / 1e9 })); srv.close(); s.end(); });
    });
    srv.listen(${port}, "${toIP}", () => console.log("ready"));
    setTimeout(() => process.exit(2), 60000).unref();
  `,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines: string[] = [];
  let waiting: (() => void) | undefined;
  server.stdout.setEncoding("utf8").on("data", (d: string) => {
    lines.push(...d.split("\n").filter(Boolean));
    waiting?.();
  });
  const nextLine = async (): Promise<string> => {
    const deadline = Date.now() + 60_000;
    while (lines.length === 0) {
      if (Date.now() > deadline || server.exitCode !== null) throw new Error("the test TCP server did not answer");
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 200);
      });
    }
    return lines.shift()!;
  };
  try {
    assert.equal(await nextLine(), "ready");
    const client = spawn(
      "ip",
      [
        "netns",
        "exec",
        from.name,
        process.execPath,
        "-e",
        `
      const net = require("net");
      const s = net.connect(${port}, "${toIP}", () => { s.end(Buffer.alloc(${bytes}, 120)); });
      s.on("error", (e) => { console.error(e.message); process.exit(1); });
      s.resume();
      setTimeout(() => process.exit(2), 60000).unref();
    `,
      ],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    const clientDone = new Promise<number | null>((resolve) => client.on("exit", resolve));
    const m = JSON.parse(await nextLine()) as { bytes: number; seconds: number };
    await clientDone;
    return { bytes: m.bytes, rate: m.bytes / m.seconds };
  } finally {
    server.kill();
  }
}
