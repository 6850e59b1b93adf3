/**
 * docs/plugin-author.md's "What fails when": every row's claims are tests. Its compile-time message must be the
 * `// expect:` of the type test it names (checked.test.ts runs those under TypeScript 5.9 and 7); its run-time
 * answer is what a JavaScript plugin (no compiler) making the mistake gets from skel, run here with Node.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { ROOT } from "#testing/harness.js";

const GUIDE = readFileSync(path.join(ROOT, "docs/plugin-author.md"), "utf8");
const skel = pathToFileURL(path.join(ROOT, "dist-test/skel/index.js")).href;
const spec = pathToFileURL(path.join(ROOT, "dist-test/spec/index.js")).href;

/** Each row's mistake as a JavaScript plugin: its handlers and the verb it is called with. */
const PLUGINS: Record<string, { handlers: string; command?: string; env?: Record<string, string> }> = {
  "a misspelled result key": {
    handlers: `{ add: () => ({ cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24", gatway: "10.0.0.1" }] }), del() {} }`,
  },
  "a key of another version's shape": { handlers: `{ add: () => ({ cniVersion: "0.2.0", ips: [{ address: "10.0.0.2/24" }] }), del() {} }` },
  "ADD returns nothing": { handlers: `{ add: async () => {}, del() {} }` },
  "ADD returns a string that is not JSON": { handlers: `{ add: () => "configured eth0", del() {} }` },
  "no `del` handler": { handlers: `{ add: () => "{}" }`, command: "DEL" },
  "no `check` handler, declaring 0.4.0 or later": { handlers: `{ add: () => "{}", del() {} }`, command: "CHECK" },
  'a version that is not one (`"1.0"`)': { handlers: `{ add: () => ({ cniVersion: "1.0", ips: [] }), del() {} }` },
  "a bug (`undefined.subnet`)": {
    handlers: `{ add: (args) => { const conf = undefined; return conf.subnet; }, del() {} }`,
    env: { TSCNI_DEBUG: "1" },
  },
};

/** The rows of the guide's table: mistake, compile-time cell, run-time cell. */
function rows(): string[][] {
  const section = GUIDE.slice(GUIDE.indexOf("## What fails when"));
  return section
    .split("\n")
    .filter((l) => l.startsWith("| ") && !l.startsWith("| mistake"))
    .map((l) =>
      l
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}

const code = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

test("the guide's table has a row per mistake this test knows", () => {
  assert.deepEqual(
    rows()
      .map((r) => r[0])
      .sort(),
    [...Object.keys(PLUGINS), "a verb that is not one (`chek`)"].sort(),
  );
});

test("each compile-time claim is the expect line of the type test it names", () => {
  for (const [mistake, compile] of rows()) {
    const fixture = /\((fail-[\w-]+\.ts)\)/.exec(compile!)?.[1];
    if (!fixture) {
      assert.match(compile!, /^—/, `${mistake}: a fixture, or "—"`);
      continue;
    }
    const expect = readFileSync(path.join(ROOT, "src/skel/type-tests", fixture), "utf8").match(/^\/\/ expect: (.*)$/m)?.[1] ?? "";
    for (const part of code(compile!)) {
      const inExpect = expect.split(" ... ").some((p) => p.includes(part) || part.includes(p));
      assert.ok(inExpect, `${mistake}: "${part}" is in ${fixture}'s expect line (${expect})`);
    }
  }
});

test("each run-time claim is what skel answers a JavaScript plugin making the mistake", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-author-"));
  try {
    for (const [mistake, , runtime] of rows()) {
      const plugin = PLUGINS[mistake!];
      if (!plugin) continue; // (the unknown verb: never called)
      const file = path.join(dir, "plugin.mjs");
      writeFileSync(
        file,
        `import { pluginMain } from ${JSON.stringify(skel)};\nimport { VersionInfo } from ${JSON.stringify(spec)};\n` +
          `await pluginMain(${plugin.handlers}, new VersionInfo(["0.2.0", "0.4.0", "1.0.0"]), "a mistaken plugin");\n`,
      );
      const command = plugin.command ?? "ADD";
      const r = spawnSync(process.execPath, [file], {
        input: JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "mistaken" }),
        encoding: "utf8",
        env: {
          PATH: process.env["PATH"],
          CNI_COMMAND: command,
          CNI_CONTAINERID: "c1",
          CNI_NETNS: "/proc/1/ns/net",
          CNI_IFNAME: "eth0",
          CNI_PATH: "/nonexistent",
          ...plugin.env,
        },
      });
      assert.equal(r.status, 1, `${mistake}: exit 1 (${r.stdout}${r.stderr})`);
      const answer = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.equal(answer.code, 999, `${mistake}: ${r.stdout}`);
      // (the bug's row names the setting that shows its stack, checked below, not a message)
      const [first] = plugin.env ? [] : code(runtime!);
      if (first) assert.ok(answer.msg.includes(first), `${mistake}: "${first}" in ${JSON.stringify(answer.msg)}`);
      if (plugin.env?.["TSCNI_DEBUG"]) {
        assert.match(answer.msg, /Cannot read properties of undefined \(reading 'subnet'\)/);
        assert.match(r.stderr, /^TypeError: Cannot read properties of undefined \(reading 'subnet'\)\n\s+at add \(file:/, "the stack on stderr");
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
