/**
 * The layers point one way. Each folder under src/ has a rank, and product code imports only from its own
 * folder or from folders of a lower rank: ip, go-json and sys (addresses; Go's JSON; system calls) -> spec (the
 * spec as pure data) -> invoke, skel -> net, libcni -> plugins (with the catalog and registry of programs) ->
 * runtime (the node's operations: pods, node GC, firewall reload), conformance -> resident (the server) -> cnitool
 * (every verb of the tool), demo -> cli (the entry). No product module imports test code
 * (src/testing, src/integration, *.test.ts), and no product modules import each other in a circle (type-only
 * imports count too: a circle of types is a circle of concepts). A new folder must be given a rank here. Plugins
 * never run tools themselves (FORBIDDEN).
 */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";

const SRC = path.join(ROOT, "src");

/** Folder ranks: an import must go to the same folder or one of a lower rank. */
const LAYERS: Record<string, number> = {
  ip: 0,
  "go-json": 0,
  sys: 0,
  spec: 1,
  invoke: 2,
  skel: 2,
  net: 3,
  libcni: 3,
  plugins: 4,
  runtime: 5,
  conformance: 5,
  resident: 6,
  cnitool: 7,
  demo: 7,
  cli: 8,
};
const TEST_FOLDERS = new Set(["testing", "integration"]);

/**
 * Modules a folder may not import although their rank allows it: plugins reach the kernel through net/ (which
 * knows netlink, and the tools where netlink is not there) and start processes through sys/daemon, never by
 * running tools themselves.
 */
const FORBIDDEN: Record<string, { module: string; why: string }[]> = {
  plugins: [
    { module: "sys/exec.ts", why: "plugins reach the kernel through net/ and start daemons through sys/daemon" },
    { module: "net/tools.ts", why: "plugins reach the kernel through net/'s operations, never by running a tool" },
  ],
};

/** Ways to start a program without our modules: Node's child_process, Bun's spawn, an FFI exec. */
const PROCESS_APIS = /\bchild_process\b|\bBun\.spawn(?:Sync)?\b|\b(?:execve|posix_spawnp?|fork)\s*:/;

const isTest = (rel: string) => rel.endsWith(".test.ts") || rel.endsWith(".samples.ts") || TEST_FOLDERS.has(rel.split("/")[0]!);

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(full) : e.name.endsWith(".ts") ? [full] : [];
  });
}

/** The files under src/ that `file` imports (relative specifiers and `#folder/` aliases, static and dynamic). */
function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom|\bimport\s*\(|^import)\s*["']((?:\.{1,2}|#[\w-]+)\/[^"']+)["']/gm)) {
    const spec = m[1]!;
    const target = spec.startsWith("#") ? path.join(SRC, spec.slice(1)) : path.resolve(path.dirname(file), spec);
    out.push(target.replace(/\.js$/, ".ts"));
  }
  return out;
}

const relOf = (file: string) => path.relative(SRC, file).split(path.sep).join("/");
const folderOf = (rel: string) => (rel.includes("/") ? rel.split("/")[0]! : "");

/** Every way the product imports break the rules (empty when they hold). */
function layerViolations(files: readonly string[], read = (file: string) => readFileSync(file, "utf8")): string[] {
  const problems: string[] = [];
  const product = files.filter((f) => !isTest(relOf(f)));
  const graph = new Map<string, string[]>();
  for (const file of product) {
    const rel = relOf(file);
    const from = folderOf(rel);
    if (from && LAYERS[from] === undefined) problems.push(`src/${from}/ has no rank in layers.test.ts`);
    const text = read(file);
    const targets = importsOf(file, text);
    graph.set(file, targets);
    // A plugin reaching a program by a route that is no import of ours: Node's or Bun's process API.
    if (from === "plugins" && PROCESS_APIS.test(text)) {
      problems.push(`${rel} starts processes itself (${PROCESS_APIS.exec(text)![0]}): plugins run tools through net/ and daemons through sys/daemon`);
    }
    for (const target of targets) {
      const trel = relOf(target);
      if (isTest(trel)) {
        problems.push(`${rel} imports test code ${trel}`);
        continue;
      }
      const to = folderOf(trel);
      const forbidden = FORBIDDEN[from]?.find((f) => f.module === trel);
      if (forbidden) problems.push(`${rel} imports ${trel}: ${forbidden.why}`);
      if (to === from) continue;
      if ((LAYERS[to] ?? Infinity) >= (LAYERS[from] ?? -Infinity))
        problems.push(`${rel} imports ${trel}: ${from} (rank ${LAYERS[from]}) may not depend on ${to} (rank ${LAYERS[to]})`);
    }
  }
  // Circles between modules: depth-first search, reporting each back edge's cycle once.
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") {
        problems.push(`import circle: ${[...stack.slice(stack.indexOf(next)), next].map(relOf).join(" -> ")}`);
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return problems;
}

test("product code imports only downward, never test code, and never in a circle", () => {
  assert.deepEqual(layerViolations(sourceFiles()), []);
});

test("the check itself catches an upward import, an import of test code and a circle", () => {
  const fake = new Map<string, string>(
    [
      ["spec/a.ts", 'import { x } from "../net/b.js";'],
      ["net/b.ts", 'import { y } from "./c.js";'],
      ["net/c.ts", 'import type { z } from "./b.js";\nconst h = await import("../testing/harness.js");'],
      ["plugins/d.ts", 'import { runTool } from "#sys/exec.js";'],
      ["plugins/e.ts", 'const { spawn } = process.getBuiltinModule("node:child_process");'],
    ].map(([f, text]) => [path.join(SRC, f!), text!]),
  );
  assert.deepEqual(
    layerViolations([...fake.keys()], (f) => fake.get(f)!),
    [
      "spec/a.ts imports net/b.ts: spec (rank 1) may not depend on net (rank 3)",
      "net/c.ts imports test code testing/harness.ts",
      "plugins/d.ts imports sys/exec.ts: plugins reach the kernel through net/ and start daemons through sys/daemon",
      "plugins/e.ts starts processes itself (child_process): plugins run tools through net/ and daemons through sys/daemon",
      "import circle: net/b.ts -> net/c.ts -> net/b.ts",
    ],
  );
});
