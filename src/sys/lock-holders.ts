/**
 * Who holds a flock on a file, from /proc/locks: the pid that took each lock (in the pid namespace of this
 * process's /proc), so a waiter can tell a lock held by root from one any user took on a world-readable file,
 * and a client can tell whether the process listening on a socket holds the server's lock.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

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

/**
 * Whether the fdinfo text of one descriptor shows an exclusive flock on `file`: the kernel lists there, as
 * `lock:\t1: FLOCK  ADVISORY  WRITE <pid> <maj:min:ino> 0 EOF`, the granted locks of that descriptor's open file
 * description, whoever took them.
 */
export function fdinfoShowsFlock(fdinfo: string, file: FileKey): boolean {
  const key = `${procLocksDevice(file.dev)}:${file.ino}`;
  for (const line of fdinfo.split("\n")) {
    if (!line.startsWith("lock:")) continue;
    const fields = line.slice(5).trim().split(/\s+/);
    if (fields[1] === "FLOCK" && fields[3] === "WRITE" && fields[5] === key) return true;
  }
  return false;
}

/** The descriptor a server holds its lock on when a launcher started it (launcher/listener.h's SERVER_LOCK_FD). */
const SERVER_LOCK_FD = "3";

/**
 * Whether process `pid` (of this /proc) holds an exclusive flock on `file` now, through any of its descriptors
 * (SERVER_LOCK_FD first). Read from the process's own fdinfo: the answer costs the same however many locks other
 * users hold, where the system-wide /proc/locks is built in quadratic time and any user can make it long.
 */
export function holdsFlockNow(pid: number, file: FileKey): boolean {
  if (!(pid > 0)) return false;
  const shows = (fd: string) => {
    try {
      return fdinfoShowsFlock(readFileSync(`/proc/${pid}/fdinfo/${fd}`, "latin1"), file);
    } catch {
      return false;
    }
  };
  if (shows(SERVER_LOCK_FD)) return true;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fdinfo`);
  } catch {
    return false;
  }
  return fds.some((fd) => fd !== SERVER_LOCK_FD && shows(fd));
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
