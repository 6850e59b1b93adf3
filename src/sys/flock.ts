/**
 * flock(2) on an open file, the lock Go's host-local takes on its store, so ours and Go's exclude each other.
 * Under the standalone (Bun) build it is a system call through FFI, asked without blocking and retried with a
 * growing pause, so one process can wait for several locks at once (a resident server or a pod manager runs many
 * plugin calls concurrently: a blocking flock would stop every other call, and deadlock on a lock one of them
 * holds). Under Node, which has no flock, util-linux flock(1) (found as every tool is, tool-path.ts) is run on
 * our descriptor (its fd 0), which locks our open file description just the same.
 *
 * No wait is forever, and none is for a stranger. A lock file anyone can open (a network namespace file is
 * world-readable) can be locked by any user, so a wait goes on only while the lock is held by root, by this
 * process's own user, or by a process that cannot be told; a lock held by other users only is not waited for (no
 * such process may write what the lock guards). The rule judges who holds the lock now, not who took it: a lock
 * outlives its taker in a child that kept the descriptor, and the taker's pid may name another process by then
 * (lock-holders.ts). A lock's holders are its taker while the taker's fdinfo shows the lock, else every process
 * whose fdinfo shows it (looked for through all of /proc, within a bound), each judged by its effective uid. A
 * holder of root's or our user's means waiting, and so does a lock whose holders cannot be told: its taker is in
 * no process this /proc shows, no holder of it was found (it is in no such process, or in one whose descriptors
 * we may not read: a waiter that is not root cannot read other users', so it waits for their locks too), or the
 * look ran past its bound. A look is made after FIRST_HOLDER_LOOK_MS of waiting, then every HOLDER_LOOK_MS (more
 * apart when a look is slow).
 *
 * Every wait ends after its bound, `timeoutMs`, with LockTimeoutError; a bound is counted from when the lock was
 * asked for (`since`), so the time a waiter spent queued behind others of this process (withFlock, lockQueue)
 * counts against the same bound as its flock. A wait also ends when its call's signal aborts (call-signal.ts: the
 * resident server answered the call at its time limit): it rejects with the signal's reason and what the lock
 * guards is not run.
 * @module
 */
import { closeSync, fstatSync, openSync, statSync, unlinkSync } from "node:fs";
import { callSignal } from "./call-signal.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { bindLibc, type Libc } from "./libc.js";
import { effectiveUid, flockHolders, flockHoldersNow } from "./lock-holders.js";
import { pauseFor } from "./pause.js";
import { endPhase, phaseClock } from "./phase-trace.js";
import { findTool, toolSearchPath } from "./tool-path.js";

const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;

let ffiFlock: Promise<Pick<Libc, "flock"> | null> | undefined;
const flockLibc = () => (ffiFlock ??= bindLibc(["flock"]).then((b) => b?.fn ?? null));

/** How long a lock is waited for unless a caller says otherwise. */
export const DEFAULT_LOCK_WAIT_MS = 120_000;
/** After this long, a waiter looks who holds the lock, and then every HOLDER_LOOK_MS, or 10 times a look's length. */
const FIRST_HOLDER_LOOK_MS = 100;
const HOLDER_LOOK_MS = 500;

/** How a lock is taken. */
export interface FlockOptions {
  /** A shared (read) lock instead of an exclusive one. */
  shared?: boolean;
  /** The longest wait (default DEFAULT_LOCK_WAIT_MS), counted from `since`. */
  timeoutMs?: number;
  /** When the lock was asked for (performance.now()); default: when the wait starts. */
  since?: number;
  /** Aborted: the wait ends with its reason (default: the call's signal, call-signal.ts). */
  signal?: AbortSignal;
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

/**
 * Whether the lock on `fd` is held by processes of other users only, judged on who holds it now (see the module
 * comment); `holders` are the pids found holding it.
 */
async function judgeHolders(fd: number): Promise<{ strangersOnly: boolean; holders: number[] }> {
  const now = await flockHoldersNow(fstatSync(fd));
  const me = process.geteuid?.() ?? 0;
  // A holder whose uid cannot be read (it left meanwhile) counts as one waited for.
  const waitedFor = (pid: number) => {
    const uid = effectiveUid(pid);
    return uid === undefined || uid === 0 || uid === me;
  };
  return { strangersOnly: now.complete && now.pids.length > 0 && !now.pids.some(waitedFor), holders: now.pids };
}

/**
 * Tries the lock on `fd` with util-linux flock(1), without waiting (Node: no FFI): true when taken, false when
 * it is held (flock(1)'s --nonblock exit status 1); rejects when flock(1) cannot say.
 */
function flockWithTool(fd: number, lockPath: string, shared: boolean): Promise<boolean> {
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
      if (code === 0 || code === 1) resolve(code === 0);
      else fail(`flock(1) exited with ${code ?? signal}${stderr ? `: ${stderr.trim()}` : ""}`);
    });
  });
}

/**
 * Takes a flock on `fd` (released when the file is closed or the process exits), waiting at most `timeoutMs` from
 * `since` (LockTimeoutError), and not for other users (see the module comment): true when it is held, false when it
 * was held by other users only and is not taken. Rejects with the reason of `signal` (default the call's) when it
 * aborts, even once the lock is taken: the caller closes `fd` on any rejection, which lets the lock go.
 */
