// The type checker (skel.ts CheckedFuncs) rejects the result mistakes of src/skel/type-tests/fail-*.ts, each with the error its
// `// expect:` line names on the statement after it, and accepts pass-*.ts (see type-tests/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { ROOT } from "#testing/harness.js";

const DIR = path.join(ROOT, "src/skel/type-tests");

test("handlers' results: mistakes fail to compile, with the expected error; good results compile", () => {
  const files = readdirSync(DIR)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => path.join(DIR, f));
  const config = ts.readConfigFile(path.join(ROOT, "tsconfig.base.json"), (f) => ts.sys.readFile(f));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram(files, { ...options, noEmit: true, rootDir: path.join(ROOT, "src") });
  const failures: string[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => ({
      line: d.start === undefined ? -1 : source.getLineAndCharacterOfPosition(d.start).line,
      text: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
    }));
    const name = path.basename(file);
    if (name.startsWith("pass-")) {
      for (const d of diagnostics) failures.push(`${name}:${d.line + 1}: unexpected error: ${d.text.split("\n")[0]}`);
      continue;
    }
    const lines = readFileSync(file, "utf8").split("\n");
    const expectLine = lines.findIndex((l) => l.startsWith("// expect: "));
    assert.ok(expectLine >= 0, `${name} has no "// expect:" line`);
    const parts = lines[expectLine]!.slice("// expect: ".length).split(" ... ");
    const onStatement = diagnostics.filter((d) => d.line === expectLine + 1);
    const matches = (text: string) => {
      let at = 0;
      for (const part of parts) {
        at = text.indexOf(part, at);
        if (at < 0) return false;
        at += part.length;
      }
      return true;
    };
    if (!onStatement.some((d) => matches(d.text))) {
      failures.push(
        `${name}: want an error with ${JSON.stringify(parts)} on line ${expectLine + 2}; got:\n` +
          (diagnostics.map((d) => `  ${d.line + 1}: ${d.text}`).join("\n") || "  no errors"),
      );
    }
    const elsewhere = diagnostics.filter((d) => d.line !== expectLine + 1);
    for (const d of elsewhere) failures.push(`${name}:${d.line + 1}: unexpected error: ${d.text.split("\n")[0]}`);
  }
  assert.deepEqual(failures, []);
});
