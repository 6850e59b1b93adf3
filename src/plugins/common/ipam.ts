/**
 * What interface-creating plugins do with their IPAM plugin: run it (the whole stdin config goes to it, as
 * the spec says), undo it when a later step fails, and forward DEL/CHECK/STATUS/GC to it.
 * @module
 */
import type { PluginConf } from "../../spec/config.js";
import { CniError, ErrorCode } from "../../spec/errors.js";
import { toCurrentResult, type Result100 } from "../../spec/result/index.js";
import { delegateAdd, delegateCheck, delegateDel, delegateGC, delegateStatus } from "../../invoke/plugin.js";

export const ipamType = (conf: PluginConf): string => (typeof conf.ipam?.type === "string" ? conf.ipam.type : "");

/** IPAM ADD, converted to the current result shape; an IPAM that returns no IP is an error. */
export async function ipamAdd(conf: PluginConf, stdin: Buffer, requireIPs = true): Promise<Result100> {
  const result = toCurrentResult(await delegateAdd(ipamType(conf), stdin));
  if (requireIPs && !result.ips?.length) throw new CniError(ErrorCode.Internal, "IPAM plugin returned missing IP config");
  return result;
}

export const ipamDel = (conf: PluginConf, stdin: Buffer): Promise<void> => delegateDel(ipamType(conf), stdin);
export const ipamCheck = (conf: PluginConf, stdin: Buffer): Promise<void> => delegateCheck(ipamType(conf), stdin);
export const ipamStatus = (conf: PluginConf, stdin: Buffer): Promise<void> => delegateStatus(ipamType(conf), stdin);
export const ipamGC = (conf: PluginConf, stdin: Buffer): Promise<void> => delegateGC(ipamType(conf), stdin);

/**
 * Runs `steps` after a successful IPAM ADD; if they fail, releases the IPAM allocation (and runs `undo`)
 * before rethrowing, so a failed ADD leaves nothing behind.
 */
export async function withIpamRollback<T>(conf: PluginConf, stdin: Buffer, steps: () => Promise<T>, undo?: () => Promise<void>): Promise<T> {
  try {
    return await steps();
  } catch (e) {
    await undo?.().catch(() => undefined);
    if (ipamType(conf)) await ipamDel(conf, stdin).catch(() => undefined);
    throw e;
  }
}
