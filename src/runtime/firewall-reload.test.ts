/**
 * The firewall reload without root: the walk over the cache (order, which attachments are this namespace's, a
 * broken entry reported while the others go on) with chains whose plugins change nothing on the host. What the
 * plugins' restorers put back is tested as root in src/integration/reload.test.ts.
 */

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { plantReloadWalk } from "#testing/cache-entries.js";
import { useTempDirs } from "#testing/temp.js";
import { lostFirewallState, reloadFirewall } from "./firewall-reload.js";

const tempDir = useTempDirs("tscni-reload-");

describe("firewall reload (the walk)", () => {
  test("every attachment in the order it was added; a broken one fails alone; others' are not this namespace's", async () => {
    const results = await reloadFirewall({ cacheDir: plantReloadWalk(tempDir()), env: {} });
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

  test("nothing cached: nothing to do, and no cache directory is made", async () => {
    const cacheDir = path.join(tempDir(), "none");
    assert.deepEqual(await reloadFirewall({ cacheDir, env: {} }), []);
    assert.ok(!fs.existsSync(cacheDir));
  });

  test("the cheap look finds nothing lost where no attachment left firewall state, and skips what it cannot read", async () => {
    assert.deepEqual(await lostFirewallState({ cacheDir: plantReloadWalk(tempDir()), env: {} }), []);
  });
});
