/**
 * The manager's pure rules and its ordering, without namespaces: the default network (configured, else the
 * first valid file), readiness (not ready until a network is loaded, with the failing files named), interface
 * names and duplicates, names the cache is keyed by (refused, or skipped in the cache), ocicni's CNI_ARGS, one
 * operation at a time per pod while different pods overlap, GC exclusive with pod operations.
 */

import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { plantCacheEntry } from "#testing/cache-entries.js";
import { TEST_BIN } from "#testing/harness.js";
import { readCommandLog, stdinOf } from "#testing/plugins/noop-debug.js";
import { useTempDirs } from "#testing/temp.js";
import { assignInterfaces, NetworkNotReadyError, PodNetworkManager, podCniArgs } from "./manager.js";
import { KeyedMutex, PodLocks, ReadWriteLock, Semaphore } from "./pod-locks.js";

const tempDir = useTempDirs("tscni-manager-");
const conflist = (name: string) => JSON.stringify({ cniVersion: "1.0.0", name, plugins: [{ type: "bridge" }] });

async function manager(files: Record<string, string>, options: { defaultNetwork?: string; minNetworks?: number } = {}) {
  const confDir = tempDir();
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(confDir, name), text);
  const m = new PodNetworkManager({ confDir, pluginDirs: [], cacheDir: tempDir(), debounceMs: 10, ...options });
  await m.start();
  return m;
}

describe("default network and readiness", () => {
  test("the first valid file in name order, skipping an invalid one", async () => {
    const m = await manager({ "05-broken.conflist": "{", "10-b.conflist": conflist("b"), "20-a.conflist": conflist("a") });
    try {
      assert.equal(m.defaultNetwork()?.name, "b");
      await m.status();
      assert.equal(m.configErrors().length, 1);
    } finally {
      m.close();
    }
  });

  test("a configured default network, when it is loaded", async () => {
    const m = await manager({ "10-b.conflist": conflist("b"), "20-a.conflist": conflist("a") }, { defaultNetwork: "a" });
    try {
      assert.equal(m.defaultNetwork()?.name, "a");
      await m.status();
    } finally {
      m.close();
    }
  });

  test("not ready without a network: the reason names the directory and the files that fail", async () => {
    const m = await manager({ "10-broken.conflist": '{"cniVersion":"1.0.0"}' });
    try {
      await assert.rejects(m.status(), (e: unknown) => {
        assert.ok(e instanceof NetworkNotReadyError);
        assert.match(e.message, /network not ready: 0 valid network config\(s\) in .*, 1 needed/);
        assert.match(e.message, /10-broken\.conflist: error parsing configuration list: no name/);
        return true;
      });
    } finally {
      m.close();
    }
  });

  test("not ready while the configured default network is missing, or fewer networks than required", async () => {
    const m = await manager({ "10-b.conflist": conflist("b") }, { defaultNetwork: "a" });
    const n = await manager({ "10-b.conflist": conflist("b") }, { minNetworks: 2 });
    try {
      await assert.rejects(m.status(), /default network "a" not found/);
      await assert.rejects(n.status(), /1 valid network config\(s\) in .*, 2 needed/);
    } finally {
      m.close();
      n.close();
    }
  });

  test("not ready before start()", async () => {
    const m = new PodNetworkManager({ confDir: tempDir(), pluginDirs: [] });
    await assert.rejects(m.status(), /has not loaded its config directory yet/);
  });
});

describe("interfaces and CNI_ARGS", () => {
  test("eth0, eth1, ... unless given; a given name is kept", () => {
    assert.deepEqual(
      assignInterfaces([{ name: "a" }, { name: "b", ifName: "net1" }, { name: "c" }]).map((n) => n.ifName),
      ["eth0", "net1", "eth2"],
    );
  });
  test("a duplicate interface name is rejected before anything is touched", () => {
    assert.throws(() => assignInterfaces([{ name: "a" }, { name: "b", ifName: "eth0" }]), {
      code: 7,
      msg: 'networks "a" and "b" both ask for interface eth0',
    });
  });
  test("CNI_ARGS as ocicni sends them", () => {
    assert.deepEqual(podCniArgs({ id: "sb1", name: "web", namespace: "prod", uid: "u-1", netns: "/x" }), [
      ["IgnoreUnknown", "1"],
      ["K8S_POD_NAMESPACE", "prod"],
      ["K8S_POD_NAME", "web"],
      ["K8S_POD_INFRA_CONTAINER_ID", "sb1"],
      ["K8S_POD_UID", "u-1"],
    ]);
  });
});

