/**
 * The plugin's start-up stays lean: what `dist/bin/dhcp` loads for a CNI call (main.js and what it imports)
 * holds none of the daemon (the DHCP client, the leases, the FFI sockets, the flags, the packet codec), which the
 * registry loads only for `dhcp daemon` (that no plugin loads node:net at start-up is src/startup.test.ts's rule).
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";
import { PLUGINS } from "../../registry.js";

/** Every module a built module imports, transitively (relative imports and `#folder/` aliases: the product's own). */
function closure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const m of readFileSync(file, "utf8").matchAll(/(?:\bfrom|\bimport\s*\()\s*["']((?:\.{1,2}|#[\w-]+)\/[^"']+)["']/g)) {
    const spec = m[1]!;
    closure(spec.startsWith("#") ? path.join(ROOT, "dist", spec.slice(1)) : path.resolve(path.dirname(file), spec), seen);
  }
  return seen;
}

test("a dhcp plugin call loads none of the daemon's code", () => {
  const dir = path.join(ROOT, "dist/plugins/ipam/dhcp");
  const loaded = [...closure(path.join(dir, "main.js"))]
    .filter((f) => f.startsWith(dir))
    .map((f) => path.basename(f))
    .sort();
  assert.deepEqual(loaded, ["config.js", "main.js", "option-codes.js", "protocol.js"]);
  assert.ok(PLUGINS["dhcp"]?.commands?.["daemon"], "`dhcp daemon` is a subcommand with its own loader");
});
