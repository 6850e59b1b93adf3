/**
 * docs/api is generated from the doc comments of the public faces (`npm run docs`, TypeDoc), and every exported
 * symbol has a doc comment: the generator treats an undocumented one as an error. This test generates the
 * reference afresh and requires docs/api to be exactly that, so the committed reference cannot go stale.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name]))
    .sort();

test("docs/api is what `npm run docs` generates, and every exported symbol is documented", () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "tscni-docs-"));
  try {
    const r = spawnSync(process.execPath, [path.join(ROOT, "node_modules/typedoc/bin/typedoc"), "--out", out], { cwd: ROOT, encoding: "utf8" });
    assert.equal(r.status, 0, `typedoc failed (an undocumented export?):\n${r.stdout}${r.stderr}`);
    const committed = path.join(ROOT, "docs/api");
    assert.deepEqual(files(out), files(committed), "the same pages");
    for (const f of files(out)) {
      assert.equal(
        readFileSync(path.join(committed, f), "utf8"),
        readFileSync(path.join(out, f), "utf8"),
        `docs/api/${f} is stale: run npm run docs`,
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
