/**
 * Node GC, for runtimes that never send the spec's GC (containerd's go-cni): the container runtime is asked over
 * CRI which pod sandboxes it knows; every cached attachment a CRI runtime made whose sandbox it does not know is
 * DELeted with the config and arguments it was added with; then every network of the config directory (spec
 * 1.1.0+) gets the GC verb with the attachments that remain, so plugins release what leaked without a cache entry.
 *
 * What keeps a live pod safe from a GC that runs beside its runtime:
 * - only attachments whose CNI_ARGS name their container as K8S_POD_INFRA_CONTAINER_ID (what containerd and CRI-O
 *   send) are judged, but not cnitool's pods, which carry the same CNI_ARGS (`judgedByNodeGc`); others (podman's,
 *   cnitool's) are left alone;
 * - the cache is read before the runtime is asked, and an attachment cached less than `minAgeMs` ago is kept: a
 *   runtime lists a sandbox only once its network is set up (containerd adds it to its store after the ADD);
 * - an attachment of a sandbox the runtime knows goes only when the sandbox is not ready and the attachment was
 *   cached before this boot: its network namespace died with the earlier boot, and a CRI sandbox is never made
 *   ready again (a runtime restarted after a reboot lists its old sandboxes as NOTREADY until kubelet removes them);
 * - a cache file that cannot be read (empty or torn: a power loss after Go's libcni, which writes in place and
 *   never fsyncs) is judged by its name against the networks of the config directory: it goes, DELeted with the
 *   network's current config and no prevResult, only when it was written before this boot and its sandbox is not
 *   ready or unknown to the runtime; otherwise every attachment its name can mean stays valid for the GC verb.
 *   Removing it also lets the runtime's own DEL of the sandbox work again: Go's libcni fails a DEL whose cache file
 *   does not parse (containernetworking/cni#1055);
 * - a runtime that cannot be asked, or that knows no sandbox at all while something would be removed (a wrong
 *   endpoint looks like that), removes nothing (the latter unless `force`);
 * - an attachment whose network namespace still has a process in it (netns-occupants.ts) is kept, whatever the
 *   runtime says, unless `deleteOccupied`: a live workload is in it, and a runtime that lies (or a listener that
 *   is not the runtime) must not cost it its network. Judged when planning and again right before its DEL;
 * - a cache entry that changed or went since it was read is not DELeted;
 * - the GC verb's valid attachments are read afresh right before it, with the ADDs under way (adds-in-flight.ts),
 *   and no cached attachment is DELeted by it (libcni's gcNetworkListPlugins). An ADD that starts while a plugin's
 *   GC runs is not protected: the spec leaves holding ADDs back during GC to the runtime.
 * Everything runs under the cache directory's GC lock (pod-locks.ts), so pods of this library's manager wait.
 * @module
 */
import { lstat } from "node:fs/promises";
import type { PluginExec } from "#invoke/exec.js";
import { CNIConfig } from "#libcni/api.js";
import {
  type CachedAttachment,
  type CacheKey,
  cacheFilePath,
  likeliestCacheKey,
  listCachedAttachments,
  listUnreadableCacheEntries,
  type UnreadableCacheEntry,
} from "#libcni/cache.js";
import { type LoadedNetwork, loadAllNetworks } from "#libcni/conf.js";
import { NetNS } from "#net/netns.js";
import type { GCAttachment, NetworkConfigList } from "#spec/config.js";
import { versionGreaterThanOrEqualTo } from "#spec/version.js";
import { addsInFlight } from "./adds-in-flight.js";
import { type AgedAttachment, cachedNetwork, cachedRuntimeConf, cachedWithAge, removeUnreadableAttachment } from "./attachments.js";
import { podNameOf } from "./container-ids.js";

export type { AgedAttachment } from "./attachments.js";

import { messageOf } from "#spec/errors.js";
import { bootTimeMs } from "#sys/boot.js";
import type { CriSandbox, CriVersion } from "./cri/runtime-service.js";
import { occupiedWhy } from "./netns-occupants.js";
import { PodLocks } from "./pod-locks.js";

