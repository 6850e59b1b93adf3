/**
 * The lock the Go sbr plugin takes around its work: flock(LOCK_EX) on the network namespace file itself, so
 * concurrent calls for the same container (ours or Go's) take turns.
 * @module
 */
import { withLockFile } from "../../common/lock-file.js";

/** Runs `fn` holding an exclusive flock on `nsPath` (opened O_CREAT|O_RDONLY, as Go's filemutex does). */
export function withNetnsLock<T>(nsPath: string, fn: () => Promise<T>): Promise<T> {
  return withLockFile(nsPath, 0o600, (reason) => `failed to open ${nsPath} to lock it: ${reason}`, fn);
}
