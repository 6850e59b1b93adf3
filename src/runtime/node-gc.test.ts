/**
 * Node GC without a runtime or root: the plan's rules (which attachments are judged, kept for their age, removed;
 * the guard against a runtime that knows no sandbox; which networks get the GC verb), a dry run that changes
 * nothing, and a real run with a stand-in runtime and the noop test plugin, which records the DELs (with the
 * cached config, without a netns that is not one) and the GC verb's valid attachments.
 */

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { type CachedAttachment, cacheKeysOfName, type UnreadableCacheEntry, writeCacheEntry } from "#libcni/cache.js";
import type { LoadedNetwork } from "#libcni/conf.js";
import { parseConfList } from "#spec/config.js";
import { TEST_BIN } from "#testing/harness.js";
import { readCommandLog, stdinOf, writeDebug } from "#testing/plugins/noop-debug.js";
import { useTempDirs } from "#testing/temp.js";
import type { CriSandbox } from "./cri/runtime-service.js";
import { type AgedAttachment, describeNodeGc, judgedByNodeGc, madeByCriRuntime, planNodeGc, runNodeGc, type SandboxSource } from "./node-gc.js";

const tempDir = useTempDirs();
const id = (c: string) => c.repeat(64);
const criArgs = (containerID: string): Array<[string, string]> => [
  ["IgnoreUnknown", "1"],
  ["K8S_POD_NAMESPACE", "default"],
  ["K8S_POD_NAME", "p"],
  ["K8S_POD_INFRA_CONTAINER_ID", containerID],
  ["K8S_POD_UID", "u"],
];

const entry = (containerID: string, networkName = "net1", ifName = "eth0", cniArgs = criArgs(containerID)): CachedAttachment => ({
  networkName,
  containerID,
  ifName,
  config: Buffer.from("{}"),
  cniArgs,
});
const network = (name: string, cniVersion = "1.1.0", extra = ""): LoadedNetwork => ({
  file: `/etc/cni/net.d/${name}.conflist`,
  list: parseConfList(`{"cniVersion":"${cniVersion}","name":"${name}"${extra},"plugins":[{"type":"noop"}]}`),
});

const NOW = 10_000_000;
const MIN_AGE = 600_000;
const plan = (cached: AgedAttachment[], sandboxIds: string[], networks: LoadedNetwork[] = [network("net1")], force = false) =>
  planNodeGc({ cached, sandboxIds: new Set(sandboxIds), networks, nowMs: NOW, minAgeMs: MIN_AGE, judged: madeByCriRuntime, force });
const old = (e: CachedAttachment): AgedAttachment => ({ entry: e, mtimeMs: NOW - MIN_AGE - 1 });
const young = (e: CachedAttachment, ageMs = 5_000): AgedAttachment => ({ entry: e, mtimeMs: NOW - ageMs });

