/**
 * A network's directory, where containers/dnsname keeps its files: `<base>/<network>/` with `dnsmasq.conf`,
 * `addnhosts`, `pidfile`, and `lock`, the file both plugins lock (flock, exclusive; Go's host-local FileLock on the
 * directory, which locks `<dir>/lock`, opened O_CREAT|O_RDONLY with mode 0750), plus tscni's attachment records
 * (`tscni-attachments.json`, which Go ignores). The base is `$XDG_RUNTIME_DIR/containers/cni/dnsname` when
 * XDG_RUNTIME_DIR is set (to an absolute path), else `/run/containers/cni/dnsname`, as Go's.
 * @module
 */
import { closeSync, readdirSync, readFileSync } from "node:fs";
import { ErrorCode, tryAgainLater, wrap } from "#spec/errors.js";
import { CallAbandonedError } from "#sys/call-signal.js";
import { flockFd, LockTimeoutError, lockedFileIsCurrent, lockQueue } from "#sys/flock.js";
import { KeyedMutex } from "#sys/keyed-mutex.js";
import * as path from "#sys/posix-path.js";
import { createFileExclusiveSync, ensureStateDir, removeStateFile, removeStateTree, writeFileAtomicSync } from "#sys/state.js";
import { openLockFile } from "../../common/lock-file.js";
import { confSettings, type DnsmasqSettings, type NetworkFiles } from "./dnsmasq.js";
import { type AttachmentRecord, hostsLines, hostsText, parseRecords, recordsText } from "./hosts.js";

export const DEFAULT_BASE_DIR = "/run/containers/cni/dnsname";
export const RECORDS_FILE = "tscni-attachments.json";

/** Every file of one network's directory. */
export interface NetworkDir extends NetworkFiles {
  network: string;
  lock: string;
  records: string;
}

/** Where the networks' directories are for a call with environment `env`. */
export function baseDir(env: Readonly<Record<string, string | undefined>>): string {
  const xdg = env["XDG_RUNTIME_DIR"];
  return xdg && path.isAbsolute(xdg) ? path.join(xdg, "containers/cni/dnsname") : DEFAULT_BASE_DIR;
}

/** The files of `network` under `base`. */
export function networkDir(base: string, network: string): NetworkDir {
  const dir = path.join(base, network);
  const at = (name: string) => path.join(dir, name);
  return { network, dir, conf: at("dnsmasq.conf"), hosts: at("addnhosts"), pidFile: at("pidfile"), lock: at("lock"), records: at(RECORDS_FILE) };
}

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException).code === "ENOENT";

const inProcess = new KeyedMutex();

/**
 * Runs `fn` holding the network's lock. With `create`, the directory is made first (0700, as Go); without, a
 * network with no directory has nothing to lock and `fn` is not run (undefined is returned). The holder may remove
 * the whole directory (the last DEL does, Go's too): a waiter that then gets the lock of a removed file notices and
 * starts again, on a new directory or on none.
 */
export function withNetworkLock<T>(d: NetworkDir, create: boolean, fn: () => Promise<T>): Promise<T | undefined> {
  // A lock not had in time (queued behind this process's other calls, then on the file: one bound for both), or
  // given up with its call (call-signal.ts), is "try again later"; a failed flock an I/O error.
  const lockError = (e: Error) =>
    e instanceof LockTimeoutError || e instanceof CallAbandonedError
      ? tryAgainLater(`dnsname: ${e.message}`)
      : wrap(`dnsname: cannot lock ${d.lock}`, e, ErrorCode.IOFailure);
  return lockQueue(
    inProcess,
    d.dir,
    d.lock,
    {},
    async (bounded) => {
      for (;;) {
        let fd: number;
        try {
          if (create) ensureStateDir(d.dir, 0o700);
          fd = openLockFile(d.lock, 0o750);
        } catch (e) {
          if (isMissing(e) && !create) return undefined;
          if (isMissing(e)) continue; // removed between mkdir and open
          throw wrap(`dnsname: cannot open the lock ${d.lock}`, e, ErrorCode.IOFailure);
        }
        try {
          await flockFd(fd, d.lock, bounded).catch((e: Error) => {
            throw lockError(e);
          });
          if (lockedFileIsCurrent(fd, d.lock)) return await fn();
        } finally {
          closeSync(fd);
        }
      }
    },
    lockError,
  );
}

/** What one network's directory holds, read under its lock. */
export interface NetworkState {
  lines: string[];
  records: AttachmentRecord[];
  /** dnsmasq.conf's text; undefined when there is none. */
  confText?: string;
}

const readIfThere = (file: string): string | undefined => {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw wrap(`dnsname: cannot read ${file}`, e, ErrorCode.IOFailure);
  }
};

export function readState(d: NetworkDir): NetworkState {
  const confText = readIfThere(d.conf);
  return {
    lines: hostsLines(readIfThere(d.hosts) ?? ""),
    records: parseRecords(readIfThere(d.records) ?? ""),
    ...(confText === undefined ? {} : { confText }),
  };
}

/** The settings of the network's dnsmasq.conf (none when it has none). */
export const confOf = (s: NetworkState): DnsmasqSettings => confSettings(s.confText ?? "");

/** Writes dnsmasq.conf unless there is one (as Go: an existing one is kept). */
export function writeConfIfMissing(d: NetworkDir, text: string): boolean {
  try {
    return createFileExclusiveSync(d.conf, text, { mode: 0o600 });
  } catch (e) {
    throw wrap(`dnsname: cannot write ${d.conf}`, e, ErrorCode.IOFailure);
  }
}

/**
 * Replaces the hosts file and the records, each atomically (dnsmasq rereads the hosts file on SIGHUP and must never
 * see half of it). The hosts file keeps Go's mode, 0644; the records are root's alone.
 */
export function writeState(d: NetworkDir, lines: readonly string[], records: readonly AttachmentRecord[]): void {
  try {
    writeFileAtomicSync(d.hosts, hostsText(lines), 0o644);
    if (records.length > 0) writeFileAtomicSync(d.records, recordsText(records));
    else removeStateFile(d.records);
  } catch (e) {
    throw wrap(`dnsname: cannot write the hosts of network ${d.network} in ${d.dir}`, e, ErrorCode.IOFailure);
  }
}

/** Removes the network's directory with everything in it (the holder of its lock does, as Go's last DEL). */
export function removeNetworkDir(d: NetworkDir): void {
  try {
    removeStateTree(d.dir);
  } catch (e) {
    throw wrap(`dnsname: cannot remove ${d.dir}`, e, ErrorCode.IOFailure);
  }
}

/** Whether a network other than `d`'s has a dnsmasq.conf naming interface `iface` (its rules are then shared). */
export function otherNetworkUses(d: NetworkDir, iface: string): boolean {
  const base = path.dirname(d.dir);
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return false;
  }
  return names.some((name) => {
    if (name === d.network) return false;
    try {
      return confSettings(readFileSync(path.join(base, name, "dnsmasq.conf"), "utf8")).interface === iface;
    } catch {
      return false;
    }
  });
}
