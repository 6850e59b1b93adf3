/**
 * flock(2) on an open file, the lock Go's host-local takes on its store, so ours and Go's exclude each other.
 * Under the standalone (Bun) build it is a system call through FFI, asked without blocking and retried with a
 * growing pause, so one process can wait for several locks at once (a resident server or a pod manager runs many
 * plugin calls concurrently: a blocking flock would stop every other call, and deadlock on a lock one of them
 * holds). Under Node, which has no flock, util-linux flock(1) (found as every tool is, tool-path.ts) is run on
 * our descriptor (its fd 0), which locks our open file description just the same.
 * No wait is forever, and none is for a stranger: a lock file anyone can open (a network namespace file is
 * world-readable) can be locked by any user, so a wait goes on only while the lock is held by root, by this
 * process's own user or by a process this /proc does not show; a lock held by another user alone is not waited
 * for (no such process may write what the lock guards). Every wait ends after `timeoutMs` with LockTimeoutError.
 * @module
 */
import { closeSync, fstatSync, openSync, statSync, unlinkSync } from "node:fs";
import { KeyedMutex } from "./keyed-mutex.js";
import { bindLibc, type Libc } from "./libc.js";
import { effectiveUid, flockHolders } from "./lock-holders.js";
import { findTool, toolSearchPath } from "./tool-path.js";
import { endPhase, phaseClock } from "./phase-trace.js";

const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;

let ffiFlock: Promise<Pick<Libc, "flock"> | null> | undefined;
const flockLibc = () => (ffiFlock ??= bindLibc(["flock"]).then((b) => b?.fn ?? null));

/** How long a lock is waited for unless a caller says otherwise. */
export const DEFAULT_LOCK_WAIT_MS = 120_000;
/** After this long, a waiter looks who holds the lock, and then every HOLDER_LOOK_MS. */
const FIRST_HOLDER_LOOK_MS = 100;
const HOLDER_LOOK_MS = 500;

/** How a lock is taken. */
export interface FlockOptions {
  /** A shared (read) lock instead of an exclusive one. */
  shared?: boolean;
  /** The longest wait (default DEFAULT_LOCK_WAIT_MS). */
  timeoutMs?: number;
}

/** A lock not had within its time limit; `holders` are the pids that held it (as this /proc shows them). */
export class LockTimeoutError extends Error {
  constructor(
    readonly lockPath: string,
    readonly waitedMs: number,
    readonly holders: number[],
  ) {
    super(
      `timed out after ${(waitedMs / 1000).toFixed(waitedMs < 10_000 ? 1 : 0)} s waiting for the lock on ${lockPath}` +
        (holders.length ? ` (held by pid ${holders.join(", ")})` : ""),
    );
    this.name = "LockTimeoutError";
  }
}

/** Whether the holders of the lock on `fd` are only processes of other users (see the module comment). */
function heldByStrangersOnly(fd: number): boolean {
  const holders = flockHolders(fstatSync(fd));
  if (holders.length === 0) return false;
  const me = process.geteuid?.() ?? 0;
  return holders.every((pid) => {
    const uid = effectiveUid(pid);
    return uid !== undefined && uid !== 0 && uid !== me;
  });
}