export async function flockFd(fd: number, lockPath: string, opts: FlockOptions = {}): Promise<boolean> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_LOCK_WAIT_MS;
  const signal = opts.signal ?? callSignal();
  signal?.throwIfAborted();
  const libc = await flockLibc();
  const op = (opts.shared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  // Without FFI (Node) each try is a flock(1) run without waiting: slower, but the same rules.
  const tryLock = libc ? async () => libc.flock(fd, op) === 0 : () => flockWithTool(fd, lockPath, opts.shared ?? false);
  const started = opts.since ?? performance.now();
  let nextLook = performance.now() + FIRST_HOLDER_LOOK_MS;
  let holders: number[] | undefined;
  // A failure here is the lock being held (EWOULDBLOCK) or an interrupted call: our own descriptor cannot be bad.
  for (let pause = libc ? 1 : 10; !(await tryLock()); pause = Math.min(pause * 2, libc ? 50 : 200)) {
    signal?.throwIfAborted();
    let now = performance.now();
    if (now >= nextLook && now - started < timeoutMs) {
      const judged = await judgeHolders(fd);
      signal?.throwIfAborted();
      if (judged.strangersOnly) return false;
      holders = judged.holders;
      const looked = performance.now() - now;
      now = performance.now();
      nextLook = now + Math.max(HOLDER_LOOK_MS, 10 * looked);
    }
    if (now - started >= timeoutMs) {
      throw new LockTimeoutError(lockPath, now - started, holders?.length ? holders : flockHolders(fstatSync(fd)));
    }
    await pauseFor(Math.min(pause, Math.max(1, started + timeoutMs - now)), signal);
  }
  signal?.throwIfAborted();
  return true;
}

/** Takes an exclusive flock on `fd` if it is free now; false when another holder has it. */
export async function tryFlockFd(fd: number, lockPath: string): Promise<boolean> {
  const libc = await flockLibc();
  if (libc) return libc.flock(fd, LOCK_EX | LOCK_NB) === 0;
  return flockWithTool(fd, lockPath, false).catch(() => false);
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

/** The pids /proc/locks names for the file at `lockPath`, for a LockTimeoutError; none when it cannot be read. */
function takersOf(lockPath: string): number[] {
  try {
    return flockHolders(statSync(lockPath));
  } catch {
    return [];
  }
}

/**
 * Runs `body` in `queue` under `key` (the in-process half of the lock on `lockPath`), giving it the options its
 * flock wait takes: the bound counted from now (or `opts.since`) and the signal (default the call's), so the time
 * spent queued behind this process's other waiters counts against this waiter's own bound. A waiter whose bound
 * passes (LockTimeoutError) or whose signal aborts (its reason) while queued leaves the queue, its `body` never
 * run; either error is given to `queueError` first (to word it as the caller's errors are).
 */
export async function lockQueue<T>(
  queue: KeyedMutex,
  key: string,
  lockPath: string,
  opts: FlockOptions,
  body: (opts: FlockOptions) => Promise<T>,
  queueError: (e: Error) => Error = (e) => e,
): Promise<T> {
  const since = opts.since ?? performance.now();
  const timeoutMs = opts.timeoutMs ?? DEFAULT_LOCK_WAIT_MS;
  const signal = opts.signal ?? callSignal();
  const leave = new AbortController();
  const bound = setTimeout(
    () => {
      const waited = performance.now() - since;
      leave.abort(new LockTimeoutError(lockPath, waited, takersOf(lockPath)));
    },
    Math.max(0, since + timeoutMs - performance.now()),
  );
  const onCallAbort = () => leave.abort(signal!.reason);
  signal?.addEventListener("abort", onCallAbort, { once: true });
  if (signal?.aborted) onCallAbort();
  let began = false;
  const stopWatching = () => {
    clearTimeout(bound);
    signal?.removeEventListener("abort", onCallAbort);
  };
  try {
    return await queue.run(
      key,
      () => {
        began = true;
        stopWatching();
        return body({ ...opts, since, timeoutMs, ...(signal ? { signal } : {}) });
      },
      { signal: leave.signal },
    );
  } catch (e) {
    throw began ? e : queueError(e as Error);
  } finally {
    stopWatching();
  }
}

const inProcess = new KeyedMutex();

/**
 * Runs `fn` holding an exclusive flock on the file `open()` opens (closed afterwards, which releases the lock).
 * Callers in this process queue in order without polling (lockQueue: each within its own bound); other processes
 * are waited for with flockFd. `fn` runs only if the call's signal has not aborted once the lock is held.
 * `lockError` words a failure to get the lock (LockTimeoutError, the signal's reason, a failed flock).
 */
export function withFlock<T>(
  lockPath: string,
  open: () => number,
  fn: () => T | Promise<T>,
  lockError: (e: Error) => Error = (e) => e,
  opts: FlockOptions = {},
): Promise<T> {
  const asked = phaseClock();
  return lockQueue(
    inProcess,
    lockPath,
    lockPath,
    opts,
    async (bounded) => {
      const fd = open();
      try {
        await flockFd(fd, lockPath, bounded).catch((e: Error) => {
          throw lockError(e);
        });
        endPhase("lock wait", lockPath, asked);
        return await fn();
      } finally {
        closeSync(fd);
      }
    },
    lockError,
  );
}
