/**
 * The runtime library (libcni): run a network configuration list (or a single network) for an attachment,
 * building each plugin's request as spec §3 says, caching the final result for CHECK and DEL, collecting
 * garbage (GC) and asking plugins for their status.
 * @module
 */

import type { JsonObject } from "#go-json/json.js";
import { type CniCommand, invokeEnv } from "#invoke/args.js";
import { type ExecOptions, type PluginExec, RawExec } from "#invoke/exec.js";
import { findInPath } from "#invoke/find.js";
import { execPluginWithoutResult, execPluginWithResult, getVersionInfo } from "#invoke/plugin.js";
import { describePlugin, type GCAttachment, injectConf, type NetworkConfigList, type PluginConfig } from "#spec/config.js";
import { WrappedError } from "#spec/errors.js";
import { type Result, resultToJson } from "#spec/result/index.js";
import { validateContainerId, validateInterfaceName, validateNetworkName } from "#spec/validate.js";
import type { VersionInfo } from "#spec/version.js";
import { versionGreaterThanOrEqualTo } from "#spec/version.js";
import {
  type CachedAttachment,
  type CacheKey,
  DEFAULT_CACHE_DIR,
  deleteCacheEntry,
  likeliestCacheKey,
  listCachedAttachments,
  listUnreadableCacheEntries,
  readCachedAttachment,
  readCachedResult,
  validateCacheKey,
  writeCacheEntry,
} from "./cache.js";

/** The attachment a runtime asks about: which container, which netns, which interface, with what arguments. */
export interface RuntimeConf {
  containerID: string;
  netNS: string;
  ifName: string;
  /** CNI_ARGS pairs. */
  args?: Array<[string, string]>;
  /** Capability arguments; each plugin receives those it declares in `capabilities` as `runtimeConfig`. */
  capabilityArgs?: Record<string, unknown>;
  /** Cache directory for this call (the CNIConfig's own wins). */
  cacheDir?: string;
}

/** GC input: the attachments that are still valid. */
export interface GCArgs {
  validAttachments?: GCAttachment[];
}

/** Where a CNIConfig finds plugins and keeps its cache, and how it runs plugins. */
export interface CNIConfigOptions {
  /** Plugin directories, searched in order (CNI_PATH). */
  path: string[];
  exec?: PluginExec;
  /** Where results are cached (default /var/lib/cni). */
  cacheDir?: string;
}

/**
 * Per-call options: an AbortSignal or a timeout kills the running plugin; a trace context reaches every plugin
 * of the call (and their delegates) as TRACEPARENT, TRACESTATE and BAGGAGE, in place of those of this process's
 * environment, which otherwise pass as they are.
 */
export type CallOptions = ExecOptions;

/** CHECK is not defined for configs older than 0.4.0. */
export class CheckNotSupportedError extends Error {
  constructor(readonly version: string) {
    super(`configuration version "${version}" does not support the CHECK command`);
    this.name = "CheckNotSupportedError";
  }
}

/**
 * Several errors reported together: GC joins them by newlines, validation prints them as a list `[a b]`
 * (the wording of Go's libcni).
 */
export class JoinedError extends Error {
  constructor(
    readonly errors: Error[],
    style: "lines" | "list" = "lines",
  ) {
    const messages = errors.map((e) => e.message);
    super(style === "list" ? `[${messages.join(" ")}]` : messages.join("\n"));
    this.name = "JoinedError";
  }
}

/** The cache key of an attachment to network `networkName` (cache.ts checks its names before building a path). */
const keyOf = (networkName: string, rt: RuntimeConf): CacheKey => ({ networkName, containerID: rt.containerID, ifName: rt.ifName });

/** A runtime's handle on CNI: the plugin directories to search, the result cache, and the operations on networks and network lists. */
export class CNIConfig {
  readonly path: string[];
  readonly exec: PluginExec;
  readonly cacheDir: string | undefined;

  constructor(options: CNIConfigOptions) {
    this.path = [...options.path];
    this.exec = options.exec ?? new RawExec();
    this.cacheDir = options.cacheDir;
  }

  private cacheDirFor(rt?: RuntimeConf): string {
    return this.cacheDir ?? rt?.cacheDir ?? DEFAULT_CACHE_DIR;
  }

