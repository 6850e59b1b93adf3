/**
 * `cnitool reload` without root: the walk over the cache (order, which attachments are this namespace's, a
 * broken entry reported while the others go on) with chains whose plugins change nothing on the host. What the
 * plugins' restorers put back is tested as root in src/integration/reload.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { useTempDirs } from "#testing/temp.js";
import { runCnitool } from "./cnitool.js";
import { lostFirewallState, reloadFirewall } from "./reload.js";

const tempDir = useTempDirs("tscni-reload-");

/** Plants a cniCacheV1 entry (config as given: an object, or raw text) added at `addedAt` (seconds). */
function plant(cacheDir: string, network: string, containerID: string, config: object | string, result: object, addedAt: number, netns?: string) {
  const file = path.join(cacheDir, "results", `${network}-${containerID}-eth0`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const text = typeof config === "string" ? config : JSON.stringify(config);
  fs.writeFileSync(
    file,
    JSON.stringify({
      kind: "cniCacheV1",
      containerId: containerID,
      config: Buffer.from(text).toString("base64"),
      ifName: "eth0",
      networkName: network,
      ...(netns ? { netns } : {}),
      result,
    }),
  );
  fs.utimesSync(file, addedAt, addedAt);
}

/** A bridge chain without masquerading: its restorer has nothing to do. */
const bridgeList = (name: string) => ({
  cniVersion: "1.0.0",
  name,
  plugins: [{ type: "bridge", bridge: "br-x", ipam: { type: "host-local", subnet: "10.9.0.0/24" } }, { type: "tuning" }],
});
/** A result whose host-side link is `hostLink` (`lo` is always here). */
const bridgeResult = (hostLink: string) => ({
  cniVersion: "1.0.0",
  interfaces: [{ name: hostLink }, { name: "eth0", sandbox: "/run/netns/x" }],
  ips: [{ address: "10.9.0.2/24", interface: 1 }],
});

function fixture(): string {
  const cacheDir = tempDir();
  plant(cacheDir, "b", "second", bridgeList("b"), bridgeResult("lo"), 2000);
  plant(
    cacheDir,
    "a",
    "third",
    { cniVersion: "1.0.0", name: "a", plugins: [{ type: "tuning" }] },
    { cniVersion: "1.0.0", ips: [{ address: "10.9.1.2/24" }] },
    3000,
  );
  plant(cacheDir, "c", "first", "{not json", bridgeResult("lo"), 1000);
  plant(cacheDir, "d", "gone", bridgeList("d"), bridgeResult("tscni-absent0"), 4000);
  plant(
    cacheDir,
    "e",
    "gonens",
    { cniVersion: "1.0.0", name: "e", type: "tuning" },
    { cniVersion: "1.0.0", ips: [{ address: "10.9.2.2/24" }] },
    5000,
    "/run/netns/tscni-absent-ns",
  );
  return cacheDir;
}

describe("cnitool reload (the walk)", () => {
  test("every attachment in the order it was added; a broken one fails alone; others' are not this namespace's", async () => {
    const results = await reloadFirewall({ cacheDir: fixture(), env: {} });
    assert.deepEqual(
      results.map((r) => [r.attachment, r.status]),
      [
        ["c/first/eth0", "failed"],
        ["b/second/eth0", "complete"],
        ["a/third/eth0", "complete"],
        ["d/gone/eth0", "skipped"],
        ["e/gonens/eth0", "skipped"],
      ],
    );
    assert.match(results[0]!.detail, /^its cached config cannot be read: /);
    assert.equal(results[1]!.detail, "");
    assert.equal(results[2]!.detail, "no plugin of its chain leaves host firewall state");
    assert.match(results[3]!.detail, /its host link tscni-absent0 is not in this network namespace/);
    assert.match(results[4]!.detail, /its network namespace \/run\/netns\/tscni-absent-ns is gone/);
  });

  test("the command: a line per attachment, failures on stderr, exit status 1 naming how many", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCnitool(["reload", "--cache-dir", fixture()], {
      env: {},
      cwd: "/",
      stdout: (s) => out.push(s),
      stderr: (s) => err.push(s),
    });
    assert.equal(code, 1);
    assert.match(
      err.join(""),
      /^failed {4}c\/first\/eth0 {2}its cached config cannot be read: .*\nError: 1 of 5 attachments could not be restored \(see above\)\n$/s,
    );
    assert.deepEqual(
      out
        .join("")
        .split("\n")
        .map((l) => l.split(/\s+/).slice(0, 2).join(" ")),
      ["complete b/second/eth0", "complete a/third/eth0", "skipped d/gone/eth0", "skipped e/gonens/eth0", ""],
    );
  });

  test("nothing cached: nothing to do, and no cache directory is made", async () => {
    const cacheDir = path.join(tempDir(), "none");
    assert.deepEqual(await reloadFirewall({ cacheDir, env: {} }), []);
    assert.ok(!fs.existsSync(cacheDir));
  });

  test("the cheap look finds nothing lost where no attachment left firewall state, and skips what it cannot read", async () => {
    assert.deepEqual(await lostFirewallState({ cacheDir: fixture(), env: {} }), []);
  });
});