describe("names the cache is keyed by", () => {
  test("setUpPod refuses a pod ID or interface name that does not validate, before the namespace is touched", async () => {
    const m = await manager({ "10-b.conflist": conflist("b") });
    const pod = { id: "p1", name: "p", namespace: "ns", netns: "/nonexistent/netns" };
    try {
      await assert.rejects(async () => m.setUpPod({ ...pod, id: "../../../x" }), {
        code: 4,
        msg: "invalid characters in containerID",
        details: "../../../x",
      });
      await assert.rejects(async () => m.setUpPod({ ...pod, networks: [{ name: "b", ifName: "a/../../x" }] }), {
        code: 4,
        msg: "interface name contains / or : or whitespace characters",
        details: '"a/../../x"',
      });
    } finally {
      m.close();
    }
  });

  test("teardown and GC from the cache skip entries whose names do not validate", async () => {
    const work = tempDir();
    const cacheDir = path.join(work, "cache");
    const commandLog = path.join(work, "commands.json");
    const config = { cniVersion: "1.1.0", name: "b", plugins: [{ type: "noop", commandLog, debugFile: `${commandLog}.debug` }] };
    // Where an unvalidated interface name would put the cache file: outside the cache directory.
    const victim = path.join(work, "v");
    writeFileSync(victim, "precious");
    plantCacheEntry(cacheDir, "b-p1-eth0", { networkName: "b", containerID: "p1", ifName: "a/../../../v" }, config);
    plantCacheEntry(cacheDir, "b-p2-eth0", { networkName: "b", containerID: "../../../v", ifName: "eth0" }, config);
    const confDir = tempDir();
    writeFileSync(path.join(confDir, "10-b.conflist"), JSON.stringify(config));
    const m = new PodNetworkManager({ confDir, pluginDirs: [TEST_BIN], cacheDir, debounceMs: 10 });
    await m.start();
    try {
      await m.tearDownPod({ id: "p1", name: "p", namespace: "ns", netns: "/nonexistent/netns" });
      assert.deepEqual(await m.podStatus({ id: "p1", name: "p", namespace: "ns", netns: "/nonexistent/netns" }), []);
      const { removed, errors } = await m.gc([]);
      assert.deepEqual({ removed, errors }, { removed: [], errors: [] });
      assert.deepEqual(
        readCommandLog(commandLog).map((c) => c.Command),
        ["GC"],
        "only the GC verb ran",
      );
      assert.equal(readFileSync(victim, "utf8"), "precious");
    } finally {
      m.close();
    }
  });
});