  private env(command: CniCommand, rt?: RuntimeConf) {
    return invokeEnv({
      command,
      containerID: rt?.containerID,
      netNS: rt?.netNS,
      ifName: rt?.ifName,
      pluginArgs: rt?.args,
      path: this.path,
    });
  }

  /** The stdin of one plugin: its object plus name, cniVersion, prevResult and the runtimeConfig it asked for. */
  buildRequest(name: string, cniVersion: string, plugin: PluginConfig, prevResult: Result | undefined, rt?: RuntimeConf): PluginConfig {
    const values: Record<string, unknown> = { name, cniVersion };
    if (prevResult) values["prevResult"] = resultToJson(prevResult);
    let conf = injectConf(plugin, values);
    const runtimeConfig: Record<string, unknown> = {};
    for (const [capability, enabled] of Object.entries(plugin.network.capabilities ?? {})) {
      const args = rt?.capabilityArgs;
      if (enabled && args && Object.hasOwn(args, capability) && args[capability] !== undefined) {
        runtimeConfig[capability] = args[capability];
      }
    }
    if (Object.keys(runtimeConfig).length > 0) conf = injectConf(conf, { runtimeConfig });
    return conf;
  }

  private async addOne(
    name: string,
    cniVersion: string,
    plugin: PluginConfig,
    prevResult: Result | undefined,
    rt: RuntimeConf,
    opts?: CallOptions,
  ): Promise<Result> {
    const pluginPath = await findInPath(plugin.network.type, this.path);
    validateContainerId(rt.containerID);
    validateNetworkName(name);
    validateInterfaceName(rt.ifName);
    const req = this.buildRequest(name, cniVersion, plugin, prevResult, rt);
    return execPluginWithResult(pluginPath, req.bytes, this.env("ADD", rt), this.exec, opts);
  }

  private async runOne(
    command: "CHECK" | "DEL",
    name: string,
    cniVersion: string,
    plugin: PluginConfig,
    prevResult: Result | undefined,
    rt: RuntimeConf,
    opts?: CallOptions,
  ): Promise<void> {
    const pluginPath = await findInPath(plugin.network.type, this.path);
    const req = this.buildRequest(name, cniVersion, plugin, prevResult, rt);
    await execPluginWithoutResult(pluginPath, req.bytes, this.env(command, rt), this.exec, opts);
  }

  private async cacheAdd(result: Result, config: Buffer, networkName: string, rt: RuntimeConf): Promise<void> {
    const entry: CachedAttachment = {
      networkName,
      containerID: rt.containerID,
      ifName: rt.ifName,
      config,
      netns: rt.netNS,
      cniArgs: rt.args,
      capabilityArgs: rt.capabilityArgs as JsonObject | undefined,
    };
    try {
      await writeCacheEntry(this.cacheDirFor(rt), entry, result);
    } catch (e) {
      throw new WrappedError(`failed to set network "${networkName}" cached result`, e);
    }
  }

  /**
   * The cache key of an attachment, checked first (validateCacheKey): CHECK and DEL refuse a name that could reach
   * outside the cache directory before reading, removing or running anything.
   */
  private cacheKey(networkName: string, rt: RuntimeConf): CacheKey {
    const key = keyOf(networkName, rt);
    validateCacheKey(key);
    return key;
  }

  private cachedResultFor(key: CacheKey, cniVersion: string, rt: RuntimeConf): Promise<Result | undefined> {
    return readCachedResult(this.cacheDirFor(rt), key, cniVersion);
  }

  /** ADD: every plugin in order, each given the previous one's result; the final result is cached. */
  async addNetworkList(list: NetworkConfigList, rt: RuntimeConf, opts?: CallOptions): Promise<Result> {
    let result: Result | undefined;
    for (const plugin of list.plugins) {
      try {
        result = await this.addOne(list.name, list.cniVersion, plugin, result, rt, opts);
      } catch (e) {
        throw new WrappedError(`plugin ${describePlugin(plugin.network)} failed (add)`, e);
      }
    }
    if (!result) throw new Error(`network "${list.name}" has no plugins`);
    await this.cacheAdd(result, list.bytes, list.name, rt);
    return result;
  }

