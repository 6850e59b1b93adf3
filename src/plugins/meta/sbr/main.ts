/**
 * sbr (source-based routing): makes traffic from each of the container's addresses leave through the
 * interface it belongs to, with a `from <ip> lookup <table>` rule and a routing table per address (or, with
 * `table`, rules into a table the administrator fills). Works inside the container namespace under the same
 * lock as the Go plugin (flock on the namespace file).
 *
 * Beyond the Go plugin: CHECK really checks (rules, tables and default routes), DEL is idempotent and
 * succeeds without CNI_NETNS, with the namespace or the interface gone (it then removes the rules of the
 * prevResult's addresses), and a failed ADD undoes what it did.
 * @module
 */

import { NetOpError } from "#net/errors.js";
import { ip } from "#net/link/links.js";
import { IpCommandsError, listAllRoutes, listRules, runIpCommands } from "#net/link/policy-routing.js";
import { NetNS } from "#net/netns.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { loadSbrConf, SBR_SCHEMA, type SbrConf } from "./config.js";
import { withNetnsLock } from "./netns-lock.js";
import { type IpStep, planSbrAdd, planSbrDel, type SbrSettings, type SbrState, selectIPs, verifySbr } from "./plan.js";

const settingsOf = (n: SbrConf, ifName: string): SbrSettings => ({ ifName, table: n.table, gateways: n.gateways, addSourceHints: n.addSourceHints });

async function readState(ns: NetNS): Promise<SbrState> {
  const [rules, routes] = await Promise.all([listRules(ns), listAllRoutes(ns)]);
  return { rules, routes };
}

/** Runs `steps`; if one fails, undoes the ones before it (newest first) and rethrows. */
async function applySteps(ns: NetNS, steps: IpStep[], operation: string): Promise<void> {
  try {
    await runIpCommands(ns, steps, operation);
  } catch (e) {
    const done = e instanceof IpCommandsError && e.failedIndex !== undefined ? steps.slice(0, e.failedIndex) : [];
    const undo = done.reverse().flatMap((s) => (s.undo ? [s.undo] : []));
    await runIpCommands(ns, undo, `undo ${operation}`, { force: true }).catch(() => undefined);
    throw e;
  }
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadSbrConf(args.stdinData);
  if (!n.prevResult) throw invalidConfig("This plugin must be called as chained plugin", "the config has no prevResult");
  const ips = selectIPs(args.ifName, n.prevResult);
  const ns = await NetNS.open(args.netns);
  await withNetnsLock(args.netns, async () => {
    if (n.table === undefined && !(await ip.getLink(ns, args.ifName))) {
      throw failure(`Cannot find network interface ${args.ifName} in ${args.netns}`);
    }
    const state = n.table === undefined ? await readState(ns) : { rules: [], routes: [] };
    const plan = planSbrAdd(ips, state, settingsOf(n, args.ifName));
    await applySteps(ns, plan.steps, `set up source-based routing for ${args.ifName}`);
    await runIpCommands(ns, plan.bestEffort, `add source hints for ${args.ifName}`, { force: true }).catch((e: Error) =>
      args.stderr.write(`sbr: warning: ${e.message}\n`),
    );
  });
  return n.prevResult;
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadSbrConf(args.stdinData);
  if (!n.prevResult) throw invalidConfig("Required prevResult missing");
  const ips = selectIPs(args.ifName, n.prevResult);
  const ns = await NetNS.open(args.netns);
  if (!(await ip.getLink(ns, args.ifName))) throw failure(`interface ${args.ifName} does not exist in ${args.netns}`);
  const problems = verifySbr(ips, await readState(ns), settingsOf(n, args.ifName));
  if (problems.length) throw failure(`source-based routing for ${args.ifName} is incomplete: ${problems.join("; ")}`);
}

/** The interface's addresses, or none when it is gone. */
async function linkAddresses(ns: NetNS, ifName: string): Promise<string[]> {
  try {
    return (await ip.listAddresses(ns, ifName)).map((a) => a.cidr);
  } catch (e) {
    if (e instanceof NetOpError && e.kind === "not-found") return [];
    throw e;
  }
}

async function del(args: CmdArgs): Promise<void> {
  const n = loadSbrConf(args.stdinData);
  // The rules live in the container's namespace: nothing to do without it, or once it is gone.
  const ns = await NetNS.openIfThere(args.netns);
  if (!ns) return;
  const prevIPs = n.prevResult?.ips?.length ? selectIPs(args.ifName, n.prevResult).map((c) => c.address) : [];
  await withNetnsLock(args.netns, async () => {
    const addresses = [...(await linkAddresses(ns, args.ifName)), ...prevIPs];
    const steps = planSbrDel(await listRules(ns), addresses, n.table);
    try {
      await runIpCommands(ns, steps, `remove source rules of ${args.ifName}`, { force: true });
    } catch (e) {
      // Someone else may have removed some of them meanwhile: only rules still there are a failure.
      if (planSbrDel(await listRules(ns), addresses, n.table).length) throw e;
    }
  });
}

export const plugin: PluginModule = {
  funcs: { add, check, del },
  config: { schema: SBR_SCHEMA, parse: loadSbrConf },
};
