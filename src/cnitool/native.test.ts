/** Which program a plugin directory runs, from its files: the Node build's link, or a native program of some architecture. */

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";
import { describeDir, describeSelf, elfArch, formatProgramInfo, platformPackageName } from "./native.js";

/** An ELF header's first 20 bytes for `machine` (little-endian, 64-bit), which is all elfArch reads. */
const elfHeader = (machine: number) => {
  const b = Buffer.alloc(64);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2;
  b[5] = 1;
  b.writeUInt16LE(machine, 18);
  return b;
};

test("elfArch names the architecture in Node's words, and nothing for other files", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-native-"));
  try {
    for (const [machine, arch] of [
      [62, "x64"],
      [183, "arm64"],
      [9999, "elf-machine-9999"],
    ] as const) {
      writeFileSync(path.join(dir, "f"), elfHeader(machine));
      assert.equal(elfArch(path.join(dir, "f")), arch);
    }
    writeFileSync(path.join(dir, "script"), "#!/bin/sh\n");
    assert.equal(elfArch(path.join(dir, "script")), undefined);
    assert.equal(elfArch(path.join(dir, "none")), undefined);
    assert.equal(elfArch(process.execPath), process.arch, "node itself");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("describeDir: the Node build a link names (present or not), a native program of another architecture, nothing", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-native-"));
  try {
    const nodeDir = path.join(dir, "node");
    const entry = path.join(ROOT, "dist/cli/main.js");
    mkdirSync(nodeDir);
    symlinkSync(entry, path.join(nodeDir, "tscni"));
    const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
    assert.deepEqual(describeDir(nodeDir), { kind: "node", path: entry, present: true, version });
    assert.match(formatProgramInfo(describeDir(nodeDir)), /the Node build; every plugin call starts Node\nprogram: .*dist\/cli\/main\.js\n$/);

    const gone = path.join(dir, "gone");
    mkdirSync(gone);
    symlinkSync("/nonexistent/tscni/dist/cli/main.js", path.join(gone, "tscni"));
    assert.equal(describeDir(gone).present, false);
    assert.match(formatProgramInfo(describeDir(gone)), /missing: these plugins cannot run/);

    const foreign = process.arch === "arm64" ? ([62, "x64"] as const) : ([183, "arm64"] as const);
    const arm = path.join(dir, "arm");
    mkdirSync(arm);
    writeFileSync(path.join(arm, "tscni-js"), elfHeader(foreign[0]), { mode: 0o755 });
    writeFileSync(path.join(arm, "tscni"), elfHeader(foreign[0]), { mode: 0o755 });
    const info = describeDir(arm);
    assert.deepEqual(info, {
      kind: "native",
      path: path.join(arm, "tscni-js"),
      platform: "linux",
      arch: foreign[1],
      launcher: { path: path.join(arm, "tscni") },
    });
    assert.match(formatProgramInfo(info), new RegExp(`native program for linux-${foreign[1]}, not runnable here, build unknown`));

    mkdirSync(path.join(dir, "empty"));
    assert.throws(() => describeDir(path.join(dir, "empty")), /holds no tscni program/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("describeSelf under Node: the Node build, with the package's version", () => {
  const info = describeSelf();
  assert.equal(info.kind, "node");
  assert.ok(existsSync(info.path), info.path);
  assert.match(info.version ?? "", /^\d+\.\d+\.\d+/);
});

test("the platform package's name is npm's platform and architecture", () => {
  assert.equal(platformPackageName("linux", "x64"), "@tscni/linux-x64");
  assert.equal(platformPackageName("linux", "arm64"), "@tscni/linux-arm64");
});
