/**
 * The catalog (programs.ts, its versions from the plugins' manifests) is the one source of each plugin's versions
 * and about text: a plugin module exports its handlers and config reader only, and the registry composes the
 * definition skel runs from both.
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";
import { aboutText, PLUGIN_VERSIONS } from "./catalog.js";
import { PLUGINS } from "./registry.js";

for (const [name, entry] of Object.entries(PLUGINS)) {
  test(`${name}: the definition carries the catalog's versions and about text`, async () => {
    const definition = await entry.load();
    assert.deepEqual([...definition.versionInfo.supportedVersions], [...PLUGIN_VERSIONS[name]!]);
    assert.deepEqual([...entry.versions], [...PLUGIN_VERSIONS[name]!]);
    assert.equal(definition.about, aboutText(name));
    assert.equal(typeof definition.funcs, "object");
  });
}

test("no plugin module declares versions or an about text of its own", () => {
  const plugins = path.join(ROOT, "src", "plugins");
  const declaring = readdirSync(plugins, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith("main.ts"))
    .filter((f) => /\bversionInfo\b|\bnew VersionInfo\(|plugin \(tscni\)/.test(readFileSync(path.join(plugins, f), "utf8")));
  assert.deepEqual(declaring, []);
});
