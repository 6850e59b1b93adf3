/**
 * The pod network manager: what CRI-O's ocicni, containerd's go-cni and iSulad's CNI module build on libcni,
 * for a runtime written in TypeScript. It keeps a config directory loaded and watched, picks the default
 * network, attaches a pod to one or more networks (loopback first, directly), tears down from the result cache
 * (even when the config file is gone), reports readiness without reading files, checks and reports pod
 * attachments, and garbage-collects attachments of pods that no longer exist. One operation at a time per pod,
 * different pods in parallel (see pod-locks.ts).
 * @module
 */

import type { PluginExec } from "#invoke/exec.js";
import { CNIConfig, type RuntimeConf } from "#libcni/api.js";
import {
  type CacheKey,
  DEFAULT_CACHE_DIR,
  likeliestCacheKey,
  listCachedAttachments,
  listUnreadableCacheEntries,
  validateCacheKey,
} from "#libcni/cache.js";
import { ip } from "#net/link/links.js";
import { NetNS, NetnsNotFoundError } from "#net/netns.js";
import type { NetworkConfigList } from "#spec/config.js";
import { invalidConfig, messageOf } from "#spec/errors.js";
import type { Result } from "#spec/result/index.js";
import { validateContainerId } from "#spec/validate.js";
import { versionGreaterThanOrEqualTo } from "#spec/version.js";
import { cachedAddresses, cachedNetwork, cachedRuntimeConf, removeCachedAttachment, removeUnreadableAttachment } from "./attachments.js";
import { type ConfigFileError, type DirectorySnapshot, NetworkDirectory } from "./network-directory.js";
import { PodLocks } from "./pod-locks.js";
import { ResidentFirstExec } from "./resident-exec.js";

/** How a manager is set up. */
export interface PodNetworkManagerOptions {
  /** The network configuration directory (watched). */
  confDir: string;
  /** Plugin directories, searched in order. */
  pluginDirs: string[];
  /** The result cache (default /var/lib/cni, shared with Go runtimes' libcni). */
  cacheDir?: string;
  /** The network pods get when they ask for none; default: the first valid config file in name order. */
  defaultNetwork?: string;
  /** status() fails while fewer networks than this are loaded (default 1, as go-cni). */
  minNetworks?: number;
  /** At most this many pod operations at once (default: no limit). */
  maxConcurrency?: number;
  /**
   * How plugins run (default: exec'd as child processes, as any CNI runtime does — except calls to tscni's own
   * plugins of this build, which go to the resident server when one serves: resident-exec.ts).
   */
  exec?: PluginExec;
  /** Kills a plugin call after this many milliseconds (default: no limit). */
  pluginTimeoutMs?: number;
  /** Quiet time before the watched directory is re-read (default 100 ms). */
  debounceMs?: number;
  /** Told which config files fail to load, whenever that changes. */
  onConfigErrors?: (errors: ConfigFileError[]) => void;
}

/** A pod, as a runtime names it. */
export interface PodRef {
  /** The sandbox (infra container) ID: the CNI container ID. */
  id: string;
  name: string;
  namespace: string;
  uid?: string;
  /** The pod's network namespace (a path). */
  netns: string;
}

/** Capability arguments for one network (`portMappings`, `ips`, `mac`, `bandwidth`, `dns`, `ipRanges`, ...). */
export type RuntimeConfig = Record<string, unknown>;

/** One network a pod asks for. */
export interface PodNetworkRequest {
  name: string;
  /** Default: eth0, eth1, ... in request order. */
  ifName?: string;
  runtimeConfig?: RuntimeConfig;
}

/** A pod to set up: which networks (default network when none) and their runtime configs by network name. */
export interface SetUpPodRequest extends PodRef {
  networks?: PodNetworkRequest[];
  runtimeConfig?: Record<string, RuntimeConfig>;
}

/** One attachment of a pod. */
export interface PodAttachment {
  network: string;
  ifName: string;
  result: Result;
}

/** An attachment as the cache (and optionally the namespace) shows it. */
export interface PodAttachmentStatus {
  network: string;
  ifName: string;
  /** Addresses of the cached result. */
  addresses: string[];
  /** With `verify`: whether the interface exists in the pod's namespace with those addresses. */
  verified?: boolean;
  problem?: string;
}

/** Why the manager is not ready (no usable network yet, or a plugin's STATUS failed). */
export class NetworkNotReadyError extends Error {
  constructor(
    reason: string,
    readonly configErrors: ConfigFileError[] = [],
  ) {
    const files = configErrors.map((e) => `${e.file}: ${e.error.message}`);
    super(`network not ready: ${reason}${files.length ? `; config files that do not load: ${files.join("; ")}` : ""}`);
    this.name = "NetworkNotReadyError";
  }
}

