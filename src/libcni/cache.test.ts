/**
 * The result cache's names: a container ID, network name or interface name that could reach outside
 * `<cacheDir>/results` is refused before any file is touched (CHECK, DEL, the cache getters), and a listing skips
 * entries whose names do not validate (GC, and every caller of listCachedAttachments). Each traversal case plants a
 * victim file where the unvalidated path points, outside the cache directory, and checks it is still there.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { RawExec } from "#invoke/exec.js";
import { parseConfList, parsePluginConfig } from "#spec/config.js";
import { CniError } from "#spec/errors.js";
import { cacheEntryText, plantCacheEntry } from "#testing/cache-entries.js";
import { TEST_BIN } from "#testing/harness.js";
import { readCommandLog } from "#testing/plugins/noop-debug.js";
import { useTempDirs } from "#testing/temp.js";
import { CNIConfig, type RuntimeConf } from "./api.js";
import { type CacheKey, cacheFilePath, isValidCacheKey, listCachedAttachments, validateCacheKey } from "./cache.js";

const tempDir = useTempDirs("tscni-cache-");

/** Plugin stderr goes nowhere. */
const quietExec = () => new RawExec(new Writable({ write: (_chunk, _encoding, done) => done() }));

/** A noop plugin that appends each call to `commandLog` (it records only with a debug file beside it). */
const noop = (commandLog: string) => ({ type: "noop", commandLog, debugFile: `${commandLog}.debug` });

/** A noop network named `key.networkName` (the config of a planted entry). */
const noopList = (networkName: string, commandLog: string) => ({ cniVersion: "1.1.0", name: networkName, plugins: [noop(commandLog)] });

/** A cache dir inside a work dir, a noop network logging its calls, and a CNIConfig on them. */
function setup(networkName = "net") {
  const work = tempDir();
  const cacheDir = path.join(work, "cache");
  fs.mkdirSync(path.join(cacheDir, "results"), { recursive: true, mode: 0o700 });
  const commandLog = path.join(work, "commands.json");
  const list = parseConfList(JSON.stringify(noopList(networkName, commandLog)));
  const net = parsePluginConfig(JSON.stringify({ cniVersion: "1.1.0", name: networkName, ...noop(commandLog) }));
  const cni = new CNIConfig({ path: [TEST_BIN], cacheDir, exec: quietExec() });
  return { work, cacheDir, commandLog, list, net, cni };
}

/**
 * Where the cache file of `key` would be without validation, planted with a victim file; asserts it lies outside
 * the cache directory (so the case proves something).
 */
function plantVictim(cacheDir: string, key: CacheKey): string {
  const victim = path.join(cacheDir, "results", `${key.networkName}-${key.containerID}-${key.ifName}`);
  assert.ok(!victim.startsWith(cacheDir + path.sep), `${victim} is inside ${cacheDir}`);
  fs.mkdirSync(path.dirname(victim), { recursive: true });
  fs.writeFileSync(victim, "not a cache entry");
  return victim;
}

