/**
 * `cnitool gc --cri-endpoint unix:///run/containerd/containerd.sock [--dry-run] [--min-age SECONDS] [--force]
 * [--delete-occupied]`:
 * node GC (src/runtime/node-gc.ts) against the runtime behind the endpoint, with the result cache of `--cache-dir`,
 * the networks of NETCONFPATH and the plugins of CNI_PATH: the node's side of the `gc` verb, whose flags and upstream's
 * `cnitool gc <network> <netns>` are in cnitool.ts.
 * @module
 */
import { splitPathList } from "#invoke/find.js";
import { type CriClientOptions, CriRuntimeClient } from "#runtime/cri/runtime-service.js";
import { DEFAULT_MIN_AGE_MS, describeNodeGc, nodeGcFailed, runNodeGc } from "#runtime/node-gc.js";

/** The `gc` flags of node GC. */
export interface NodeGcFlags {
  criEndpoint: string;
  dryRun?: boolean;
  minAge?: string;
  force?: boolean;
  deleteOccupied?: boolean;
}

/** A whole number of seconds from a flag, in milliseconds; an error naming the flag otherwise. */
export function secondsFlag(flag: string, value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value) * 1000)) {
    throw new Error(`${flag} wants a whole number of seconds, not ${JSON.stringify(value)}`);
  }
  return Number(value) * 1000;
}

/**
 * Runs node GC and prints its report. Throws (exit status 1) when the runtime cannot be asked, when a real run
 * refused to remove or failed to remove or GC something; a dry run changes nothing and reports only.
 */
export async function nodeGcCommand(
  flags: NodeGcFlags,
  ctx: {
    confDir: string;
    cacheDir: string;
    cniPath: string | undefined;
    pluginTimeoutMs?: number;
    out: (s: string) => void;
    /** How the CRI listener is judged (default: CriRuntimeClient's rule). */
    checkCriListener?: CriClientOptions["checkListener"];
  },
): Promise<void> {
  const runtime = new CriRuntimeClient(flags.criEndpoint, ctx.checkCriListener ? { checkListener: ctx.checkCriListener } : {});
  const pluginDirs = splitPathList(ctx.cniPath);
  if (!flags.dryRun && pluginDirs.length === 0) {
    throw new Error("CNI_PATH is empty: node GC runs the plugins' DEL and GC, set it to the runtime's plugin directory (e.g. CNI_PATH=/opt/cni/bin)");
  }
  const report = await runNodeGc({
    runtime,
    cacheDir: ctx.cacheDir,
    confDir: ctx.confDir,
    pluginDirs,
    minAgeMs: flags.minAge !== undefined ? secondsFlag("--min-age", flags.minAge) : DEFAULT_MIN_AGE_MS,
    dryRun: flags.dryRun ?? false,
    force: flags.force ?? false,
    deleteOccupied: flags.deleteOccupied ?? false,
    ...(ctx.pluginTimeoutMs ? { pluginTimeoutMs: ctx.pluginTimeoutMs } : {}),
  });
  for (const line of describeNodeGc(report)) ctx.out(`${line}\n`);
  if (report.dryRun) return;
  if (report.refused) throw new Error(`node GC removed nothing: ${report.refused} (--force removes them anyway)`);
  if (nodeGcFailed(report)) {
    const networks = report.networks.filter((n) => n.error !== undefined).length;
    throw new Error(`node GC: ${report.failed.length} attachment(s) could not be removed, the GC of ${networks} network(s) failed`);
  }
}
