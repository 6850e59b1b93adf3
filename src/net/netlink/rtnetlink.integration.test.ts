/**
 * The netlink path against the iproute2 path, in namespaces the test makes: the same sequence of steps
 * (src/testing/netlink-driver.ts, run under Bun) once over netlink and once with `ip`, in two twin "host"
 * namespaces each with a container namespace; what the steps report and the state they leave (links,
 * addresses with their broadcast, routes of every table) must match.
 */

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { ROOT, skipReason } from "#testing/harness.js";

const BUN = path.join(ROOT, "node_modules/.bin/bun");
const DRIVER = path.join(ROOT, "dist-test/testing/netlink-driver.js");
const tag = Math.random().toString(16).slice(2, 6);

const skip = skipReason(false, existsSync(BUN) ? undefined : "Bun is not installed (node_modules/.bin/bun)");

type Json = Record<string, unknown>;
/** Random or per-run names and what they read as once normalized. */
type Names = Record<string, string>;
const created: string[] = [];
after(() => {
  for (const n of created) spawnSync("ip", ["netns", "delete", n]);
});

function netns(name: string): string {
  execFileSync("ip", ["netns", "add", name]);
  created.push(name);
  execFileSync("ip", ["-n", name, "link", "set", "lo", "up"]);
  return name;
}

