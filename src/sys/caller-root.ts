/**
 * A path resolved as another process sees it: through that process's root directory (/proc/<pid>/root, opened
 * while the process was identified), with openat2's RESOLVE_IN_ROOT, so an absolute symbolic link on the way
 * (/var/run -> /run) stays inside that root instead of reaching ours. A daemon serving callers of other mount
 * namespaces (the dhcp daemon in a pod, or under `unshare -m`) opens what a caller names this way, so no caller
 * reaches a file it could not open itself, and a file only the daemon sees is not found.
 * The resolved file is then named by a path this process can open later (renewals come long after the call):
 * `/proc/self/fd/<dir>/<name>`, the caller's directory held open, so the name is looked up again each time (a
 * namespace file removed by its runtime is gone for us too); where that does not name the same file (the name is
 * a symbolic link), the file itself held open, `/proc/self/fd/<file>`.
 * Needs Bun's FFI (openat2 has no Node binding).
 * @module
 */
import { closeSync, fstatSync, lstatSync, openSync, readlinkSync, statSync } from "node:fs";
import * as path from "./posix-path.js";
import { bindLibc, type BoundLibc } from "./libc.js";

const SYS_OPENAT2 = 437; // the same number on every architecture (added after the tables were unified)
const O_PATH = 0o10000000;
const O_DIRECTORY = 0o200000;
const O_CLOEXEC = 0o2000000;
const RESOLVE_IN_ROOT = 0x10;
const ENOENT = 2;
const ELOOP = 40;
const EXDEV = 18;

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
    return this.errno === ENOENT;
  }
}

/**
 * Opens the root directory of process `procPid` (a pid of this process's /proc); call it while that process is
 * known to be the caller. The descriptor stays valid after the process leaves.
 */
export function openProcessRoot(procPid: number): number {
  return openSync(`/proc/${procPid}/root`, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/** openat2(rootFd, pathname, flags, RESOLVE_IN_ROOT); throws CallerPathError. */
async function openInRoot(rootFd: number, pathname: string, flags: number): Promise<number> {
  const f = await load();
  if (!f) throw new Error("resolving a caller's path needs the standalone (Bun) build: openat2 through FFI");
  const how = new Uint8Array(24);
  const view = new DataView(how.buffer);
  view.setBigUint64(0, BigInt(flags), true);
  view.setBigUint64(16, BigInt(RESOLVE_IN_ROOT), true);
  const fd = Number(f.fn.syscall(SYS_OPENAT2, rootFd, Buffer.from(`${pathname}\0`), how, how.length));
  if (fd < 0) throw new CallerPathError(pathname, f.errno());
  return fd;
}

/** A caller's file as this process can open it: `path`, valid until every holder has closed it. */
export interface CallerFile {
  /** Where this process opens the caller's file. */
  readonly path: string;
  /** `text` (a message about the file) with the file named as its caller named it, not by `path`. */
  inCallerTerms(text: string): string;
  /** Another holder of the same file (a lease keeps one beyond the call). */
  retain(): CallerFile;
  /** This holder is done with it. */
  close(): void;
}

/**
 * `pathname` (absolute) resolved in the root `rootFd` (see the module comment). Throws CallerPathError. A last
 * component that is a magic link (/proc/<pid>/ns/net: RESOLVE_IN_ROOT does not follow those) is followed from its
 * directory, which is resolved in the root; a last component that is an ordinary symbolic link is then refused
 * (followed from there, an absolute one would leave the caller's root).
 */
export async function resolveInRoot(rootFd: number, pathname: string): Promise<CallerFile> {
  let file: number;
  try {
    file = await openInRoot(rootFd, pathname, O_PATH | O_CLOEXEC);
  } catch (e) {
    if (!(e instanceof CallerPathError) || (e.errno !== EXDEV && e.errno !== ELOOP)) throw e;
    const dir = await openInRoot(rootFd, path.dirname(pathname), O_PATH | O_DIRECTORY | O_CLOEXEC);
    const named = `/proc/self/fd/${dir}/${path.basename(pathname)}`;
    try {
      if (lstatSync(named).isSymbolicLink() && !/^[a-z_]+:\[\d+\]$/.test(readlinkSync(named))) throw new CallerPathError(pathname, ELOOP);
      statSync(named);
    } catch (inner) {
      closeSync(dir);
      throw inner instanceof CallerPathError
        ? inner
        : new CallerPathError(pathname, (inner as NodeJS.ErrnoException).errno ? -(inner as NodeJS.ErrnoException).errno! : ENOENT);
    }
    return holding(dir, named, pathname);
  }
  let dir: number | undefined;
  try {
    dir = await openInRoot(rootFd, path.dirname(pathname), O_PATH | O_DIRECTORY | O_CLOEXEC);
  } catch {
    /* the file itself is then what is held */
  }
  const target = fstatSync(file);
  let named = dir === undefined ? undefined : `/proc/self/fd/${dir}/${path.basename(pathname)}`;
  if (named !== undefined) {
    try {
      const there = statSync(named);
      if (there.dev !== target.dev || there.ino !== target.ino) named = undefined;
    } catch {
      named = undefined;
    }
  }
  if (named !== undefined)
    closeSync(file); // the directory is what is held
  else if (dir !== undefined) closeSync(dir); // the file is
  return named !== undefined ? holding(dir!, named, pathname) : holding(file, `/proc/self/fd/${file}`, pathname);
}

/** A CallerFile named `shown` here and `asNamed` by its caller, valid while the descriptor `held` is open. */
function holding(held: number, shown: string, asNamed: string): CallerFile {
  let holders = 1;
  const handle = (): CallerFile => {
    let open = true;
    return {
      path: shown,
      inCallerTerms: (text) => text.split(shown).join(asNamed),
      retain: () => {
        holders++;
        return handle();
      },
      close: () => {
        if (!open) return;
        open = false;
        if (--holders === 0) closeSync(held);
      },
    };
  };
  return handle();
}
