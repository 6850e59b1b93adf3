/**
 * The tuning plugin's record of a link's original settings, kept from ADD to DEL so DEL can put them back.
 * Same file as the Go plugin's: `<dataDir>/<containerID>_<ifName>.json`, holding only the settings ADD
 * changes, `{"mac", "promisc", "mtu", "allmulti", "txQLen"}` in that order, one-space indented. Either
 * implementation restores what the other saved.
 * @module
 */
import { mkdir, readFile, rm } from "node:fs/promises";
import { writeFileAtomic } from "../../../sys/atomic-file.js";
import * as path from "../../../sys/posix-path.js";
import type { LinkTunables } from "./link-tunables.js";
import { member } from "../../../spec/go-decode.js";
import { isJsonObject, marshalJson, parseJson } from "../../../spec/json.js";

export const backupFile = (dataDir: string, containerID: string, ifName: string): string =>
  path.join(dataDir, `${containerID}_${ifName}.json`);

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
  const ordered = { mac: saved.mac || undefined, promisc: saved.promisc, mtu: saved.mtu || undefined, allmulti: saved.allmulti, txQLen: saved.txQLen };
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
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, encodeBackup(saved));
  return file;
}

/**
 * The backup at `file`: undefined when there is none; `"unreadable"` when its content is not a backup.
 */
export async function readBackup(file: string): Promise<Partial<LinkTunables> | "unreadable" | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  return decodeBackup(text) ?? "unreadable";
}

export const removeBackup = (file: string): Promise<void> => rm(file, { force: true });