  /**
   * CHECK: every plugin in order with the cached result; skipped when disableCheck; needs 0.4.0+. Names that do not
   * validate are refused as DEL refuses them.
   */
  async checkNetworkList(list: NetworkConfigList, rt: RuntimeConf, opts?: CallOptions): Promise<void> {
    if (!versionGreaterThanOrEqualTo(list.cniVersion, "0.4.0")) throw new CheckNotSupportedError(list.cniVersion);
    if (list.disableCheck) return;
    const key = this.cacheKey(list.name, rt);
    let cached: Result | undefined;
    try {
      cached = await this.cachedResultFor(key, list.cniVersion, rt);
    } catch (e) {
      throw new WrappedError(`failed to get network "${list.name}" cached result`, e);
    }
    for (const plugin of list.plugins) await this.runOne("CHECK", list.name, list.cniVersion, plugin, cached, rt, opts);
  }

  /**
   * DEL: every plugin in reverse order, each given the cached ADD result (0.4.0+). An unreadable cache is
   * dropped rather than blocking the DEL; the cache entry is removed once every plugin succeeded. A container ID,
   * network name or interface name that does not validate is refused (validateCacheKey's CniError) before
   * anything is read, removed or run.
   */
  async delNetworkList(list: NetworkConfigList, rt: RuntimeConf, opts?: CallOptions): Promise<void> {
    const key = this.cacheKey(list.name, rt);
    let cached: Result | undefined;
    if (versionGreaterThanOrEqualTo(list.cniVersion, "0.4.0")) {
      try {
        cached = await this.cachedResultFor(key, list.cniVersion, rt);
      } catch {
        await deleteCacheEntry(this.cacheDirFor(rt), key);
      }
    }
    for (const plugin of [...list.plugins].reverse()) {
      try {
        await this.runOne("DEL", list.name, list.cniVersion, plugin, cached, rt, opts);
      } catch (e) {
        throw new WrappedError(`plugin ${describePlugin(plugin.network)} failed (delete)`, e);
      }
    }
    await deleteCacheEntry(this.cacheDirFor(rt), key);
  }

  /** ADD of a single-plugin network; errors are the plugin's own. */
  async addNetwork(net: PluginConfig, rt: RuntimeConf, opts?: CallOptions): Promise<Result> {
    const result = await this.addOne(net.network.name, net.network.cniVersion, net, undefined, rt, opts);
    await this.cacheAdd(result, net.bytes, net.network.name, rt);
    return result;
  }

  /** CHECK of a single-plugin network for an attachment (as checkNetworkList with one plugin). */
  async checkNetwork(net: PluginConfig, rt: RuntimeConf, opts?: CallOptions): Promise<void> {
    const { name, cniVersion } = net.network;
    if (!versionGreaterThanOrEqualTo(cniVersion, "0.4.0")) throw new CheckNotSupportedError(cniVersion);
    const key = this.cacheKey(name, rt);
    let cached: Result | undefined;
    try {
      cached = await this.cachedResultFor(key, cniVersion, rt);
    } catch (e) {
      throw new WrappedError(`failed to get network "${name}" cached result`, e);
    }
    await this.runOne("CHECK", name, cniVersion, net, cached, rt, opts);
  }

  /** DEL of a single-plugin network for an attachment (as delNetworkList with one plugin). */
  async delNetwork(net: PluginConfig, rt: RuntimeConf, opts?: CallOptions): Promise<void> {
    const { name, cniVersion } = net.network;
    const key = this.cacheKey(name, rt);
    let cached: Result | undefined;
    if (versionGreaterThanOrEqualTo(cniVersion, "0.4.0")) {
      try {
        cached = await this.cachedResultFor(key, cniVersion, rt);
      } catch {
        await deleteCacheEntry(this.cacheDirFor(rt), key);
      }
    }
    await this.runOne("DEL", name, cniVersion, net, cached, rt, opts);
    await deleteCacheEntry(this.cacheDirFor(rt), key);
  }

  /**
   * The cached final result of an attachment, in the list's version; undefined when none. Rejects, reading nothing,
   * when a name is empty or invalid (cacheFilePath), as every cache getter below does.
   */
  getNetworkListCachedResult(list: NetworkConfigList, rt: RuntimeConf): Promise<Result | undefined> {
    return this.cachedResultFor(keyOf(list.name, rt), list.cniVersion, rt);
  }

