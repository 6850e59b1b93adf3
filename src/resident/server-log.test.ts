import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { appendToLog, escapeLogText, LOG_LINE_MAX, LOG_MAX_BYTES, serverLog } from "./server-log.js";

test("escapeLogText: a caller's value cannot end the line, and is cut at its bound", () => {
  assert.equal(escapeLogText("ok text"), "ok text");
  assert.equal(escapeLogText("a\nb\r\tc\\d\x7f\x00"), "a\\x0ab\\x0d\\x09c\\x5cd\\x7f\\x00");
  const long = escapeLogText("y".repeat(LOG_LINE_MAX + 100));
  assert.equal(long.length, LOG_LINE_MAX + 3);
  assert.ok(long.endsWith("..."));
});

test("serverLog: one escaped line each, into the log file, renamed <log>.1 past its bound", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tscni-slog-"));
  const file = path.join(dir, "plugins.sock.log");
  const lines: string[] = [];
  const log = serverLog(
    () => "T tscni daemon[7]: ",
    (t) => lines.push(t),
    file,
  );
  log("refused a caller of container c1\n2026-01-01T00:00:00.000Z tscni daemon[1]: forged");
  assert.equal(
    readFileSync(file, "utf8"),
    "T tscni daemon[7]: refused a caller of container c1\\x0a2026-01-01T00:00:00.000Z tscni daemon[1]: forged\n",
  );
  writeFileSync(file, "z".repeat(LOG_MAX_BYTES + 1));
  log("after");
  assert.equal(statSync(`${file}.1`).size, LOG_MAX_BYTES + 1, "the old log kept once");
  assert.equal(readFileSync(file, "utf8"), "T tscni daemon[7]: after\n");
  appendToLog(file, "x\n");
  assert.equal(lines.length, 0, "nothing went to the fallback");
  serverLog(
    () => "",
    (t) => lines.push(t),
  )("to stderr\n");
  assert.deepEqual(lines, ["to stderr\\x0a\n"]);
});