/** Asserts a rejection with exactly this CNI code and message, naming `value` in its details. */
async function rejectsNaming(p: Promise<unknown>, code: number, msg: string, value: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof CniError, `expected a CniError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.equal(e.msg, msg);
    assert.ok(e.details.includes(value), `details ${JSON.stringify(e.details)} do not name ${JSON.stringify(value)}`);
    return true;
  });
}

describe("validateCacheKey and cacheFilePath", () => {
  const good: CacheKey = { networkName: "net", containerID: "c1", ifName: "eth0" };

  test("valid names make <cacheDir>/results/<network>-<containerID>-<ifname>", () => {
    assert.equal(cacheFilePath("/var/lib/cni", good), "/var/lib/cni/results/net-c1-eth0");
    assert.ok(isValidCacheKey(good));
  });

  const cases: Array<[string, CacheKey, number, string, string]> = [
    ["container ID with ..", { ...good, containerID: "../../etc/x" }, 4, "invalid characters in containerID", "../../etc/x"],
    ["container ID with a slash", { ...good, containerID: "a/b" }, 4, "invalid characters in containerID", "a/b"],
    ["network name with ..", { ...good, networkName: "../../v" }, 7, "invalid characters found in network name", "../../v"],
    ["interface name ..", { ...good, ifName: ".." }, 4, "interface name is . or ..", '".."'],
    ["interface name with a slash", { ...good, ifName: "a/../../b" }, 4, "interface name contains / or : or whitespace characters", '"a/../../b"'],
    ["interface name too long", { ...good, ifName: "x".repeat(16) }, 4, "interface name is too long", `"${"x".repeat(16)}"`],
  ];
  for (const [label, key, code, msg, value] of cases) {
    test(`${label}: code ${code}, naming the value`, () => {
      for (const fn of [() => validateCacheKey(key), () => cacheFilePath("/c", key)]) {
        assert.throws(fn, (e: unknown) => {
          assert.ok(e instanceof CniError);
          assert.deepEqual([e.code, e.msg], [code, msg]);
          assert.ok(e.details.includes(value), e.details);
          return true;
        });
      }
      assert.equal(isValidCacheKey(key), false);
    });
  }

  test("an interface name's error keeps Go's details after the value", () => {
    assert.throws(() => validateCacheKey({ ...good, ifName: "x".repeat(16) }), {
      details: `"${"x".repeat(16)}" (interface name should be less than 16 characters)`,
    });
  });

  test("an empty name keeps Go's error and is never valid for a listing", () => {
    for (const field of ["networkName", "containerID", "ifName"] as const) {
      const key = { ...good, [field]: "" };
      assert.throws(() => cacheFilePath("/c", key), {
        message: `cache file path requires network name (${JSON.stringify(key.networkName)}), container ID (${JSON.stringify(key.containerID)}), and interface name (${JSON.stringify(key.ifName)})`,
      });
      assert.doesNotThrow(() => validateCacheKey(key));
      assert.equal(isValidCacheKey(key), false, `empty ${field}`);
    }
  });
});

describe("libcni refuses names that would leave the cache directory, before touching a file", { concurrency: true }, () => {
  const good: RuntimeConf = { containerID: "c1", netNS: "/run/netns/x", ifName: "eth0" };
  const cases: Array<[string, RuntimeConf, string | undefined, number, string, string]> = [
    ["container ID", { ...good, containerID: "../../../../victim" }, undefined, 4, "invalid characters in containerID", "../../../../victim"],
    ["interface name", { ...good, ifName: "a/../../../v" }, undefined, 4, "interface name contains / or : or whitespace characters", "a/../../../v"],
    ["network name from the config", good, "../../victim", 7, "invalid characters found in network name", "../../victim"],
  ];
  for (const [label, rt, networkName, code, msg, value] of cases) {
    test(`${label} ${JSON.stringify(value)}: DEL, CHECK and the cache getters fail; the victim stays, no plugin runs`, async () => {
      const { cacheDir, commandLog, list, net, cni } = setup(networkName);
      const victim = plantVictim(cacheDir, { networkName: list.name, containerID: rt.containerID, ifName: rt.ifName });
      await rejectsNaming(cni.delNetworkList(list, rt), code, msg, value);
      await rejectsNaming(cni.delNetwork(net, rt), code, msg, value);
      await rejectsNaming(cni.checkNetwork(net, rt), code, msg, value);
      await rejectsNaming(cni.getNetworkCachedResult(net, rt), code, msg, value);
      await rejectsNaming(cni.checkNetworkList(list, rt), code, msg, value);
      await rejectsNaming(cni.getNetworkListCachedResult(list, rt), code, msg, value);
      await rejectsNaming(cni.getNetworkListCachedConfig(list, rt), code, msg, value);
      await assert.rejects(cni.addNetworkList(list, rt), (e: unknown) => (e as Error).message.includes(msg));
      assert.equal(fs.readFileSync(victim, "utf8"), "not a cache entry");
      assert.deepEqual(readCommandLog(commandLog), [], "no plugin ran");
      assert.deepEqual(fs.readdirSync(path.join(cacheDir, "results")), []);
    });
  }

  test("the same names, valid, run the DEL and remove the cache file (the control)", async () => {
    const { cacheDir, commandLog, list, cni } = setup();
    const file = plantCacheEntry(cacheDir, "net-c1-eth0", { networkName: "net", containerID: "c1", ifName: "eth0" }, noopList("net", commandLog));
    assert.equal(file, cacheFilePath(cacheDir, { networkName: "net", containerID: "c1", ifName: "eth0" }));
    await cni.delNetworkList(list, good);
    assert.deepEqual(
      readCommandLog(commandLog).map((c) => c.Command),
      ["DEL"],
    );
    assert.equal(fs.existsSync(file), false);
  });
});

describe("listings skip entries whose names do not validate", { concurrency: true }, () => {
  /** A results dir with one good entry, crafted ones, a symlink to a good entry elsewhere, a FIFO and a directory. */
  function craftedCache() {
    const s = setup();
    const results = path.join(s.cacheDir, "results");
    const victim = plantVictim(s.cacheDir, { networkName: "net", containerID: "../../../../victim", ifName: "eth0" });
    const crafted: CacheKey[] = [
      { networkName: "net", containerID: "../../../../victim", ifName: "eth0" },
      { networkName: "net", containerID: "c2", ifName: "a/../../../v" },
      { networkName: "../../v", containerID: "c3", ifName: "eth0" },
      { networkName: "net", containerID: "", ifName: "eth0" },
    ];
    const config = noopList("net", s.commandLog);
    crafted.forEach((key, i) => plantCacheEntry(s.cacheDir, `net-crafted${i}-eth0`, key, config));
    const outside = path.join(s.work, "outside-entry");
    fs.writeFileSync(outside, cacheEntryText({ networkName: "net", containerID: "c4", ifName: "eth0" }, config));
    fs.symlinkSync(outside, path.join(results, "net-c4-eth0"));
    assert.equal(spawnSync("mkfifo", [path.join(results, "net-c5-eth0")]).status, 0);
    fs.mkdirSync(path.join(results, "net-c6-eth0"));
    plantCacheEntry(s.cacheDir, "net-c1-eth0", { networkName: "net", containerID: "c1", ifName: "eth0" }, config);
    return { ...s, victim, outside };
  }

  test("listCachedAttachments lists only the valid regular file (a FIFO does not block it)", async () => {
    const { cacheDir, cni } = craftedCache();
    const ids = (await listCachedAttachments(cacheDir)).map((a) => a.containerID);
    assert.deepEqual(ids, ["c1"]);
    assert.deepEqual(
      (await cni.getCachedAttachments()).map((a) => a.containerID),
      ["c1"],
    );
    assert.deepEqual(await listCachedAttachments(cacheDir, "../../../../victim"), []);
  });

  test("GC DELs the valid stale entry only; the crafted ones are not followed", async () => {
    const { cacheDir, commandLog, list, cni, victim, outside } = craftedCache();
    await cni.gcNetworkList(list, { validAttachments: [] });
    assert.deepEqual(
      readCommandLog(commandLog).map((c) => [c.Command, c.CmdArgs.ContainerID]),
      [
        ["DEL", "c1"],
        ["GC", ""],
      ],
    );
    assert.equal(fs.readFileSync(victim, "utf8"), "not a cache entry");
    assert.ok(fs.existsSync(outside));
    assert.deepEqual(fs.readdirSync(path.join(cacheDir, "results")).sort(), [
      "net-c4-eth0",
      "net-c5-eth0",
      "net-c6-eth0",
      "net-crafted0-eth0",
      "net-crafted1-eth0",
      "net-crafted2-eth0",
      "net-crafted3-eth0",
    ]);
  });
});

describe("a cache file a crash left empty or torn (docs/state.md)", { concurrency: true }, () => {
  const rt: RuntimeConf = { containerID: "c1", netNS: "/run/netns/x", ifName: "eth0" };
  for (const [what, text, words] of [
    ["empty", "", /unexpected end of JSON input \(the cache file .* is empty: left by a crash or a power loss\?\)/],
    ["torn", '{"kind":"cniCacheV1","contai', /\(the cache file .* is torn: not JSON: left by a crash or a power loss\?\)/],
  ] as const) {
    test(`${what}: CHECK says so naming the file; DEL runs every plugin without a prevResult and removes it`, async () => {
      const { cacheDir, commandLog, list, cni } = setup();
      const file = cacheFilePath(cacheDir, { networkName: "net", containerID: "c1", ifName: "eth0" });
      fs.writeFileSync(file, text);
      await assert.rejects(cni.checkNetworkList(list, rt), (e: unknown) => {
        assert.match((e as Error).message, /failed to get network "net" cached result/);
        assert.match((e as Error).message, words);
        assert.ok((e as Error).message.includes(file));
        return true;
      });
      await cni.delNetworkList(list, rt);
      assert.deepEqual(
        readCommandLog(commandLog).map((c) => c.Command),
        ["DEL"],
      );
      assert.equal(fs.existsSync(file), false);
    });
  }
});
