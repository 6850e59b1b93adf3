/**
 * Rules back after a firewall reload, for `cnitool reload` and the resident server's self-repair: `reloadFirewall`
 * puts back the host firewall state of every attachment in the result cache (what a firewalld reload, `iptables -F` or `nft flush ruleset` took away) from the config,
 * capability arguments and result it was added with, plugin by plugin in chain order, through each plugin's
 * Restorer (plugins/common/restore.ts); containers are never touched. Attachments are taken in the order they
 * were added (the cache files' modification times), so rules appended to shared chains come back in their order.
 * `lostFirewallState` is the cheap look for what is gone that the resident server repeats.
 * @module
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CNIConfig } from "#libcni/api.js";
import { type CachedAttachment, cacheFilePath, listCachedAttachments } from "#libcni/cache.js";
import { describeMark, type FirewallMark, missingMarks } from "#net/firewall/firewall-marks.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import type { RestoreRequest, Restorer } from "#plugins/common/restore.js";
import { MANIFESTS } from "#plugins/manifests.js";
import { cachedNetwork, cachedResult, cachedRuntimeConf, cachedWithAge } from "#runtime/attachments.js";
import { PodLocks } from "#runtime/pod-locks.js";
import { formatCniArgs } from "#spec/args.js";
import type { NetworkConfigList } from "#spec/config.js";
import { messageOf } from "#spec/errors.js";
import { type Result, toCurrentResult } from "#spec/result/index.js";

/** The plugins that leave host firewall state, by type (their manifests say); restorers are loaded when a chain has them. */
const RESTORERS: Record<string, () => Promise<{ restorer: Restorer }>> = Object.fromEntries(
  MANIFESTS.flatMap((m) => (m.restorer ? [[m.name, m.restorer]] : [])),
);

export type ReloadStatus = "restored" | "complete" | "skipped" | "failed";

/** What a reload did for one attachment. */
export interface AttachmentReload {
  /** `<network>/<containerID>/<ifName>` (none of the three can contain `/`). */
  attachment: string;
  status: ReloadStatus;
  /** What was put back, why it was skipped, or what failed. */
  detail: string;
}

/** What a pass needs: where the cache is, and the environment plugins read host-side settings from. */
export interface ReloadOptions {
  cacheDir: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Only these attachments (as `labelOf` names them); default: all. */
  only?: ReadonlySet<string>;
}

/** One pass over the cache: probes shared by its attachments, and the host's links (read once, when needed). */
class Pass {
  private readonly probes = new Map<string, Promise<unknown>>();
  private links?: Promise<Set<string>>;

  once = <T>(key: string, probe: () => Promise<T>): Promise<T> => {
    if (!this.probes.has(key)) this.probes.set(key, probe());
    return this.probes.get(key) as Promise<T>;
  };

  hostLinks(): Promise<Set<string>> {
    return (this.links ??= ip.listLinks(NetNS.host).then((links) => new Set(links.map((l) => l.name))));
  }
}

const labelOf = (e: CachedAttachment) => `${e.networkName}/${e.containerID}/${e.ifName}`;

/** The cached attachments in the order they were added (modification time of their files). */
async function attachmentsInOrder(cacheDir: string): Promise<CachedAttachment[]> {
  return (await cachedWithAge(cacheDir)).sort((a, b) => a.mtimeMs - b.mtimeMs).map((a) => a.entry);
}

/**
 * Why an attachment is not this network namespace's to restore: a host-side link of its result (the bridge, the
 * host veth) is not here — the container is gone, or it was attached from another namespace sharing the cache —
 * or, for a result without host links, its network namespace is gone. Undefined when it is.
 */
async function elsewhere(pass: Pass, entry: CachedAttachment, result: Result): Promise<string | undefined> {
  const hostLinks = (toCurrentResult(result).interfaces ?? []).filter((i) => !i.sandbox && i.name).map((i) => i.name);
  if (hostLinks.length === 0) return entry.netns && !existsSync(entry.netns) ? `its network namespace ${entry.netns} is gone` : undefined;
  const here = await pass.hostLinks();
  const missing = hostLinks.find((name) => !here.has(name));
  return missing && `its host link ${missing} is not in this network namespace (the container is gone, or it was attached elsewhere)`;
}

