/**
 * The one way tscni writes its state: every file listed in docs/state.md is made, replaced and removed through
 * these functions (src/state-writes.test.ts keeps it so), which is where the crash simulator (src/testing/crash/)
 * watches the file operations of a call, one system call at a time, to enumerate what a kill or a power loss at
 * any point can leave.
 *
 * The ways a file is written:
 * - replaced atomically: a temporary file beside it (`.<name>.<pid>.<random>.tmp`, which readers of a directory skip
 *   by isTemporaryName), renamed over it, so a concurrent reader sees the old file or the new one, never half of
 *   one. After a power loss it may still be the old one, or (ext4 without auto_da_alloc for a new name) empty: every
 *   reader takes an empty or torn file as unknown;
 * - created exclusively (host-local's reservations, as Go's): it exists or it does not, and a crash between the
 *   creation and the write leaves it empty;
 * - rewritten in place (host-local's round-robin hint, as Go's): a hint that may be torn. Never truncated to nothing
 *   first: ext4 writes out at its close a file truncated to nothing (auto_da_alloc, as after a rename over a file),
 *   and the next truncation waits for that write — ~3 ms of a blocked thread per host-local ADD, which in the
 *   resident server is every call's thread;
 * - durably (`durable: true`): the data synced before the rename and the directory after it (after a removal, the
 *   directory), for the state that must survive a power loss. docs/state.md says which: only the network configs
 *   (`cnitool network create`, `rm`, `prune`: written rarely, expected to stay); everything else tscni keeps is
 *   recreated, reclaimed or re-read after a reboot, so no plugin call pays for an fsync.
 * @module
 */
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { hexOf, randomBytes } from "./bytes.js";
import * as path from "./posix-path.js";

/** One file operation on state, as the crash simulator sees it. */
export type StateOp =
  | { op: "mkdir"; path: string }
  | { op: "create"; path: string; exclusive: boolean }
  | { op: "write"; path: string; data: Buffer }
  | { op: "fsync"; path: string }
  | { op: "fsyncDir"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "unlink"; path: string }
  | { op: "rmdir"; path: string };

let recorder: ((op: StateOp) => void) | undefined;

/** Sees every state operation from now on (undefined: none). For the crash simulator only. */
export function recordStateOps(record: ((op: StateOp) => void) | undefined): void {
  recorder = record;
}

const note = (op: StateOp): void => recorder?.(op);

/** How a file is written. */
export interface WriteOptions {
  /** Its mode when created (default 0600). */
  mode?: number;
  /** Synced to disk before it counts (docs/state.md: for state that must survive a power loss). */
  durable?: boolean;
}

/** A temporary name beside `file`, unique to this process and call (isTemporaryName knows it). */
function temporaryName(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${hexOf(randomBytes(4))}.tmp`);
}

/** Whether a directory entry is the temporary file of a replacement under way (readers of a directory skip it). */
export const isTemporaryName = (name: string): boolean => name.startsWith(".") && name.endsWith(".tmp");

/** Writes all of `data` to the open file `fd` of `file`, recorded. */
function writeAll(fd: number, file: string, data: string | Uint8Array): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  note({ op: "write", path: file, data: bytes });
  for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
}

/** Syncs the directory holding `file` (its new or removed entry survives a power loss). */
function syncDirectoryOf(file: string): void {
  const dir = path.dirname(file);
  note({ op: "fsyncDir", path: dir });
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Opens `file` for writing (created with `mode`), recorded; `exclusive`: fails with EEXIST when it exists. */
function create(file: string, mode: number, exclusive: boolean): number {
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | (exclusive ? constants.O_EXCL : constants.O_TRUNC), mode);
  note({ op: "create", path: file, exclusive });
  return fd;
}

/** Writes and closes `fd` (synced first when durable). */
function fill(fd: number, file: string, data: string | Uint8Array, durable: boolean): void {
  try {
    writeAll(fd, file, data);
    if (durable) {
      note({ op: "fsync", path: file });
      fsyncSync(fd);
    }
  } finally {
    closeSync(fd);
  }
}

/** Makes `dir` and its missing parents with `mode` (recorded, each made directory). */
export function ensureStateDir(dir: string, mode = 0o700): void {
  const made = mkdirSync(dir, { recursive: true, mode });
  if (made === undefined || !recorder) return;
  const all: string[] = [];
  for (let d = dir; d.length >= made.length; d = path.dirname(d)) all.unshift(d);
  for (const d of all) note({ op: "mkdir", path: d });
}

/**
 * Makes `file` atomically: `make` creates it (a file, a copy, a symlink) at a temporary name beside it, which is
 * then renamed over it; the temporary is removed when either step fails.
 */
export function replaceAtomicSync(file: string, make: (tmp: string) => void): void {
  const tmp = temporaryName(file);
  try {
    make(tmp);
    note({ op: "rename", from: tmp, to: file });
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Replaces `file` with `data` atomically (see the module comment). */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, modeOrOptions: number | WriteOptions = 0o600): void {
  const { mode = 0o600, durable = false } = typeof modeOrOptions === "number" ? { mode: modeOrOptions } : modeOrOptions;
  replaceAtomicSync(file, (tmp) => fill(create(tmp, mode, true), tmp, data, durable));
  if (durable) syncDirectoryOf(file);
}

/** writeFileAtomicSync for callers that await (the writes are small: done at once). */
export async function writeFileAtomic(file: string, data: string | Uint8Array, modeOrOptions: number | WriteOptions = 0o600): Promise<void> {
  writeFileAtomicSync(file, data, modeOrOptions);
}

/** Creates `file` holding `data` only if it does not exist (false when it does). */
export function createFileExclusiveSync(file: string, data: string | Uint8Array, options: WriteOptions = {}): boolean {
  let fd: number;
  try {
    fd = create(file, options.mode ?? 0o600, true);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
  try {
    fill(fd, file, data, options.durable ?? false);
  } catch (e) {
    removeStateFile(file);
    throw e;
  }
  if (options.durable) syncDirectoryOf(file);
  return true;
}

/**
 * Rewrites `file` in place (created with `mode` when missing): for a hint a torn copy of which is harmless. Cut to
 * the new length first when it was longer (a crash then leaves the old content, its head, or the new), never to
 * nothing on the way (see the module comment).
 */
export function writeFileInPlaceSync(file: string, data: string | Uint8Array, mode = 0o600): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT, mode);
  try {
    const before = fstatSync(fd).size;
    if (before === 0) note({ op: "create", path: file, exclusive: false });
    if (before > bytes.length) {
      if (recorder) note({ op: "write", path: file, data: readFileSync(file).subarray(0, bytes.length) });
      ftruncateSync(fd, bytes.length);
    }
    note({ op: "write", path: file, data: bytes });
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at, at);
  } finally {
    closeSync(fd);
  }
}

/** Removes `file`; nothing when it is not there. `durable`: its directory synced after (the removal survives a power loss). */
export function removeStateFile(file: string, options: { durable?: boolean } = {}): void {
  note({ op: "unlink", path: file });
  try {
    unlinkSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  if (options.durable) syncDirectoryOf(file);
}

/** Removes the directory `dir` if it is empty (false when it is not, or not there). */
export function removeStateDirIfEmpty(dir: string): boolean {
  try {
    rmdirSync(dir);
    note({ op: "rmdir", path: dir });
    return true;
  } catch {
    return false;
  }
}

/** Removes `dir` and everything in it; nothing when it is not there. */
export function removeStateTree(dir: string): void {
  note({ op: "rmdir", path: dir });
  rmSync(dir, { recursive: true, force: true });
}
