/**
 * host-local's on-disk store, byte-compatible with Go's (`backend/disk`), so both implementations can share
 * a data directory:
 * - `<dataDir>/<network>/` (mode 0755) holds one file per allocated IP, named by the IP's canonical text and
 *   holding `<containerID>\r\n<ifname>` (no trailing newline), created exclusively with mode 0600; files of
 *   pre-0.7 plugins hold the container ID alone and still match.
 * - `last_reserved_ip.<rangeSetIndex>` holds the last IP reserved from that range set (rewritten in place, as Go).
 * - `lock` (empty, mode 0750) is held with `flock(LOCK_EX)` around each allocation and release. Node has no
 *   flock(2), so util-linux `flock(1)` takes the lock on our open file description (its fd 0 is our fd): the
 *   lock then lives exactly as long as our descriptor, and dies with this process.
 * @module
 */
import { accessSync, closeSync, constants, readdirSync, readFileSync } from "node:fs";
import { type IPAddress, tryParseIP } from "#ip/ip.js";
import type { GCAttachment } from "#spec/config.js";
import { ErrorCode, wrap } from "#spec/errors.js";
import { phase } from "#sys/phase-trace.js";
import * as path from "#sys/posix-path.js";
import { createFileExclusiveSync, ensureStateDir, removeStateFile, writeFileInPlaceSync } from "#sys/state.js";
import { openLockFile, withLockFile } from "../../common/lock-file.js";
import type { StoreLocation } from "./config.js";

const LAST_IP_FILE_PREFIX = "last_reserved_ip.";
const LOCK_FILE = "lock";
const LOCK_MODE = 0o750; // as Go's disk backend makes it
const LINE_BREAK = "\r\n";

/** What the allocator needs from a store. Everything but `withLock` expects the lock to be held. */
export interface IPStore {
  /** Runs `fn` holding the store's exclusive lock. */
  withLock<T>(fn: () => T | Promise<T>): Promise<T>;
  /** Claims `ip` for (id, ifname); false when it is taken. Records it as range set `rangeID`'s last reserved IP. */
  reserve(id: string, ifname: string, ip: IPAddress, rangeID: string): boolean;
  /** The last IP reserved from range set `rangeID`, if recorded and parsable. */
  lastReservedIP(rangeID: string): IPAddress | undefined;
  /** Frees every IP of (id, ifname); when there is none, every IP of `id` written in the old id-only format. */
  releaseByID(id: string, ifname: string): void;
  /** The IPs held by (id, ifname), or by `id` in the old format. */
  getByID(id: string, ifname: string): IPAddress[];
  /** Whether (id, ifname), or else `id` in the old format, holds any IP. */
  findByID(id: string, ifname: string): boolean;
}

/** The content of an IP file for (id, ifname), and the old id-only content. */
const ownerKey = (id: string, ifname: string): string => id.trim() + LINE_BREAK + ifname;
const legacyKey = (id: string): string => id.trim();

export class DiskStore implements IPStore {
  private constructor(readonly dir: string) {}

  /** Opens (creating if needed) the store of a network, as Go's disk.New: the directory and its lock file. */
  static open(location: StoreLocation): DiskStore {
    const store = new DiskStore(path.join(location.dataDir, location.network));
    try {
      ensureStateDir(store.dir, 0o755);
      closeSync(openLockFile(store.lockPath, LOCK_MODE));
    } catch (e) {
      throw wrap(`failed to open the host-local store ${store.dir}`, e, ErrorCode.IOFailure);
    }
    return store;
  }

  private get lockPath(): string {
    return path.join(this.dir, LOCK_FILE);
  }

  private lastIPPath(rangeID: string): string {
    return path.join(this.dir, LAST_IP_FILE_PREFIX + rangeID);
  }

  withLock<T>(fn: () => T | Promise<T>): Promise<T> {
    return phase("ipam store", "host-local", () =>
      withLockFile(this.lockPath, LOCK_MODE, (reason) => `failed to open ${this.lockPath}: ${reason}`, fn),
    );
  }

  reserve(id: string, ifname: string, ip: IPAddress, rangeID: string): boolean {
    const file = path.join(this.dir, ip.text);
    try {
      if (!createFileExclusiveSync(file, ownerKey(id, ifname))) return false;
    } catch (e) {
      throw wrap(`failed to reserve ${ip.text}`, e, ErrorCode.IOFailure);
    }
    try {
      this.writeHint(this.lastIPPath(rangeID), ip.text);
    } catch (e) {
      try {
        removeStateFile(file);
      } catch {
        /* best effort */
      }
      throw wrap(`failed to reserve ${ip.text}`, e, ErrorCode.IOFailure);
    }
    return true;
  }

