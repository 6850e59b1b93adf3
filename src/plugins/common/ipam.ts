/**
 * What interface-creating plugins do with their IPAM plugin: run it (the whole stdin config goes to it, as
 * the spec says), undo it when a later step fails, and forward DEL/CHECK/STATUS/GC to it.
 * @module
 */

import { UnknownOutcomeError } from "#invoke/exec.js";
import { delegateAdd, delegateCheck, delegateDel, delegateGC, delegateStatus } from "#invoke/plugin.js";
import type { CmdArgs } from "#skel/skel.js";
import type { PluginConf } from "#spec/config.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";

export const ipamType = (conf: PluginConf): string => (typeof conf.ipam?.type === "string" ? conf.ipam.type : "");

/**
 * IPAM ADD, converted to the current result shape; an IPAM that returns no IP is an error. When the IPAM
 * plugin failed without a readable error (it may have allocated before dying or garbling its output), or its
 * result is unusable, its allocation is released before the error is passed on. Every delegation runs with the
 * call's own environment (`args.env`) and stdin.
 */
export async function ipamAdd(conf: PluginConf, args: CmdArgs, requireIPs = true): Promise<Result100> {
  let result: Result100;
  try {
    result = toCurrentResult(await delegateAdd(ipamType(conf), args.stdinData, { env: args.env, stderr: args.stderr }));
    if (requireIPs && !result.ips?.length) throw new UnknownOutcomeError("IPAM plugin returned missing IP config");
  } catch (e) {
    if (e instanceof UnknownOutcomeError) await ipamDel(conf, args).catch(() => undefined);
    throw e;
  }
  return result;
}

export const ipamDel = (conf: PluginConf, args: CmdArgs): Promise<void> =>
  delegateDel(ipamType(conf), args.stdinData, { env: args.env, stderr: args.stderr });
export const ipamCheck = (conf: PluginConf, args: CmdArgs): Promise<void> =>
  delegateCheck(ipamType(conf), args.stdinData, { env: args.env, stderr: args.stderr });
export const ipamStatus = (conf: PluginConf, args: CmdArgs): Promise<void> =>
  delegateStatus(ipamType(conf), args.stdinData, { env: args.env, stderr: args.stderr });
export const ipamGC = (conf: PluginConf, args: CmdArgs): Promise<void> =>
  delegateGC(ipamType(conf), args.stdinData, { env: args.env, stderr: args.stderr });
