/**
 * The lock Go's plugins take through filemutex: flock(LOCK_EX) on a file opened O_CREAT|O_RDONLY, so ours and
 * Go's exclude each other on the same file.
 * @module
 */
import { constants, openSync } from "node:fs";
import { ioFailure, messageOf, tryAgainLater } from "#spec/errors.js";
import { CallAbandonedError } from "#sys/call-signal.js";
import { type FlockOptions, LockTimeoutError, withFlock } from "#sys/flock.js";

/** Opens (creating it with `mode` when missing) the file the lock is taken on, as Go's filemutex.New does. */
export const openLockFile = (lockPath: string, mode: number): number => openSync(lockPath, constants.O_CREAT | constants.O_RDONLY, mode);

/**
 * Runs `fn` holding the lock on `lockPath` (the file made with `mode` when missing, after `prepare`, e.g. making its
 * directory); closing the file afterwards releases it. A file that cannot be opened or locked is a CNI I/O error
 * (code 5), a lock not had in time (sys/flock.ts: only root's holders are waited for, and not forever) code 11,
 * "try again later", as is a wait given up with its call (sys/call-signal.ts); `openFailure` words the first from
 * the system's reason.
 */
export function withLockFile<T>(
  lockPath: string,
  mode: number,
  openFailure: (reason: string) => string,
  fn: () => T | Promise<T>,
  prepare?: () => void,
  opts: FlockOptions = {},
): Promise<T> {
  const open = () => {
    try {
      prepare?.();
      return openLockFile(lockPath, mode);
    } catch (e) {
      throw ioFailure(openFailure(messageOf(e)));
    }
  };
  const lockError = (e: Error) =>
    e instanceof LockTimeoutError || e instanceof CallAbandonedError ? tryAgainLater(e.message) : ioFailure(e.message);
  return withFlock(lockPath, open, fn, lockError, opts);
}
