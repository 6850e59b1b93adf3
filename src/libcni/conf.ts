/**
 * Loading network configurations from a directory: `.conflist` files first (each may take extra plugins from
 * `<dir>/<network>/*.conf`), then the deprecated single-plugin `.conf`/`.json` files, turned into lists.
 * @module
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { compareBytes } from "#go-json/json.js";
import { configError, confListFromConf, type NetworkConfigList, type PluginConfig, parseConfList, parsePluginConfig } from "#spec/config.js";
import { CniError, ErrorCode, ioFailure, wrap } from "#spec/errors.js";

/** No network of that name in the directory (there were configs, none matched). */
export class NotFoundError extends CniError {
  constructor(
    readonly dir: string,
    readonly networkName: string,
  ) {
    super(ErrorCode.InvalidNetworkConfig, `no net configuration with name "${networkName}" in ${dir}`);
    this.name = "NotFoundError";
  }
}

/** The directory holds no network configuration at all. */
export class NoConfigsFoundError extends CniError {
  constructor(readonly dir: string) {
    super(ErrorCode.InvalidNetworkConfig, `no net configurations found in ${dir}`);
    this.name = "NoConfigsFoundError";
  }
}

/**
 * Files in `dir` whose extension is one of `extensions`, sorted by name. A missing directory has none.
 * Sub-directories are skipped.
 */
export async function confFiles(dir: string, extensions: readonly string[]): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  return (
    entries
      // Go's filepath.Ext: from the last dot, so a hidden ".conf" file has extension ".conf".
      .filter((e) => !e.isDirectory() && extensions.includes(path.extname("x" + e.name)))
      .map((e) => e.name)
      .sort(compareBytes)
      .map((name) => path.join(dir, name))
  );
}

async function readConfigFile(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const reason = err.code === "ENOENT" ? "no such file or directory" : err.code === "EACCES" ? "permission denied" : err.message;
    throw ioFailure(`error reading ${file}: open ${file}: ${reason}`);
  }
}

/** Reads one single-plugin config file. */
export async function confFromFile(file: string): Promise<PluginConfig> {
  return parsePluginConfig(await readConfigFile(file), file);
}

/** The plugin objects kept in `<dir>/<networkName>/*.conf`, sorted. */
export async function pluginConfsFromDir(dir: string, networkName: string): Promise<PluginConfig[]> {
  const sub = path.join(dir, networkName);
  let files: string[];
  try {
    files = await confFiles(sub, [".conf"]);
  } catch (e) {
    throw wrap(`failed to read plugin config files in ${sub}`, e, ErrorCode.IOFailure);
  }
  const out: PluginConfig[] = [];
  for (const f of files) out.push(await confFromFile(f));
  return out;
}

/** Reads a conflist file, appending the plugins of its sub-directory unless loadOnlyInlinedPlugins. */
export async function confListFromFile(file: string): Promise<NetworkConfigList> {
  const list = parseConfList(await readConfigFile(file), file);
  if (!list.loadOnlyInlinedPlugins && list.name !== "" && !list.name.includes("/")) {
    list.plugins.push(...(await pluginConfsFromDir(path.dirname(file), list.name)));
  }
  if (list.plugins.length === 0) throw configError(ErrorCode.InvalidNetworkConfig, "no plugin configs found", { file });
  return list;
}

/** Finds a single-plugin network (`.conf`/`.json`) by name. */
export async function loadConf(dir: string, name: string): Promise<PluginConfig> {
  const files = await confFiles(dir, [".conf", ".json"]);
  if (files.length === 0) throw new NoConfigsFoundError(dir);
  for (const f of files) {
    const conf = await confFromFile(f);
    if (conf.network.name === name) return conf;
  }
  throw new NotFoundError(dir, name);
}

/**
 * Finds the network `name` in `dir`: conflists first (any malformed one stops the search, as in Go's
 * libcni), then single-plugin configs turned into a one-plugin list.
 */
export async function loadConfList(dir: string, name: string): Promise<NetworkConfigList> {
  const lists = await confFiles(dir, [".conflist"]);
  for (const f of lists) {
    const list = await confListFromFile(f);
    if (list.name === name) return list;
  }
  try {
    return confListFromConf(await loadConf(dir, name));
  } catch (e) {
    if (e instanceof NoConfigsFoundError && lists.length > 0) throw new NotFoundError(dir, name);
    throw e;
  }
}

/** A loaded network together with the file it came from. */
export interface LoadedNetwork {
  file: string;
  list: NetworkConfigList;
}

/**
 * Loads every network of a directory in file order (what a runtime's network manager does): conflists and
 * single configs alike, each as a list. Files that fail to load are reported, not fatal.
 */
export async function loadAllNetworks(dir: string): Promise<{ networks: LoadedNetwork[]; errors: Array<{ file: string; error: Error }> }> {
  const networks: LoadedNetwork[] = [];
  const errors: Array<{ file: string; error: Error }> = [];
  for (const file of await confFiles(dir, [".conf", ".conflist", ".json"])) {
    try {
      const list = file.endsWith(".conflist") ? await confListFromFile(file) : confListFromConf(await confFromFile(file));
      networks.push({ file, list });
    } catch (e) {
      errors.push({ file, error: e as Error });
    }
  }
  return { networks, errors };
}