/** What node GC asks the runtime (a CriRuntimeClient, or a stand-in in tests). */
export interface SandboxSource {
  readonly endpoint: string;
  version(): Promise<CriVersion>;
  listPodSandboxes(): Promise<CriSandbox[]>;
}

/** How long an attachment is kept after its ADD whatever the runtime says (see the module comment). */
export const DEFAULT_MIN_AGE_MS = 10 * 60_000;

/** One node GC run. */
export interface NodeGcOptions {
  runtime: SandboxSource;
  /** The result cache (the runtime's: /var/lib/cni for containerd and CRI-O). */
  cacheDir: string;
  /** The networks that get the GC verb. */
  confDir: string;
  /** Where the plugins are (CNI_PATH). */
  pluginDirs: string[];
  /** Attachments cached less than this long ago are kept (default DEFAULT_MIN_AGE_MS). */
  minAgeMs?: number;
  /** Report what would be done, and do nothing. */
  dryRun?: boolean;
  /** Remove stale attachments even when the runtime knows no sandbox at all. */
  force?: boolean;
  /** DEL stale attachments even when their network namespace still has processes in it. */
  deleteOccupied?: boolean;
  /** Why an attachment's network namespace counts as in use, or undefined (default: its cached netns against /proc). */
  occupied?: (entry: CachedAttachment) => string | undefined;
  /** Which cached attachments are judged (default judgedByNodeGc). */
  judged?: (entry: CachedAttachment) => boolean;
  exec?: PluginExec;
  /** Kills a plugin call after this many milliseconds (default: no limit). */
  pluginTimeoutMs?: number;
  /** The ADDs under way (default: read from /proc). */
  addsInFlight?: () => Promise<GCAttachment[]>;
  now?: () => number;
  /** When this boot began (default: /proc/stat's btime); cache files older than it are of an earlier boot. */
  bootTimeMs?: number;
}

/** An attachment, named as the cache names it. */
export interface AttachmentRef {
  containerID: string;
  network: string;
  ifName: string;
}

/** What happens to one network of the config directory. */
export interface NetworkGc {
  network: string;
  file: string;
  /** Whether it gets the GC verb; else `reason` says why not. */
  gc: boolean;
  reason?: string;
  /** Its valid attachments (as planned; a run sends those cached right before the verb). */
  validAttachments: number;
  error?: string;
}

/** What a run found and did (or, dry, would do). */
export interface NodeGcReport {
  dryRun: boolean;
  /** The runtime as it names itself, and where it was asked. */
  runtime: string;
  sandboxes: number;
  /** Cached attachments judged, and those left alone as not made by a CRI runtime. */
  judged: number;
  notJudged: number;
  /** Judged attachments whose sandbox the runtime does not know, old enough to go. */
  stale: AttachmentRef[];
  /** Judged attachments the runtime does not know yet, kept for their age. */
  tooRecent: Array<AttachmentRef & { ageMs: number }>;
  /** Stale attachments kept because their network namespace is in use, with why. */
  occupied: Array<AttachmentRef & { why: string }>;
  /** Cache files that cannot be read and are kept, with why (their attachments stay valid for the GC verb). */
  unreadableKept: Array<{ file: string; reason: string; why: string }>;
  /** Why the stale attachments are not removed, when they are not. */
  refused?: string;
  removed: AttachmentRef[];
  failed: Array<AttachmentRef & { error: string }>;
  networks: NetworkGc[];
  /** Config files that do not load (their networks get no GC verb). */
  configErrors: Array<{ file: string; error: string }>;
}

/** An unreadable cache file the plan removes: DEL of `key` with the network's config from the config directory. */
export interface StaleUnreadable {
  unreadable: UnreadableCacheEntry;
  key: CacheKey;
  list: NetworkConfigList;
}

