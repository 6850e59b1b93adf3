/**
 * Who holds a flock on a file. /proc/locks lists each lock with the pid that TOOK it (in the pid namespace of this
 * process's /proc), which is not always who holds it now: a flock belongs to an open file description, which a
 * process hands on with its descriptors (fork, exec, SCM_RIGHTS), so the lock outlives its taker when a child keeps
 * the descriptor, and the listed pid may by then be another process's, of any user. flockHoldersNow therefore
 * confirms each listed taker in its /proc/<pid>/fdinfo (every descriptor of a file description holding a flock
 * shows the lock as a `lock:` line, /proc/locks' own text), and for a lock its taker no longer holds looks
 * through every process's fdinfo for the holders, telling whether it found them all. This lets a waiter tell a lock
 * held by root from one any user took on a world-readable file (flock.ts). A client telling whether the process
 * listening on a socket holds the server's lock reads only that process's descriptors (holdsFlockNow, peer.ts):
 * /proc/locks, which the kernel builds in quadratic time and any user can make long, is never on a call's path.
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

/** The key /proc/locks names `file` by: "major:minor:inode". */
const lockKey = (file: FileKey): string => `${procLocksDevice(file.dev)}:${file.ino}`;

/**
 * The taker's pid of a granted flock on the file `key` in one lock line ("1: FLOCK  ADVISORY  WRITE 1234
 * fe:00:5678 0 EOF"; a waiter's line has "->" after the number), or undefined for any other line.
 */
function flockTaker(line: string, key: string): number | undefined {
  const fields = line.trim().split(/\s+/);
  if (fields[1] !== "FLOCK" || fields[4] === undefined || fields[5] !== key) return undefined;
  const pid = Number(fields[4]);
  return Number.isInteger(pid) ? pid : undefined;
}

/**
 * The pids that took the flocks granted on `file` (not waiters), parsed from `locksText` (the text of
 * /proc/locks; read here when not given). A pid is 0 when its process is not visible in this /proc's namespace.
 * These took the locks; they need not hold them now (see the module comment).
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
  const key = lockKey(file);
  const holders: number[] = [];
  for (const line of text.split("\n")) {
    const pid = flockTaker(line, key);
    if (pid !== undefined) holders.push(pid);
  }
  return holders;
}

/**
 * Whether the fdinfo text of one descriptor shows an exclusive flock on `file`: the kernel lists there, as
 * `lock:\t1: FLOCK  ADVISORY  WRITE <pid> <maj:min:ino> 0 EOF`, the granted locks of that descriptor's open file
 * description, whoever took them.
 */
export function fdinfoShowsFlock(fdinfo: string, file: FileKey): boolean {
  const key = lockKey(file);
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

/**
 * The takers' pids of the flocks on `key` that process `pid`'s descriptors hold (from its fdinfo), or undefined
 * when its descriptors cannot be read (it is gone, or another user's process and we are not root).
 */
function fdinfoFlocks(proc: string, pid: number, key: string, budget: { files: number }): Set<number> | undefined {
  let fds: string[];
  try {
    fds = readdirSync(`${proc}/${pid}/fdinfo`);
  } catch {
    return undefined;
  }
  const takers = new Set<number>();
  for (const fd of fds) {
    budget.files--;
    let text: string;
    try {
      text = readFileSync(`${proc}/${pid}/fdinfo/${fd}`, "latin1");
    } catch {
      continue; // closed meanwhile: it holds nothing
    }
    for (let at = text.indexOf("lock:"); at >= 0; at = text.indexOf("lock:", at + 5)) {
      const end = text.indexOf("\n", at);
      const taker = flockTaker(text.slice(at + 5, end < 0 ? undefined : end), key);
      if (taker !== undefined) takers.add(taker);
    }
  }
  return takers;
}

/** Who holds the flocks on a file now, as far as this /proc tells. */
export interface LockHoldersNow {
  /**
   * Processes holding the file's flocks now (pids as this /proc shows them): each lock's taker when it still holds
   * it, else every process with a descriptor whose fdinfo shows that lock.
   */
  pids: number[];
  /**
   * Whether every lock on the file has its holders in `pids`: false when a lock's taker is not visible here (pid 0),
   * when no holder of a lock was found (it is in no process this /proc shows, or in one whose descriptors we may
   * not read: another user's, when we are not root), or when the look through /proc ran past its bound. True with
   * no pids: nobody holds a flock on the file.
   */
  complete: boolean;
}

/** How much a look through every process may read, and for how long: past either, the holders are not all told. */
export const SCAN_MAX_FILES = 200_000;
export const SCAN_MAX_MS = 2_000;
/** A look through every process lets other work of this process run after this many fdinfo files. */
const SCAN_YIELD_FILES = 512;

/**
 * The processes holding a flock on `file` now (see the module comment and LockHoldersNow). Each taker /proc/locks
 * lists is confirmed in its own fdinfo; when one no longer holds its lock (it exited or closed it after handing it
 * on, or its pid now names another process), every process's fdinfo is read for that lock's holders (at most
 * SCAN_MAX_FILES files and SCAN_MAX_MS, yielding to other work on the way). Not looked for: other processes sharing
 * a lock its taker still holds. Locks are told apart by their taker's pid (two locks one pid took count as one).
 * `proc` and `locksText` are for tests.
 */
export async function flockHoldersNow(file: FileKey, opts: { proc?: string; locksText?: string } = {}): Promise<LockHoldersNow> {
  const proc = opts.proc ?? "/proc";
  let locksText = opts.locksText;
  if (locksText === undefined) {
    try {
      locksText = readFileSync(`${proc}/locks`, "latin1");
    } catch {
      return { pids: [], complete: false };
    }
  }
  const takers = new Set(flockHolders(file, locksText));
  const key = lockKey(file);
  const budget = { files: SCAN_MAX_FILES };
  const holders = new Set<number>();
  // A lock whose taker is not visible here (pid 0) may be held by processes we cannot see at all.
  const complete = !takers.has(0);
  const unconfirmed = new Set<number>();
  for (const taker of takers) {
    if (taker === 0) continue;
    if (fdinfoFlocks(proc, taker, key, budget)?.has(taker)) holders.add(taker);
    else unconfirmed.add(taker);
  }
  if (unconfirmed.size === 0) return { pids: [...holders], complete };
  const found = new Set<number>();
  const started = performance.now();
  let sinceYield = 0;
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((name) => /^[1-9]\d*$/.test(name));
  } catch {
    return { pids: [...holders], complete: false };
  }
  for (const name of pids) {
    if (budget.files <= 0 || performance.now() - started > SCAN_MAX_MS) return { pids: [...holders], complete: false };
    const before = budget.files;
    const held = fdinfoFlocks(proc, Number(name), key, budget);
    for (const taker of held ?? []) {
      if (!unconfirmed.has(taker)) continue; // a sharer of a lock its taker holds (see above)
      holders.add(Number(name));
      found.add(taker);
    }
    sinceYield += before - budget.files;
    if (sinceYield >= SCAN_YIELD_FILES) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return { pids: [...holders], complete: complete && [...unconfirmed].every((taker) => found.has(taker)) };
}

/** The effective uid of process `pid` (from its /proc status), or undefined when it cannot be read. */
export function effectiveUid(pid: number, proc = "/proc"): number | undefined {
  if (!(pid > 0)) return undefined;
  try {
    const status = readFileSync(`${proc}/${pid}/status`, "latin1");
    const m = /\nUid:\s+\d+\s+(\d+)/.exec(status);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
