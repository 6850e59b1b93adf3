/**
 * Results with null entries and DEL as spec PR #1156 says, through the shipped binaries in real namespaces:
 * - every main plugin this kernel can run: ADD, then CHECK with a prevResult holding null entries (`"ips": [null]`,
 *   `"interfaces": [null, {...}]`, `"routes": null`, `"dns": null`; what crashes Go's libcni conversions,
 *   containernetworking/cni PRs #1191 and #1192) answers success or one CNI error; DEL with such a prevResult,
 *   with an empty one (`{}`) and with none succeeds and releases the attachment (its links and addresses);
 * - every meta plugin: ADD, CHECK and DEL with such a prevResult answer success or one CNI error, DEL with
 *   an empty or missing prevResult succeeds;
 * - libcni (cnitool) with a cached result holding null entries: CHECK fails with a message or passes, DEL runs
 *   every plugin and the attachment is gone.
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { checkErrorOutput } from "#testing/bad-input.js";
import { Cleanup, type Netns, OUR_BIN, runTag, skipReason } from "#testing/harness.js";
import { linkKindMissing } from "#testing/kernel.js";
import { nullResults } from "#testing/null-results.js";
import { Host } from "#testing/rig.js";

const skip = skipReason();
const linksOf = (ns: Netns): string[] => (ns.ipJson(["link", "show"]) as Array<{ ifname: string }>).map((l) => l.ifname);

/** The null results a DEL and a CHECK get (a few of each kind; the unit tests go through all of them). */
const PREV_RESULTS = nullResults("1.0.0").filter((r) => !r.label.includes("0.2.0 shape"));