/** A pod operation failed: which network (and, in the message, which plugin). */
export class PodNetworkError extends Error {
  constructor(
    message: string,
    readonly network: string,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = "PodNetworkError";
  }
}

/** The CNI_ARGS ocicni sends for a pod. */
export function podCniArgs(pod: PodRef): Array<[string, string]> {
  return [
    ["IgnoreUnknown", "1"],
    ["K8S_POD_NAMESPACE", pod.namespace],
    ["K8S_POD_NAME", pod.name],
    ["K8S_POD_INFRA_CONTAINER_ID", pod.id],
    ...(pod.uid ? [["K8S_POD_UID", pod.uid] as [string, string]] : []),
  ];
}

/** The interface names of a request (eth0, eth1, ... unless given); a duplicate is an error before anything runs. */
export function assignInterfaces(networks: readonly PodNetworkRequest[]): Array<PodNetworkRequest & { ifName: string }> {
  const out = networks.map((n, i) => ({ ...n, ifName: n.ifName || `eth${i}` }));
  const seen = new Map<string, string>();
  for (const n of out) {
    const other = seen.get(n.ifName);
    if (other !== undefined) {
      throw invalidConfig(`networks "${other}" and "${n.name}" both ask for interface ${n.ifName}`);
    }
    seen.set(n.ifName, n.name);
  }
  return out;
}

/** The manager (see the module comment). `start()` before use, `close()` when done. */
export class PodNetworkManager {
  private readonly directory: NetworkDirectory;
  private readonly cni: CNIConfig;
  private readonly locks: PodLocks;
  readonly cacheDir: string;
  private started = false;

  constructor(private readonly options: PodNetworkManagerOptions) {
    this.cacheDir = options.cacheDir ?? DEFAULT_CACHE_DIR;
    this.cni = new CNIConfig({ path: options.pluginDirs, cacheDir: this.cacheDir, exec: options.exec ?? new ResidentFirstExec() });
    this.locks = new PodLocks(this.cacheDir, options.maxConcurrency);
    this.directory = new NetworkDirectory(options.confDir, {
      debounceMs: options.debounceMs,
      onChange: (s: DirectorySnapshot) => options.onConfigErrors?.(s.errors),
    });
  }

  /** Loads the config directory and starts watching it. */
  async start(): Promise<void> {
    await this.directory.start();
    this.started = true;
  }

  /** Stops watching the config directory. */
  close(): void {
    this.directory.close();
  }

  /** The networks loaded now (from memory), in file order. */
  networks(): NetworkConfigList[] {
    return this.directory.snapshot.networks.map((n) => n.list);
  }

  /** The config files that do not load now, and why. */
  configErrors(): ConfigFileError[] {
    return this.directory.snapshot.errors;
  }

  /** Re-reads the config directory now (watching does this by itself; for callers that cannot wait). */
  reloadConfig(): Promise<void> {
    return this.directory.reload();
  }

  /** The default network now: the configured one, else the first valid file's; undefined when there is none. */
  defaultNetwork(): NetworkConfigList | undefined {
    const name = this.options.defaultNetwork;
    return name ? this.directory.network(name) : this.networks()[0];
  }

  private callOptions() {
    return this.options.pluginTimeoutMs ? { timeoutMs: this.options.pluginTimeoutMs } : {};
  }

  /**
   * Readiness, without reading a file: enough networks loaded, the default network among them, and its plugins'
   * STATUS (spec 1.1.0+) answering. Throws NetworkNotReadyError with the reason (and the files that fail to load).
   */
  async status(): Promise<void> {
    if (!this.started) throw new NetworkNotReadyError("the network manager has not loaded its config directory yet");
    const snapshot = this.directory.snapshot;
    const dir = this.options.confDir;
    if (!snapshot.exists) throw new NetworkNotReadyError(`config directory ${dir} does not exist`);
    const minimum = this.options.minNetworks ?? 1;
    if (snapshot.networks.length < minimum) {
      throw new NetworkNotReadyError(`${snapshot.networks.length} valid network config(s) in ${dir}, ${minimum} needed`, snapshot.errors);
    }
    const def = this.defaultNetwork();
    if (!def) throw new NetworkNotReadyError(`default network "${this.options.defaultNetwork}" not found in ${dir}`, snapshot.errors);
    try {
      await this.cni.getStatusNetworkList(def, this.callOptions());
    } catch (e) {
      throw new NetworkNotReadyError(`network "${def.name}" is not ready: ${messageOf(e)}`);
    }
  }

  private listFor(name: string): NetworkConfigList {
    const list = this.directory.network(name);
    if (!list) throw invalidConfig(`network "${name}" not found in ${this.options.confDir}`);
    return list;
  }

