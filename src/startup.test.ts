/**
 * The start-up rule (docs/startup.md), kept over the import graph of the built modules: what a plugin call loads
 * before any of its code runs is what the entry (cli/main.js) and the plugin's main module import statically,
 * transitively. The entry's own graph imports no node builtin at all (a call refused by skel's checks loads nothing
 * more); a plugin's graph imports none of FORBIDDEN, unless ALLOWED names the module, the builtin and why. Dynamic
 * imports and process.getBuiltinModule are the lazy loads the rule asks for, so they are not followed.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { PLUGIN_VERSIONS } from "#plugins/catalog.js";

/** The built tree these tests run from (dist-test/: the same modules the product build compiles). */
const BUILT = path.dirname(fileURLToPath(import.meta.url));

/** Builtins whose load costs every call of a plugin that imports them at top level (docs/startup.md has the figures). */
const FORBIDDEN = ["node:fs/promises", "node:crypto", "node:path", "node:child_process", "node:net", "node:http", "node:https", "node:tls"];

/**
 * Modules on a plugin's start path allowed a forbidden builtin at top level: module (relative to the built tree) ->
 * builtin -> why it needs it on every call. None does today; an entry here must say why a lazy load will not do.
 */
const ALLOWED: Record<string, Record<string, string>> = {};

/** The specifiers a module imports or re-exports statically (`import ... from`, `import "..."`, `export ... from`). */
function staticSpecifiers(text: string): string[] {
  const from = [...text.matchAll(/^(?:import|export)\s+[\w$*{}\s,]*?\s*from\s*["']([^"']+)["']/gm)].map((m) => m[1]!);
  const bare = [...text.matchAll(/^import\s*["']([^"']+)["']/gm)].map((m) => m[1]!);
  return [...from, ...bare];
}

/** Every module `entry` loads statically, transitively, with the node builtins each one imports. */
function staticGraph(entry: string, read: (file: string) => string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const visit = (file: string) => {
    if (graph.has(file)) return;
    const specifiers = staticSpecifiers(read(file));
    graph.set(
      file,
      specifiers.filter((s) => s.startsWith("node:")),
    );
    for (const s of specifiers) {
      if (s.startsWith(".")) visit(path.resolve(path.dirname(file), s));
      else if (s.startsWith("#")) visit(path.join(BUILT, s.slice(1))); // an alias of package.json "imports"
    }
  };
  visit(entry);
  return graph;
}

/** The plugins' main modules: what the manifests the registry lists load (dynamically), by plugin type. */
function pluginMains(read: (file: string) => string): Map<string, string> {
  const list = path.join(BUILT, "plugins/manifests.js");
  const manifests = [...read(list).matchAll(/\bfrom\s*["'](\.\/[^"']+\/manifest\.js)["']/g)].map((m) => path.resolve(path.dirname(list), m[1]!));
  return new Map(
    manifests.flatMap((file) => {
      const main = /\bload:\s*\(\)\s*=>\s*import\(\s*["']\.\/main\.js["']\s*\)/.test(read(file));
      return main ? [[path.basename(path.dirname(file)), path.join(path.dirname(file), "main.js")] as [string, string]] : [];
    }),
  );
}

/** Every way the start paths break the rule (empty when they keep it). */
function startupViolations(entry: string, mains: ReadonlyMap<string, string>, read: (file: string) => string): string[] {
  const rel = (file: string) => path.relative(BUILT, file);
  const problems: string[] = [];
  for (const [file, builtins] of staticGraph(entry, read)) {
    for (const b of builtins) problems.push(`${rel(entry)} loads ${b} before skel's checks (through ${rel(file)})`);
  }
  for (const [name, main] of mains) {
    for (const [file, builtins] of staticGraph(main, read)) {
      for (const b of builtins) {
        if (FORBIDDEN.includes(b) && !ALLOWED[rel(file)]?.[b]) problems.push(`${name}: ${rel(file)} imports ${b} at top level`);
      }
    }
  }
  return problems;
}

const readBuilt = (file: string) => readFileSync(file, "utf8");

test("a plugin call's start path loads no builtin before skel's checks, and no costly one at top level", () => {
  const mains = pluginMains(readBuilt);
  assert.deepEqual([...mains.keys()].sort(), Object.keys(PLUGIN_VERSIONS).sort(), "every plugin's main module is found through the registry");
  assert.deepEqual(startupViolations(path.join(BUILT, "cli/main.js"), mains, readBuilt), []);
});

test("every allow-list entry names a module on some start path that imports the builtin", () => {
  const mains = pluginMains(readBuilt);
  const onPath = new Map<string, string[]>();
  for (const main of mains.values()) for (const [file, builtins] of staticGraph(main, readBuilt)) onPath.set(path.relative(BUILT, file), builtins);
  for (const [file, builtins] of Object.entries(ALLOWED)) {
    for (const b of Object.keys(builtins)) assert.ok(onPath.get(file)?.includes(b), `${file} is allowed ${b} but does not import it on a start path`);
  }
});

test("the check itself catches a builtin before skel's checks and a costly one in a plugin's graph, and no lazy load", () => {
  const fake = new Map<string, string>(
    [
      ["cli/main.js", 'import { a } from "../sys/a.js";\nconst later = await import("node:fs");'],
      ["sys/a.js", 'import { readSync } from "node:fs";\nexport const a = 1;'],
      ["plugins/x/main.js", 'import * as b from "./b.js";\nexport { c } from "./c.js";'],
      ["plugins/x/b.js", 'import {\n  spawn,\n} from "node:child_process";\nconst { createHash } = process.getBuiltinModule("node:crypto");'],
      ["plugins/x/c.js", 'import "node:path";\nimport { readFileSync } from "node:fs";\nexport const c = 1;'],
    ].map(([f, text]) => [path.join(BUILT, f!), text!]),
  );
  const read = (file: string) => fake.get(file) ?? "";
  assert.deepEqual(startupViolations(path.join(BUILT, "cli/main.js"), new Map([["x", path.join(BUILT, "plugins/x/main.js")]]), read), [
    "cli/main.js loads node:fs before skel's checks (through sys/a.js)",
    "x: plugins/x/b.js imports node:child_process at top level",
    "x: plugins/x/c.js imports node:path at top level",
  ]);
});