  /** The cached result of a single-plugin network's attachment, in the network's version; undefined when none. */
  getNetworkCachedResult(net: PluginConfig, rt: RuntimeConf): Promise<Result | undefined> {
    return this.cachedResultFor(keyOf(net.network.name, rt), net.network.cniVersion, rt);
  }

  /**
   * The config an attachment was added with, and the runtime conf with the cached CNI_ARGS and capability
   * arguments. Undefined when nothing is cached.
   */
  async getNetworkListCachedConfig(list: { name: string }, rt: RuntimeConf): Promise<{ config: Buffer; rt: RuntimeConf } | undefined> {
    const entry = await readCachedAttachment(this.cacheDirFor(rt), keyOf(list.name, rt));
    if (!entry) return undefined;
    const newRt: RuntimeConf = { ...rt, capabilityArgs: entry.capabilityArgs };
    if (entry.cniArgs) newRt.args = entry.cniArgs;
    return { config: entry.config, rt: newRt };
  }

  /** The config and runtime arguments cached for a single-plugin network's attachment; undefined when none. */
  getNetworkCachedConfig(net: PluginConfig, rt: RuntimeConf): Promise<{ config: Buffer; rt: RuntimeConf } | undefined> {
    return this.getNetworkListCachedConfig({ name: net.network.name }, rt);
  }

  /** Every cached attachment (of one container when given); entries whose names do not validate are skipped. */
  getCachedAttachments(containerID = ""): Promise<CachedAttachment[]> {
    return listCachedAttachments(this.cacheDir ?? DEFAULT_CACHE_DIR, containerID);
  }

  /** Asks the plugin of this type which versions it supports. */
  async getVersionInfo(pluginType: string, opts?: CallOptions): Promise<VersionInfo> {
    return getVersionInfo(await findInPath(pluginType, this.path), this.exec, opts);
  }

  private async validatePlugin(pluginType: string, expectedVersion: string, opts?: CallOptions): Promise<void> {
    const pluginPath = await findInPath(pluginType, this.path);
    const version = expectedVersion || "0.1.0";
    const info = await getVersionInfo(pluginPath, this.exec, opts);
    if (!info.supports(version)) throw new Error(`plugin ${pluginType} does not support config version "${version}"`);
  }

  /** Checks every plugin exists and supports the list's version; returns the capabilities the list uses. */
  async validateNetworkList(list: NetworkConfigList, opts?: CallOptions): Promise<string[]> {
    const caps = new Set<string>();
    const errors: Error[] = [];
    for (const plugin of list.plugins) {
      try {
        await this.validatePlugin(plugin.network.type, list.cniVersion, opts);
      } catch (e) {
        errors.push(e as Error);
      }
      for (const [cap, on] of Object.entries(plugin.network.capabilities ?? {})) if (on) caps.add(cap);
    }
    if (errors.length > 0) throw new JoinedError(errors, "list");
    return [...caps];
  }

  /** Checks that a single-plugin network's plugin exists and speaks its version; resolves with its capabilities. */
  async validateNetwork(net: PluginConfig, opts?: CallOptions): Promise<string[]> {
    await this.validatePlugin(net.network.type, net.network.cniVersion, opts);
    return Object.entries(net.network.capabilities ?? {})
      .filter(([, on]) => on)
      .map(([cap]) => cap);
  }

