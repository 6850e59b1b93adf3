import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { useTempDirs } from "#testing/temp.js";
import { readFdToEnd, writeFdFully } from "./stdio.js";

const tempDir = useTempDirs("tscni-stdio-");
const STDIO = path.join(path.dirname(fileURLToPath(import.meta.url)), "stdio.js");

describe("standard streams as file descriptors", () => {
  test("a file is read to its end and written whole, past the first buffer", () => {
    const dir = tempDir();
    const big = Buffer.alloc(300_000, "x");
    big.write("start", 0);
    big.write("end", big.length - 3);
    writeFileSync(path.join(dir, "in"), big);
    const fd = openSync(path.join(dir, "in"), "r");
    try {
      assert.ok(readFdToEnd(fd).equals(big));
    } finally {
      closeSync(fd);
    }
    const out = openSync(path.join(dir, "out"), "w");
    try {
      writeFdFully(out, big);
      writeFdFully(out, "and text");
    } finally {
      closeSync(out);
    }
    assert.equal(readFileSync(path.join(dir, "out"), "utf8"), big.toString() + "and text");
  });

  test("through pipes, as a runtime runs a plugin: stdin whole, stdout whole, a reader gone is no error", () => {
    const script = `import(${JSON.stringify(STDIO)}).then(({ readFdToEnd, writeFdFully }) => { const b = readFdToEnd(0); writeFdFully(1, b); writeFdFully(2, String(b.length)); })`;
    const input = Buffer.alloc(1 << 20, "y");
    const r = spawnSync(process.execPath, ["-e", script], { input, maxBuffer: 4 << 20 });
    assert.equal(r.status, 0, r.stderr.toString());
    assert.ok(r.stdout.equals(input));
    assert.equal(r.stderr.toString(), String(input.length));
    // The reader exits at once: the writer gets EPIPE (Node ignores SIGPIPE) and must still exit 0.
    const gone = spawnSync("bash", ["-c", `set -o pipefail; "${process.execPath}" -e '${script.replaceAll("'", "'\\''")}' | true`], { input });
    assert.equal(gone.status, 0, gone.stderr?.toString());
  });
});
