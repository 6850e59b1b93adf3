/**
 * The delegate configs flannel keeps between ADD and DEL: `<dataDir>/<containerID>` holds the exact bytes ADD
 * gave the delegate (the flannel-io plugin's file and location, so either plugin can DEL what the other added).
 * Written atomically (a temporary file renamed over it), mode 0600 in a 0700 directory, before the delegate's
 * ADD, so a DEL finds it whatever happened after; DEL uses it even when subnet.env is gone.
 * @module
 */
import { readFileSync } from "node:fs";
import { ioFailure } from "#spec/errors.js";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, removeStateFile, writeFileAtomic } from "#sys/state.js";

/** Where the delegate config of a container is kept (container IDs are valid file names: skel checks them). */
export const savedConfigPath = (dataDir: string, containerID: string): string => path.join(dataDir, containerID);

/** Saves the delegate config of `containerID`. */
export async function saveDelegateConfig(dataDir: string, containerID: string, bytes: Uint8Array): Promise<void> {
  try {
    ensureStateDir(dataDir, 0o700);
    await writeFileAtomic(savedConfigPath(dataDir, containerID), bytes, 0o600);
  } catch (e) {
    throw ioFailure(`cannot save the delegate config in ${dataDir} ("dataDir")`, e);
  }
}

/** The saved delegate config of `containerID`; undefined when there is none. */
export async function readDelegateConfig(dataDir: string, containerID: string): Promise<Buffer | undefined> {
  try {
    return readFileSync(savedConfigPath(dataDir, containerID));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw ioFailure(`cannot read the saved delegate config ${savedConfigPath(dataDir, containerID)}`, e);
  }
}

/** Forgets the saved delegate config of `containerID` (nothing to do when there is none). */
export async function removeDelegateConfig(dataDir: string, containerID: string): Promise<void> {
  removeStateFile(savedConfigPath(dataDir, containerID));
}