  /**
   * GC: DEL every cached attachment of this network that is not in `args.validAttachments` (with the current
   * config), then send GC to every plugin (1.1.0+) with the valid list. Continues past errors and reports all.
   */
  async gcNetworkList(list: NetworkConfigList, args?: GCArgs, opts?: CallOptions): Promise<void> {
    if (list.disableGC) return;
    const errors: Error[] = [];
    let cached: CachedAttachment[] = [];
    try {
      cached = await this.getCachedAttachments("");
    } catch {
      return;
    }
    const valid = new Set((args?.validAttachments ?? []).map((a) => `${a.containerID}\0${a.ifname}`));
    for (const att of cached) {
      if (att.networkName !== list.name || valid.has(`${att.containerID}\0${att.ifName}`)) continue;
      const rt: RuntimeConf = {
        containerID: att.containerID,
        netNS: att.netns ?? "",
        ifName: att.ifName,
        args: att.cniArgs,
        capabilityArgs: att.capabilityArgs,
      };
      try {
        await this.delNetworkList(list, rt, opts);
      } catch (e) {
        errors.push(new WrappedError(`failed to delete stale attachment ${att.containerID} ${att.ifName}`, e));
      }
    }
    // A cache file that cannot be read (empty or torn by a power loss) is judged by its name, as the pod manager's GC
    // does: when no container it can mean has a valid attachment, DEL of the likeliest attachment, with this list
    // (which also removes the file). Go's libcni skips such a file, and it stays for ever (issue 49).
    const validIDs = new Set((args?.validAttachments ?? []).map((a) => a.containerID));
    const unreadable = await listUnreadableCacheEntries(this.cacheDir ?? DEFAULT_CACHE_DIR, [list.name]).catch(() => []);
    for (const u of unreadable) {
      if (u.keys.some((k) => validIDs.has(k.containerID))) continue;
      const key = likeliestCacheKey(u.keys);
      try {
        await this.delNetworkList(list, { containerID: key.containerID, netNS: "", ifName: key.ifName }, opts);
      } catch (e) {
        errors.push(new WrappedError(`failed to delete stale attachment ${key.containerID} ${key.ifName}, whose cache file was ${u.reason}`, e));
      }
    }
    errors.push(...(await this.sendGC(list, args, opts)));
    if (errors.length > 0) throw new JoinedError(errors);
  }

  /**
   * The GC verb alone: every plugin of the list (1.1.0+) gets GC with `args.validAttachments`, and no cached
   * attachment is DELeted first. For a caller that removed the stale attachments itself and must not have one DELeted
   * that was cached after it looked (node GC, racing a runtime's ADDs). Nothing when disableGC or before 1.1.0;
   * continues past errors and reports all.
   */
  async gcNetworkListPlugins(list: NetworkConfigList, args?: GCArgs, opts?: CallOptions): Promise<void> {
    if (list.disableGC) return;
    const errors = await this.sendGC(list, args, opts);
    if (errors.length > 0) throw new JoinedError(errors);
  }

  /** Sends GC to every plugin of a 1.1.0+ list; the errors, one per failed plugin. */
  private async sendGC(list: NetworkConfigList, args: GCArgs | undefined, opts: CallOptions | undefined): Promise<Error[]> {
    let supportsGC = false;
    try {
      supportsGC = versionGreaterThanOrEqualTo(list.cniVersion, "1.1.0");
    } catch {
      /* unparsable: no GC verb */
    }
    if (!supportsGC) return [];
    const errors: Error[] = [];
    for (const plugin of list.plugins) {
      let req: PluginConfig;
      try {
        const values: Record<string, unknown> = { name: list.name, cniVersion: list.cniVersion };
        if (args) {
          // Go writes null for a missing list; [] means the same to every plugin and is valid to inject.
          values["cni.dev/valid-attachments"] = args.validAttachments ?? [];
          values["cni.dev/attachments"] = args.validAttachments ?? [];
        }
        req = injectConf(plugin, values);
      } catch (e) {
        errors.push(new WrappedError(`failed to generate configuration to GC plugin ${plugin.network.type}`, e));
        continue;
      }
      try {
        const pluginPath = await findInPath(plugin.network.type, this.path);
        await execPluginWithoutResult(pluginPath, req.bytes, this.env("GC"), this.exec, opts);
      } catch (e) {
        errors.push(new WrappedError(`failed to GC plugin ${plugin.network.type}`, e));
      }
    }
    return errors;
  }

  /** STATUS: every plugin in order (1.1.0+; older lists are reported ready); the first error is returned as is. */
  async getStatusNetworkList(list: NetworkConfigList, opts?: CallOptions): Promise<void> {
    let supported = false;
    try {
      supported = versionGreaterThanOrEqualTo(list.cniVersion, "1.1.0");
    } catch {
      /* unparsable: nothing to ask */
    }
    if (!supported) return;
    for (const plugin of list.plugins) {
      const pluginPath = await findInPath(plugin.network.type, this.path);
      const req = injectConf(plugin, { name: list.name, cniVersion: list.cniVersion });
      await execPluginWithoutResult(pluginPath, req.bytes, this.env("STATUS"), this.exec, opts);
    }
  }
}
