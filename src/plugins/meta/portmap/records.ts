/**
 * Which containers of a network have nftables port forwarding: the nftables rules carry only the container
 * ID (the Go plugin's format, which its DEL and CHECK rely on), so GC could not tell one network's rules from
 * another's. ADD records `<dataDir>/<network>/<containerID>`, DEL removes it, GC reads the directory.
 * The default directory is under /run, which, like the rules, does not survive a reboot.
 * @module
 */
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";

const networkDir = (dataDir: string, network: string) => path.join(dataDir, network);

export async function recordForwarding(dataDir: string, network: string, containerID: string): Promise<void> {
  await mkdir(networkDir(dataDir, network), { recursive: true, mode: 0o700 });
  await writeFile(path.join(networkDir(dataDir, network), containerID), "");
}

export async function forgetForwarding(dataDir: string, network: string, containerID: string): Promise<void> {
  await rm(path.join(networkDir(dataDir, network), containerID), { force: true });
}

/** The container IDs recorded for a network (none when the directory does not exist). */
export async function recordedContainers(dataDir: string, network: string): Promise<string[]> {
  try {
    return await readdir(networkDir(dataDir, network));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
}
