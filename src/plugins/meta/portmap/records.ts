/**
 * Which containers of a network have nftables port forwarding: the nftables rules carry only the container
 * ID (the Go plugin's format, which its DEL and CHECK rely on), so GC could not tell one network's rules from
 * another's. ADD records `<dataDir>/<network>/<containerID>`, DEL removes it, GC reads the directory.
 * The default directory is under /run, which, like the rules, does not survive a reboot.
 * @module
 */
// (Synchronous node:fs for a few tiny files: no node:fs/promises on a plugin's start path, docs/startup.md.)
import { readdirSync } from "node:fs";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, removeStateFile, writeFileInPlaceSync } from "#sys/state.js";

const networkDir = (dataDir: string, network: string) => path.join(dataDir, network);

export async function recordForwarding(dataDir: string, network: string, containerID: string): Promise<void> {
  ensureStateDir(networkDir(dataDir, network), 0o700);
  writeFileInPlaceSync(path.join(networkDir(dataDir, network), containerID), "");
}

export async function forgetForwarding(dataDir: string, network: string, containerID: string): Promise<void> {
  removeStateFile(path.join(networkDir(dataDir, network), containerID));
}

/** The container IDs recorded for a network (none when the directory does not exist). */
export async function recordedContainers(dataDir: string, network: string): Promise<string[]> {
  try {
    return readdirSync(networkDir(dataDir, network));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
}