/** The attachments the plan removes, keeps, and the networks it GCs. */
export interface NodeGcPlan {
  judged: number;
  notJudged: number;
  stale: AgedAttachment[];
  staleUnreadable: StaleUnreadable[];
  unreadableKept: Array<{ unreadable: UnreadableCacheEntry; why: string }>;
  tooRecent: Array<AgedAttachment & { ageMs: number }>;
  occupied: Array<AgedAttachment & { why: string }>;
  refused?: string;
  networks: Array<{ list: NetworkConfigList; file: string; gc: boolean; reason?: string; validAttachments: GCAttachment[] }>;
}

/** Whether a CRI runtime made this attachment: its CNI_ARGS carry K8S_POD_INFRA_CONTAINER_ID = its container ID. */
export function madeByCriRuntime(entry: CachedAttachment): boolean {
  return (entry.cniArgs ?? []).some(([k, v]) => k === "K8S_POD_INFRA_CONTAINER_ID" && v === entry.containerID);
}

/** The attachments node GC judges: a CRI runtime's, but not cnitool's own pods (they carry the same CNI_ARGS). */
export const judgedByNodeGc = (entry: CachedAttachment): boolean => madeByCriRuntime(entry) && podNameOf(entry.containerID) === undefined;

const keyOf = (e: CachedAttachment): string => `${e.networkName}\0${e.containerID}\0${e.ifName}`;
const refOf = (e: CachedAttachment): AttachmentRef => ({ containerID: e.containerID, network: e.networkName, ifName: e.ifName });
const refOfKey = (k: CacheKey): AttachmentRef => ({ containerID: k.containerID, network: k.networkName, ifName: k.ifName });
const gcAttachmentOf = (e: CachedAttachment): GCAttachment => ({ containerID: e.containerID, ifname: e.ifName });

/** Why a network gets no GC verb, or undefined when it gets one. */
function noGcReason(list: NetworkConfigList): string | undefined {
  if (list.disableGC) return "disableGC is set";
  let supported = false;
  try {
    supported = versionGreaterThanOrEqualTo(list.cniVersion || "0.1.0", "1.1.0");
  } catch {
    /* an unparsable version has no GC verb */
  }
  return supported ? undefined : `cniVersion ${list.cniVersion || "(none)"} has no GC verb (1.1.0 and later)`;
}

/**
 * Decides, without touching anything, which cached attachments go and which networks get the GC verb (see the
 * module comment for the rules). `notReady` are the sandboxes of `sandboxIds` that are not ready; `bootMs` when
 * this boot began (without it, nothing is judged to be of an earlier boot); `occupied` says why an attachment's
 * network namespace is in use (without it, none is).
 */
