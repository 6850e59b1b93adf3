/**
 * A network configuration directory kept loaded for a runtime: every `.conf`, `.conflist` and `.json` file
 * parsed into a network, re-read when the directory changes (fs.watch, debounced), so nothing reads files on a
 * runtime's status path. It does better than the Go managers where they are known to fail: the directory being
 * deleted and recreated is survived (the parent is watched too), a file written elsewhere and renamed into place
 * is picked up, and a half-written or invalid file is reported (which file, which error) and ignored until it
 * becomes valid, never fatal.
 * @module
 */
import { type FSWatcher, watch } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { type LoadedNetwork, loadAllNetworks } from "#libcni/conf.js";
import type { NetworkConfigList } from "#spec/config.js";

/** A file of the directory that does not load, and why. */
export interface ConfigFileError {
  file: string;
  error: Error;
}

/** What the directory held at its last load. */
export interface DirectorySnapshot {
  /** Valid networks in file-name order (the first is ocicni's default). */
  networks: LoadedNetwork[];
  errors: ConfigFileError[];
  /** Whether the directory exists. */
  exists: boolean;
}

/** How a NetworkDirectory reloads and reports. */
export interface NetworkDirectoryOptions {
  /** Quiet time after the last change before the directory is re-read (default 100 ms). */
  debounceMs?: number;
  /** Called after every reload that changed what the directory holds. */
  onChange?: (snapshot: DirectorySnapshot) => void;
}

/** Two snapshots hold the same networks and errors (by file, name and bytes). */
function sameSnapshot(a: DirectorySnapshot, b: DirectorySnapshot): boolean {
  const key = (s: DirectorySnapshot) =>
    JSON.stringify([
      s.exists,
      s.networks.map((n) => [n.file, n.list.name, n.list.bytes.toString("base64")]),
      s.errors.map((e) => [e.file, e.error.message]),
    ]);
  return key(a) === key(b);
}

/** A watched network configuration directory (see the module comment). */
export class NetworkDirectory {
  private snapshotNow: DirectorySnapshot = { networks: [], errors: [], exists: false };
  private dirWatcher: FSWatcher | undefined;
  private parentWatcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly debounceMs: number;
  private loads = 0;

  constructor(
    readonly dir: string,
    private readonly options: NetworkDirectoryOptions = {},
  ) {
    this.dir = path.resolve(dir);
    this.debounceMs = options.debounceMs ?? 100;
  }

  /** Loads the directory and starts watching it (and its parent, for the directory itself coming and going). */
  async start(): Promise<void> {
    this.watchParent();
    await this.reload();
  }

  /** Stops watching. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.dirWatcher?.close();
    this.parentWatcher?.close();
    this.dirWatcher = this.parentWatcher = undefined;
  }

  /** What the directory held at its last load (never reads the disk). */
  get snapshot(): DirectorySnapshot {
    return this.snapshotNow;
  }

  /** How many times the directory has been read (for tests and diagnostics). */
  get loadCount(): number {
    return this.loads;
  }

  /** A loaded network by name; the first file's when several files name the same network. */
  network(name: string): NetworkConfigList | undefined {
    return this.snapshotNow.networks.find((n) => n.list.name === name)?.list;
  }

  /** Re-reads the directory now (after any read already under way). */
  reload(): Promise<void> {
    this.loading = this.loading.then(() => this.load());
    return this.loading;
  }

  private async load(): Promise<void> {
    if (this.closed) return;
    this.loads++;
    const exists = await stat(this.dir).then(
      (st) => st.isDirectory(),
      () => false,
    );
    let next: DirectorySnapshot = { networks: [], errors: [], exists };
    if (exists) {
      this.watchDir();
      try {
        next = { ...(await loadAllNetworks(this.dir)), exists };
      } catch (e) {
        next = { networks: [], errors: [{ file: this.dir, error: e as Error }], exists };
      }
    } else {
      this.unwatchDir();
    }
    const changed = !sameSnapshot(this.snapshotNow, next);
    this.snapshotNow = next;
    if (changed) this.options.onChange?.(next);
  }

  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), this.debounceMs);
  }

  /** Watches the directory itself (when it exists; otherwise only the parent is watched). */
  private watchDir(): void {
    if (this.dirWatcher) return;
    try {
      const w = watch(this.dir, { persistent: false }, () => this.schedule());
      w.on("error", () => {
        this.unwatchDir();
        this.schedule();
      });
      this.dirWatcher = w;
    } catch {
      // Gone between the check and the watch: the parent's watcher will see it come back.
    }
  }

  private unwatchDir(): void {
    this.dirWatcher?.close();
    this.dirWatcher = undefined;
  }

  /** Watches the parent directory for the directory being created, removed or renamed. */
  private watchParent(): void {
    const parent = path.dirname(this.dir);
    const base = path.basename(this.dir);
    try {
      const w = watch(parent, { persistent: false }, (_event, name) => {
        if (name === null || name === base) {
          // The directory came or went: watch it afresh (a recreated directory is a new inode).
          this.unwatchDir();
          this.schedule();
        }
      });
      w.on("error", () => {
        this.parentWatcher?.close();
        this.parentWatcher = undefined;
      });
      this.parentWatcher = w;
    } catch {
      // No parent to watch: reloads happen on the directory's own events and on request.
    }
  }
}
