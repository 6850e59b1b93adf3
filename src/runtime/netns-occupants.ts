/**
 * Whether a network namespace still has processes in it: node GC's second line (node-gc.ts). Whatever a runtime
 * says, an attachment whose namespace a process is in belongs to something alive (a pod's pause process, a
 * container), and DELeting it would take a live workload's interface and address.
 *
 * The namespace is named by its path (the attachment's cached netns, a bind mount such as /var/run/netns/cni-…) and
 * compared as device and inode with each process's /proc/<pid>/ns/net. Only thread group leaders are read: a
 * workload's processes live in their namespace with every thread, and a thread that entered one alone is a tool at
 * work on it (a plugin, a runtime's DEL), not a workload. Only the processes this /proc shows are seen: GC in a pod
 * of its own pid namespace sees none of the node's (run it with the node's pid namespace, hostPID).
 * @module
 */
import { readdirSync, readFileSync, statSync } from "node:fs";

/** A process found in a network namespace. */
export interface NetnsOccupant {
  pid: number;
  /** Its command name (/proc/<pid>/comm), or "?" when it cannot be read. */
  command: string;
}

/** What is known of a network namespace's processes: none, one of them, or nothing at all (why). */
export type Occupancy = { occupant: NetnsOccupant } | { unknown: string } | undefined;

/**
 * A process in the network namespace at `netnsPath`, as `procRoot` (default /proc) shows processes; undefined when
 * there is none, or when the path names nothing (a namespace gone with its bind mount has no processes; an empty
 * path names none). `{ unknown }` when the path exists but cannot be examined. A process that leaves during the
 * scan is skipped.
 */
export function netnsOccupancy(netnsPath: string | undefined, procRoot = "/proc"): Occupancy {
  if (!netnsPath) return undefined;
  let target: { dev: number; ino: number };
  try {
    target = statSync(netnsPath);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    return { unknown: `${netnsPath} cannot be examined (${code ?? (e as Error).message})` };
  }
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch (e) {
    return { unknown: `${procRoot} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let ns: { dev: number; ino: number };
    try {
      ns = statSync(`${procRoot}/${name}/ns/net`);
    } catch {
      continue; // gone since the directory was read, or a kernel thread whose namespaces cannot be read
    }
    if (ns.dev !== target.dev || ns.ino !== target.ino) continue;
    let command = "?";
    try {
      command = readFileSync(`${procRoot}/${name}/comm`, "utf8").trim() || "?";
    } catch {
      /* it left after the match: it was there */
    }
    return { occupant: { pid: Number(name), command } };
  }
  return undefined;
}

/** Why an attachment in the namespace at `netnsPath` is kept (its occupancy in words), or undefined when none is in it. */
export function occupiedWhy(netnsPath: string | undefined, procRoot = "/proc"): string | undefined {
  const o = netnsOccupancy(netnsPath, procRoot);
  if (o === undefined) return undefined;
  if ("unknown" in o) return `whether its network namespace has processes is unknown: ${o.unknown}`;
  return `process ${o.occupant.pid} (${o.occupant.command}) is in its network namespace ${netnsPath}`;
}
