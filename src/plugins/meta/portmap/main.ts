/**
 * portmap: forwards host ports to a container (capability `portMappings`), as a chained plugin after the
 * one that gave the container its addresses. Per family of the container's addresses, traffic to a local
 * address and a mapped port is DNATed to the container; hairpin and localhost traffic is masqueraded (`snat`),
 * and IPv4 localhost is allowed to cross to the container (`route_localnet` on the interface that routes to it).
 * Tracked UDP flows to the mapped ports are forgotten after ADD and DEL, so they take the new path.
 *
 * Differences from the Go plugin, on purpose: CHECK looks only at the families the container has addresses
 * in (Go's fails on an IPv4-only network); DEL also forgets UDP flows; GC (Go has none) removes the rules of
 * attachments the runtime no longer has; STATUS says whether the backend works; a bad mapping is refused
 * before anything changes, and a failed ADD removes what it made.
 * @module
 */

import type { IPCidr, IPFamily } from "#ip/ip.js";
import { deleteFlowsToPort } from "#net/firewall/conntrack.js";
import { liveFirewallProbes } from "#net/firewall/firewall-driver.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { sysctlPath, writeSysctl } from "#net/sysctl.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig, messageOf, pluginNotAvailable, wrap } from "#spec/errors.js";
import type { Result } from "#spec/result/index.js";
import {
  type ForwardTarget,
  forwardTargets,
  loadPortMapConf,
  NOT_CHAINED,
  PORTMAP_SCHEMA,
  type PortMapConf,
  type PortMapping,
  prevResultOf,
} from "./config.js";
import { portForwardingFor } from "./engines.js";

/** A warning on this call's stderr. */
const warn = (args: CmdArgs, msg: string) => args.stderr.write(`portmap: ${msg}\n`);

/** One forwarding target per family the container has an address in. */
const targetsOf = (n: PortMapConf, args: CmdArgs, prev: Result): ForwardTarget[] =>
  forwardTargets(n, args.containerID, args.ifName, prev).map((t) => ({ ...t, warn: (m: string) => warn(args, m) }));

/** Whose forwarding DEL removes. */
const ownerOf = (n: PortMapConf, args: CmdArgs) => ({
  network: n.conf.name,
  containerID: args.containerID,
  dataDir: n.dataDir,
  warn: (m: string) => warn(args, m),
});

/**
 * Lets 127.0.0.0/8 sources cross to the container: `route_localnet=1` on the host interface that routes to
 * it (nothing when there is no route, as in the Go plugin).
 */
async function enableLocalnetRouting(container: IPCidr): Promise<void> {
  const dev = await ip.routeDevice(NetNS.host, container.ip.text).catch(() => undefined);
  if (!dev) return;
  try {
    await writeSysctl(NetNS.host, sysctlPath("net", "ipv4", "conf", dev, "route_localnet"), "1");
  } catch (e) {
    throw wrap(`unable to enable route_localnet on ${dev}`, e);
  }
}

/**
 * Forgets tracked UDP flows to the mapped host ports, per family, so they stop going to an old destination.
 * Failures are only logged; without the conntrack tool there is nothing to do.
 */
async function forgetUdpFlows(args: CmdArgs, mappings: readonly PortMapping[], families: readonly IPFamily[]): Promise<void> {
  const ports = [...new Set(mappings.filter((m) => m.protocol === "udp").map((m) => m.hostPort))];
  for (const family of families) {
    for (const port of ports) {
      try {
        if (!(await deleteFlowsToPort("udp", port, family))) return;
      } catch (e) {
        warn(args, `failed to delete stale UDP conntrack entries for port ${port} (IPv${family}): ${messageOf(e)}`);
      }
    }
  }
}

async function add(args: CmdArgs): Promise<Result> {
  const n = loadPortMapConf(args.stdinData);
  const prev = prevResultOf(n);
  if (!prev) throw invalidConfig(NOT_CHAINED);
  if (n.mappings.length === 0) return prev;
  const forwarding = await portForwardingFor(n);
  const targets = targetsOf(n, args, prev);
  if (targets.length === 0) return prev;

  try {
    for (const t of targets) await forwarding.add(t);
    const v4 = targets.find((t) => t.container.ip.family === 4);
    if (n.snat && v4) await enableLocalnetRouting(v4.container);
  } catch (e) {
    await forwarding.remove(ownerOf(n, args)).catch((u: Error) => warn(args, `cleaning up after a failed ADD: ${u.message}`));
    throw e;
  }
  await forgetUdpFlows(
    args,
    n.mappings,
    targets.map((t) => t.container.ip.family),
  );
  return prev;
}

/** DEL needs no prevResult and no netns: the rules are found by network and container ID. */
async function del(args: CmdArgs): Promise<void> {
  const n = loadPortMapConf(args.stdinData, { forDel: true });
  if (n.mappings.length === 0) return;
  await (await portForwardingFor(n)).remove(ownerOf(n, args));
  await forgetUdpFlows(args, n.mappings, [4, 6]);
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadPortMapConf(args.stdinData);
  const prev = prevResultOf(n);
  if (!prev) throw invalidConfig("Required prevResult missing");
  if (n.mappings.length === 0) return;
  const forwarding = await portForwardingFor(n);
  for (const t of targetsOf(n, args, prev)) {
    const problems = await forwarding.check(t);
    if (problems.length) throw failure(problems[0]!);
  }
}

/**
 * GC: removes the forwarding of this network's attachments that are not in `cni.dev/valid-attachments`
 * (a container's forwarding is kept while any of its interfaces is valid). Without the list nothing is known
 * to be stale, so nothing is removed.
 */
async function gc(args: CmdArgs): Promise<void> {
  const n = loadPortMapConf(args.stdinData);
  if (!n.conf.validAttachments) return;
  await (await portForwardingFor(n)).collect({ network: n.conf.name, valid: n.conf.validAttachments, dataDir: n.dataDir });
}

/** STATUS: ready when the backend works here. */
async function status(args: CmdArgs): Promise<void> {
  const n = loadPortMapConf(args.stdinData);
  const { name } = await portForwardingFor(n);
  if (!(await liveFirewallProbes[name]())) {
    throw pluginNotAvailable(`portmap: the ${name} backend does not work here`);
  }
}

export const plugin: PluginModule = {
  funcs: { add, del, check, gc, status },
  config: { schema: PORTMAP_SCHEMA, parse: (stdin) => loadPortMapConf(stdin) },
};