describe("results with null entries and DEL with empty prevResults (cni#1191, cni#1192, spec PR #1156)", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  let host: Host;
  before(() => {
    host = new Host(cleanup, `tscni-nr-${tag}`, OUR_BIN);
  });
  after(() => cleanup.run());

  const call = (plugin: string, command: string, conf: unknown, env: Record<string, string>) =>
    host.ns.run(path.join(OUR_BIN, plugin), [], {
      env: { ...process.env, CNI_COMMAND: command, CNI_PATH: OUR_BIN, CNI_IFNAME: "eth0", CNI_ARGS: "", ...env },
      input: JSON.stringify(conf),
      timeoutMs: 30_000,
    });
  /** A call that must end in success or one well-known CNI error document, no stack trace. */
  const successOrCniError = (what: string, r: { code: number; stdout: string; stderr: string }) => {
    if (r.code === 0) return;
    assert.equal(checkErrorOutput(r.stdout, r.stderr, r.code, true), undefined, `${what}: ${r.stdout}${r.stderr}`);
    assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at /, `${what}: a stack trace`);
  };
  const hostVeth = (name: string) =>
    host.ns.exec("sh", [
      "-c",
      `ip link show ${name} >/dev/null 2>&1 || (ip link add ${name} type veth peer name ${name}p && ip link set ${name} up)`,
    ]);

  test("main plugins: CHECK with null entries answers success or a CNI error; DEL with them, with {} and with none releases", async () => {
    hostVeth(`nk${tag}`);
    const confs: Array<Record<string, unknown>> = [
      { type: "bridge", bridge: `nb${tag}`, isGateway: true, ipMasq: true, ipam: host.hostLocal(["10.237.1.0/24"]) },
      { type: "ptp", ipMasq: true, ipam: host.hostLocal(["10.237.2.0/24"]) },
      { type: "macvlan", master: `nk${tag}`, ipam: host.hostLocal(["10.237.3.0/24"]) },
      { type: "tap", ipam: host.hostLocal(["10.237.4.0/24"]) },
      { type: "loopback" },
      ...(["ipvlan", "vlan", "dummy"] as const)
        .filter((k) => !linkKindMissing(k, tag))
        .map((k, i) => ({ type: k, master: `nk${tag}`, vlanId: 300, ipam: host.hostLocal([`10.237.${10 + i}.0/24`]) })),
    ];
    const variants: Array<{ label: string; prev?: unknown }> = [
      { label: "no prevResult" },
      { label: "prevResult {}", prev: {} },
      { label: "prevResult with only cniVersion", prev: { cniVersion: "1.0.0" } },
      ...PREV_RESULTS.map((r) => ({ label: `prevResult ${r.label}`, prev: r.result })),
    ];
    for (const base of confs) {
      const type = String(base["type"]);
      const conf: Record<string, unknown> = { cniVersion: "1.0.0", name: `n${type.slice(0, 3)}${tag}`, ...base };
      if (type === "vlan" || type === "dummy") delete conf["master"];
      if (type !== "vlan") delete conf["vlanId"];
      if (type === "vlan") conf["master"] = `nk${tag}`;
      for (const [i, v] of variants.entries()) {
        const ctr = host.container(`tscni-nr-${tag}-${type.slice(0, 4)}-${i}`);
        const env = { CNI_CONTAINERID: `nr-${i}`, CNI_NETNS: ctr.path };
        const add = await call(type, "ADD", conf, env);
        assert.equal(add.code, 0, `${type} ADD: ${add.stdout}${add.stderr}`);
        const withPrev = v.prev === undefined ? conf : { ...conf, prevResult: v.prev };
        if (v.prev !== undefined) successOrCniError(`${type} CHECK (${v.label})`, await call(type, "CHECK", withPrev, env));
        const del = await call(type, "DEL", withPrev, env);
        assert.equal(del.code, 0, `${type} DEL (${v.label}): ${del.stdout}${del.stderr}`);
        assert.deepEqual(linksOf(ctr), ["lo"], `${type} (${v.label}): the container's links after DEL`);
        assert.deepEqual(host.allocations(String(conf["name"])), [], `${type} (${v.label}): addresses left allocated`);
        ctr.delete();
      }
    }
  });

  test("meta plugins: ADD, CHECK and DEL with null entries answer success or a CNI error; DEL with {} or none succeeds", async () => {
    const metas: Array<Record<string, unknown>> = [
      { type: "portmap", runtimeConfig: { portMappings: [{ hostPort: 23180, containerPort: 80, protocol: "tcp" }] } },
      { type: "tuning", sysctl: { "net.ipv4.conf.eth0.arp_notify": "1" } },
      { type: "bandwidth", ingressRate: 800000, ingressBurst: 100000 },
      { type: "firewall" },
      { type: "sbr" },
    ];
    for (const base of metas) {
      const type = String(base["type"]);
      const conf = { cniVersion: "1.0.0", name: `nm${type.slice(0, 3)}${tag}`, ...base };
      const ctr = host.container(`tscni-nr-${tag}-m${type.slice(0, 4)}`);
      const env = { CNI_CONTAINERID: "nr-meta", CNI_NETNS: ctr.path };
      for (const r of PREV_RESULTS) {
        const withPrev = { ...conf, prevResult: r.result };
        for (const verb of ["ADD", "CHECK", "DEL"]) successOrCniError(`${type} ${verb} (${r.label})`, await call(type, verb, withPrev, env));
      }
      for (const prev of [undefined, {}]) {
        const del = await call(type, "DEL", prev === undefined ? conf : { ...conf, prevResult: prev }, env);
        assert.equal(del.code, 0, `${type} DEL (prevResult ${JSON.stringify(prev)}): ${del.stdout}${del.stderr}`);
      }
    }
  });

  test("libcni: a cached result with null entries — CHECK fails with a message or passes, DEL runs every plugin", async () => {
    const net = host.writeNetwork({
      cniVersion: "1.0.0",
      name: `nc${tag}`,
      plugins: [
        { type: "bridge", bridge: `nc${tag}`, isGateway: true, ipam: host.hostLocal(["10.237.20.0/24"]) },
        { type: "portmap", capabilities: { portMappings: true } },
        { type: "tuning" },
      ],
    });
    for (const [i, r] of PREV_RESULTS.entries()) {
      const ctr = host.container(`tscni-nr-${tag}-c${i}`);
      await host.add(net, ctr);
      const cached = path.join(host.cacheDir, "results");
      const entry = readdirSync(cached).find((f) => f.startsWith(`${net}-`))!;
      const doc = JSON.parse(readFileSync(path.join(cached, entry), "utf8")) as Record<string, unknown>;
      writeFileSync(path.join(cached, entry), JSON.stringify({ ...doc, result: r.result }));
      const check = await host.cnitool("check", net, ctr);
      // The cache named when it does not decode; else a plugin's CHECK judging what it was given.
      if (check.code !== 0) assert.match(check.stderr + check.stdout, /cached result|prevResult/, `CHECK (${r.label})`);
      assert.doesNotMatch(check.stderr + check.stdout, /\n\s+at /, `CHECK (${r.label}): a stack trace`);
      await host.must("del", net, ctr);
      assert.deepEqual(linksOf(ctr), ["lo"], `${r.label}: the container's links`);
      assert.deepEqual(host.allocations(net), [], `${r.label}: addresses left allocated`);
      assert.deepEqual(
        readdirSync(cached).filter((f) => f.startsWith(`${net}-`)),
        [],
        `${r.label}: the cache entry`,
      );
      ctr.delete();
    }
  });
});
