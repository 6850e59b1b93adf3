/**
 * vrf: puts the container interface into a VRF (a `vrf` link with its own routing table) inside the
 * container namespace, creating the VRF on first use and deleting it when its last interface leaves. The
 * interface's IPv6 addresses and routes, which the kernel drops when the interface changes master, are put
 * back into the VRF's table.
 *
 * Beyond the Go plugin: DEL succeeds when the interface is already gone (the Go plugin fails), only releases
 * the interface from this VRF (not from any other master), and a failed ADD deletes a VRF it created.
 * @module
 */
import { ip } from "#net/link/links.js";
import { type IpCommand, listAllRoutes, runIpCommands as runCommands } from "#net/link/policy-routing.js";
import { NetNS } from "#net/netns.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { pauseFor } from "#sys/pause.js";
import { loadVrfConf, VRF_SCHEMA } from "./config.js";
import { globalIPv6, planVrfDel, planVrfEnslave, planVrfRestore, routesToMove, verifyVrf } from "./plan.js";

const runIpCommands = (ns: NetNS, commands: string[][], operation: string, opts: { force?: boolean } = {}) =>
  runCommands(
    ns,
    commands.map((words): IpCommand => ({ words })),
    operation,
    opts,
  );

/** Waits (10 ms, doubling, 8 retries: about 2.5 s) until the VRF table has a local route for each address. */
async function waitForLocalRoutes(ns: NetNS, ifName: string, table: number, destinations: string[]): Promise<void> {
  for (let retry = 0; destinations.length; retry++) {
    const routes = (await listAllRoutes(ns)).filter((r) => r.table === table && r.dev === ifName);
    destinations = destinations.filter((d) => !routes.some((r) => r.dst === d));
    if (!destinations.length) return;
    if (retry === 8) throw failure(`failed getting local/host addresses for ${ifName} in table ${table} with dst ${destinations.join(", ")}`);
    await pauseFor(10 * 2 ** retry);
  }
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadVrfConf(args.stdinData);
  if (!n.prevResult) throw invalidConfig("missing prevResult from earlier plugin");
  const ns = await NetNS.open(args.netns);
  const plan = planVrfEnslave(await ip.listLinks(ns), n.vrfname, n.table, args.ifName);
  const ipv6Before = globalIPv6(await ip.listAddresses(ns, args.ifName));
  const routes = routesToMove(await listAllRoutes(ns), args.ifName);
  try {
    await runIpCommands(ns, plan.commands, `put ${args.ifName} into VRF ${n.vrfname}`);
    const restore = planVrfRestore(args.ifName, ipv6Before, globalIPv6(await ip.listAddresses(ns, args.ifName)), routes, plan.table);
    await runIpCommands(ns, restore.addresses, `restore the IPv6 addresses of ${args.ifName} in VRF ${n.vrfname}`);
    await waitForLocalRoutes(ns, args.ifName, plan.table, restore.waitFor);
    await runIpCommands(ns, restore.routes, `move the routes of ${args.ifName} into table ${plan.table}`);
  } catch (e) {
    const undo = [["link", "set", "dev", args.ifName, "nomaster"], ...(plan.created ? [["link", "del", "dev", n.vrfname]] : [])];
    await runIpCommands(ns, undo, `undo VRF ${n.vrfname}`, { force: true }).catch(() => undefined);
    throw e;
  }
  return n.prevResult;
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadVrfConf(args.stdinData);
  if (!n.prevResult) throw invalidConfig("missing prevResult from earlier plugin");
  const ns = await NetNS.open(args.netns);
  const problems = verifyVrf(await ip.listLinks(ns), n.vrfname, n.table, args.ifName);
  if (problems.length) throw failure(problems.join("; "));
}

async function del(args: CmdArgs): Promise<void> {
  const n = loadVrfConf(args.stdinData);
  const ns = await NetNS.openIfThere(args.netns); // the VRF lives in the container's namespace
  if (!ns) return;
  const commands = planVrfDel(await ip.listLinks(ns), n.vrfname, args.ifName);
  try {
    await runIpCommands(ns, commands, `take ${args.ifName} out of VRF ${n.vrfname}`);
  } catch (e) {
    // A concurrent DEL may have done it already: only a plan that still has work left is a failure.
    if (planVrfDel(await ip.listLinks(ns), n.vrfname, args.ifName).length) throw e;
  }
}

export const plugin: PluginModule = {
  funcs: { add, check, del },
  config: { schema: VRF_SCHEMA, parse: loadVrfConf },
};
