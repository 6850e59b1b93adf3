/**
 * A file another process names, opened as that process sees it: through its root directory (/proc/<pid>/root,
 * opened while the process was identified), with openat2's RESOLVE_IN_ROOT, so an absolute symbolic link on the
 * way (/var/run -> /run) stays inside that root instead of reaching ours. A daemon serving callers of other mount
 * namespaces (the dhcp daemon in a pod, or under `unshare -m`) opens what a caller names this way, so no caller
 * reaches a file it could not open itself, and a file only the daemon sees is not found. No step of a resolution
 * is ever taken from this process's root: where openat2 refuses (a magic link), the name is refused too, but for
 * the one kind resolved here by hand, below.
 * The file itself is then held open (renewals come long after the call) and named `/proc/self/fd/<file>`: a path
 * that always reaches the file the call opened, however its name is re-pointed later. The name is looked up again
 * (in the same root) only to tell whether it still exists (`stillNamed`), never to reach the file.
 * Needs Bun's FFI (openat2 has no Node binding).
 * @module
 */
import { closeSync, fstatSync, openSync, readlinkSync, statfsSync, statSync } from "node:fs";
import { type BoundLibc, bindLibc } from "./libc.js";
import * as path from "./posix-path.js";

const SYS_OPENAT2 = 437; // the same number on every architecture (added after the tables were unified)
const O_PATH = 0o10000000;
const O_DIRECTORY = 0o200000;
const O_CLOEXEC = 0o2000000;
const RESOLVE_IN_ROOT = 0x10;
const ENOENT = 2;
const ENOTDIR = 20;
const ELOOP = 40;
const EXDEV = 18;
const EAGAIN = 11;
const PROC_SUPER_MAGIC = 0x9fa0;
/** What readlink shows of a namespace's magic link (/proc/<pid>/ns/net: `net:[4026531840]`): its type and inode. */
const NAMESPACE_LINK = /^[a-z_]+:\[(\d+)\]$/;

let ffi: Promise<BoundLibc<"syscall"> | null> | undefined;
const load = () => (ffi ??= bindLibc(["syscall"], { errno: true }));

/** A file (or directory) the caller named could not be resolved in its root. */
export class CallerPathError extends Error {
  constructor(
    readonly pathname: string,
    readonly errno: number,
  ) {
    super(errno === ENOENT ? `${pathname} does not exist as the caller sees it` : `cannot open ${pathname} as the caller sees it (errno ${errno})`);
    this.name = "CallerPathError";
  }
  get notFound(): boolean {
    return this.errno === ENOENT || this.errno === ENOTDIR;
  }
}

/**
 * Opens the root directory of process `procPid` (a pid of this process's /proc); call it while that process is
 * known to be the caller. The descriptor stays valid after the process leaves.
 */
