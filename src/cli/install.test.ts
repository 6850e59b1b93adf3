/** `cnitool install`: the binary and its links land in the bin dir; other files are kept unless --force. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { installPlugins } from "./install.js";
import { PROGRAM_NAMES } from "./programs.js";

test("install links every plugin to the copied binary and respects foreign files", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-install-"));
  try {
    const source = path.join(dir, "built-binary");
    writeFileSync(source, "#!/bin/sh\necho fake\n");
    const bin = path.join(dir, "bin");
    installPlugins(bin, { source });
    writeFileSync(path.join(bin, "mine"), "");
    assert.equal(readFileSync(path.join(bin, "tscni"), "utf8"), "#!/bin/sh\necho fake\n");
    const plugins = PROGRAM_NAMES;
    for (const name of plugins) assert.equal(readlinkSync(path.join(bin, name)), "tscni", name);
    assert.equal(existsSync(path.join(bin, "noop")), false, "test plugins are not installed");

    // A foreign plugin of the same name survives, unless forced.
    rmSync(path.join(bin, "bridge"));
    writeFileSync(path.join(bin, "bridge"), "foreign");
    const second = installPlugins(bin, { source });
    assert.deepEqual(second.skipped.map((s) => s.name), ["bridge"]);
    assert.equal(readFileSync(path.join(bin, "bridge"), "utf8"), "foreign");
    assert.ok(second.replaced.includes("host-local"), "our own links are refreshed");
    const forced = installPlugins(bin, { source, force: true });
    assert.ok(forced.replaced.includes("bridge"));
    assert.ok(lstatSync(path.join(bin, "bridge")).isSymbolicLink());
    assert.equal(readFileSync(path.join(bin, "mine"), "utf8"), "", "unrelated files untouched");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
