// The type checker (skel.ts CheckedFuncs) rejects the plugin mistakes of src/skel/type-tests/fail-*.ts and accepts
// pass-*.ts, under every compiler an author may have: TypeScript 5.9 (this repository's) and 7 (npm's latest). Each
// compiler runs as an author runs it, its `tsc` on the command line; each fail-*.ts has an `// expect:` line whose
// parts (separated by " ... ") must all be in the first two lines of an error on the statement after it (see
// type-tests/README.md).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "#testing/harness.js";

const DIR = path.join(ROOT, "src/skel/type-tests");
/** The compilers, by their package folder in node_modules (package.json's devDependencies). */
const COMPILERS = ["typescript", "typescript7"] as const;
/** How many lines of an error (its message, then the compiler's elaboration) must name the mistake. */
const FIRST_LINES = 2;

interface Diagnostic {
  file: string;
  line: number;
  lines: string[];
}

/** Runs one compiler over the type tests and parses its plain (--pretty false) output. */
function compile(compiler: string): { version: string; diagnostics: Diagnostic[] } {
  const tsc = path.join(ROOT, "node_modules", compiler, "bin/tsc");
  const version = spawnSync(process.execPath, [tsc, "--version"], { encoding: "utf8" }).stdout.trim();
  const r = spawnSync(process.execPath, [tsc, "-p", DIR, "--pretty", "false"], { cwd: ROOT, encoding: "utf8" });
  assert.ok(r.status !== null && r.stderr === "", `${compiler} ran: ${r.stderr}`);
  const diagnostics: Diagnostic[] = [];
  for (const text of r.stdout.split("\n")) {
    const head = /^(.+?)\((\d+),\d+\): error TS\d+: (.*)$/.exec(text);
    if (head) diagnostics.push({ file: path.basename(head[1]!), line: Number(head[2]), lines: [head[3]!] });
    else if (text.trim() !== "") diagnostics.at(-1)?.lines.push(text.trim());
  }
  return { version, diagnostics };
}

for (const compiler of COMPILERS) {
  test(`${compiler}: plugin mistakes fail to compile, named in the error's first lines; good plugins compile`, () => {
    const { version, diagnostics } = compile(compiler);
    const failures: string[] = [];
    for (const name of readdirSync(DIR).filter((f) => f.endsWith(".ts"))) {
      const mine = diagnostics.filter((d) => d.file === name);
      const show = (d: Diagnostic) => `  ${d.line}: ${d.lines.slice(0, FIRST_LINES).join("\n     ")}`;
      if (name.startsWith("pass-")) {
        for (const d of mine) failures.push(`${name}: unexpected error:\n${show(d)}`);
        continue;
      }
      const lines = readFileSync(path.join(DIR, name), "utf8").split("\n");
      const expectAt = lines.findIndex((l) => l.startsWith("// expect: "));
      assert.ok(expectAt >= 0, `${name} has no "// expect:" line`);
      const parts = lines[expectAt]!.slice("// expect: ".length).split(" ... ");
      // The statement after the expect line: up to the next blank line or the end (line numbers from 1).
      const blank = lines.findIndex((l, i) => i > expectAt && l.trim() === "");
      const [first, last] = [expectAt + 2, blank < 0 ? lines.length : blank];
      const onStatement = (d: Diagnostic) => d.line >= first && d.line <= last;
      const names = (d: Diagnostic) => {
        const text = d.lines.slice(0, FIRST_LINES).join("\n");
        return parts.every((p) => text.includes(p));
      };
      if (!mine.some((d) => onStatement(d) && names(d))) {
        failures.push(
          `${name}: want an error with ${JSON.stringify(parts)} in its first lines on lines ${first}-${last}; got:\n${mine.map(show).join("\n") || "  no errors"}`,
        );
      }
      for (const d of mine.filter((d) => !onStatement(d))) failures.push(`${name}: unexpected error:\n${show(d)}`);
    }
    assert.deepEqual(failures, [], `under ${compiler} (${version})`);
  });
}
