/**
 * Atomic file replacement for shared state (result cache, backups): write a temp file in the same directory,
 * then rename it over the target, so a concurrent reader sees the old file or the new one, never half of one.
 * @module
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import * as path from "./posix-path.js";
import { hexOf, randomBytes } from "./bytes.js";

/** A temporary name beside `file`, unique to this process and call (isTemporaryName knows it). */
function temporaryName(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${hexOf(randomBytes(4))}.tmp`);
}

/** Whether a directory entry is the temporary file of a replacement under way (readers of a directory skip it). */
export const isTemporaryName = (name: string): boolean => name.startsWith(".") && name.endsWith(".tmp");

/** Replaces `file` with `data` (created with `mode`) atomically: a temporary file beside it, renamed over it. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  // (Loaded here, docs/startup.md: not every call of a plugin saves a file.)
  const { rename, rm, writeFile } = await import("node:fs/promises");
  const tmp = temporaryName(file);
  try {
    await writeFile(tmp, data, { mode });
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
}

/**
 * Makes `file` atomically: `make` creates it (a file, a copy, a symlink) at a temporary name beside it, which is
 * then renamed over it; the temporary is removed when either step fails.
 */
export function replaceAtomicSync(file: string, make: (tmp: string) => void): void {
  const tmp = temporaryName(file);
  try {
    make(tmp);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** writeFileAtomic for synchronous callers. */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, mode = 0o600): void {
  replaceAtomicSync(file, (tmp) => writeFileSync(tmp, data, { mode }));
}