export function planNodeGc(input: {
  cached: readonly AgedAttachment[];
  sandboxIds: ReadonlySet<string>;
  notReady?: ReadonlySet<string>;
  unreadable?: readonly UnreadableCacheEntry[];
  bootMs?: number;
  networks: readonly LoadedNetwork[];
  nowMs: number;
  minAgeMs: number;
  judged: (entry: CachedAttachment) => boolean;
  force: boolean;
  occupied?: (entry: CachedAttachment) => string | undefined;
}): NodeGcPlan {
  const notReady = input.notReady ?? new Set<string>();
  const earlierBoot = (mtimeMs: number): boolean => input.bootMs !== undefined && mtimeMs < input.bootMs;
  const judged = input.cached.filter((a) => input.judged(a.entry));
  const unknown = judged.filter((a) => !input.sandboxIds.has(a.entry.containerID));
  const aged = unknown.map((a) => ({ ...a, ageMs: input.nowMs - a.mtimeMs }));
  let stale: AgedAttachment[] = aged.filter((a) => a.ageMs >= input.minAgeMs).map(({ entry, mtimeMs }) => ({ entry, mtimeMs }));
  // Known, not ready, cached before this boot: a sandbox of the earlier boot the runtime still lists.
  const ofEarlierBoot = judged.filter((a) => notReady.has(a.entry.containerID) && earlierBoot(a.mtimeMs));

  const firstList = new Map<string, NetworkConfigList>();
  for (const { list } of input.networks) if (!firstList.has(list.name)) firstList.set(list.name, list);
  const staleUnreadable: StaleUnreadable[] = [];
  const unreadableKept: NodeGcPlan["unreadableKept"] = [];
  let unknownUnreadable = 0;
  for (const u of input.unreadable ?? []) {
    const known = u.keys.filter((k) => input.sandboxIds.has(k.containerID));
    let why: string | undefined;
    let key: CacheKey | undefined;
    if (known.some((k) => !notReady.has(k.containerID))) why = "its sandbox is ready";
    else if (!earlierBoot(u.mtimeMs)) why = "written during this boot (its pod may be alive)";
    else if (known.length > 0) key = likeliestCacheKey(known);
    else if (input.nowMs - u.mtimeMs < input.minAgeMs) why = "under the minimum age";
    else {
      key = likeliestCacheKey(u.keys);
      unknownUnreadable++;
    }
    const list = key && firstList.get(key.networkName);
    if (key && list) staleUnreadable.push({ unreadable: u, key, list });
    else unreadableKept.push({ unreadable: u, why: why ?? "no network of its name in the config directory" });
  }

  let refused: string | undefined;
  if (stale.length + unknownUnreadable > 0 && input.sandboxIds.size === 0 && !input.force) {
    refused =
      `the runtime knows no pod sandbox at all, yet ${stale.length + unknownUnreadable} attachment(s) a CRI runtime made are cached: ` +
      "is it the runtime that made them?";
    stale = [];
    for (const s of staleUnreadable.splice(0)) unreadableKept.push({ unreadable: s.unreadable, why: "the runtime knows no pod sandbox at all" });
  }
  stale = [...stale, ...ofEarlierBoot];
  // Kept stale ones stay out of `going`: they are valid attachments, as alive as their namespace's processes.
  const occupied: NodeGcPlan["occupied"] = [];
  if (input.occupied) {
    const free: AgedAttachment[] = [];
    for (const a of stale) {
      const why = input.occupied(a.entry);
      if (why === undefined) free.push(a);
      else occupied.push({ ...a, why });
    }
    stale = free;
  }
  const going = new Set(stale.map((a) => keyOf(a.entry)));
  const keptUnreadable = unreadableKept.flatMap((k) => k.unreadable.keys);
  const seen = new Map<string, string>();
  const networks = input.networks.map(({ list, file }) => {
    const first = seen.get(list.name);
    if (first === undefined) seen.set(list.name, file);
    const reason = first !== undefined ? `network "${list.name}" is also in ${first}, which wins` : noGcReason(list);
    const validAttachments = unique([
      ...input.cached.filter((a) => a.entry.networkName === list.name && !going.has(keyOf(a.entry))).map((a) => gcAttachmentOf(a.entry)),
      ...keptUnreadable.filter((k) => k.networkName === list.name).map((k) => ({ containerID: k.containerID, ifname: k.ifName })),
    ]);
    return { list, file, gc: reason === undefined, ...(reason !== undefined ? { reason } : {}), validAttachments };
  });
  return {
    judged: judged.length,
    notJudged: input.cached.length - judged.length,
    stale,
    staleUnreadable,
    unreadableKept,
    tooRecent: aged.filter((a) => a.ageMs < input.minAgeMs),
    occupied,
    ...(refused ? { refused } : {}),
    networks,
  };
}

/** Whether an attachment's cache file is still the one read (not removed, nor written again, since). */
async function unchanged(cacheDir: string, a: AgedAttachment): Promise<boolean> {
  const st = await lstat(cacheFilePath(cacheDir, a.entry)).catch(() => undefined);
  return st !== undefined && st.mtimeMs === a.mtimeMs;
}

/** The cached netns path when it still is a network namespace, else "" (DEL without CNI_NETNS). */
const presentNetns = async (netns: string | undefined): Promise<string> => (await NetNS.openIfThere(netns ?? "").catch(() => undefined))?.path ?? "";

