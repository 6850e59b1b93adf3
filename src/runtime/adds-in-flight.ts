/**
 * The CNI ADDs running on this node now, seen from outside the runtime that runs them: every process whose
 * environment says `CNI_COMMAND=ADD` (a plugin, a delegate it runs, or the launcher waiting on a resident server),
 * with its CNI_CONTAINERID and CNI_IFNAME. Node GC counts them as valid attachments: their results are not cached
 * yet, and a plugin's GC must not take back what such an ADD is setting up.
 * @module
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { GCAttachment } from "#spec/config.js";

/** The attachment a process environment (NUL-separated `K=V`) is adding, if it is a CNI ADD. */
export function addOfEnvironment(environ: Buffer): GCAttachment | undefined {
  let command = "";
  let containerID = "";
  let ifname = "";
  for (const entry of environ.toString("utf8").split("\0")) {
    if (entry.startsWith("CNI_COMMAND=")) command = entry.slice(12);
    else if (entry.startsWith("CNI_CONTAINERID=")) containerID = entry.slice(16);
    else if (entry.startsWith("CNI_IFNAME=")) ifname = entry.slice(11);
  }
  return command === "ADD" && containerID ? { containerID, ifname } : undefined;
}

/**
 * The attachments of every ADD under way, once each, from `<procRoot>/<pid>/environ` (root reads every
 * process's; processes that exit while being read, or that cannot be read, are skipped).
 */
export async function addsInFlight(procRoot = "/proc"): Promise<GCAttachment[]> {
  let pids: string[];
  try {
    pids = (await readdir(procRoot)).filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const found = new Map<string, GCAttachment>();
  for (const pid of pids) {
    const environ = await readFile(path.join(procRoot, pid, "environ")).catch(() => undefined);
    const add = environ && addOfEnvironment(environ);
    if (add) found.set(`${add.containerID}\0${add.ifname}`, add);
  }
  return [...found.values()];
}