  /**
   * Rewrites `file` in place (created with mode 0600), as Go does. Not through a temporary file and a rename: the
   * file is only read and written under the store's lock, so no process sees it half-written, and it is only a
   * round-robin hint (an unreadable one restarts at rangeStart, and every candidate is still claimed with
   * O_EXCL). A rename over an existing file would make ext4 flush it (auto_da_alloc) in every ADD.
   */
  private writeHint(file: string, content: string): void {
    writeFileInPlaceSync(file, content, 0o600);
  }

  lastReservedIP(rangeID: string): IPAddress | undefined {
    try {
      return tryParseIP(readFileSync(this.lastIPPath(rangeID), "utf8")); // not trimmed, as Go
    } catch {
      return undefined; // missing or unreadable: round robin restarts at rangeStart
    }
  }

  /**
   * The allocation files of the directory with their trimmed contents. The lock, last_reserved_ip.* and our
   * temporary files are never allocations; unreadable files are skipped.
   */
  private allocations(): Array<{ name: string; file: string; owner: string }> {
    let names: string[];
    try {
      names = readdirSync(this.dir, { withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => d.name);
    } catch (e) {
      throw wrap(`failed to list ${this.dir}`, e, ErrorCode.IOFailure);
    }
    const out: Array<{ name: string; file: string; owner: string }> = [];
    for (const name of names.sort()) {
      if (name === LOCK_FILE || name.startsWith(LAST_IP_FILE_PREFIX) || name.startsWith(".")) continue;
      const file = path.join(this.dir, name);
      try {
        out.push({ name, file, owner: readFileSync(file, "utf8").trim() });
      } catch {
        /* vanished or unreadable */
      }
    }
    return out;
  }

  /** Deletes the files whose owner is `match`; true when any matched. */
  private releaseByKey(match: string): boolean {
    let found = false;
    for (const a of this.allocations()) {
      if (a.owner !== match) continue;
      try {
        removeStateFile(a.file);
        found = true;
      } catch {
        /* not removable: tolerated, as Go */
      }
    }
    return found;
  }

  releaseByID(id: string, ifname: string): void {
    if (!this.releaseByKey(ownerKey(id, ifname))) this.releaseByKey(legacyKey(id));
  }

  getByID(id: string, ifname: string): IPAddress[] {
    const match = ownerKey(id, ifname);
    const old = legacyKey(id);
    return this.allocations()
      .filter((a) => a.owner === match || a.owner === old)
      .map((a) => tryParseIP(a.name))
      .filter((ip): ip is IPAddress => ip !== undefined);
  }

  findByID(id: string, ifname: string): boolean {
    const owners = this.allocations().map((a) => a.owner);
    return owners.includes(ownerKey(id, ifname)) || owners.includes(legacyKey(id));
  }

  /**
   * GC: deletes every IP file whose owner is not a valid attachment (an id-only file is kept while its
   * container has any valid attachment). Returns the names of the deleted files.
   */
  collectGarbage(valid: readonly GCAttachment[]): string[] {
    const keep = new Set(valid.map((a) => ownerKey(a.containerID, a.ifname)));
    const keepIDs = new Set(valid.map((a) => legacyKey(a.containerID)));
    const removed: string[] = [];
    for (const a of this.allocations()) {
      if (!tryParseIP(a.name)) continue; // only IP files are allocations
      if (keep.has(a.owner) || (!a.owner.includes(LINE_BREAK) && keepIDs.has(a.owner))) continue;
      try {
        removeStateFile(a.file);
        removed.push(a.name);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw wrap(`failed to release ${a.name}`, e, ErrorCode.IOFailure);
      }
    }
    return removed;
  }

  /** The allocated addresses, read from the file names alone (no lock, no file read): what STATUS counts. */
  allocatedIPs(): IPAddress[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (e) {
      throw wrap(`failed to list ${this.dir}`, e, ErrorCode.IOFailure);
    }
    return names.map((name) => tryParseIP(name)).filter((ip): ip is IPAddress => ip !== undefined);
  }

  /** STATUS: the directory must be writable and its lock file openable. */
  checkUsable(): void {
    accessSync(this.dir, constants.W_OK | constants.X_OK);
    closeSync(openLockFile(this.lockPath, LOCK_MODE));
  }
}