describe("ordering", () => {
  /** Records when each operation starts and ends. */
  const timeline = () => {
    const events: string[] = [];
    const op = (name: string, ms: number) => async () => {
      events.push(`+${name}`);
      await sleep(ms);
      events.push(`-${name}`);
      return name;
    };
    return { events, op };
  };

  test("KeyedMutex: one operation at a time per key, in order; different keys overlap", async () => {
    const m = new KeyedMutex();
    const { events, op } = timeline();
    await Promise.all([m.run("pod1", op("a", 30)), m.run("pod1", op("b", 10)), m.run("pod2", op("c", 10))]);
    assert.ok(events.indexOf("-a") < events.indexOf("+b"), events.join(" "));
    assert.ok(events.indexOf("+c") < events.indexOf("-a"), `pod2 overlaps pod1: ${events.join(" ")}`);
    assert.deepEqual(m.busyKeys, []);
  });

  test("a failed operation does not block the next one of its pod", async () => {
    const m = new KeyedMutex();
    await assert.rejects(
      m.run("p", async () => {
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.equal(await m.run("p", async () => "next"), "next");
  });

  test("Semaphore: at most N at once", async () => {
    const s = new Semaphore(2);
    let active = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        s.run(async () => {
          peak = Math.max(peak, ++active);
          await sleep(10);
          active--;
        }),
      ),
    );
    assert.equal(peak, 2);
  });

  test("ReadWriteLock: readers overlap, a writer runs alone", async () => {
    const l = new ReadWriteLock();
    const { events, op } = timeline();
    await Promise.all([l.read(op("r1", 20)), l.read(op("r2", 20)), l.write(op("w", 10)), l.read(op("r3", 5))]);
    const at = (e: string) => events.indexOf(e);
    assert.ok(at("+r2") < at("-r1"), "readers overlap");
    assert.ok(at("+w") > at("-r1") && at("+w") > at("-r2"), "the writer waits for the readers");
    assert.ok(at("+r3") > at("-w"), "a reader arriving behind a waiting writer waits for it");
  });

  test("PodLocks: the same pod never overlaps, different pods do, GC runs alone (file locks included)", async () => {
    const locks = new PodLocks(tempDir());
    const { events, op } = timeline();
    await Promise.all([
      locks.pod("ns/a", op("a1", 30)),
      locks.pod("ns/a", op("a2", 5)),
      locks.pod("ns/b", op("b1", 10)),
      locks.gc(op("gc", 5)),
      locks.pod("ns/b", op("b2", 5), { removeLockFile: true }),
    ]);
    const at = (e: string) => events.indexOf(e);
    assert.ok(at("-a1") < at("+a2"), events.join(" "));
    assert.ok(at("+b1") < at("-a1"), events.join(" "));
    const gcStart = at("+gc");
    const gcEnd = at("-gc");
    for (const name of ["a1", "a2", "b1", "b2"]) {
      assert.ok(at(`-${name}`) < gcStart || at(`+${name}`) > gcEnd, `${name} does not overlap GC: ${events.join(" ")}`);
    }
  });
});

describe("GC and unreadable cache files", () => {
  test("an empty cache file of a pod not valid is DELeted by its name with the network's config; one of a valid pod stays valid", async () => {
    const work = tempDir();
    const cacheDir = path.join(work, "cache");
    const commandLog = path.join(work, "commands.json");
    const config = { cniVersion: "1.1.0", name: "b", plugins: [{ type: "noop", commandLog, debugFile: `${commandLog}.debug` }] };
    mkdirSync(path.join(cacheDir, "results"), { recursive: true });
    const gone = "a".repeat(64);
    const live = "c".repeat(64);
    writeFileSync(path.join(cacheDir, "results", `b-${gone}-eth0`), "");
    writeFileSync(path.join(cacheDir, "results", `b-${live}-eth0`), '{"kind":"cniCacheV1","contai');
    const confDir = tempDir();
    writeFileSync(path.join(confDir, "10-b.conflist"), JSON.stringify(config));
    const m = new PodNetworkManager({ confDir, pluginDirs: [TEST_BIN], cacheDir, debounceMs: 10 });
    await m.start();
    try {
      const { removed, errors } = await m.gc([live]);
      assert.deepEqual({ removed, errors }, { removed: [{ containerID: gone, network: "b", ifName: "eth0" }], errors: [] });
      assert.deepEqual(readdirSync(path.join(cacheDir, "results")), [`b-${live}-eth0`]);
      const calls = readCommandLog(commandLog);
      assert.deepEqual(
        calls.map((c) => [c.Command, c.CmdArgs.ContainerID]),
        [
          ["DEL", gone],
          ["GC", ""],
        ],
      );
      const gc = JSON.parse(stdinOf(calls[1]!.CmdArgs)) as Record<string, unknown>;
      assert.deepEqual(gc["cni.dev/valid-attachments"], [{ containerID: live, ifname: "eth0" }]);
    } finally {
      m.close();
    }
  });
});
