/**
 * Tool lookup on PATH: empty and relative entries are skipped (where Go's exec.LookPath returns exec.ErrDot), so a
 * program named like a tool in a relative PATH directory is never run, whether by runProgram, by a tool that runs
 * another by name (the PATH it is given), or by flock(1) under Node.
 */

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { useTempDirs } from "#testing/temp.js";
import { runProgram } from "./exec.js";
import { lockFile } from "./flock.js";
import { findTool, SYSTEM_DIRS, toolSearchPath } from "./tool-path.js";

const tempDir = useTempDirs("tscni-tool-path-");

/** Writes an executable shell script `dir/name` that records its run in `dir/ran-<name>`. */
function fakeTool(dir: string, name: string, body = "exit 0"): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\necho "$0" > "${path.join(dir, `ran-${name}`)}"\n${body}\n`, { mode: 0o755 });
  return file;
}

/** The tests below change PATH and the working directory; both are restored after the file. */
const savedPath = process.env["PATH"];
const savedCwd = process.cwd();
after(() => {
  process.env["PATH"] = savedPath;
  process.chdir(savedCwd);
});

describe("toolSearchPath", () => {
  test("keeps absolute entries in order, drops empty and relative ones, then adds the system directories", () => {
    assert.deepEqual(toolSearchPath(":/opt/a:.:bin:./x:../y::/opt/b:"), ["/opt/a", "/opt/b", ...SYSTEM_DIRS]);
  });
  test("a system directory PATH names is not repeated, and keeps PATH's place", () => {
    assert.deepEqual(toolSearchPath("/usr/bin:/opt/a"), ["/usr/bin", "/opt/a", ...SYSTEM_DIRS.filter((d) => d !== "/usr/bin")]);
  });
  test("no PATH: the system directories", () => {
    assert.deepEqual(toolSearchPath(""), [...SYSTEM_DIRS]);
  });
});

describe("findTool", () => {
  test("a tool in a relative directory is not found, the one in an absolute directory is", () => {
    const work = tempDir();
    process.chdir(work);
    fakeTool(path.join(work, "rel"), "tscni-find-1");
    assert.equal(findTool("tscni-find-1", toolSearchPath("rel:.")), undefined);
    const abs = fakeTool(path.join(work, "abs"), "tscni-find-1");
    assert.equal(findTool("tscni-find-1", toolSearchPath(`rel:${path.join(work, "abs")}`)), abs);
  });
  test("a file that is not executable, or a directory, is passed over", () => {
    const work = tempDir();
    fs.writeFileSync(path.join(work, "tscni-find-2"), "", { mode: 0o644 });
    fs.mkdirSync(path.join(work, "tscni-find-3"));
    assert.equal(findTool("tscni-find-2", [work]), undefined);
    assert.equal(findTool("tscni-find-3", [work]), undefined);
  });
  test("a name with a slash is a file, returned as given", () => {
    assert.equal(findTool("./x/ip", []), "./x/ip");
  });
});

describe("runProgram and flock(1) never take a tool from a relative PATH entry", { concurrency: false }, () => {
  test("a program named like the tool in a relative PATH directory is not run", async () => {
    const work = tempDir();
    process.chdir(work);
    const rel = path.join(work, "bin");
    fakeTool(rel, "tscni-tool-a");
    process.env["PATH"] = `bin:.:${savedPath ?? ""}`;
    await assert.rejects(runProgram("tscni-tool-a", []), (e: Error) => {
      assert.match(e.message, /^cannot run tscni-tool-a: no executable tscni-tool-a in \//);
      return true;
    });
    assert.equal(fs.existsSync(path.join(rel, "ran-tscni-tool-a")), false);
    const abs = path.join(work, "abs");
    fakeTool(abs, "tscni-tool-a", "echo absolute");
    process.env["PATH"] = `bin:${abs}`;
    assert.equal((await runProgram("tscni-tool-a", [])).stdout, "absolute\n");
    assert.equal(fs.existsSync(path.join(rel, "ran-tscni-tool-a")), false);
    assert.ok(fs.existsSync(path.join(abs, "ran-tscni-tool-a")));
  });

  test("`ip` in a relative PATH directory is not run (the system's is)", async (t) => {
    if (!findTool("ip")) return t.skip("no ip on this machine");
    const work = tempDir();
    process.chdir(work);
    fakeTool(path.join(work, "sbin"), "ip", "exit 3");
    process.env["PATH"] = `sbin:${savedPath ?? ""}`;
    const { stdout } = await runProgram("ip", ["-V"]);
    assert.match(stdout, /ip(route2)?/);
    assert.equal(fs.existsSync(path.join(work, "sbin", "ran-ip")), false);
  });

  test("a tool's own PATH has no relative entries (nsenter runs ip by name)", async () => {
    process.env["PATH"] = `bin::.:/opt/tscni-none:${savedPath ?? ""}`;
    const { stdout } = await runProgram("sh", ["-c", 'printf %s "$PATH"']);
    const entries = stdout.split(":");
    assert.ok(entries.includes("/opt/tscni-none"), stdout);
    assert.ok(
      entries.every((d) => d.startsWith("/")),
      stdout,
    );
  });

  test("flock(1) (the Node fallback) in a relative PATH directory is not run", async () => {
    const work = tempDir();
    process.chdir(work);
    fakeTool(path.join(work, "bin"), "flock");
    process.env["PATH"] = "bin";
    const held = await lockFile(path.join(work, "lock"));
    held.release({ remove: true });
    assert.equal(fs.existsSync(path.join(work, "bin", "ran-flock")), false);
  });
});
