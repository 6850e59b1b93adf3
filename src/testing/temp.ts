/**
 * Scratch directories for tests: each call makes a fresh directory under the system temp dir; all of them are
 * removed when the test file finishes.
 * @module
 */

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after } from "node:test";

/** Returns a maker of temp dirs that are removed after the calling test file's tests. */
export function useTempDirs(prefix = "tscni-test-"): () => string {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
