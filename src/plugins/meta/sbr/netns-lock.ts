/**
 * The lock the Go sbr plugin takes around its work: flock(LOCK_EX) on the network namespace file itself, so
 * concurrent calls for the same container (ours or Go's) take turns.
 * @module
 */
import { constants, openSync } from "node:fs";
import { CniError, ErrorCode } from "../../../spec/errors.js";
import { withFlock } from "../../../sys/flock.js";

/** Runs `fn` holding an exclusive flock on `nsPath` (opened O_CREAT|O_RDONLY, as Go's filemutex does). */
export function withNetnsLock<T>(nsPath: string, fn: () => Promise<T>): Promise<T> {
  const open = () => {
    try {
      return openSync(nsPath, constants.O_CREAT | constants.O_RDONLY, 0o600);
    } catch (e) {
      throw new CniError(ErrorCode.IOFailure, `failed to open ${nsPath} to lock it: ${(e as Error).message}`);
    }
  };
  return withFlock(nsPath, open, fn, (e) => new CniError(ErrorCode.IOFailure, e.message));
}