/** Runs the driver in `hostNs` with the container namespace `ctrNs`; its parsed output. */
function drive(hostNs: string, ctrNs: string, netlink: "0" | "1"): { steps: Json[]; ipRuns: number; netnsKept: boolean } {
  const r = spawnSync("ip", ["netns", "exec", hostNs, BUN, DRIVER, `/run/netns/${ctrNs}`], {
    env: { ...process.env, TSCNI_NETLINK: netlink },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { steps: Json[]; ipRuns: number; netnsKept: boolean };
}

const ipJson = (ns: string, args: string[]): Json[] =>
  JSON.parse(execFileSync("ip", ["-n", ns, "-json", ...args], { encoding: "utf8" }) || "[]") as Json[];

/** What the kernel holds in a namespace, without what is random (host veth names, kernel-made MACs, link-local addresses). */
function state(ns: string, names: Names): Json {
  const links = ipJson(ns, ["-d", "link", "show"]).map((l) => {
    const info = (l["linkinfo"] ?? {}) as Json;
    const slave = (info["info_slave_data"] ?? {}) as Json;
    return {
      ifname: l["ifname"],
      flags: l["flags"],
      mtu: l["mtu"],
      master: l["master"],
      txqlen: l["txqlen"],
      address: l["address"],
      broadcast: l["broadcast"],
      ifalias: l["ifalias"],
      kind: info["info_kind"],
      hairpin: slave["hairpin"],
      isolated: slave["isolated"],
      promiscuity: l["promiscuity"],
      allmulti: l["allmulti"],
    };
  });
  const addrs = ipJson(ns, ["addr", "show"]).map((l) => ({
    ifname: l["ifname"],
    addrs: ((l["addr_info"] ?? []) as Json[])
      .filter((a) => !String(a["local"]).startsWith("fe80"))
      .map((a) => ({
        family: a["family"],
        local: a["local"],
        prefixlen: a["prefixlen"],
        broadcast: a["broadcast"],
        scope: a["scope"],
        label: a["label"],
      })),
  }));
  const routes = [...ipJson(ns, ["-4", "route", "show", "table", "all"]), ...ipJson(ns, ["-6", "route", "show", "table", "all"])].filter(
    (r) => !String(r["dst"]).startsWith("fe80"),
  );
  return normalize({ links, addrs, routes }, names) as Json;
}

/**
 * Replaces the random (`names`: the host veth's and the namespaces'; MACs not made by the driver, which are
 * 02:00:00:00:...) and drops operstate (timing).
 */
function normalize(v: unknown, names: Names): unknown {
  if (typeof v === "string") {
    if (/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(v) && !v.startsWith("02:00:00:00:") && v !== "00:00:00:00:00:00" && v !== "ff:ff:ff:ff:ff:ff")
      return "(mac)";
    return Object.entries(names).reduce((text, [name, placeholder]) => text.split(name).join(placeholder), v);
  }
  if (Array.isArray(v)) return v.map((x) => normalize(x, names));
  if (v && typeof v === "object") {
    // Kind-specific data: the netlink path reads only a vrf's table (all that is used); ip shows everything.
    const entries = Object.entries(v)
      .filter(([k, x]) => k !== "operstate" && !(k === "info" && (x as Json)["table"] === undefined))
      .map(([k, x]) => (k === "info" ? [k, { table: (x as Json)["table"] }] : [k, x]));
    return Object.fromEntries(entries.map(([k, x]) => [k, normalize(x, names)]));
  }
  return v;
}

describe("rtnetlink path vs iproute2 path", { skip }, () => {
  test("the same steps give the same results and leave the same state", () => {
    const viaNetlink = { host: netns(`tscni-nlh-${tag}`), ctr: netns(`tscni-nlc-${tag}`) };
    const viaIp = { host: netns(`tscni-iph-${tag}`), ctr: netns(`tscni-ipc-${tag}`) };
    const nl = drive(viaNetlink.host, viaNetlink.ctr, "1");
    const ipr = drive(viaIp.host, viaIp.ctr, "0");
    assert.equal(nl.netnsKept, true, "the driver's own thread is back in its namespace");
    assert.equal(nl.ipRuns, 0, "the netlink path runs no ip process");
    assert.ok(ipr.ipRuns > 10, `the iproute2 path runs ip (${ipr.ipRuns} processes)`);
    const vethOf = (out: { steps: Json[] }) => ((out.steps[2]!["value"] as Json)["host"] as Json)["name"] as string;
    const nlNames = { [vethOf(nl)]: "(veth)", [viaNetlink.host]: "(host)", [viaNetlink.ctr]: "(ctr)" };
    const ipNames = { [vethOf(ipr)]: "(veth)", [viaIp.host]: "(host)", [viaIp.ctr]: "(ctr)" };
    const nlSteps = normalize(nl.steps, nlNames) as Json[];
    const ipSteps = normalize(ipr.steps, ipNames) as Json[];
    assert.equal(nlSteps.length, ipSteps.length);
    for (let i = 0; i < ipSteps.length; i++) assert.deepEqual(nlSteps[i], ipSteps[i], `step ${String(ipSteps[i]!["step"])}`);
    assert.deepEqual(state(viaNetlink.host, nlNames), state(viaIp.host, ipNames), "host namespace");
    assert.deepEqual(state(viaNetlink.ctr, nlNames), state(viaIp.ctr, ipNames), "container namespace");
  });

  test("a socket opened for another namespace works there and nowhere else", () => {
    const ctr = netns(`tscni-nlx-${tag}`);
    const host = netns(`tscni-nly-${tag}`);
    const r = spawnSync(
      "ip",
      [
        "netns",
        "exec",
        host,
        BUN,
        "-e",
        `
      const { NetNS } = await import(${JSON.stringify(path.join(ROOT, "dist/net/netns.js"))});
      const { ip } = await import(${JSON.stringify(path.join(ROOT, "dist/net/link/links.js"))});
      const { toolSpawnsOf } = await import(${JSON.stringify(path.join(ROOT, "dist/sys/exec.js"))});
      const { readlinkSync } = await import("node:fs");
      const before = readlinkSync("/proc/thread-self/ns/net");
      const ns = await NetNS.open("/run/netns/${ctr}");
      await ip.batch(ns).addLink({ name: "only-here", kind: "bridge", up: true }).run("make a bridge");
      await ip.batch(NetNS.host).addLink({ name: "host-side", kind: "bridge" }).run("make a bridge");
      console.log(JSON.stringify({ same: before === readlinkSync("/proc/thread-self/ns/net"), ipRuns: toolSpawnsOf("ip") }));
    `,
      ],
      { encoding: "utf8", env: { ...process.env, TSCNI_NETLINK: "1" } },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { same: true, ipRuns: 0 });
    const names = (ns: string) =>
      ipJson(ns, ["link", "show"])
        .map((l) => l["ifname"])
        .sort();
    assert.deepEqual(names(ctr), ["lo", "only-here"]);
    assert.deepEqual(names(host), ["host-side", "lo"]);
  });
});