/** Takes the lock on `fd` with util-linux flock(1), without waiting (Node: no FFI); rejects when it is held. */
function flockWithTool(fd: number, lockPath: string, shared: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (msg: string) => reject(new Error(`failed to lock ${lockPath}: ${msg}`));
    const tool = findTool("flock");
    if (!tool) return fail(`cannot run flock(1) from util-linux: no executable flock in ${toolSearchPath().join(":")}`);
    // (Loaded here, docs/startup.md: only the Node fallback runs flock(1).)
    const { spawn } = process.getBuiltinModule("node:child_process");
    const child = spawn(tool, [shared ? "--shared" : "--exclusive", "--nonblock", "0"], { stdio: [fd, "ignore", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
    child.on("error", (e) => fail(`cannot run flock(1) from util-linux: ${e.message}`));
    child.on("close", (code, signal) => {
      if (code === 0) resolve();
      else fail(`flock(1) exited with ${code ?? signal}${stderr ? `: ${stderr.trim()}` : ""}`);
    });
  });
}

/**
 * Takes a flock on `fd` (released when the file is closed or the process exits), waiting at most `timeoutMs`
 * (LockTimeoutError), and not for other users (see the module comment): true when it is held, false when it was
 * held by other users only and is not taken.
 */
export async function flockFd(fd: number, lockPath: string, opts: FlockOptions = {}): Promise<boolean> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_LOCK_WAIT_MS;
  const libc = await flockLibc();
  const op = (opts.shared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  // Without FFI (Node) each try is a flock(1) run without waiting: slower, but the same rules.
  const tryLock = libc
    ? async () => libc.flock(fd, op) === 0
    : () =>
        flockWithTool(fd, lockPath, opts.shared ?? false).then(
          () => true,
          (e: Error) => {
            if (/exited with 1\b/.test(e.message)) return false;
            throw e;
          },
        );
  const started = performance.now();
  let nextLook = started + FIRST_HOLDER_LOOK_MS;
  // A failure here is the lock being held (EWOULDBLOCK) or an interrupted call: our own descriptor cannot be bad.
  for (let pause = libc ? 1 : 10; !(await tryLock()); pause = Math.min(pause * 2, libc ? 50 : 200)) {
    const now = performance.now();
    if (now >= nextLook) {
      if (heldByStrangersOnly(fd)) return false;
      nextLook = now + HOLDER_LOOK_MS;
    }
    if (now - started >= timeoutMs) throw new LockTimeoutError(lockPath, now - started, flockHolders(fstatSync(fd)));
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(1, started + timeoutMs - now))));
  }
  return true;
}

/** Takes an exclusive flock on `fd` if it is free now; false when another holder has it. */
export async function tryFlockFd(fd: number, lockPath: string): Promise<boolean> {
  const libc = await flockLibc();
  if (libc) return libc.flock(fd, LOCK_EX | LOCK_NB) === 0;
  return flockWithTool(fd, lockPath, false).then(
    () => true,
    () => false,
  );
}

/** A lock held on a lock file: `release` unlocks it (and removes the file when asked, safely for other waiters). */
export interface HeldLock {
  release(opts?: { remove?: boolean }): void;
}

/**
 * Whether the file locked through `fd` is still the one at `lockPath`: its holder may have removed (or replaced)
 * the file while we waited, and a lock on a removed file excludes nobody.
 */
export function lockedFileIsCurrent(fd: number, lockPath: string): boolean {
  let current: { ino: number; dev: number };
  try {
    current = statSync(lockPath);
  } catch {
    return false; // removed by the holder before us
  }
  const mine = fstatSync(fd);
  return current.ino === mine.ino && current.dev === mine.dev;
}

/**
 * Locks the file at `lockPath` (creating it). A lock file may be removed by its holder when the lock is no
 * longer needed; a waiter that then wakes up on the removed file notices (its descriptor is no longer the file
 * at the path) and locks the new one instead, so removal never lets two holders in.
 */
export async function lockFile(lockPath: string, opts: FlockOptions = {}): Promise<HeldLock> {
  for (;;) {
    const fd = openSync(lockPath, "a", 0o600);
    try {
      const held = await flockFd(fd, lockPath, opts);
      if (!held || lockedFileIsCurrent(fd, lockPath)) {
        return {
          release: ({ remove = false } = {}) => {
            if (remove) {
              try {
                unlinkSync(lockPath);
              } catch {
                /* already gone */
              }
            }
            closeSync(fd);
          },
        };
      }
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    closeSync(fd);
  }
}

const inProcess = new KeyedMutex();

/**
 * Runs `fn` holding an exclusive flock on the file `open()` opens (closed afterwards, which releases the lock).
 * Callers in this process queue in order without polling; other processes are waited for with flockFd.
 */
export function withFlock<T>(
  lockPath: string,
  open: () => number,
  fn: () => T | Promise<T>,
  lockError: (e: Error) => Error = (e) => e,
  opts: FlockOptions = {},
): Promise<T> {
  const asked = phaseClock();
  return inProcess.run(lockPath, async () => {
    const fd = open();
    try {
      await flockFd(fd, lockPath, opts).catch((e: Error) => {
        throw lockError(e);
      });
      endPhase("lock wait", lockPath, asked);
      return await fn();
    } finally {
      closeSync(fd);
    }
  });
}