export function openProcessRoot(procPid: number): number {
  return openSync(`/proc/${procPid}/root`, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/** Opens the directory `dir` of this process as a root to resolve names in (resolveInRoot). */
export function openRootDirectory(dir: string): number {
  return openSync(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/**
 * openat2(dirFd, pathname, flags, resolve); throws CallerPathError. EAGAIN (a rename or mount elsewhere
 * meanwhile, which RESOLVE_IN_ROOT reports rather than risk a ".." leaving the root) is tried again.
 */
async function openat2(dirFd: number, pathname: string, flags: number, resolve: number): Promise<number> {
  const f = await load();
  if (!f) throw new Error("resolving a caller's path needs the standalone (Bun) build: openat2 through FFI");
  const how = new Uint8Array(24);
  const view = new DataView(how.buffer);
  view.setBigUint64(0, BigInt(flags), true);
  view.setBigUint64(16, BigInt(resolve), true);
  for (let tries = 0; ; tries++) {
    const fd = Number(f.fn.syscall(SYS_OPENAT2, dirFd, Buffer.from(`${pathname}\0`), how, how.length));
    if (fd >= 0) return fd;
    const errno = f.errno();
    if (errno !== EAGAIN || tries >= 100) throw new CallerPathError(pathname, errno);
  }
}

/**
 * `pathname` (absolute) opened O_PATH in the root `rootFd`; throws CallerPathError. RESOLVE_IN_ROOT keeps every
 * step in the root: symbolic links (absolute ones from the root), ".." (stopping at the root) and mount points
 * (crossed as the caller's mount namespace has them: a namespace bind-mounted on /run/netns/<name> opens). It
 * refuses magic links (EXDEV). One is followed here: a last component that is a namespace's magic link
 * (/proc/<pid>/ns/net, as runtimes that keep no namespace file name it), read in a procfs directory that is itself
 * resolved in the root. Following it jumps to the namespace without walking any path, and the namespace reached
 * is checked to be the one the link shows. Nothing else is followed outside openat2: the old way, following the
 * last component with this process's resolution, let a caller chain an ordinary symbolic link spelled like a
 * magic link into an absolute one, resolved in this process's root.
 */
async function openInRoot(rootFd: number, pathname: string): Promise<number> {
  try {
    return await openat2(rootFd, pathname, O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT);
  } catch (e) {
    if (!(e instanceof CallerPathError) || (e.errno !== EXDEV && e.errno !== ELOOP)) throw e;
  }
  const base = path.basename(pathname);
  if (base === "" || base === "." || base === "..") throw new CallerPathError(pathname, ELOOP);
  const dir = await openat2(rootFd, path.dirname(pathname), O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_IN_ROOT);
  try {
    // procfs: no one makes symbolic links there, so a link in it is the kernel's, not a caller's.
    if (statfsSync(`/proc/self/fd/${dir}`).type !== PROC_SUPER_MAGIC) throw new CallerPathError(pathname, ELOOP);
    let shown: string;
    try {
      shown = readlinkSync(`/proc/self/fd/${dir}/${base}`);
    } catch (inner) {
      throw new CallerPathError(pathname, -((inner as NodeJS.ErrnoException).errno ?? -ENOENT));
    }
    const inode = NAMESPACE_LINK.exec(shown)?.[1];
    if (inode === undefined) throw new CallerPathError(pathname, ELOOP);
    // One component from the procfs directory, no resolution flag: openat2 follows the magic link itself.
    const file = await openat2(dir, base, O_PATH | O_CLOEXEC, 0);
    if (String(fstatSync(file).ino) !== inode || fstatSync(file).dev !== nsfsDevice()) {
      closeSync(file);
      throw new CallerPathError(pathname, ELOOP);
    }
    return file;
  } finally {
    closeSync(dir);
  }
}

let nsfs: number | undefined;
/** The device of nsfs, where every namespace file is (this process's own among them). */
export function nsfsDevice(): number {
  return (nsfs ??= statSync("/proc/self/ns/net").dev);
}

/** A caller's file held open by this process. */
export interface CallerFile {
  /** Where this process opens the file: `/proc/self/fd/<n>`, the descriptor held, always the file resolved at first. */
  readonly path: string;
  /** The file's device and inode (a namespace's identity while it lives). */
  readonly dev: number;
  readonly ino: number;
  /** `text` (a message about the file) with the file named as its caller named it, not by `path`. */
  inCallerTerms(text: string): string;
  /**
   * Whether the caller's name, resolved again in the same root, still reaches some file (false when it is gone).
   * A signal only (its namespace file removed by its runtime): whatever the name reaches now is never used.
   */
  stillNamed(): Promise<boolean>;
  /** Another holder of the same file (a lease keeps one beyond the call). */
  retain(): CallerFile;
  /** This holder is done with it. */
  close(): void;
}

/**
 * `pathname` (absolute) resolved in the root `rootFd` (see openInRoot) and held open. Throws CallerPathError.
 * `rootFd` stays the caller's to close: the result holds a copy of it (for `stillNamed`).
 */
export async function resolveInRoot(rootFd: number, pathname: string): Promise<CallerFile> {
  const file = await openInRoot(rootFd, pathname);
  let root: number;
  try {
    root = openSync(`/proc/self/fd/${rootFd}`, O_PATH | O_DIRECTORY | O_CLOEXEC);
  } catch (e) {
    closeSync(file);
    throw e;
  }
  const { dev, ino } = fstatSync(file);
  const stillNamed = async () => {
    try {
      closeSync(await openInRoot(root, pathname));
      return true;
    } catch (e) {
      return !(e instanceof CallerPathError && e.notFound);
    }
  };
  return holding([file, root], { path: `/proc/self/fd/${file}`, dev, ino, stillNamed }, pathname);
}

/** A CallerFile shown as `file.path` here and `asNamed` by its caller, valid while the descriptors `held` are open. */
function holding(held: readonly number[], file: Pick<CallerFile, "path" | "dev" | "ino" | "stillNamed">, asNamed: string): CallerFile {
  let holders = 1;
  const handle = (): CallerFile => {
    let open = true;
    return {
      ...file,
      inCallerTerms: (text) => text.split(file.path).join(asNamed),
      retain: () => {
        holders++;
        return handle();
      },
      close: () => {
        if (!open) return;
        open = false;
        if (--holders === 0) for (const fd of held) closeSync(fd);
      },
    };
  };
  return handle();
}
