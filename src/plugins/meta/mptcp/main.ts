/**
 * mptcp: a chained plugin that configures the container's MPTCP path manager (containernetworking/plugins#1239).
 * ADD makes every address of the prevResult an MPTCP endpoint on the container interface, with the configured flags
 * (signal: announced to peers; subflow: additional subflows are opened from it; backup; fullmesh), and sets the
 * limits on additional subflows and accepted addresses; the prevResult passes through. CHECK compares endpoints and
 * limits. DEL removes the endpoints of the prevResult's addresses (those on the interface without one); the limits
 * stay, as upstream. No STATUS or GC of its own: it leaves nothing outside the container's namespace.
 *
 * Beyond the Go plugin: a failed ADD removes the endpoints it made; DEL fails only when an endpoint it meant to
 * remove is still there (Go ignores every error); flags are compared by name.
 * @module
 */

import { parseCIDR } from "#ip/ip.js";
import { NetOpError } from "#net/errors.js";
import { ip } from "#net/link/links.js";
import { boundTo, flagNames, MPTCP_FLAG_MASK, type MptcpLimits, type MptcpPathManager, openMptcpPM } from "#net/mptcp.js";
import { NetNS } from "#net/netns.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig, messageOf } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { Rollback } from "../../common/rollback.js";
import { loadMptcpConf, MPTCP_SCHEMA, type MptcpConf } from "./config.js";

/** The addresses of a result, without prefix. */
const addressesOf = (result: Result100 | undefined): string[] => (result?.ips ?? []).map((i) => parseCIDR(i.address).ip.text);

/** The configured limits (only those set). */
const limitsOf = (n: MptcpConf): Partial<MptcpLimits> => ({
  ...(n.limits?.subflows !== undefined ? { subflows: n.limits.subflows } : {}),
  ...(n.limits?.addAddrAccepted !== undefined ? { addAddrAccepted: n.limits.addAddrAccepted } : {}),
});

/** The path manager of the container's namespace; a kernel without MPTCP is an error. */
async function pathManager(ns: NetNS): Promise<MptcpPathManager> {
  const pm = await openMptcpPM(ns);
  if (!pm) throw failure(`MPTCP path manager not available in ${ns}`, 'the kernel has no MPTCP (generic netlink family "mptcp_pm")');
  return pm;
}

async function add(args: CmdArgs): Promise<Result100> {
  const n = loadMptcpConf(args.stdinData);
  if (!n.prevResult) throw invalidConfig("missing prevResult from earlier plugin");
  const ns = await NetNS.open(args.netns);
  const pm = await pathManager(ns);
  const rollback = new Rollback();
  try {
    await rollback.guard(async () => {
      if (n.endpoints) {
        const link = await ip.getLink(ns, args.ifName);
        if (!link) throw failure(`failed to look up interface "${args.ifName}" in ${args.netns}`);
        for (const address of addressesOf(n.prevResult)) {
          try {
            await pm.addEndpoint({ address, flags: n.flags, link });
          } catch (e) {
            if (e instanceof NetOpError && e.isExists) continue; // an endpoint already: as upstream, not an error
            throw failure(`failed to add MPTCP endpoint for ${address}`, messageOf(e));
          }
          rollback.add(async () => {
            const made = (await pm.listEndpoints()).find((ep) => ep.address === address);
            if (made) await pm.deleteEndpoint(made);
          });
        }
      }
      if (n.limits) {
        await pm.setLimits(limitsOf(n)).catch((e: unknown) => {
          throw failure(`failed to set MPTCP limits ${JSON.stringify(limitsOf(n))} ("limits")`, messageOf(e));
        });
      }
    });
  } finally {
    pm.close();
  }
  return n.prevResult;
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadMptcpConf(args.stdinData);
  if (!n.prevResult) throw invalidConfig("missing prevResult from earlier plugin");
  const ns = await NetNS.open(args.netns);
  const pm = await pathManager(ns);
  try {
    if (n.endpoints) {
      const endpoints = await pm.listEndpoints();
      for (const address of addressesOf(n.prevResult)) {
        const ep = endpoints.find((e) => e.address === address);
        if (!ep) throw failure(`MPTCP endpoint for ${address} not found`);
        const have = ep.flags & MPTCP_FLAG_MASK;
        if (have !== n.flags) {
          throw failure(`MPTCP endpoint ${address} has flags [${flagNames(have).join(" ")}], expected [${flagNames(n.flags).join(" ")}]`);
        }
      }
    }
    if (n.limits) {
      const have = await pm.getLimits();
      const want = limitsOf(n);
      if (want.subflows !== undefined && want.subflows !== have.subflows) {
        throw failure(`MPTCP subflows limit is ${have.subflows}, expected ${want.subflows}`);
      }
      if (want.addAddrAccepted !== undefined && want.addAddrAccepted !== have.addAddrAccepted) {
        throw failure(`MPTCP add_addr_accepted limit is ${have.addAddrAccepted}, expected ${want.addAddrAccepted}`);
      }
    }
  } finally {
    pm.close();
  }
}

/**
 * DEL: the endpoints of the prevResult's addresses, or without a prevResult those bound to the interface. A gone
 * namespace, interface or path manager is success; a deletion that fails is an error only while its endpoint is
 * still there (a concurrent DEL may have removed it).
 */
async function del(args: CmdArgs): Promise<void> {
  const n = loadMptcpConf(args.stdinData);
  if (!n.endpoints) return;
  const ns = await NetNS.openIfThere(args.netns);
  if (!ns) return;
  const pm = await openMptcpPM(ns);
  if (!pm) return;
  try {
    const addresses = new Set(addressesOf(n.prevResult));
    const link = addresses.size ? undefined : await ip.getLink(ns, args.ifName);
    if (!addresses.size && !link) return;
    const ours = (await pm.listEndpoints()).filter((ep) => (link ? boundTo(ep, link) : addresses.has(ep.address)));
    for (const ep of ours) {
      await pm.deleteEndpoint(ep).catch(async (e: unknown) => {
        if ((await pm.listEndpoints()).some((x) => x.id === ep.id)) throw failure(`failed to delete MPTCP endpoint ${ep.address}`, messageOf(e));
      });
    }
  } finally {
    pm.close();
  }
}

export const plugin: PluginModule = {
  funcs: { add, check, del },
  config: { schema: MPTCP_SCHEMA, parse: loadMptcpConf },
};
