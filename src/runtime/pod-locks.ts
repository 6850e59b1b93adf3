/**
 * How pod operations are ordered: one operation at a time per pod (ocicni's per-pod lock), different pods in
 * parallel up to an optional limit, and GC exclusive with every pod operation (ocicni's GC lock). Each rule holds
 * within a process (promise queues) and across processes sharing one cache directory (flock on lock files under
 * `<cacheDir>/locks`): a pod's lock file is removed when the pod is torn down, safely for any waiter.
 * @module
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type HeldLock, lockFile } from "#sys/flock.js";
import { KeyedMutex, type MutexRunOptions } from "#sys/keyed-mutex.js";
import { Semaphore } from "#sys/semaphore.js";

export { KeyedMutex, type MutexRunOptions, Semaphore };

/**
 * How long a pod operation waits for another process's lock (a GC waits for every pod operation under way, and
 * they for it): long, since a chain of plugin calls may take minutes, but not forever (sys/flock.ts).
 */
const POD_LOCK_WAIT_MS = 10 * 60_000;

/** Many readers or one writer; a waiting writer holds new readers back. */
export class ReadWriteLock {
  private readers = 0;
  private writer = false;
  private writersWaiting = 0;
  private readonly queue: Array<() => void> = [];

  private wake(): void {
    for (const resolve of this.queue.splice(0)) resolve();
  }

  /** Waits until `tryClaim` succeeds; checking and claiming happen together, so two waiters never both get in. */
  private async acquire(tryClaim: () => boolean): Promise<void> {
    while (!tryClaim()) await new Promise<void>((resolve) => this.queue.push(resolve));
  }

  /** Runs `work` as one of many readers. */
  async read<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire(() => !this.writer && this.writersWaiting === 0 && ++this.readers > 0);
    try {
      return await work();
    } finally {
      this.readers--;
      this.wake();
    }
  }

  /** Runs `work` alone, once every reader has finished. */
  async write<T>(work: () => Promise<T>): Promise<T> {
    this.writersWaiting++;
    try {
      await this.acquire(() => !this.writer && this.readers === 0 && (this.writer = true));
    } finally {
      this.writersWaiting--;
    }
    try {
      return await work();
    } finally {
      this.writer = false;
      this.wake();
    }
  }
}

/** The in-process and cross-process ordering of one manager's pod operations (see the module comment). */
export class PodLocks {
  private readonly pods = new KeyedMutex();
  private readonly gcLock = new ReadWriteLock();
  private readonly slots: Semaphore;
  private readonly lockDir: string;

  constructor(cacheDir: string, maxConcurrency?: number) {
    this.lockDir = path.join(cacheDir, "locks");
    this.slots = new Semaphore(maxConcurrency ?? Infinity);
  }

  private file(name: string): string {
    mkdirSync(this.lockDir, { recursive: true, mode: 0o700 });
    return path.join(this.lockDir, name);
  }

  /** The lock file of a pod: named by a hash, so any pod key makes a safe file name. */
  private podFile(key: string): string {
    return this.file(`pod-${createHash("sha256").update(key).digest("hex").slice(0, 32)}`);
  }

  /**
   * Runs one operation on pod `key`: after the pod's earlier operations, while no GC runs, within the
   * concurrency limit. `removeLockFile` (teardown) deletes the pod's lock file afterwards.
   */
  pod<T>(key: string, work: () => Promise<T>, opts: { removeLockFile?: boolean } = {}): Promise<T> {
    return this.pods.run(key, () =>
      this.gcLock.read(() =>
        this.slots.run(async () => {
          const gc = await lockFile(this.file("gc"), { shared: true, timeoutMs: POD_LOCK_WAIT_MS });
          let pod: HeldLock | undefined;
          try {
            pod = await lockFile(this.podFile(key), { timeoutMs: POD_LOCK_WAIT_MS });
            return await work();
          } finally {
            pod?.release({ remove: opts.removeLockFile });
            gc.release();
          }
        }),
      ),
    );
  }

  /** Runs GC alone: no pod operation of this process or another one sharing the cache dir runs meanwhile. */
  gc<T>(work: () => Promise<T>): Promise<T> {
    return this.gcLock.write(async () => {
      const held = await lockFile(this.file("gc"), { timeoutMs: POD_LOCK_WAIT_MS });
      try {
        return await work();
      } finally {
        held.release();
      }
    });
  }
}
