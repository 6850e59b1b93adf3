/**
 * Who holds a flock on a file, from /proc/locks: the pid that took each lock (in the pid namespace of this
 * process's /proc), so a waiter can tell a lock held by root from one any user took on a world-readable file,
 * and a client can tell whether the process listening on a socket holds the server's lock.
 * @module
 */
import { readFileSync } from "node:fs";

/** A file's device and inode, as fs.stat gives them. */
export interface FileKey {
  dev: number;
  ino: number;
}

/** The device as /proc/locks prints it ("major:minor" in hex, two digits at least), from user space's dev_t. */
export function procLocksDevice(dev: number): string {
  const major = Math.floor(dev / 256) & 0xfff;
  const minor = (dev & 0xff) | (Math.floor(dev / 4096) & 0xfff00);
  const hex = (n: number) => n.toString(16).padStart(2, "0");
  return `${hex(major)}:${hex(minor)}`;
}

/**
 * The pids holding a flock on `file` (granted locks only, not waiters), parsed from `locksText` (the text of
 * /proc/locks; read here when not given). A pid is 0 when its process is not visible in this /proc's namespace.
 */
export function flockHolders(file: FileKey, locksText?: string): number[] {
  let text = locksText;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/locks", "latin1");
    } catch {
      return [];
    }
  }
  const key = `${procLocksDevice(file.dev)}:${file.ino}`;
  const holders: number[] = [];
  for (const line of text.split("\n")) {
    // "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; a waiter's line has "->" after the number.
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== "FLOCK" || fields[4] === undefined || fields[5] !== key) continue;
    const pid = Number(fields[4]);
    if (Number.isInteger(pid)) holders.push(pid);
  }
  return holders;
}

/** The effective uid of process `pid` (from its /proc status), or undefined when it cannot be read. */
export function effectiveUid(pid: number): number | undefined {
  if (!(pid > 0)) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const m = /\nUid:\s+\d+\s+(\d+)/.exec(status);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
