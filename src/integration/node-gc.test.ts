/**
 * Node GC against a real runtime: a private containerd (its CRI plugin running our plugins, its result cache a
 * directory of this test's, bind-mounted as its /var/lib/cni) runs two pod sandboxes; one is removed while its DEL
 * fails — the last plugin of the chain, the noop test plugin, fails DEL with a "not found" message, which
 * containerd's go-cni ignores, so containerd removes the sandbox and nothing of its network is cleaned: the cache
 * entry, the address, the masquerade and firewall rules, tuning's backup all leak. Also an address leaked without any
 * cache entry (a host-local file for a container nobody knows). Then `cnitool gc --cri-endpoint` is run as an operator
 * would, in the host's namespace: against an endpoint nobody listens on it fails and changes nothing; `--dry-run`
 * names the leaked attachment and changes nothing; a real run removes the leaked attachment with its cached config,
 * and the GC verb (the network speaks 1.1.0 to us through cniVersions, 1.0.0 to containerd's libcni) releases the
 * address without a cache entry, while the running sandbox keeps everything; a second run finds nothing to remove.
 * Skips when containerd, runc or a static-linking gcc is missing.
 */

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { buildPauseImage, containerdSkipReason, linkPluginDir, PrivateContainerd } from "#testing/containerd.js";
import type { PodSandboxConfig } from "#testing/cri-client.js";
import { Cleanup, CNITOOL, type Netns, OUR_BIN, runCommand, runTag, TEST_BIN } from "#testing/harness.js";
import { readCommandLog, stdinOf, writeDebug } from "#testing/plugins/noop-debug.js";
import { RESIDENT_PASS, startResidentHost } from "#testing/resident-host.js";

const skip = containerdSkipReason();
if (skip) console.log(`# skipping node GC tests: ${skip}`);

const SUBNET_PREFIX = "10.238.0.";
const GATEWAY = "10.238.0.1";
const PAUSE_IMAGE_REPO = "localhost/tscni-pause";
/** The container ID of an address leaked without a cache entry (host-local's file names it). */
const HAND_LEAKED = "leaked-without-a-cache-entry";

