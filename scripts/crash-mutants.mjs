// The crash simulator's own test (issue 49, docs/state.md): each patch of scripts/crash-mutants/ is a realistic
// crash-recovery bug (its first lines: `store: <the simulator's store>`, `bug: <what it does>`). Each is applied
// alone to a temporary copy of the built tests (dist-test): the files it touches are copied from src/, patched and
// compiled (TypeScript's transpileModule) over the copy's modules; the simulator then runs on that copy, on the
// mutant's store, stopping at the first violation. A mutant is caught when the simulator reports a violation.
// The tree is never modified. Prints a table and exits non-zero when any mutant is missed.
//
//   node scripts/crash-mutants.mjs [runner (default: bun)] [name filter]

import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.join(root, "scripts/crash-mutants");
const runner = process.argv[2] ?? path.join(root, "node_modules/.bin/bun");
const filter = process.argv[3] ?? "";
const base = JSON.parse(readFileSync(path.join(root, "tsconfig.base.json"), "utf8")).compilerOptions;
const options = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  esModuleInterop: base.esModuleInterop,
};

const rows = [];
for (const name of readdirSync(dir)
  .filter((n) => n.endsWith(".patch") && n.includes(filter))
  .sort()) {
  const patch = readFileSync(path.join(dir, name), "utf8");
  const store = /^store: (.*)$/m.exec(patch)?.[1];
  const bug = /^bug: (.*)$/m.exec(patch)?.[1] ?? "";
  const files = [...patch.matchAll(/^\+\+\+ b\/(\S+)$/gm)].map((m) => m[1]);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "tscni-mutant-"));
  const t0 = Date.now();
  let verdict;
  let detail = "";
  try {
    cpSync(path.join(root, "dist-test"), path.join(tmp, "dist-test"), { recursive: true, verbatimSymlinks: true });
    symlinkSync(path.join(root, "node_modules"), path.join(tmp, "node_modules"));
    // (libcni finds the plugins by name in dist/bin: they run in the simulator's process, from the copy.)
    symlinkSync(path.join(root, "dist"), path.join(tmp, "dist"));
    for (const f of files) {
      mkdirSync(path.dirname(path.join(tmp, f)), { recursive: true });
      cpSync(path.join(root, f), path.join(tmp, f));
    }
    const applied = spawnSync("patch", ["-p1", "-s", "-d", tmp], { input: patch, encoding: "utf8" });
    if (applied.status !== 0) throw new Error(`the patch does not apply: ${applied.stdout}${applied.stderr}`);
    for (const f of files) {
      const out = ts.transpileModule(readFileSync(path.join(tmp, f), "utf8"), { compilerOptions: options, fileName: f });
      writeFileSync(path.join(tmp, "dist-test", f.replace(/^src\//, "").replace(/\.ts$/, ".js")), out.outputText);
    }
    const run = spawnSync(runner, [path.join(tmp, "dist-test/testing/crash/run.js"), "--only", store, "--min", "0", "--first"], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    });
    const m = /violations: (\d+)/.exec(
      run.stdout
        .split("\n")
        .filter((l) => l.startsWith("crash states:"))
        .join("\n"),
    );
    if (!m) throw new Error(`the simulator did not finish: ${run.stdout.slice(-500)}${run.stderr.slice(-1500)}`);
    verdict = Number(m[1]) > 0 ? "caught" : "missed";
    // (The first violation, not the known limitations met: those lines are in parentheses.)
    detail = run.stdout.split("\n").find((l) => l.startsWith("  ") && !l.startsWith("  (")) ?? "";
  } catch (e) {
    verdict = "error";
    detail = e instanceof Error ? e.message : String(e);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  rows.push({ name: name.replace(/\.patch$/, ""), store, verdict });
  console.log(`${verdict.padEnd(6)} ${name.replace(/\.patch$/, "")} [${store}] (${Math.round((Date.now() - t0) / 1000)} s): ${bug}`);
  if (detail) console.log(`       ${detail.trim().slice(0, 400)}`);
}
const caught = rows.filter((r) => r.verdict === "caught").length;
console.log(`mutants: ${rows.length}, caught: ${caught}, missed: ${rows.length - caught}`);
if (caught < rows.length) process.exitCode = 1;