/** One plugin of an attachment's chain that has a restorer, with its request. */
interface PluginStep {
  type: string;
  load: () => Promise<{ restorer: Restorer }>;
  req: RestoreRequest;
}

/**
 * The plugins of an attachment that leave host firewall state, in chain order, each with the request its ADD got
 * (the cached result as prevResult); `{ skip }` when the attachment is not this namespace's to restore. Throws
 * when the cached config or result cannot be read.
 */
async function stepsOf(pass: Pass, entry: CachedAttachment, env: ReloadOptions["env"]): Promise<PluginStep[] | { skip: string }> {
  let list: NetworkConfigList;
  let result: Result | undefined;
  try {
    list = cachedNetwork(entry);
  } catch (e) {
    throw new Error(`its cached config cannot be read: ${messageOf(e)}`);
  }
  try {
    result = cachedResult(entry, list.cniVersion);
  } catch (e) {
    throw new Error(`its cached result cannot be read: ${messageOf(e)}`);
  }
  if (!result) return { skip: "the cache holds no result for it" };
  const away = await elsewhere(pass, entry, result);
  if (away) return { skip: away };
  const rt = cachedRuntimeConf(entry);
  const cni = new CNIConfig({ path: [] });
  return list.plugins.flatMap((plugin): PluginStep[] => {
    const load = RESTORERS[plugin.network.type];
    if (!load) return [];
    const stdin = cni.buildRequest(list.name, list.cniVersion, plugin, result, rt).bytes;
    const req: RestoreRequest = {
      stdin,
      containerID: entry.containerID,
      ifName: entry.ifName,
      netns: entry.netns ?? "",
      args: formatCniArgs(rt.args ?? []),
      env,
      once: pass.once,
    };
    return [{ type: plugin.network.type, load, req }];
  });
}

/** One attachment's reload, with the plugins that put something back (what `undo` would take away again). */
interface Reloaded {
  entry: CachedAttachment;
  report: AttachmentReload;
  putBack: PluginStep[];
}

/** Restores one attachment, every plugin of its chain even when one fails. */
async function reloadOne(pass: Pass, cacheDir: string, entry: CachedAttachment, env: ReloadOptions["env"]): Promise<Reloaded> {
  const attachment = labelOf(entry);
  const done = (status: ReloadStatus, detail: string, putBack: PluginStep[] = []): Reloaded => ({
    entry,
    report: { attachment, status, detail },
    putBack,
  });
  let steps: Awaited<ReturnType<typeof stepsOf>>;
  try {
    steps = await stepsOf(pass, entry, env);
  } catch (e) {
    return done("failed", messageOf(e));
  }
  if ("skip" in steps) return done("skipped", steps.skip);
  // Removed from the cache since it was listed: DEL'd meanwhile, so there is nothing to put back.
  if (!existsSync(cacheFilePath(cacheDir, entry))) return done("skipped", "it left the cache during the reload");
  const restored: string[] = [];
  const failed: string[] = [];
  const putBack: PluginStep[] = [];
  for (const step of steps) {
    try {
      const put = await (await step.load()).restorer.restore(step.req);
      if (put.length) {
        restored.push(`${step.type}: ${put.join(", ")}`);
        putBack.push(step);
      }
    } catch (e) {
      failed.push(`${step.type}: ${messageOf(e)}`);
    }
  }
  if (failed.length) return done("failed", [...failed, ...restored.map((r) => `restored ${r}`)].join("; "), putBack);
  if (restored.length) return done("restored", restored.join("; "), putBack);
  return done("complete", steps.length ? "" : "no plugin of its chain leaves host firewall state");
}

