/**
 * dhcp: the IPAM plugin that gets the container's address from a DHCP server on the container's network,
 * through the dhcp daemon (`dhcp daemon`, daemon.ts), which holds the lease for the container's life. The
 * plugin side validates the config (so a bad option fails before anything happens) and forwards the call to
 * the daemon's socket (`ipam.daemonSocketPath`, default /run/cni/dhcp.sock) with tscni's own protocol
 * (protocol.ts). ADD returns the lease's address, gateway, routes and DNS; CHECK checks the lease (acquiring
 * one when the daemon holds none, as upstream); DEL releases it; STATUS asks the daemon; GC releases the
 * leases of attachments the runtime no longer has (STATUS and GC are additions: upstream has neither).
 * @module
 */

import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { wrap } from "#spec/errors.js";
import { createResult, type Result } from "#spec/result/index.js";
import { IMPLEMENTED_100 } from "#spec/result/types100.js";
import { DHCP_SCHEMA, parseDhcpBasics, parseDhcpConfig } from "./config.js";
import { callDaemon, type Method } from "./protocol.js";

/** Forwards the call to the daemon; ADD and CHECK validate the whole config first, the others what they need. */
async function call(method: Method, args: CmdArgs) {
  const conf = method === "ADD" || method === "CHECK" ? parseDhcpConfig(args.stdinData, args.args) : parseDhcpBasics(args.stdinData);
  return callDaemon(conf.socketPath, method, {
    containerID: args.containerID,
    netns: args.netns,
    ifName: args.ifName,
    args: args.args,
    path: args.path,
    stdinData: args.stdinData,
  });
}

export async function add(args: CmdArgs): Promise<Result> {
  const result = await call("ADD", args);
  try {
    return createResult(IMPLEMENTED_100, result);
  } catch (e) {
    throw wrap("the dhcp daemon's result does not decode", e);
  }
}

export const plugin: PluginModule = {
  funcs: {
    add,
    check: async (args) => void (await call("CHECK", args)),
    del: async (args) => void (await call("DEL", args)),
    status: async (args) => void (await call("STATUS", args)),
    gc: async (args) => void (await call("GC", args)),
  },
  config: { schema: DHCP_SCHEMA, parse: parseDhcpConfig },
};