describe("planNodeGc", () => {
  test("an old attachment of a sandbox the runtime does not know goes; those of known sandboxes stay valid", () => {
    const p = plan([old(entry(id("a"))), old(entry(id("b"))), old(entry(id("b"), "net1", "net1"))], [id("b")]);
    assert.deepEqual(
      p.stale.map((a) => a.entry.containerID),
      [id("a")],
    );
    assert.deepEqual(p.tooRecent, []);
    assert.equal(p.judged, 3);
    assert.deepEqual(
      p.networks.map((n) => [n.list.name, n.gc, n.validAttachments]),
      [
        [
          "net1",
          true,
          [
            { containerID: id("b"), ifname: "eth0" },
            { containerID: id("b"), ifname: "net1" },
          ],
        ],
      ],
    );
  });

  test("an unknown attachment younger than the minimum age is kept, and valid for the GC verb", () => {
    const p = plan([young(entry(id("a")), 42_000), old(entry(id("b")))], [id("b")]);
    assert.deepEqual(p.stale, []);
    assert.deepEqual(
      p.tooRecent.map((a) => [a.entry.containerID, a.ageMs]),
      [[id("a"), 42_000]],
    );
    assert.equal(p.networks[0]!.validAttachments.length, 2);
  });

  test("only attachments naming their container as K8S_POD_INFRA_CONTAINER_ID are judged", () => {
    const podman = entry(id("c"), "net1", "eth0", [
      ["IgnoreUnknown", "1"],
      ["K8S_POD_NAME", "web"],
    ]);
    const cnitool = entry("cnitool-0123456789abcdef0123", "net1", "eth0", []);
    const other = entry(id("d"), "net1", "eth0", [["K8S_POD_INFRA_CONTAINER_ID", id("e")]]);
    const p = plan([old(podman), old(cnitool), old(other), old(entry(id("a")))], [id("z")]);
    assert.deepEqual(
      p.stale.map((a) => a.entry.containerID),
      [id("a")],
    );
    assert.equal(p.judged, 1);
    assert.equal(p.notJudged, 3);
    assert.equal(p.networks[0]!.validAttachments.length, 3, "those left alone are valid attachments");
  });

  test("cnitool's own pods are not judged, though they carry a CRI runtime's CNI_ARGS", () => {
    const criEntry = (containerID: string) => ({
      networkName: "n",
      containerID,
      ifName: "eth0",
      config: Buffer.from("{}"),
      cniArgs: [["K8S_POD_INFRA_CONTAINER_ID", containerID]] as Array<[string, string]>,
    });
    assert.equal(judgedByNodeGc(criEntry(id("a"))), true);
    assert.equal(judgedByNodeGc(criEntry("tscni-pod-web")), false);
  });

  test("a runtime that knows no sandbox at all removes nothing, unless forced", () => {
    const cached = [old(entry(id("a"))), old(entry(id("b")))];
    const refused = plan(cached, []);
    assert.deepEqual(refused.stale, []);
    assert.match(refused.refused ?? "", /knows no pod sandbox at all, yet 2 attachment\(s\)/);
    assert.equal(refused.networks[0]!.validAttachments.length, 2, "kept, so valid");
    const forced = plan(cached, [], undefined, true);
    assert.equal(forced.stale.length, 2);
    assert.equal(forced.refused, undefined);
    assert.equal(plan([young(entry(id("a")))], []).refused, undefined, "nothing would go: nothing to refuse");
  });

  test("a stale attachment whose network namespace is in use is kept, and valid for the GC verb", () => {
    const inUse = new Set([id("a")]);
    const p = planNodeGc({
      cached: [old(entry(id("a"))), old(entry(id("c")))],
      sandboxIds: new Set([id("b")]),
      networks: [network("net1")],
      nowMs: NOW,
      minAgeMs: MIN_AGE,
      judged: madeByCriRuntime,
      force: false,
      occupied: (e) => (inUse.has(e.containerID) ? "process 7 (pause) is in it" : undefined),
    });
    assert.deepEqual(
      p.stale.map((a) => a.entry.containerID),
      [id("c")],
    );
    assert.deepEqual(
      p.occupied.map((a) => [a.entry.containerID, a.why]),
      [[id("a"), "process 7 (pause) is in it"]],
    );
    assert.deepEqual(p.networks[0]!.validAttachments, [{ containerID: id("a"), ifname: "eth0" }]);
    assert.deepEqual(plan([old(entry(id("a")))], [id("b")]).occupied, [], "without the question, none is in use");
  });

  test("networks: the GC verb from 1.1.0 on, not with disableGC, once per name", () => {
    const p = plan(
      [],
      [id("a")],
      [
        network("new"),
        network("old", "1.0.0"),
        network("off", "1.1.0", `,"disableGC":true`),
        network("new"),
        network("picked", "1.0.0", `,"cniVersions":["1.0.0","1.1.0"]`),
      ],
    );
    assert.deepEqual(
      p.networks.map((n) => [n.list.name, n.gc, n.reason ?? ""]),
      [
        ["new", true, ""],
        ["old", false, "cniVersion 1.0.0 has no GC verb (1.1.0 and later)"],
        ["off", false, "disableGC is set"],
        ["new", false, `network "new" is also in /etc/cni/net.d/new.conflist, which wins`],
        ["picked", true, ""],
      ],
    );
  });

  const BOOT = NOW - 2 * MIN_AGE;
  const torn = (containerID: string, mtimeMs: number, ifName = "eth0"): UnreadableCacheEntry => ({
    file: `/c/results/net1-${containerID}-${ifName}`,
    reason: "empty",
    mtimeMs,
    keys: cacheKeysOfName(`net1-${containerID}-${ifName}`, ["net1"]),
  });
  const rebooted = (cached: AgedAttachment[], unreadable: UnreadableCacheEntry[], ready: string[], notReady: string[], force = false) =>
    planNodeGc({
      cached,
      unreadable,
      sandboxIds: new Set([...ready, ...notReady]),
      notReady: new Set(notReady),
      bootMs: BOOT,
      networks: [network("net1")],
      nowMs: NOW,
      minAgeMs: MIN_AGE,
      judged: madeByCriRuntime,
      force,
    });

  test("a sandbox the runtime lists as not ready: its attachments of an earlier boot go, this boot's stay", () => {
    const before = { entry: entry(id("a")), mtimeMs: BOOT - 1 };
    const during = { entry: entry(id("b")), mtimeMs: BOOT + 1 };
    const readyOld = { entry: entry(id("c")), mtimeMs: BOOT - 1 };
    const p = rebooted([before, during, readyOld], [], [id("c")], [id("a"), id("b")]);
    assert.deepEqual(
      p.stale.map((a) => a.entry.containerID),
      [id("a")],
    );
    assert.deepEqual(
      p.networks[0]!.validAttachments.map((a) => a.containerID),
      [id("b"), id("c")],
    );
    const unbooted = planNodeGc({
      cached: [before],
      sandboxIds: new Set([id("a")]),
      notReady: new Set([id("a")]),
      networks: [network("net1")],
      nowMs: NOW,
      minAgeMs: MIN_AGE,
      judged: madeByCriRuntime,
      force: false,
    });
    assert.deepEqual(unbooted.stale, [], "without a boot time nothing is of an earlier boot");
  });

  test("an unreadable cache file goes only when written before this boot and its sandbox is not ready or unknown", () => {
    const p = rebooted(
      [old(entry(id("k")))],
      [
        torn(id("a"), BOOT - 1), // not ready, earlier boot: goes
        torn(id("b"), BOOT - 1), // ready: stays
        torn(id("c"), BOOT + 1), // this boot: stays
        torn(id("d"), BOOT - 1), // unknown, earlier boot, old: goes
      ],
      [id("b"), id("k")],
      [id("a")],
    );
    assert.deepEqual(
      p.staleUnreadable.map((s) => [s.key.containerID, s.key.ifName, s.list.name]),
      [
        [id("a"), "eth0", "net1"],
        [id("d"), "eth0", "net1"],
      ],
    );
    assert.deepEqual(
      p.unreadableKept.map((k) => [k.unreadable.keys[0]!.containerID, k.why]),
      [
        [id("b"), "its sandbox is ready"],
        [id("c"), "written during this boot (its pod may be alive)"],
      ],
    );
    assert.deepEqual(
      p.networks[0]!.validAttachments.map((a) => a.containerID).sort(),
      [id("b"), id("c"), id("k")],
      "a kept unreadable file's attachment is valid for the GC verb: it may be a live pod's",
    );
  });

  test("an unreadable file of an unknown sandbox is refused with the rest when the runtime knows none", () => {
    const p = rebooted([], [torn(id("d"), BOOT - 1)], [], []);
    assert.match(p.refused ?? "", /knows no pod sandbox at all, yet 1 attachment/);
    assert.deepEqual(p.staleUnreadable, []);
    assert.deepEqual(
      p.unreadableKept.map((k) => k.why),
      ["the runtime knows no pod sandbox at all"],
    );
    assert.equal(rebooted([], [torn(id("d"), BOOT - 1)], [], [], true).staleUnreadable.length, 1, "forced");
  });

  test("a file name names every split into a known network, a valid container ID and interface name", () => {
    assert.deepEqual(
      cacheKeysOfName(`net-1-${id("a")}-eth0`, ["net", "net-1", "other"]).map((k) => [k.networkName, k.containerID, k.ifName]),
      [
        ["net", `1-${id("a")}`, "eth0"],
        ["net-1", id("a"), "eth0"],
      ],
    );
    assert.deepEqual(
      cacheKeysOfName("net1-ab-c-d", ["net1"]).map((k) => [k.containerID, k.ifName]),
      [
        ["ab", "c-d"],
        ["ab-c", "d"],
      ],
    );
    assert.deepEqual(cacheKeysOfName("net1-abc", ["net1"]), [], "no interface name");
  });
});