/**
 * How long after putting state back a reload looks again whether the attachment is still cached. A runtime's
 * DEL takes no lock a reload could share: its plugins may remove the rules just before the reload puts them back,
 * and the cache entry goes only when the whole chain is done (libcni removes it last), so an attachment that
 * leaves the cache within this time was being deleted, and what was put back for it is taken away again.
 */
const DELETED_DURING_RELOAD_MS = 1000;

/** Takes back what was put back for attachments that left the cache meanwhile (see DELETED_DURING_RELOAD_MS). */
async function undoDeleted(cacheDir: string, reloaded: readonly Reloaded[]): Promise<void> {
  const candidates = reloaded.filter((r) => r.putBack.length > 0);
  if (candidates.length === 0) return;
  await sleep(DELETED_DURING_RELOAD_MS);
  for (const r of candidates) {
    if (existsSync(cacheFilePath(cacheDir, r.entry))) continue;
    const failed: string[] = [];
    for (const step of [...r.putBack].reverse()) {
      try {
        await (await step.load()).restorer.undo(step.req);
      } catch (e) {
        failed.push(`${step.type}: ${messageOf(e)}`);
      }
    }
    r.report.status = failed.length ? "failed" : "skipped";
    r.report.detail = failed.length
      ? `it was deleted during the reload, and what was put back could not all be removed again: ${failed.join("; ")}`
      : "it was deleted during the reload: what was put back was removed again";
  }
}

/**
 * Restores every cached attachment, in the order they were added, each reported (a failure does not stop the
 * others). Runs alone against tscni's pod manager and GC sharing the cache (their lock, `<cacheDir>/locks/gc`),
 * and against another reload.
 */
export async function reloadFirewall(opts: ReloadOptions): Promise<AttachmentReload[]> {
  if (!existsSync(path.join(opts.cacheDir, "results"))) return [];
  return new PodLocks(opts.cacheDir).gc(async () => {
    const pass = new Pass();
    const reloaded: Reloaded[] = [];
    for (const entry of await attachmentsInOrder(opts.cacheDir)) {
      if (!opts.only || opts.only.has(labelOf(entry))) reloaded.push(await reloadOne(pass, opts.cacheDir, entry, opts.env));
    }
    await undoDeleted(opts.cacheDir, reloaded);
    return reloaded.map((r) => r.report);
  });
}

/** What a look for lost state found missing, per attachment. */
export interface LostState {
  attachment: string;
  missing: string[];
}

/**
 * The cheap look: every cached attachment of this namespace says what shows its state is there (its marks:
 * chains, jumps, tables), and one listing per firewall table tells which are gone. An attachment whose config
 * cannot be read is left to the reload, which reports it.
 */
export async function lostFirewallState(opts: ReloadOptions): Promise<LostState[]> {
  const pass = new Pass();
  const byAttachment: Array<{ attachment: string; marks: FirewallMark[] }> = [];
  for (const entry of await listCachedAttachments(opts.cacheDir)) {
    try {
      const steps = await stepsOf(pass, entry, opts.env);
      if ("skip" in steps) continue;
      const marks: FirewallMark[] = [];
      for (const step of steps) marks.push(...(await (await step.load()).restorer.marks(step.req)));
      if (marks.length) byAttachment.push({ attachment: labelOf(entry), marks });
    } catch {
      /* the reload reports it */
    }
  }
  const key = (m: FirewallMark) => JSON.stringify(m);
  const missing = new Set((await missingMarks(byAttachment.flatMap((a) => a.marks))).map(key));
  return byAttachment
    .map((a) => ({ attachment: a.attachment, missing: [...new Set(a.marks.filter((m) => missing.has(key(m))).map(describeMark))] }))
    .filter((a) => a.missing.length > 0);
}

/** One line per attachment: `restored  net/ctr/eth0  portmap: iptables IPv4`. */
export const formatReload = (r: AttachmentReload): string => `${r.status.padEnd(8)}  ${r.attachment}${r.detail ? `  ${r.detail}` : ""}`;
