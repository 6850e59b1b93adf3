/** `cnitool reload` without root: what it prints and its exit status, over the walk's cache (runtime/firewall-reload.test.ts). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { plantReloadWalk } from "#testing/cache-entries.js";
import { useTempDirs } from "#testing/temp.js";
import { runCnitool } from "./cnitool.js";

const tempDir = useTempDirs("tscni-reload-");

test("cnitool reload: a line per attachment, failures on stderr, exit status 1 naming how many", async () => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCnitool(["reload", "--cache-dir", plantReloadWalk(tempDir())], {
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
