/**
 * The tuning plugin's record of a link's original settings, kept from ADD to DEL so DEL can put them back.
 * Same file as the Go plugin's: `<dataDir>/<containerID>_<ifName>.json`, holding only the settings ADD
 * changes, `{"mac", "promisc", "mtu", "allmulti", "txQLen"}` in that order, one-space indented. Either
 * implementation restores what the other saved. Beside it tscni writes `<containerID>_<ifName>.network`, the name
 * of the network the backup belongs to (Go keeps none, and reads neither file's neighbours), which is what GC goes
 * by: backup directories are shared by networks, and GC is told the valid attachments of one network only.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { member } from "#go-json/go-decode.js";
import { isJsonObject, marshalJson, parseJson } from "#go-json/json.js";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, removeStateFile, writeFileAtomic } from "#sys/state.js";
import type { LinkTunables } from "./link-tunables.js";

export const backupFile = (dataDir: string, containerID: string, ifName: string): string => path.join(dataDir, `${containerID}_${ifName}.json`);

/** The original values of just the settings `change` touches. */
export function backupOf(original: LinkTunables, change: Partial<LinkTunables>): Partial<LinkTunables> {
  const saved: Partial<LinkTunables> = {};
  if (change.mac !== undefined) saved.mac = original.mac;
  if (change.promisc !== undefined) saved.promisc = original.promisc;
  if (change.mtu !== undefined) saved.mtu = original.mtu;
  if (change.allmulti !== undefined) saved.allmulti = original.allmulti;
  if (change.txQLen !== undefined) saved.txQLen = original.txQLen;
  return saved;
}

/** The file content, in the Go plugin's key order and layout. */
export function encodeBackup(saved: Partial<LinkTunables>): string {
  const ordered = {
    mac: saved.mac || undefined,
    promisc: saved.promisc,
    mtu: saved.mtu || undefined,
    allmulti: saved.allmulti,
    txQLen: saved.txQLen,
  };
  return marshalJson(ordered, { sortKeys: false, indent: " " });
}

/** Reads a backup; values of the wrong type are ignored. Undefined when the content is not a JSON object. */
export function decodeBackup(text: string): Partial<LinkTunables> | undefined {
  let raw: unknown;
  try {
    raw = parseJson(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(raw)) return undefined;
  const saved: Partial<LinkTunables> = {};
  const [mac, promisc, mtu, allmulti, txQLen] = ["mac", "promisc", "mtu", "allmulti", "txQLen"].map((k) => member(raw, k));
  if (typeof mac === "string" && mac) saved.mac = mac;
  if (typeof promisc === "boolean") saved.promisc = promisc;
  if (typeof mtu === "number" && mtu > 0) saved.mtu = mtu;
  if (typeof allmulti === "boolean") saved.allmulti = allmulti;
  if (typeof txQLen === "number" && txQLen >= 0) saved.txQLen = txQLen;
  return saved;
}

/** Writes the backup (creating the data directory); returns its path. */
export async function writeBackup(file: string, saved: Partial<LinkTunables>): Promise<string> {
  ensureStateDir(path.dirname(file), 0o700);
  await writeFileAtomic(file, encodeBackup(saved));
  return file;
}

/**
 * The backup at `file`: undefined when there is none; `"unreadable"` when its content is not a backup.
 */
export async function readBackup(file: string): Promise<Partial<LinkTunables> | "unreadable" | undefined> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  return decodeBackup(text) ?? "unreadable";
}

/** Removes a backup and the file naming its network. */
export async function removeBackup(file: string): Promise<void> {
  removeStateFile(file);
  removeStateFile(networkFileOf(file));
}

const NETWORK_SUFFIX = ".network";

/** The file naming the network of the backup at `file` (`….json` -> `….network`). */
export const networkFileOf = (file: string): string => file.replace(/\.json$/, "") + NETWORK_SUFFIX;

/** Records which network the backup at `file` belongs to (before the backup is written, so GC can find both). */
export async function writeNetworkOf(file: string, network: string): Promise<void> {
  ensureStateDir(path.dirname(file), 0o700);
  await writeFileAtomic(networkFileOf(file), `${network}\n`);
}

/**
 * The backups of `network` in `dataDir` whose attachment is not in `valid` (as `<containerID>_<ifName>`, the name
 * Go gives a backup; two attachments that name alike share one backup file anyway). Backups without a network file
 * (Go's, or older ones of ours) are never listed.
 */
export async function staleBackups(
  dataDir: string,
  network: string,
  valid: ReadonlyArray<{ containerID: string; ifname: string }>,
): Promise<string[]> {
  let names: string[];
  try {
    names = readdirSync(dataDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  const keep = new Set(valid.map((a) => `${a.containerID}_${a.ifname}`));
  const stale: string[] = [];
  for (const name of names.filter((n) => n.endsWith(NETWORK_SUFFIX) && !n.startsWith("."))) {
    const stem = name.slice(0, -NETWORK_SUFFIX.length);
    if (keep.has(stem)) continue;
    let owner: string | undefined;
    try {
      owner = readFileSync(path.join(dataDir, name), "utf8");
    } catch {
      /* removed meanwhile */
    }
    if (owner?.trim() === network) stale.push(path.join(dataDir, `${stem}.json`));
  }
  return stale;
}