/** Each attachment once. */
function unique(attachments: readonly GCAttachment[]): GCAttachment[] {
  return [...new Map(attachments.map((a) => [`${a.containerID}\0${a.ifname}`, a])).values()];
}

/**
 * Runs node GC (see the module comment) and reports what it did. Rejects, having removed nothing, when the runtime
 * cannot be asked or the cache cannot be read; failures of single DELs and GC verbs are in the report.
 */
export async function runNodeGc(o: NodeGcOptions): Promise<NodeGcReport> {
  const version = await o.runtime.version();
  // The cache first: an attachment cached after the runtime answered is judged next time.
  const { networks, errors } = await loadAllNetworks(o.confDir);
  const networkNames = networks.map((n) => n.list.name);
  const cached = await cachedWithAge(o.cacheDir);
  const unreadable = await listUnreadableCacheEntries(o.cacheDir, networkNames);
  const sandboxes = await o.runtime.listPodSandboxes();
  const bootMs = "bootTimeMs" in o ? o.bootTimeMs : bootTimeMs();
  const occupied = o.deleteOccupied ? undefined : (o.occupied ?? ((e: CachedAttachment) => occupiedWhy(e.netns)));
  const plan = planNodeGc({
    cached,
    sandboxIds: new Set(sandboxes.map((s) => s.id)),
    notReady: new Set(sandboxes.filter((s) => s.state !== "SANDBOX_READY").map((s) => s.id)),
    unreadable,
    ...(bootMs !== undefined ? { bootMs } : {}),
    networks,
    nowMs: (o.now ?? Date.now)(),
    minAgeMs: o.minAgeMs ?? DEFAULT_MIN_AGE_MS,
    judged: o.judged ?? judgedByNodeGc,
    force: o.force ?? false,
    ...(occupied ? { occupied } : {}),
  });
  const report: NodeGcReport = {
    dryRun: o.dryRun ?? false,
    runtime: `${version.runtimeName || "(unnamed)"} ${version.runtimeVersion} (CRI ${version.runtimeApiVersion || "?"}) at ${o.runtime.endpoint}`,
    sandboxes: sandboxes.length,
    judged: plan.judged,
    notJudged: plan.notJudged,
    stale: [...plan.stale.map((a) => refOf(a.entry)), ...plan.staleUnreadable.map((s) => refOfKey(s.key))],
    unreadableKept: plan.unreadableKept.map((k) => ({ file: k.unreadable.file, reason: k.unreadable.reason, why: k.why })),
    tooRecent: plan.tooRecent.map((a) => ({ ...refOf(a.entry), ageMs: a.ageMs })),
    occupied: plan.occupied.map((a) => ({ ...refOf(a.entry), why: a.why })),
    ...(plan.refused ? { refused: plan.refused } : {}),
    removed: [],
    failed: [],
    networks: plan.networks.map((n) => ({
      network: n.list.name,
      file: n.file,
      gc: n.gc,
      ...(n.reason ? { reason: n.reason } : {}),
      validAttachments: n.validAttachments.length,
    })),
    configErrors: errors.map((e) => ({ file: e.file, error: e.error.message })),
  };
  if (report.dryRun) return report;

  const cni = new CNIConfig({ path: o.pluginDirs, cacheDir: o.cacheDir, ...(o.exec ? { exec: o.exec } : {}) });
  const callOptions = o.pluginTimeoutMs ? { timeoutMs: o.pluginTimeoutMs } : {};
  await new PodLocks(o.cacheDir).gc(async () => {
    const stillStale = new Set<string>();
    for (const a of plan.stale) {
      if (!(await unchanged(o.cacheDir, a))) continue;
      // Again now: a process may have entered it since the plan (it stays valid for the GC verb: it is cached).
      const why = occupied?.(a.entry);
      if (why !== undefined) {
        report.occupied.push({ ...refOf(a.entry), why });
        continue;
      }
      try {
        const rt = { ...cachedRuntimeConf(a.entry), netNS: await presentNetns(a.entry.netns) };
        await cni.delNetworkList(cachedNetwork(a.entry), rt, callOptions);
        report.removed.push(refOf(a.entry));
      } catch (e) {
        stillStale.add(keyOf(a.entry));
        report.failed.push({ ...refOf(a.entry), error: messageOf(e) });
      }
    }
    for (const s of plan.staleUnreadable) {
      const st = await lstat(s.unreadable.file).catch(() => undefined);
      if (st?.mtimeMs !== s.unreadable.mtimeMs) continue;
      try {
        await removeUnreadableAttachment(cni, s.list, s.key, callOptions);
        report.removed.push(refOfKey(s.key));
      } catch (e) {
        report.failed.push({ ...refOfKey(s.key), error: messageOf(e) });
      }
    }
    for (const [i, n] of plan.networks.entries()) {
      if (!n.gc) continue;
      // ADDs under way first, then the cache: an ADD that finishes in between is in the one or the other.
      const running = await (o.addsInFlight ?? addsInFlight)();
      const remaining = (await listCachedAttachments(o.cacheDir))
        .filter((e) => e.networkName === n.list.name && !stillStale.has(keyOf(e)))
        .map(gcAttachmentOf);
      // Every attachment an unreadable file left can mean is valid: it may be a live pod's.
      const unreadableNow = (await listUnreadableCacheEntries(o.cacheDir, [n.list.name]))
        .flatMap((u) => u.keys)
        .map((k) => ({ containerID: k.containerID, ifname: k.ifName }));
      const validAttachments = unique([...remaining, ...unreadableNow, ...running]);
      report.networks[i]!.validAttachments = validAttachments.length;
      try {
        await cni.gcNetworkListPlugins(n.list, { validAttachments }, callOptions);
      } catch (e) {
        report.networks[i]!.error = messageOf(e);
      }
    }
  });
  return report;
}

