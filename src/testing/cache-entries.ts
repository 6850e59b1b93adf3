/**
 * Result cache files as a test plants them: a cniCacheV1 entry holding any names, valid or crafted, under any file
 * name in `<cacheDir>/results`, written directly (libcni refuses to write crafted names itself).
 * @module
 */
import fs from "node:fs";
import path from "node:path";

/** The names a cache entry records. */
export interface PlantedKey {
  networkName: string;
  containerID: string;
  ifName: string;
}

/** The text of a cniCacheV1 entry for `key`, with `config` (a conflist object) and a one-address 1.1.0 result. */
export function cacheEntryText(key: PlantedKey, config: object): string {
  return JSON.stringify({
    kind: "cniCacheV1",
    containerId: key.containerID,
    config: Buffer.from(JSON.stringify(config)).toString("base64"),
    ifName: key.ifName,
    networkName: key.networkName,
    result: { cniVersion: "1.1.0", ips: [{ address: "10.1.2.3/24" }] },
  });
}

/** Writes `<cacheDir>/results/<fileName>` holding an entry for `key`; returns its path. */
export function plantCacheEntry(cacheDir: string, fileName: string, key: PlantedKey, config: object): string {
  const file = path.join(cacheDir, "results", fileName);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, cacheEntryText(key, config), { mode: 0o600 });
  return file;
}
