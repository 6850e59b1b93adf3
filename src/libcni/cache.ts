/**
 * The result cache, in exactly Go libcni's format and place so either implementation reads the other's:
 * `<cacheDir>/results/<network>-<containerID>-<ifname>`, a compact JSON object of kind "cniCacheV1" with the
 * config bytes in base64. Written atomically (temp file + rename), mode 0600 in a 0700 directory.
 * @module
 */
import { constants } from "node:fs";
import { type FileHandle, lstat, open, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { any, type Decoded, decodeGo, list, map, member, string, struct } from "#go-json/go-decode.js";
import { compareBytes, isJsonObject, type JsonObject, type JsonValue, marshalJson, parseJson } from "#go-json/json.js";
import { CniError, cniError, messageOf } from "#spec/errors.js";
import { createResultFromBytes, getResultAsVersion, marshalResult, type Result } from "#spec/result/index.js";
import { validateContainerId, validateInterfaceName, validateNetworkName } from "#spec/validate.js";
import { ensureStateDir, isTemporaryName, removeStateFile, writeFileAtomic } from "#sys/state.js";

/** Where libcni (Go's and ours) keeps cached results by default. */
export const DEFAULT_CACHE_DIR = "/var/lib/cni";
export const CACHE_KIND = "cniCacheV1";

/** The identity of one cached attachment. */
export interface CacheKey {
  networkName: string;
  containerID: string;
  ifName: string;
}

/** What is stored for one attachment. */
export interface CachedAttachment extends CacheKey {
  config: Buffer;
  netns?: string;
  cniArgs?: Array<[string, string]>;
  capabilityArgs?: JsonObject;
  result?: JsonObject;
}

/**
 * Refuses a key whose names could reach outside `<cacheDir>/results`: each name given must pass the spec's
 * validation, the rules Go's libcni applies on ADD (container ID and network name `[a-zA-Z0-9][a-zA-Z0-9_.-]*`;
 * interface name at most 15 bytes, not `.` or `..`, without `/`, `:` or white space), so none holds a `/`. Throws
 * the validator's CniError (code 4, or 7 for the network name) with the offending value in its details. Empty names
 * are left to cacheFilePath's own error.
 */
export function validateCacheKey(key: CacheKey): void {
  if (key.containerID) validateContainerId(key.containerID);
  if (key.networkName) validateNetworkName(key.networkName);
  if (key.ifName) {
    try {
      validateInterfaceName(key.ifName);
    } catch (e) {
      if (!(e instanceof CniError)) throw e;
      // The interface name rules do not name the value (Go's details); a refused cache key does.
      const { code, msg, details } = e;
      throw cniError(code, msg, `${JSON.stringify(key.ifName)}${details ? ` (${details})` : ""}`);
    }
  }
}

/** Whether every name of `key` is given and valid (validateCacheKey): the entries the cache lists. */
export function isValidCacheKey(key: CacheKey): boolean {
  if (!key.networkName || !key.containerID || !key.ifName) return false;
  try {
    validateCacheKey(key);
    return true;
  } catch {
    return false;
  }
}

/**
 * The cache file of an attachment: `<cacheDir>/results/<network>-<containerID>-<ifname>`. Throws Go's error when a
 * name is empty, and validateCacheKey's when one is invalid, before any file is touched.
 */
export function cacheFilePath(cacheDir: string, key: CacheKey): string {
  const { networkName, containerID, ifName } = key;
  if (!networkName || !containerID || !ifName) {
    throw new Error(
      `cache file path requires network name (${JSON.stringify(networkName)}), container ID (${JSON.stringify(containerID)}), and interface name (${JSON.stringify(ifName)})`,
    );
  }
  validateCacheKey(key);
  return path.join(cacheDir, "results", `${networkName}-${containerID}-${ifName}`);
}

/** The file's JSON, field for field in Go's order. */
function encodeCacheEntry(entry: CachedAttachment, result: Result | undefined): string {
  const o: Record<string, unknown> = {
    kind: CACHE_KIND,
    containerId: entry.containerID,
    config: entry.config.toString("base64"),
    ifName: entry.ifName,
    networkName: entry.networkName,
  };
  if (entry.netns) o["netns"] = entry.netns;
  if (entry.cniArgs?.length) o["cniArgs"] = entry.cniArgs;
  if (entry.capabilityArgs && Object.keys(entry.capabilityArgs).length) o["capabilityArgs"] = entry.capabilityArgs;
  if (result) o["result"] = parseJson(marshalResult(result));
  // Go marshals the struct in field order and the nested generic maps with sorted keys.
  return (
    "{" +
    Object.entries(o)
      .map(([k, v]) => `${JSON.stringify(k)}:${marshalJson(v)}`)
      .join(",") +
    "}"
  );
}

/** Stores an attachment and its final result. */
export async function writeCacheEntry(cacheDir: string, entry: CachedAttachment, result: Result | undefined): Promise<void> {
  const file = cacheFilePath(cacheDir, entry);
  ensureStateDir(path.dirname(file), 0o700);
  await writeFileAtomic(file, encodeCacheEntry(entry, result));
}

/** Removes an attachment's cache file; does nothing when there is none or a name is empty or invalid. */
export async function deleteCacheEntry(cacheDir: string, key: CacheKey): Promise<void> {
  let file: string;
  try {
    file = cacheFilePath(cacheDir, key);
  } catch {
    return;
  }
  try {
    removeStateFile(file);
  } catch {
    /* not ours to remove (a directory?): left */
  }
}

/** Go libcni's cachedInfo, read as Go reads it (keys in any case, null as absent). */
const CACHED_INFO = struct(
  "cachedInfo",
  {
    kind: string,
    containerId: string,
    config: string,
    ifName: string,
    networkName: string,
    netns: string,
    cniArgs: list(list(string)),
    capabilityArgs: map(any),
    result: map(any),
  },
  "libcni",
);

/**
 * Decodes a cache file's JSON; undefined when it is not a cniCacheV1 object (e.g. a legacy bare result). A
 * cniCacheV1 object with a value of the wrong type is a DecodeError when `strict`, else undefined.
 */
function decodeCacheEntry(raw: JsonValue, strict = false): CachedAttachment | undefined {
  if (!isJsonObject(raw)) return undefined;
  let d: Decoded<typeof CACHED_INFO>;
  try {
    d = decodeGo(CACHED_INFO, raw);
  } catch (e) {
    if (strict) throw e;
    return undefined;
  }
  if (d.kind !== CACHE_KIND) return undefined;
  const entry: CachedAttachment = {
    networkName: d.networkName ?? "",
    containerID: d.containerId ?? "",
    ifName: d.ifName ?? "",
    config: Buffer.from(d.config ?? "", "base64"),
  };
  if (d.netns) entry.netns = d.netns;
  if (d.cniArgs) entry.cniArgs = d.cniArgs.map((p) => [p[0] ?? "", p[1] ?? ""]);
  if (d.capabilityArgs) entry.capabilityArgs = Object.fromEntries(d.capabilityArgs);
  if (d.result) entry.result = Object.fromEntries(d.result);
  return entry;
}

/** A cache file's JSON, or undefined when it does not parse. */
function parseCacheFile(bytes: Buffer): JsonValue | undefined {
  try {
    return parseJson(bytes);
  } catch {
    return undefined;
  }
}

async function readCacheFile(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch {
    return undefined; // no cache is not an error
  }
}

/**
 * A listed cache file's bytes; undefined unless it is a regular file. A symlink is not followed (O_NOFOLLOW) and a
 * FIFO does not block the open (O_NONBLOCK): the type is checked on the opened file.
 */
async function readListedFile(file: string): Promise<Buffer | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    return (await handle.stat()).isFile() ? await handle.readFile() : undefined;
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/**
 * The cached result of an attachment converted to `cniVersion`; undefined when nothing is cached. A file that
 * is not cniCacheV1 is read as a bare result (what older libcni wrote).
 */
export async function readCachedResult(cacheDir: string, key: CacheKey, cniVersion: string): Promise<Result | undefined> {
  const file = cacheFilePath(cacheDir, key);
  const bytes = await readCacheFile(file);
  if (!bytes) return undefined;
  const parsed = parseCacheFile(bytes);
  if (parsed === undefined) {
    // What a crash can leave (docs/state.md): Go's words for it, then what it is, for CHECK; DEL drops it and goes on.
    let goWords = "";
    try {
      createResultFromBytes(bytes);
    } catch (e) {
      goWords = `${messageOf(e)} `;
    }
    throw new Error(`${goWords}(the cache file ${file} is ${bytes.length === 0 ? "empty" : "torn: not JSON"}: left by a crash or a power loss?)`);
  }
  const entry = decodeCacheEntry(parsed);
  let result: Result;
  if (entry) {
    if (!entry.result) return undefined;
    result = createResultFromBytes(marshalJson(entry.result));
  } else {
    result = createResultFromBytes(bytes);
  }
  try {
    return getResultAsVersion(result, cniVersion);
  } catch (e) {
    throw new Error(`failed to convert cached result to config version "${cniVersion}": ${messageOf(e)}`);
  }
}

/** The cached attachment record (config bytes, args); undefined when nothing is cached. */
export async function readCachedAttachment(cacheDir: string, key: CacheKey): Promise<CachedAttachment | undefined> {
  const bytes = await readCacheFile(cacheFilePath(cacheDir, key));
  if (!bytes) return undefined;
  let raw: JsonValue;
  let entry: CachedAttachment | undefined;
  try {
    raw = parseJson(bytes);
    entry = decodeCacheEntry(raw, true);
  } catch (e) {
    throw new Error(`failed to unmarshal cached network "${key.networkName}" config: ${messageOf(e)}`);
  }
  if (!entry) {
    const kind = isJsonObject(raw) ? member(raw, "kind") : undefined;
    throw new Error(`read cached network "${key.networkName}" config has wrong kind: ${typeof kind === "string" ? kind : ""}`);
  }
  return entry;
}

/**
 * Every valid cached attachment, optionally only those of one container, in file-name order. Only regular files
 * are read (readListedFile: a symlink is not followed), and an entry is listed only when its three names are valid
 * (isValidCacheKey), so no caller builds a path, or runs a DEL, from a crafted entry.
 */
export async function listCachedAttachments(cacheDir: string, containerID = ""): Promise<CachedAttachment[]> {
  const dir = path.join(cacheDir, "results");
  const names = await resultFileNames(dir);
  const out: CachedAttachment[] = [];
  for (const name of names) {
    if (containerID) {
      const at = name.indexOf(`-${containerID}-`);
      if (at <= 0 || at + containerID.length + 2 >= name.length) continue;
    }
    const bytes = await readListedFile(path.join(dir, name));
    const entry = bytes && decodeCacheEntry(parseCacheFile(bytes) ?? null);
    if (!entry || !isValidCacheKey(entry)) continue;
    if (containerID && entry.containerID !== containerID) continue;
    out.push(entry);
  }
  return out;
}

/** A cache file that names an attachment but cannot be read as one (empty, torn, a legacy bare result). */
export interface UnreadableCacheEntry {
  file: string;
  /** Why it cannot be read: "empty", "not JSON", "not a cniCacheV1 entry". */
  reason: string;
  mtimeMs: number;
  /**
   * The attachments its name can mean: `<network>-<containerID>-<ifname>` is ambiguous when names hold `-`, so
   * every split into a network of `networkNames`, a valid container ID and a valid interface name, the longest
   * container ID last.
   */
  keys: CacheKey[];
}

/** The attachments a cache file name can mean, for the networks given (see UnreadableCacheEntry.keys). */
export function cacheKeysOfName(name: string, networkNames: Iterable<string>): CacheKey[] {
  const keys: CacheKey[] = [];
  for (const networkName of networkNames) {
    if (!name.startsWith(`${networkName}-`)) continue;
    const rest = name.slice(networkName.length + 1);
    for (let i = rest.indexOf("-"); i > 0; i = rest.indexOf("-", i + 1)) {
      const key = { networkName, containerID: rest.slice(0, i), ifName: rest.slice(i + 1) };
      if (isValidCacheKey(key)) keys.push(key);
    }
  }
  return keys;
}

/** The key of `keys` a runtime's attachment most likely has: a 64-hex container ID (containerd's, CRI-O's, podman's), else the longest. */
export function likeliestCacheKey(keys: readonly CacheKey[]): CacheKey {
  return keys.find((k) => /^[0-9a-f]{64}$/.test(k.containerID)) ?? keys[keys.length - 1]!;
}

/** The names in the results directory in byte order; none when there is no directory. */
async function resultFileNames(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort(compareBytes);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
}

/**
 * The cache files of the networks named that hold no readable attachment: what a crash (a power loss after Go's
 * libcni, which writes in place and never fsyncs, or an older writer) leaves. Temporary files of a replacement
 * under way are not entries. Readers that judge attachments need these: a torn file may still be a live pod's.
 */
export async function listUnreadableCacheEntries(cacheDir: string, networkNames: Iterable<string>): Promise<UnreadableCacheEntry[]> {
  const dir = path.join(cacheDir, "results");
  const names = await resultFileNames(dir);
  const networks = [...new Set(networkNames)];
  const out: UnreadableCacheEntry[] = [];
  for (const name of names) {
    if (isTemporaryName(name)) continue;
    const keys = cacheKeysOfName(name, networks);
    if (keys.length === 0) continue;
    const file = path.join(dir, name);
    const bytes = await readListedFile(file);
    if (bytes === undefined) continue;
    const raw = bytes.length > 0 ? parseCacheFile(bytes) : undefined;
    const entry = raw === undefined ? undefined : decodeCacheEntry(raw);
    // A cniCacheV1 entry is readable, even one whose names do not validate (listCachedAttachments skips those).
    if (entry) continue;
    const st = await lstat(file).catch(() => undefined);
    if (!st) continue;
    const reason = bytes.length === 0 ? "empty" : raw === undefined ? "not JSON" : "not a cniCacheV1 entry";
    out.push({ file, reason, mtimeMs: st.mtimeMs, keys });
  }
  return out;
}