  private runtimeConf(pod: PodRef, ifName: string, capabilityArgs?: RuntimeConfig): RuntimeConf {
    const rt: RuntimeConf = { containerID: pod.id, netNS: pod.netns, ifName, args: podCniArgs(pod) };
    if (capabilityArgs) rt.capabilityArgs = capabilityArgs;
    return rt;
  }

  /**
   * Attaches a pod: loopback up in its namespace, then each requested network in order (the default network when
   * none is named). When a network fails, the networks attached so far, and the failed one, are torn down again
   * and the error names the network (and the plugin). A pod ID or interface name that does not validate is refused
   * (a CniError) before anything is touched.
   */
  setUpPod(req: SetUpPodRequest): Promise<PodAttachment[]> {
    const requested = req.networks?.length ? req.networks : [{ name: this.defaultNetworkName() }];
    const networks = assignInterfaces(requested);
    const lists = networks.map((n) => this.listFor(n.name));
    // The names the cache is keyed by, refused before the namespace is touched (each ADD would refuse them later).
    validateContainerId(req.id);
    for (const [i, n] of networks.entries()) validateCacheKey({ networkName: lists[i]!.name, containerID: req.id, ifName: n.ifName });
    return this.locks.pod(podKey(req), async () => {
      const ns = await NetNS.open(req.netns);
      await ip.setLink(ns, "lo", { up: true });
      const attached: PodAttachment[] = [];
      for (const [i, n] of networks.entries()) {
        const list = lists[i]!;
        const rt = this.runtimeConf(req, n.ifName, n.runtimeConfig ?? req.runtimeConfig?.[n.name]);
        try {
          attached.push({ network: list.name, ifName: n.ifName, result: await this.cni.addNetworkList(list, rt, this.callOptions()) });
        } catch (e) {
          // The failed network too: its ADD may have done part of its work (as containerd and podman do).
          const undo = [
            ...attached.map((a, j) => ({
              list: lists[j]!,
              rt: this.runtimeConf(req, a.ifName, networks[j]!.runtimeConfig ?? req.runtimeConfig?.[a.network]),
            })),
            { list, rt },
          ];
          for (const u of undo.reverse()) await this.cni.delNetworkList(u.list, u.rt, this.callOptions()).catch(() => undefined);
          throw new PodNetworkError(
            `failed to attach pod ${req.namespace}/${req.name} to network "${list.name}" as ${n.ifName}: ${messageOf(e)}`,
            list.name,
            e,
          );
        }
      }
      return attached;
    });
  }

  private defaultNetworkName(): string {
    const def = this.defaultNetwork();
    if (!def) throw new NetworkNotReadyError(`no default network in ${this.options.confDir}`, this.configErrors());
    return def.name;
  }

  /** Removes every attachment of a pod, with the config each was added with (the cache), however the config dir changed. */
  tearDownPod(pod: PodRef & { networks?: PodNetworkRequest[] }): Promise<void> {
    return this.locks.pod(
      podKey(pod),
      async () => {
        const errors: string[] = [];
        const cached = await listCachedAttachments(this.cacheDir, pod.id);
        const done = new Set<string>();
        for (const entry of cached.reverse()) {
          done.add(`${entry.networkName}\0${entry.ifName}`);
          try {
            await removeCachedAttachment(this.cni, entry, { netns: pod.netns, callOptions: this.callOptions() });
          } catch (e) {
            errors.push(`network "${entry.networkName}" (${entry.ifName}): ${messageOf(e)}`);
          }
        }
        // Networks named in the request but not in the cache (a runtime whose cache was lost): the current config.
        for (const n of assignInterfaces(pod.networks ?? [])) {
          if (done.has(`${n.name}\0${n.ifName}`)) continue;
          const list = this.directory.network(n.name);
          if (!list) continue;
          try {
            await this.cni.delNetworkList(list, this.runtimeConf(pod, n.ifName, n.runtimeConfig), this.callOptions());
          } catch (e) {
            errors.push(`network "${n.name}" (${n.ifName}): ${messageOf(e)}`);
          }
        }
        if (errors.length) throw new PodNetworkError(`failed to tear down pod ${pod.namespace}/${pod.name}: ${errors.join("; ")}`, "");
      },
      { removeLockFile: true },
    );
  }

  /** CHECK of every attachment of a pod (with the cached config and result). */
  checkPod(pod: PodRef): Promise<void> {
    return this.locks.pod(podKey(pod), async () => {
      for (const entry of await listCachedAttachments(this.cacheDir, pod.id)) {
        try {
          await this.cni.checkNetworkList(cachedNetwork(entry), cachedRuntimeConf(entry, pod.netns), this.callOptions());
        } catch (e) {
          throw new PodNetworkError(
            `pod ${pod.namespace}/${pod.name}, network "${entry.networkName}" (${entry.ifName}): ${messageOf(e)}`,
            entry.networkName,
            e,
          );
        }
      }
    });
  }