describe("cnitool gc --cri-endpoint against containerd", { skip }, () => {
  const cleanup = new Cleanup();
  const tag = runTag();
  const network = `tcgc${tag}`;
  const bridge = `tcgc${tag}`;
  let host: Netns;
  let base: string;
  let cacheDir: string;
  let confDir: string;
  let binDir: string;
  let ipamDir: string;
  let tuningDir: string;
  let noopDebug: string;
  let noopLog: string;
  let ctrd: PrivateContainerd | undefined;
  const ids = { kept: "", leaked: "" };
  const ips = { kept: "", leaked: "" };

  const cri = () => {
    if (!ctrd) throw new Error("containerd did not start");
    return ctrd.cri;
  };
  const sandboxConfig = (name: string): PodSandboxConfig => ({
    metadata: { name, uid: `uid-${tag}-${name}`, namespace: `tscni-gc-${tag}`, attempt: 0 },
    hostname: name,
    labels: { "tscni-test": tag },
    linux: { cgroupParent: ctrd?.cgroupParent ?? "" },
  });

  /** cnitool gc as an operator runs it on the node (in the host's network namespace). */
  const gc = (...flags: string[]) =>
    host.run(CNITOOL, ["gc", "--cri-endpoint", `unix://${ctrd!.socket}`, "--cache-dir", cacheDir, ...flags], {
      env: { ...process.env, NETCONFPATH: confDir, CNI_PATH: binDir },
    });

  const cached = () => (existsSync(path.join(cacheDir, "results")) ? readdirSync(path.join(cacheDir, "results")).sort() : []);
  const allocations = () => {
    const store = path.join(ipamDir, network);
    return existsSync(store)
      ? readdirSync(store)
          .filter((f) => f.startsWith(SUBNET_PREFIX))
          .sort()
      : [];
  };
  const rulesNaming = (ip: string) =>
    host
      .exec("iptables-save", [])
      .split("\n")
      .filter((l) => new RegExp(`${ip.replaceAll(".", "\\.")}(/32|:|\\s|$)`).test(l));
  /** Everything of this node GC could change: cache, plugin state, rules, links, and the plugins' calls. */
  const nodeState = () => ({
    cache: Object.fromEntries(cached().map((f) => [f, readFileSync(path.join(cacheDir, "results", f), "utf8")])),
    allocations: allocations(),
    rules: host
      .exec("iptables-save", [])
      .split("\n")
      .filter((l) => !l.startsWith("#"))
      .map((l) => l.replace(/\[\d+:\d+\]/, "")),
    tuning: readdirSync(tuningDir).sort(),
    links: (host.ipJson(["link", "show"]) as Array<{ ifname: string }>).map((l) => l.ifname).sort(),
    pluginCalls: readCommandLog(noopLog).length,
  });

  before(async () => {
    host = cleanup.netns(`tscni-gc-${tag}`);
    base = cleanup.dir("tscni-nodegc-");
    cacheDir = path.join(base, "var-lib-cni");
    confDir = path.join(base, "net.d");
    ipamDir = path.join(base, "ipam");
    tuningDir = path.join(base, "tuning");
    for (const d of [cacheDir, confDir, tuningDir]) mkdirSync(d);
    noopDebug = path.join(base, "noop-debug.json");
    noopLog = path.join(base, "noop-calls.json");
    writeDebug(noopDebug, { ReportResult: "PASSTHROUGH" });
    const noop = path.join(base, "noop-serialised");
    writeFileSync(
      noop,
      `#!/bin/sh\nexec flock ${JSON.stringify(path.join(base, "noop.lock"))} ${JSON.stringify(path.join(TEST_BIN, "noop"))} "$@"\n`,
    );
    chmodSync(noop, 0o755);
    binDir = linkPluginDir(path.join(base, "cni-bin"), OUR_BIN, { noop });

    writeFileSync(
      path.join(confDir, `10-${network}.conflist`),
      JSON.stringify(
        {
          // containerd 1.6's libcni speaks up to 1.0.0 and ignores cniVersions; ours picks 1.1.0, which has GC.
          cniVersion: "1.0.0",
          cniVersions: ["1.0.0", "1.1.0"],
          name: network,
          plugins: [
            {
              type: "bridge",
              bridge,
              isGateway: true,
              ipMasq: true,
              ipam: { type: "host-local", dataDir: ipamDir, routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet: `${SUBNET_PREFIX}0/24` }]] },
            },
            { type: "portmap", capabilities: { portMappings: true }, dataDir: path.join(base, "portmap") },
            { type: "firewall", dataDir: path.join(base, "firewall") },
            { type: "tuning", mtu: 1400, dataDir: tuningDir },
            // Last, so its DEL runs first: when it fails, nothing else of the attachment is cleaned.
            { type: "noop", debugFile: noopDebug, commandLog: noopLog },
          ],
        },
        null,
        2,
      ),
    );

    const sandboxImage = `${PAUSE_IMAGE_REPO}-${tag}:v1`;
    const imageArchive = buildPauseImage(base, sandboxImage);
    const ctrdBase = path.join(base, "containerd");
    mkdirSync(ctrdBase);
    let pinned: { mountNs: string; env: Record<string, string> } | undefined;
    if (RESIDENT_PASS) {
      const resident = startResidentHost(host.name, cleanup.dir("tscni-rs-"), path.join(OUR_BIN, "cnitool"));
      cleanup.add(() => resident.stop());
      host.mountNs = resident.mountNs;
      host.residentSocket = resident.socket;
      pinned = { mountNs: resident.mountNs, env: { TSCNI_RESIDENT_SOCKET: resident.socket } };
    }
    ctrd = await PrivateContainerd.start({
      base: ctrdBase,
      cniBinDir: binDir,
      cniConfDir: confDir,
      sandboxImage,
      imageArchive,
      hostNetns: host.path,
      cniCacheDir: cacheDir,
      ...(pinned ? { pinned } : {}),
    });
    const c = ctrd;
    cleanup.add(() => c.kill());
  });

  after(async () => {
    await ctrd?.stop();
    cleanup.run();
  });

  test("a sandbox removed while its DEL fails leaks its attachment; the running one is unaffected", async () => {
    for (const name of ["kept", "leaked"] as const) {
      ids[name] = await cri().runPodSandbox(sandboxConfig(name));
      ips[name] = (await cri().podSandboxStatus(ids[name])).status.network?.ip ?? "";
      assert.ok(ips[name].startsWith(SUBNET_PREFIX), `${name}: ${ips[name]}`);
    }
    assert.deepEqual(
      cached().filter((f) => f.startsWith(network)),
      [`${network}-${ids.kept}-eth0`, `${network}-${ids.leaked}-eth0`].sort(),
      "containerd's cache is the test's own directory",
    );
    assert.ok(rulesNaming(ips.leaked).length > 0, "the leaked sandbox has rules while it runs");

    writeDebug(noopDebug, { ReportResult: "PASSTHROUGH", ReportError: "sandbox network not found (the test fails this DEL)" });
    try {
      await cri().stopPodSandbox(ids.leaked);
      await cri().removePodSandbox(ids.leaked);
    } finally {
      writeDebug(noopDebug, { ReportResult: "PASSTHROUGH" });
    }
    const listed = (await cri().listPodSandbox({ "tscni-test": tag })).map((s) => s.id);
    assert.deepEqual(listed, [ids.kept], "containerd removed the sandbox");
    assert.ok(
      readCommandLog(noopLog).some((c) => c.Command === "DEL" && c.CmdArgs.ContainerID === ids.leaked),
      "its DEL ran, and failed",
    );

    assert.ok(cached().includes(`${network}-${ids.leaked}-eth0`), "leaked: the cache entry");
    assert.ok(allocations().includes(ips.leaked), "leaked: the address");
    assert.ok(rulesNaming(ips.leaked).length > 0, "leaked: rules naming the address");
    assert.ok(existsSync(path.join(tuningDir, `${ids.leaked}_eth0.json`)), "leaked: tuning's backup");
    // An address leaked with no cache entry at all (an ADD killed before libcni cached its result).
    writeFileSync(path.join(ipamDir, network, `${SUBNET_PREFIX}200`), `${HAND_LEAKED}\r\neth0`);
  });

  test("a runtime that cannot be reached: a clear error, nothing changed", async () => {
    assert.ok(ids.leaked, "needs the leak of the first test");
    const before = nodeState();
    const nobody = path.join(base, "nobody.sock");
    const r = await host.run(CNITOOL, ["gc", "--cri-endpoint", `unix://${nobody}`, "--cache-dir", cacheDir, "--min-age", "0"], {
      env: { ...process.env, NETCONFPATH: confDir, CNI_PATH: binDir },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^Error: CRI runtime at unix://${nobody}: cannot reach unix://${nobody}: .*ENOENT`));
    assert.deepEqual(nodeState(), before);
  });

  test("--dry-run names the leaked attachment and the network's GC, and changes nothing", async () => {
    assert.ok(ids.leaked, "needs the leak of the first test");
    const before = nodeState();
    const r = await gc("--dry-run", "--min-age", "0");
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n").filter(Boolean);
    assert.match(
      lines[0]!,
      /^runtime containerd \S+ \(CRI v1\) at unix:\/\/.*: 1 pod sandbox\(es\); 3 cached attachment\(s\) made by a CRI runtime$/,
    );
    assert.ok(lines.includes(`would remove: ${ids.leaked} on network "${network}" (eth0)`), r.stdout);
    assert.equal(lines.filter((l) => l.startsWith("would remove")).length, 1, r.stdout);
    // The running sandbox's attachment is the network's one valid attachment (its loopback one is go-cni's own network's).
    assert.ok(lines.includes(`would send GC to network "${network}" with 1 valid attachment(s)`), r.stdout);
    assert.deepEqual(nodeState(), before);
    // Without --min-age the leak is too recent to judge.
    const young = await gc("--dry-run");
    assert.match(young.stdout, new RegExp(`^kept \\(cached \\d+ s ago, under the minimum age\\): ${ids.leaked} `, "m"));
  });

  test("a run removes the leaked attachment and the address without a cache entry; the running sandbox keeps everything", async () => {
    assert.ok(ids.leaked, "needs the leak of the first test");
    const kept = {
      entry: `${network}-${ids.kept}-eth0`,
      rules: rulesNaming(ips.kept),
      veths: (host.ipJson(["link", "show", "master", bridge]) as unknown[]).length,
    };
    const r = await gc("--min-age", "0");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(r.stdout.includes(`removed: ${ids.leaked} on network "${network}" (eth0)`), r.stdout);
    // (ADDs under way anywhere on the machine are valid attachments too: other tests may be running.)
    assert.match(r.stdout, new RegExp(`^sent GC to network "${network}" with \\d+ valid attachment\\(s\\)$`, "m"));

    assert.equal(cached().includes(`${network}-${ids.leaked}-eth0`), false, "the cache entry is gone");
    assert.deepEqual(rulesNaming(ips.leaked), [], "no rule names the leaked address");
    assert.equal(existsSync(path.join(tuningDir, `${ids.leaked}_eth0.json`)), false, "tuning's backup is gone");
    assert.deepEqual(allocations(), [ips.kept], "the leaked addresses are free, the running sandbox's is not");
    const gcCall = readCommandLog(noopLog).find((c) => c.Command === "GC");
    assert.ok(gcCall, "the plugins got the GC verb");
    const valid = (JSON.parse(stdinOf(gcCall.CmdArgs)) as { "cni.dev/valid-attachments": Array<{ containerID: string; ifname: string }> })[
      "cni.dev/valid-attachments"
    ];
    assert.ok(
      valid.some((a) => a.containerID === ids.kept && a.ifname === "eth0"),
      "the running sandbox is a valid attachment",
    );
    assert.equal(
      valid.some((a) => a.containerID === ids.leaked),
      false,
      "the leaked one is not",
    );

    assert.ok(cached().includes(kept.entry), "the running sandbox's cache entry stays");
    assert.deepEqual(rulesNaming(ips.kept), kept.rules, "and its rules");
    assert.equal((host.ipJson(["link", "show", "master", bridge]) as unknown[]).length, kept.veths, "and its veth");
    const ns = await ctrd!.sandboxNetns(ids.kept);
    const [cmd, ...args] = ctrd!.inSandbox(ns);
    let ping = { code: 1, stdout: "", stderr: "" };
    for (let i = 0; i < 10 && ping.code !== 0; i++) {
      ping = await runCommand(cmd!, [...args, "ping", "-c", "1", "-W", "1", "-n", GATEWAY]);
      if (ping.code !== 0) await sleep(200);
    }
    assert.equal(ping.code, 0, `the running sandbox still reaches its gateway: ${ping.stdout}${ping.stderr}`);
  });

  test("a second run finds nothing to remove", async () => {
    assert.ok(ids.leaked, "needs the leak of the first test");
    const before = nodeState();
    const r = await gc("--min-age", "0");
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /^removed:/m);
    const after = nodeState();
    assert.deepEqual({ ...after, pluginCalls: 0 }, { ...before, pluginCalls: 0 }, "only the GC verb ran again");
  });
});
