/**
 * cnitool on bad input: every case fails with a non-zero exit and a message that names the file, key or value,
 * and never a stack trace. Runs the shipped executable with the test plugins.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { CNITOOL, TEST_BIN } from "#testing/harness.js";
import { useTempDirs } from "#testing/temp.js";

const tempDir = useTempDirs();

function cnitool(args: string[], files: Record<string, string>, env: Record<string, string> = {}) {
  const dir = tempDir();
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  const r = spawnSync(CNITOOL, ["--cache-dir", path.join(dir, "cache"), ...args], {
    env: { PATH: process.env["PATH"], NETCONFPATH: dir, CNI_PATH: TEST_BIN, ...env },
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, dir };
}

const noStackTrace = (text: string) => assert.doesNotMatch(text, /\n\s+at .*:\d+/, "no stack trace");

describe("cnitool rejects bad input clearly", () => {
  const cases: Array<{ name: string; files: Record<string, string>; net?: string; env?: Record<string, string>; expect: (dir: string) => RegExp }> = [
    {
      name: "malformed JSON names the file",
      files: { "10-bad.conflist": '{"name": "n", "plugins": [' },
      expect: (d) => new RegExp(`error parsing configuration list: unexpected end of JSON input; in file ${d}/10-bad.conflist`),
    },
    {
      name: "a conflist without name",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","plugins":[{"type":"noop"}]}' },
      expect: (d) => new RegExp(`error parsing configuration list: no name; in file ${d}/10-a.conflist`),
    },
    { name: "a conflist without plugins", files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n"}' }, expect: () => /no plugin configs found/ },
    {
      name: "an empty plugins list",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n","plugins":[]}' },
      expect: () => /no plugins in list/,
    },
    {
      name: "a plugin without type",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n","plugins":[{"mtu":1}]}' },
      expect: () => /failed to parse plugin config 0: error parsing configuration: missing 'type'/,
    },
    {
      name: "a type with a path separator is never executed",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n","plugins":[{"type":"../test-bin/noop"}]}' },
      expect: () => /invalid plugin name: \.\.\/test-bin\/noop/,
    },
    {
      name: "a type of ..",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n","plugins":[{"type":".."}]}' },
      expect: () => /invalid plugin name: \.\./,
    },
    {
      name: "a plugin that is not in CNI_PATH",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n","plugins":[{"type":"nope"}]}' },
      expect: () => new RegExp(`failed to find plugin "nope" in path \\[${TEST_BIN}\\]`),
    },
    {
      name: "an unsupported cniVersion (a plugin that ignores it)",
      files: { "10-a.conflist": '{"cniVersion":"9.9.9","name":"n","plugins":[{"type":"legacy010"}]}' },
      expect: () => /plugin type="legacy010" failed \(add\): unsupported CNI result version "9\.9\.9"/,
    },
    {
      name: "an unsupported cniVersion (plugin says so)",
      files: { "10-a.conflist": '{"cniVersion":"9.9.9","name":"n","plugins":[{"type":"sleep"}]}' },
      expect: () => /incompatible CNI versions; config is "9\.9\.9", plugin supports/,
    },
    {
      name: "a bad disableCheck",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"n","disableCheck":"maybe","plugins":[{"type":"noop"}]}' },
      expect: () => /invalid value "maybe" for disableCheck/,
    },
    {
      name: "an invalid network name",
      files: { "10-a.conflist": '{"cniVersion":"1.1.0","name":"bad name","plugins":[{"type":"noop"}]}' },
      net: "bad name",
      expect: () => /invalid characters found in network name; bad name/,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = cnitool(["add", c.net ?? "n", "/run/netns/tscni-none"], c.files, c.env);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, c.expect(r.dir));
      assert.equal(r.stdout, "");
      noStackTrace(r.stderr);
    });
  }
});

describe("cnitool --help on every command", () => {
  for (const cmd of ["add", "check", "del", "gc", "status", "list", "validate", "version", "install"]) {
    test(cmd, () => {
      const r = spawnSync(CNITOOL, [cmd, "--help"], { encoding: "utf8" });
      assert.equal(r.status, 0);
      assert.match(r.stdout, new RegExp(`Usage: cnitool ${cmd}`));
    });
  }
});
