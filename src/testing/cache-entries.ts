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

/** A cniCacheV1 entry in `<cacheDir>/results` (config as given: an object, or raw text) added at `addedAt` (seconds). */
function plant(cacheDir: string, network: string, containerID: string, config: object | string, result: object, addedAt: number, netns?: string) {
  const file = path.join(cacheDir, "results", `${network}-${containerID}-eth0`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const text = typeof config === "string" ? config : JSON.stringify(config);
  fs.writeFileSync(
    file,
    JSON.stringify({
      kind: "cniCacheV1",
      containerId: containerID,
      config: Buffer.from(text).toString("base64"),
      ifName: "eth0",
      networkName: network,
      ...(netns ? { netns } : {}),
      result,
    }),
  );
  fs.utimesSync(file, addedAt, addedAt);
}

/** A bridge chain without masquerading: its restorer has nothing to do. */
const bridgeList = (name: string) => ({
  cniVersion: "1.0.0",
  name,
  plugins: [{ type: "bridge", bridge: "br-x", ipam: { type: "host-local", subnet: "10.9.0.0/24" } }, { type: "tuning" }],
});
/** A result whose host-side link is `hostLink` (`lo` is always here). */
const bridgeResult = (hostLink: string) => ({
  cniVersion: "1.0.0",
  interfaces: [{ name: hostLink }, { name: "eth0", sandbox: "/run/netns/x" }],
  ips: [{ address: "10.9.0.2/24", interface: 1 }],
});

/**
 * A cache of five attachments for the reload's walk, added in this order: `c/first` (its config broken), `b/second`
 * (a bridge chain without masquerading, its host link `lo`), `a/third` (tuning only), `d/gone` (its host link
 * absent), `e/gonens` (no host link, its network namespace absent). None leaves host firewall state.
 */
export function plantReloadWalk(cacheDir: string): string {
  plant(cacheDir, "b", "second", bridgeList("b"), bridgeResult("lo"), 2000);
  plant(
    cacheDir,
    "a",
    "third",
    { cniVersion: "1.0.0", name: "a", plugins: [{ type: "tuning" }] },
    { cniVersion: "1.0.0", ips: [{ address: "10.9.1.2/24" }] },
    3000,
  );
  plant(cacheDir, "c", "first", "{not json", bridgeResult("lo"), 1000);
  plant(cacheDir, "d", "gone", bridgeList("d"), bridgeResult("tscni-absent0"), 4000);
  plant(
    cacheDir,
    "e",
    "gonens",
    { cniVersion: "1.0.0", name: "e", type: "tuning" },
    { cniVersion: "1.0.0", ips: [{ address: "10.9.2.2/24" }] },
    5000,
    "/run/netns/tscni-absent-ns",
  );
  return cacheDir;
}
