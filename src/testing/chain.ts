/**
 * Running a plugin chain by hand, as a runtime does, for tests that need what cnitool does not give: a fixed
 * container ID in two different "hosts" (differential tests against the Go plugins), or one plugin's DEL with
 * or without a prevResult. ADD passes each result on as the next plugin's prevResult; CHECK and DEL get the
 * final result, DEL in reverse order.
 * @module
 */
import path from "node:path";
import type { Host, Result, RunResult } from "./rig.js";

export interface ChainList {
  cniVersion: string;
  name: string;
  plugins: Array<Record<string, unknown> & { type: string }>;
}

export interface ChainEnv {
  CNI_CONTAINERID: string;
  CNI_NETNS: string;
  CNI_IFNAME?: string;
}

/** One plugin's config as a runtime builds it from a list. */
export function pluginConf(list: ChainList, index: number, prevResult?: Result): Record<string, unknown> {
  const conf: Record<string, unknown> = { cniVersion: list.cniVersion, name: list.name, ...list.plugins[index]! };
  if (prevResult) conf["prevResult"] = prevResult;
  return conf;
}

/** Runs one plugin of the list from `binDir` (also the CNI_PATH its delegations use). */
export function runPlugin(
  host: Host,
  binDir: string,
  list: ChainList,
  index: number,
  verb: string,
  env: ChainEnv,
  prevResult?: Result,
): Promise<RunResult> {
  const type = list.plugins[index]!.type;
  return host.plugin(path.join(binDir, type), verb, pluginConf(list, index, prevResult), { CNI_IFNAME: "eth0", ...env, CNI_PATH: binDir });
}

const failure = (what: string, r: RunResult) => new Error(`${what} failed (${r.code}): ${r.stdout}${r.stderr}`);

/** ADD through the whole list; the final result. */
export async function chainAdd(host: Host, binDir: string, list: ChainList, env: ChainEnv): Promise<Result> {
  let prev: Result | undefined;
  for (let i = 0; i < list.plugins.length; i++) {
    const r = await runPlugin(host, binDir, list, i, "ADD", env, prev);
    if (r.code !== 0) throw failure(`ADD ${list.plugins[i]!.type}`, r);
    prev = JSON.parse(r.stdout) as Result;
  }
  return prev!;
}

/** CHECK (in order) or DEL (in reverse) through the whole list with the final result. */
export async function chainRun(host: Host, binDir: string, list: ChainList, verb: "CHECK" | "DEL", env: ChainEnv, result?: Result): Promise<void> {
  const order = list.plugins.map((_, i) => i);
  if (verb === "DEL") order.reverse();
  for (const i of order) {
    const r = await runPlugin(host, binDir, list, i, verb, env, result);
    if (r.code !== 0) throw failure(`${verb} ${list.plugins[i]!.type}`, r);
  }
}
