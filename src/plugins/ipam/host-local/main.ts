/**
 * host-local: the IPAM plugin that allocates addresses from ranges and records them as files in a data
 * directory on this host. ADD takes one address per range set, DEL frees the attachment's addresses (and is
 * idempotent), CHECK looks for them; STATUS checks the store is usable and has an address left in every range
 * set, and GC frees addresses of attachments the runtime no longer knows (both are additions: Go's host-local
 * has neither).
 * @module
 */

import type { IPAddress } from "#ip/ip.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { CniError, cniError, failure, pluginNotAvailable, wrap } from "#spec/errors.js";
import { IMPLEMENTED_100, type Result100 } from "#spec/result/types100.js";
import { IPAllocator } from "./allocator.js";
import {
  freeInRangeSet,
  HOST_LOCAL_SCHEMA,
  parseGCConfig,
  parseHostLocalConfig,
  parseStatusConfig,
  rangeSetContains,
  rangeSetToString,
} from "./config.js";
import { parseResolvConf } from "./dns.js";
import { DiskStore } from "./store.js";

export async function add(args: CmdArgs): Promise<Result100> {
  const conf = parseHostLocalConfig(args.stdinData, args.args);
  const result: Result100 = { cniVersion: IMPLEMENTED_100, ips: [], dns: {} };
  if (conf.resolvConf) result.dns = parseResolvConf(conf.resolvConf);
  const store = DiskStore.open(conf);

  // Requested IPs are consumed by the first range set containing them; any left over is an error.
  const requested = new Map<string, IPAddress>(conf.requestedIPs.map((ip) => [ip.text, ip]));
  const used: IPAllocator[] = [];
  const releaseAll = async () => {
    for (const allocator of used) await allocator.release(args.containerID, args.ifName).catch(() => undefined);
  };
  for (const [idx, rangeSet] of conf.rangeSets.entries()) {
    const allocator = new IPAllocator(rangeSet, store, idx);
    const wanted = [...requested.values()].find((ip) => rangeSetContains(rangeSet, ip));
    if (wanted) requested.delete(wanted.text);
    try {
      result.ips!.push(await allocator.get(args.containerID, args.ifName, wanted));
    } catch (e) {
      await releaseAll();
      throw wrap(`failed to allocate for range ${idx}`, e);
    }
    used.push(allocator);
  }
  if (requested.size > 0) {
    await releaseAll();
    throw failure(`failed to allocate all requested IPs: ${[...requested.keys()].join(" ")}`);
  }
  result.routes = conf.routes;
  return result;
}

export async function check(args: CmdArgs): Promise<void> {
  const conf = parseHostLocalConfig(args.stdinData, args.args);
  const store = DiskStore.open(conf);
  const found = await store.withLock(() => store.findByID(args.containerID, args.ifName));
  if (!found) throw failure(`host-local: Failed to find address added by container ${args.containerID}`);
}

/** Frees the attachment's addresses; releasing nothing is success, so DEL can be repeated. */
export async function del(args: CmdArgs): Promise<void> {
  const conf = parseHostLocalConfig(args.stdinData, args.args);
  const store = DiskStore.open(conf);
  // One release per range set, each under the lock, as Go does (a later pass also frees id-only files).
  const errors: CniError[] = [];
  for (const [idx, rangeSet] of conf.rangeSets.entries()) {
    try {
      await new IPAllocator(rangeSet, store, idx).release(args.containerID, args.ifName);
    } catch (e) {
      errors.push(CniError.from(e));
    }
  }
  if (errors.length > 0) throw cniError(errors[0]!.code, errors.map((e) => e.msg).join(";"));
}

/**
 * Ready when the network's store directory can be created and written and its lock file opened, and every range
 * set of the config has an address left (code 50 otherwise): one directory listing, no file read, no lock taken.
 */
export async function status(args: CmdArgs): Promise<void> {
  const conf = parseStatusConfig(args.stdinData);
  let allocated: IPAddress[];
  try {
    // Without the store's lock: a snapshot of names is enough, and a poll never waits behind a slow ADD.
    const store = DiskStore.open(conf);
    store.checkUsable();
    allocated = store.allocatedIPs();
  } catch (e) {
    throw pluginNotAvailable(`host-local store is not usable: ${CniError.from(e).msg}`);
  }
  const full = conf.rangeSets.filter((set) => freeInRangeSet(set, allocated) <= 0n);
  if (full.length > 0) {
    throw pluginNotAvailable(`host-local: no IP addresses available in range set: ${full.map(rangeSetToString).join("; ")}`);
  }
}

/** Frees every address whose attachment is not in `cni.dev/valid-attachments`. */
export async function gc(args: CmdArgs): Promise<void> {
  const conf = parseGCConfig(args.stdinData);
  const store = DiskStore.open(conf);
  await store.withLock(() => store.collectGarbage(conf.validAttachments));
}

export const plugin: PluginModule = {
  funcs: { add, check, del, status, gc },
  config: { schema: HOST_LOCAL_SCHEMA, parse: parseHostLocalConfig },
};