/** A runtime stand-in: its version, its sandboxes, and what to do when asked for them. */
function fakeRuntime(ids: string[], onList: () => void = () => undefined): SandboxSource {
  return {
    endpoint: "unix:///fake.sock",
    version: async () => ({ version: "0.1.0", runtimeName: "fake", runtimeVersion: "1.0", runtimeApiVersion: "v1" }),
    listPodSandboxes: async (): Promise<CriSandbox[]> => {
      onList();
      return ids.map((i) => ({ id: i, state: "SANDBOX_READY" }));
    },
  };
}

/** A cache with attachments of a noop network, a conf dir with that network, and the noop call log. */
function node() {
  const cacheDir = tempDir();
  const confDir = tempDir();
  const work = tempDir();
  const commandLog = path.join(work, "log.json");
  const debugFile = path.join(work, "debug.json");
  const failingDebug = path.join(work, "failing.json");
  writeDebug(debugFile, { ReportResult: `{"cniVersion":"1.1.0"}` });
  writeDebug(failingDebug, { ReportError: "DEL fails here" });
  const conf = (debug: string) => JSON.stringify({ cniVersion: "1.1.0", name: "net1", plugins: [{ type: "noop", debugFile: debug, commandLog }] });
  fs.writeFileSync(path.join(confDir, "10-net1.conflist"), conf(debugFile));
  // The clock of the run: ages are exact, however slow the machine.
  const now = Date.now();
  const notANetns = path.join(work, "netns-file");
  fs.writeFileSync(notANetns, "");
  const plant = async (
    containerID: string,
    ageMs: number,
    opts: { ifName?: string; failing?: boolean; args?: Array<[string, string]>; netns?: string } = {},
  ) => {
    const e = {
      ...entry(containerID, "net1", opts.ifName ?? "eth0", opts.args ?? criArgs(containerID)),
      config: Buffer.from(conf(opts.failing ? failingDebug : debugFile)),
      netns: opts.netns ?? notANetns,
    };
    await writeCacheEntry(cacheDir, e, undefined);
    const file = path.join(cacheDir, "results", `net1-${containerID}-${e.ifName}`);
    const when = new Date(now - ageMs);
    fs.utimesSync(file, when, when);
    return file;
  };
  const snapshot = () =>
    Object.fromEntries(
      fs
        .readdirSync(cacheDir, { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => {
          const f = path.join(d.parentPath, d.name);
          return [f, `${fs.readFileSync(f, "base64")} ${fs.statSync(f).mtimeMs}`];
        }),
    );
  return { cacheDir, confDir, commandLog, plant, snapshot, now: () => now };
}

const HOUR = 3_600_000;

describe("runNodeGc", () => {
  test("a dry run reports and changes nothing: no plugin runs, no file changes, no lock is taken", async () => {
    const n = node();
    await n.plant(id("a"), HOUR);
    await n.plant(id("b"), HOUR);
    await n.plant(id("c"), 1_000);
    const before = n.snapshot();
    const report = await runNodeGc({
      runtime: fakeRuntime([id("b")]),
      cacheDir: n.cacheDir,
      confDir: n.confDir,
      pluginDirs: [TEST_BIN],
      dryRun: true,
      now: n.now,
    });
    assert.deepEqual(n.snapshot(), before);
    assert.equal(fs.existsSync(path.join(n.cacheDir, "locks")), false);
    assert.deepEqual(readCommandLog(n.commandLog), []);
    assert.deepEqual(report.stale, [{ containerID: id("a"), network: "net1", ifName: "eth0" }]);
    assert.deepEqual(
      report.tooRecent.map((a) => a.containerID),
      [id("c")],
    );
    assert.deepEqual(describeNodeGc(report), [
      "runtime fake 1.0 (CRI v1) at unix:///fake.sock: 1 pod sandbox(es); 3 cached attachment(s) made by a CRI runtime",
      `kept (cached 1 s ago, under the minimum age): ${id("c")} on network "net1" (eth0)`,
      `would remove: ${id("a")} on network "net1" (eth0)`,
      `would send GC to network "net1" with 2 valid attachment(s)`,
    ]);
  });

  test("a run DELs the stale attachments with their cached config, then GCs with what remains and the ADDs under way", async () => {
    const n = node();
    const stale = await n.plant(id("a"), HOUR);
    const failing = await n.plant(id("f"), HOUR, { failing: true });
    const known = await n.plant(id("b"), HOUR);
    const youngFile = await n.plant(id("c"), 1_000);
    const podman = await n.plant(id("d"), HOUR, { args: [["K8S_POD_NAME", "web"]] });
    const report = await runNodeGc({
      runtime: fakeRuntime([id("b")]),
      cacheDir: n.cacheDir,
      confDir: n.confDir,
      pluginDirs: [TEST_BIN],
      now: n.now,
      addsInFlight: async () => [{ containerID: id("e"), ifname: "eth0" }],
    });
    assert.deepEqual(report.removed, [{ containerID: id("a"), network: "net1", ifName: "eth0" }]);
    assert.deepEqual(
      report.failed.map((f) => [f.containerID, /DEL fails here/.test(f.error)]),
      [[id("f"), true]],
    );
    assert.equal(fs.existsSync(stale), false);
    for (const kept of [failing, known, youngFile, podman]) assert.ok(fs.existsSync(kept), kept);

    const log = readCommandLog(n.commandLog);
    assert.deepEqual(
      log.map((e) => [e.Command, e.CmdArgs.ContainerID]),
      [
        ["DEL", id("a")],
        ["DEL", id("f")],
        ["GC", ""],
      ],
    );
    assert.equal(log[0]!.CmdArgs.Netns, "", "a cached netns that is not a network namespace is not passed");
    const gc = JSON.parse(stdinOf(log[2]!.CmdArgs)) as Record<string, Array<{ containerID: string; ifname: string }>>;
    const valid = gc["cni.dev/valid-attachments"]!.map((a) => a.containerID).sort();
    assert.deepEqual(valid, [id("b"), id("c"), id("d"), id("e")], "kept ones and the ADD under way; neither the removed nor the failed one");
    assert.deepEqual(gc["cni.dev/attachments"], gc["cni.dev/valid-attachments"]);
    assert.equal(report.networks[0]!.validAttachments, 4);
    assert.ok(fs.existsSync(path.join(n.cacheDir, "locks", "gc")), "under the cache's GC lock");
  });

  test("an attachment whose network namespace has processes (this one's) is kept, unless deleteOccupied", async () => {
    const n = node();
    const ours = `/proc/${process.pid}/ns/net`;
    const occupied = await n.plant(id("a"), HOUR, { netns: ours });
    const gone = await n.plant(id("g"), HOUR, { netns: path.join(tempDir(), "no-such-netns") });
    const run = (deleteOccupied: boolean) =>
      runNodeGc({
        runtime: fakeRuntime([id("z")]),
        cacheDir: n.cacheDir,
        confDir: n.confDir,
        pluginDirs: [TEST_BIN],
        now: n.now,
        addsInFlight: async () => [],
        deleteOccupied,
      });
    const kept = await run(false);
    assert.deepEqual(kept.removed, [{ containerID: id("g"), network: "net1", ifName: "eth0" }], "a namespace gone has no processes");
    assert.deepEqual(
      kept.occupied.map((a) => a.containerID),
      [id("a")],
    );
    assert.match(kept.occupied[0]!.why, new RegExp(`^process \\d+ \\(.+\\) is in its network namespace ${ours}$`));
    assert.ok(describeNodeGc(kept).includes(`kept (${kept.occupied[0]!.why}): ${id("a")} on network "net1" (eth0)`));
    assert.ok(fs.existsSync(occupied));
    assert.equal(fs.existsSync(gone), false);
    const gc = readCommandLog(n.commandLog).find((e) => e.Command === "GC")!;
    const valid = (JSON.parse(stdinOf(gc.CmdArgs)) as Record<string, Array<{ containerID: string }>>)["cni.dev/valid-attachments"]!;
    assert.deepEqual(
      valid.map((a) => a.containerID),
      [id("a")],
      "kept, so valid",
    );

    // Told to, it DELs (which noop refuses, as Go's does, for the namespace it runs in: the DEL was tried).
    const forced = await run(true);
    assert.deepEqual(forced.occupied, []);
    assert.deepEqual(
      forced.failed.map((f) => [f.containerID, f.error.includes("netns from CNI_NETNS should not be the same")]),
      [[id("a"), true]],
    );
  });

  test("an entry removed or written again after the cache was read is not DELeted", async () => {
    const n = node();
    const gone = await n.plant(id("a"), HOUR);
    const rewritten = await n.plant(id("b"), HOUR);
    const report = await runNodeGc({
      runtime: fakeRuntime([id("z")], () => {
        fs.rmSync(gone);
        fs.utimesSync(rewritten, new Date(), new Date());
      }),
      cacheDir: n.cacheDir,
      confDir: n.confDir,
      pluginDirs: [TEST_BIN],
      addsInFlight: async () => [],
    });
    assert.deepEqual(
      report.stale.map((a) => a.containerID),
      [id("a"), id("b")],
    );
    assert.deepEqual(report.removed, []);
    assert.deepEqual(report.failed, []);
    assert.deepEqual(
      readCommandLog(n.commandLog).map((e) => e.Command),
      ["GC"],
    );
    assert.ok(fs.existsSync(rewritten));
  });

  test("after a reboot: a not-ready sandbox's attachment and an empty cache file of the earlier boot are DELeted; one of a ready sandbox stays valid", async () => {
    const n = node();
    const oldBoot = await n.plant(id("a"), HOUR);
    const emptyOld = path.join(n.cacheDir, "results", `net1-${id("b")}-eth0`);
    const emptyLive = path.join(n.cacheDir, "results", `net1-${id("c")}-eth0`);
    for (const f of [emptyOld, emptyLive]) {
      fs.writeFileSync(f, "");
      fs.utimesSync(f, new Date(n.now() - HOUR), new Date(n.now() - HOUR));
    }
    const runtime: SandboxSource = {
      ...fakeRuntime([]),
      listPodSandboxes: async () => [
        { id: id("a"), state: "SANDBOX_NOTREADY" },
        { id: id("b"), state: "SANDBOX_NOTREADY" },
        { id: id("c"), state: "SANDBOX_READY" },
      ],
    };
    const report = await runNodeGc({
      runtime,
      cacheDir: n.cacheDir,
      confDir: n.confDir,
      pluginDirs: [TEST_BIN],
      now: n.now,
      bootTimeMs: n.now() - 60_000,
      addsInFlight: async () => [],
    });
    assert.deepEqual(
      report.removed.map((r) => r.containerID),
      [id("a"), id("b")],
    );
    assert.deepEqual(report.failed, []);
    assert.equal(fs.existsSync(oldBoot), false);
    assert.equal(fs.existsSync(emptyOld), false, "the empty file went with its DEL");
    assert.ok(fs.existsSync(emptyLive), "a ready sandbox's unreadable file stays");
    assert.ok(describeNodeGc(report).includes(`kept an unreadable cache file (empty), its sandbox is ready: ${emptyLive}`));
    const log = readCommandLog(n.commandLog);
    assert.deepEqual(
      log.map((e) => [e.Command, e.CmdArgs.ContainerID, e.CmdArgs.Netns]),
      [
        ["DEL", id("a"), ""],
        ["DEL", id("b"), ""],
        ["GC", "", ""],
      ],
    );
    const gc = JSON.parse(stdinOf(log[2]!.CmdArgs)) as Record<string, Array<{ containerID: string; ifname: string }>>;
    assert.deepEqual(gc["cni.dev/valid-attachments"], [{ containerID: id("c"), ifname: "eth0" }]);
  });

  test("a runtime that cannot be asked: the error, and nothing touched", async () => {
    const n = node();
    await n.plant(id("a"), HOUR);
    const before = n.snapshot();
    const runtime: SandboxSource = {
      ...fakeRuntime([]),
      listPodSandboxes: () => Promise.reject(new Error("CRI runtime at unix:///x: cannot reach")),
    };
    await assert.rejects(runNodeGc({ runtime, cacheDir: n.cacheDir, confDir: n.confDir, pluginDirs: [TEST_BIN] }), /cannot reach/);
    assert.deepEqual(n.snapshot(), before);
    assert.deepEqual(readCommandLog(n.commandLog), []);
  });
});
