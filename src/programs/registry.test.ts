/**
 * The registry answers VERSION and "about" without loading plugins (and the C launcher's table is generated from
 * it), so it must say exactly what each plugin itself says.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { aboutText, PLUGINS } from "./registry.js";
import type { PluginDefinition } from "../skel/skel.js";

for (const [name, entry] of Object.entries(PLUGINS)) {
  test(`${name}: registry versions and about match the plugin`, async () => {
    const mod = (await entry.load()) as { plugin?: PluginDefinition };
    assert.ok(mod.plugin, `${name} exports its PluginDefinition as \`plugin\``);
    assert.deepEqual([...mod.plugin.versionInfo.supportedVersions], [...entry.versions]);
    assert.equal(mod.plugin.about, aboutText(name));
  });
}
