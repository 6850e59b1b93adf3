/**
 * Code that runs inside the shared resident server (plugins, net, skel) never reads the process's environment,
 * ends the process or changes its working directory: one call's environment is its CmdArgs, and the server's
 * process serves every call at once. The few places that may, and why, are listed here; an entry no longer needed
 * fails too.
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";

const FOLDERS = ["plugins", "net", "skel"];
const FORBIDDEN = /\bprocess\s*\.\s*(env|exit|exitCode|chdir)\b/g;

/** file (under src/) -> what it may touch, and why. */
const ALLOWED: Record<string, { uses: string[]; why: string }> = {
  "plugins/ipam/cluster-ipam/admin.ts": { uses: ["env"], why: "`cluster-ipam admin` is a process of its own, never run in the server" },
  "plugins/ipam/dhcp/daemon.ts": { uses: ["exit", "exitCode"], why: "`dhcp daemon` is a process of its own, never run in the server" },
  "net/link/rtnetlink-backend.ts": {
    uses: ["env"],
    why: "TSCNI_NETLINK=0 switches the netlink path off for the whole process (the server's own environment)",
  },
  "skel/skel.ts": { uses: ["env", "exitCode"], why: "pluginMain is exec mode's entry: the process is the call" },
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sources(full) : e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** What each file touches, comments left out. */
function uses(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const file of FOLDERS.flatMap((f) => sources(path.join(ROOT, "src", f)))) {
    const code = readFileSync(file, "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/^\s*\/\/.*$/gm, "");
    const words = new Set([...code.matchAll(FORBIDDEN)].map((m) => m[1]!));
    if (words.size) found.set(path.relative(path.join(ROOT, "src"), file), words);
  }
  return found;
}

test("plugins, net and skel leave process.env, process.exit and process.chdir to the process's own entry", () => {
  const found = uses();
  const problems = [...found].flatMap(([file, words]) =>
    [...words].filter((w) => !ALLOWED[file]?.uses.includes(w)).map((w) => `${file} uses process.${w}`),
  );
  assert.deepEqual(problems, []);
  for (const [file, { uses: allowed }] of Object.entries(ALLOWED)) {
    for (const w of allowed) assert.ok(found.get(file)?.has(w), `${file} is allowed process.${w} but no longer uses it`);
  }
});
