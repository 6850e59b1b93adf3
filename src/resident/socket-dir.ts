/**
 * The server's place on the file system: its socket, the lock beside it (one server per socket) and the log of
 * a server the launcher started. The socket's directory must be root's alone — owned by root, not a symbolic
 * link, writable by nobody else — and so must every directory above it (sticky directories such as /tmp
 * excepted: nobody can rename another's entry in them), so no other user can move, replace or reach what the
 * server makes there; the lock is opened without following symbolic links; the socket is created under a 177
 * umask rather than chmod'ed afterwards.
 * @module
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  rmSync,
  type Stats,
  writeSync,
} from "node:fs";
import type net from "node:net";
import path from "node:path";
import { lockPathOf } from "#invoke/resident-protocol.js";
import { tryFlockFd } from "#sys/flock.js";

/** Why a directory may not hold the server's files, or undefined when it may. */
function unsafeDirectory(dir: string, stats: Stats, strict: boolean): string | undefined {
  const euid = process.geteuid?.() ?? 0;
  if (stats.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!stats.isDirectory()) return `${dir} is not a directory`;
  if (stats.uid !== euid && stats.uid !== 0) return `${dir} belongs to uid ${stats.uid}`;
  const sticky = (stats.mode & 0o1000) !== 0;
  if ((stats.mode & 0o022) !== 0 && (strict || !sticky))
    return `${dir} is writable by ${stats.mode & 0o020 ? "its group" : "others"} (mode ${(stats.mode & 0o7777).toString(8)})`;
  return undefined;
}

/**
 * Makes the socket's directory where it is missing (0700, whatever the umask) and checks it and its ancestors;
 * throws with the reason when they are not root's alone.
 */
export function prepareSocketDir(socketPath: string): void {
  const dir = path.dirname(path.resolve(socketPath));
  const made = mkdirSync(dir, { recursive: true, mode: 0o700 });
  // (mkdir's mode is filtered by the umask; what was made here is set again, and then checked like the rest.)
  if (made !== undefined) {
    for (let d = dir; d.length >= made.length; d = path.dirname(d)) {
      const fd = openSync(d, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        fchmodSync(fd, 0o700);
      } finally {
        closeSync(fd);
      }
    }
  }
  const problem = unsafeDirectory(dir, lstatSync(dir), true);
  if (problem) throw new Error(`refusing the socket directory: ${problem}`);
  for (let d = realpathSync(path.dirname(dir)); ; d = path.dirname(d)) {
    const above = unsafeDirectory(d, lstatSync(d), false);
    if (above) throw new Error(`refusing the socket directory ${dir}: ${above}`);
    if (d === "/") break;
  }
}

/**
 * Takes the server's lock: `inherited` is a descriptor of it the launcher passed (already locked by that open
 * file), else the file is opened here. Resolves to the descriptor; rejects when another server holds it or the
 * file is not a plain file of root's.
 */
export async function takeServerLock(socketPath: string, inherited?: number): Promise<number> {
  const lockPath = lockPathOf(socketPath);
  let fd: number;
  if (inherited !== undefined) {
    const held = fstatSync(inherited);
    const there = lstatSync(lockPath);
    if (held.dev !== there.dev || held.ino !== there.ino) throw new Error(`descriptor ${inherited} is not ${lockPath}`);
    fd = inherited;
  } else {
    fd = openSync(lockPath, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  }
  const stats = fstatSync(fd);
  if (!stats.isFile() || (stats.uid !== 0 && stats.uid !== (process.geteuid?.() ?? 0))) {
    closeSync(fd);
    throw new Error(`${lockPath} is not a plain file of root's`);
  }
  if (!(await tryFlockFd(fd, lockPath))) {
    closeSync(fd);
    throw new Error(`another tscni server serves ${socketPath}`);
  }
  // Never let go of, nor taken again: callers prove that the listener holds it from the listener's own
  // descriptors (whoever took it), and a lock let go for a moment could be taken by any uid-0 process.
  writeStartRecord(fd, inherited !== undefined);
  return fd;
}

/**
 * Writes the start record in the lock file ("<attempts> <since> <pid>", launcher/launcher.c's may_try_start and
 * listener.h's recorded_server_pid) with this process's pid: `keepAttempts` keeps the launcher's count of starts
 * (cleared once the server started well), else it is cleared now. A waiting launcher believes the pid only once
 * that process is proven to be a server holding the lock.
 */
function writeStartRecord(lockFd: number, keepAttempts: boolean): void {
  try {
    let attempts = "0 0";
    if (keepAttempts) {
      const buf = Buffer.alloc(64);
      const n = readSync(lockFd, buf, 0, buf.length, 0);
      const [count, since] = buf.subarray(0, n).toString("latin1").trim().split(/\s+/);
      if (/^\d+$/.test(count ?? "") && /^\d+$/.test(since ?? "")) attempts = `${count} ${since}`;
    }
    ftruncateSync(lockFd, 0);
    writeSync(lockFd, `${attempts} ${process.pid}\n`, 0);
  } catch {
    /* the record only slows the next start down, or a waiting call runs itself */
  }
}

/** Clears the launcher's record of failed starts kept in the lock file (the server started well); its pid stays. */
export function clearStartRecord(lockFd: number): void {
  writeStartRecord(lockFd, false);
}

/** The identity of a socket file, to remove it only while it is still the one this server made. */
export interface SocketFile {
  path: string;
  dev: number;
  ino: number;
}

/**
 * Listens on a new socket at `socketPath` (a stale socket of a dead server is removed first: the caller holds the
 * lock), created 0600 under a 177 umask; resolves to the socket file's identity.
 */
export async function listenPrivately(server: net.Server, socketPath: string): Promise<SocketFile> {
  let stale: Stats | undefined;
  try {
    stale = lstatSync(socketPath);
  } catch {
    /* none */
  }
  if (stale && !stale.isSocket()) throw new Error(`${socketPath} exists and is not a socket`);
  if (stale) rmSync(socketPath);
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  const made = lstatSync(socketPath);
  if (!made.isSocket() || (made.mode & 0o777) !== 0o600) {
    server.close();
    throw new Error(`${socketPath} was not created as a 0600 socket (mode ${(made.mode & 0o7777).toString(8)})`);
  }
  return { path: socketPath, dev: made.dev, ino: made.ino };
}

/**
 * Whether `socketPath` still names the socket `file` (any socket when `file` is undefined: one systemd made). Not
 * when it is gone or replaced.
 */
export function socketFileIsCurrent(file: SocketFile | undefined, socketPath: string): boolean {
  try {
    const now = lstatSync(socketPath);
    return file ? now.dev === file.dev && now.ino === file.ino : now.isSocket();
  } catch {
    return false;
  }
}

/** Removes the socket file if it is still the one the server made (another server may have replaced it). */
export function removeSocketFile(file: SocketFile): void {
  try {
    if (socketFileIsCurrent(file, file.path)) rmSync(file.path);
  } catch {
    /* gone */
  }
}