  /** The attachments of a pod from the cache; with `verify`, each checked against the pod's namespace. */
  async podStatus(pod: PodRef, opts: { verify?: boolean } = {}): Promise<PodAttachmentStatus[]> {
    const out: PodAttachmentStatus[] = [];
    let ns: NetNS | undefined;
    let nsProblem: string | undefined;
    if (opts.verify) {
      try {
        ns = await NetNS.open(pod.netns);
      } catch (e) {
        nsProblem = e instanceof NetnsNotFoundError ? `network namespace ${pod.netns} is gone` : messageOf(e);
      }
    }
    for (const entry of await listCachedAttachments(this.cacheDir, pod.id)) {
      const addresses = cachedAddresses(entry);
      const status: PodAttachmentStatus = { network: entry.networkName, ifName: entry.ifName, addresses };
      if (opts.verify) {
        status.verified = false;
        if (nsProblem) status.problem = nsProblem;
        else {
          const have = new Set((await ip.listAddresses(ns!, entry.ifName).catch(() => undefined))?.map((a) => a.cidr));
          const missing = addresses.filter((a) => !have.has(a));
          if (have.size === 0) status.problem = `interface ${entry.ifName} is missing`;
          else if (missing.length) status.problem = `addresses ${missing.join(", ")} are missing from ${entry.ifName}`;
          else status.verified = true;
        }
      }
      out.push(status);
    }
    return out;
  }

  /**
   * Removes what pods that no longer exist left behind: every cached attachment whose pod is not in `validPodIds`
   * is deleted (with its cached config), then each loaded network of spec 1.1.0+ gets the GC verb with the
   * attachments that remain. A cache file that cannot be read (empty or torn by a crash) is judged by its name
   * against the loaded networks: when no pod it can mean is valid it is deleted with the network's current config
   * and no prevResult; otherwise every attachment it can mean stays valid. Runs alone: no pod operation (of any
   * manager sharing the cache) runs meanwhile.
   */
  gc(validPodIds: Iterable<string>): Promise<{ removed: Array<{ containerID: string; network: string; ifName: string }>; errors: string[] }> {
    const valid = new Set(validPodIds);
    return this.locks.gc(async () => {
      const removed: Array<{ containerID: string; network: string; ifName: string }> = [];
      const errors: string[] = [];
      const all = await listCachedAttachments(this.cacheDir);
      for (const entry of all.filter((e) => !valid.has(e.containerID))) {
        try {
          await removeCachedAttachment(this.cni, entry, { callOptions: this.callOptions() });
          removed.push({ containerID: entry.containerID, network: entry.networkName, ifName: entry.ifName });
        } catch (e) {
          errors.push(`${entry.containerID} on "${entry.networkName}" (${entry.ifName}): ${messageOf(e)}`);
        }
      }
      const lists = new Map(this.networks().map((l) => [l.name, l]));
      const validUnreadable: CacheKey[] = [];
      for (const u of await listUnreadableCacheEntries(this.cacheDir, lists.keys())) {
        if (u.keys.some((k) => valid.has(k.containerID))) {
          validUnreadable.push(...u.keys);
          continue;
        }
        const key = likeliestCacheKey(u.keys);
        try {
          await removeUnreadableAttachment(this.cni, lists.get(key.networkName)!, key, this.callOptions());
          removed.push({ containerID: key.containerID, network: key.networkName, ifName: key.ifName });
        } catch (e) {
          errors.push(`${key.containerID} on "${key.networkName}" (${key.ifName}), whose cache file was ${u.reason}: ${messageOf(e)}`);
        }
      }
      const remaining = all.filter((e) => valid.has(e.containerID));
      for (const list of this.networks()) {
        if (!versionGreaterThanOrEqualTo(list.cniVersion || "0.1.0", "1.1.0")) continue;
        const validAttachments = [
          ...remaining.filter((e) => e.networkName === list.name).map((e) => ({ containerID: e.containerID, ifname: e.ifName })),
          ...validUnreadable.filter((k) => k.networkName === list.name).map((k) => ({ containerID: k.containerID, ifname: k.ifName })),
        ];
        try {
          await this.cni.gcNetworkList(list, { validAttachments }, this.callOptions());
        } catch (e) {
          errors.push(`GC of network "${list.name}": ${messageOf(e)}`);
        }
      }
      return { removed, errors };
    });
  }
}

/** The lock key of a pod: namespace and name, as ocicni keys it (so a pod's sandboxes never overlap). */
const podKey = (pod: PodRef): string => `${pod.namespace}/${pod.name}`;