/** Whether a run had failures (a DEL or a network's GC verb), for an exit status. */
export const nodeGcFailed = (r: NodeGcReport): boolean => r.failed.length > 0 || r.networks.some((n) => n.error !== undefined);

const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;
const named = (a: AttachmentRef): string => `${a.containerID} on network "${a.network}" (${a.ifName})`;

/** The report as lines for a person: what was (or would be) removed and GCed, what was kept and why. */
export function describeNodeGc(r: NodeGcReport): string[] {
  const lines = [`runtime ${r.runtime}: ${r.sandboxes} pod sandbox(es); ${r.judged} cached attachment(s) made by a CRI runtime`];
  if (r.notJudged > 0) lines.push(`left alone: ${r.notJudged} cached attachment(s) not made by a CRI runtime`);
  for (const a of r.tooRecent) lines.push(`kept (cached ${seconds(a.ageMs)} ago, under the minimum age): ${named(a)}`);
  for (const a of r.occupied) lines.push(`kept (${a.why}): ${named(a)}`);
  for (const u of r.unreadableKept) lines.push(`kept an unreadable cache file (${u.reason}), ${u.why}: ${u.file}`);
  if (r.refused) lines.push(`removing nothing: ${r.refused}`);
  if (r.dryRun) for (const a of r.stale) lines.push(`would remove: ${named(a)}`);
  for (const a of r.removed) lines.push(`removed: ${named(a)}`);
  for (const a of r.failed) lines.push(`failed to remove: ${named(a)}: ${a.error}`);
  for (const n of r.networks) {
    if (!n.gc) lines.push(`no GC of network "${n.network}" (${n.file}): ${n.reason}`);
    else if (n.error !== undefined) lines.push(`GC of network "${n.network}" failed: ${n.error}`);
    else lines.push(`${r.dryRun ? "would send" : "sent"} GC to network "${n.network}" with ${n.validAttachments} valid attachment(s)`);
  }
  for (const e of r.configErrors) lines.push(`not loaded: ${e.file}: ${e.error}`);
  return lines;
}
