/**
 * tap: gives the container a persistent tap device (for a VM or user-space network stack in the sandbox to
 * open), optionally owned by a user and group, multi-queue, a port of a bridge in the container's namespace,
 * and addressed by IPAM when `ipam` is set (otherwise only brought up).
 * @module
 */

import { NetOpError } from "#net/errors.js";
import { interfaceNameTaken } from "#net/link/container-link.js";
import { ip } from "#net/link/links.js";
import { createTap } from "#net/link/tuntap.js";
import type { NetNS } from "#net/netns.js";
import type { Link } from "#net/types.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { invalidKey } from "#spec/errors.js";
import { ipamType } from "../../common/ipam.js";
import { addSandboxLink, checkSandboxLink, delSandboxLink, gcSandboxLink, notifySysctls, statusSandboxLink } from "../../common/sandbox-link.js";
import { loadTapConf, TAP_SCHEMA, type TapConf } from "./config.js";

/**
 * The tap, made inside the container under `ifName` (a name taken already fails the creation, touching nothing;
 * a temporary name, as Go's plugin uses, would leave a tap no DEL finds if the plugin were killed before the
 * rename), then given its MTU and MAC and made a port of the bridge. Any later failure removes it.
 */
async function createContainerTap(container: NetNS, ifName: string, n: TapConf, warn: (msg: string) => void): Promise<Link> {
  if (n.bridge) {
    const bridge = await ip.getLink(container, n.bridge);
    if (!bridge) throw invalidKey("bridge", n.bridge, `no such bridge in the container namespace ${container}`);
    if (bridge.kind !== "bridge")
      throw invalidKey("bridge", n.bridge, `"${n.bridge}" in the container namespace is a ${bridge.kind ?? "device"}, not a bridge`);
  }
  try {
    await createTap(
      container,
      { name: ifName, multiQueue: n.multiQueue, owner: n.owner, group: n.group },
      {
        selinuxContext: n.selinuxContext,
        onLabelIgnored: (why) => warn(`tap: selinuxContext ${JSON.stringify(n.selinuxContext)} not applied: ${why}\n`),
      },
    );
  } catch (e) {
    // (TUNSETIFF answers "Device or resource busy" for a name that is taken, by a tap or any other link.)
    if (e instanceof NetOpError && (e.isExists || e.kind === "busy")) throw interfaceNameTaken(ifName, container);
    throw e;
  }
  const batch = ip.batch(container);
  if (n.mtu || n.mac) batch.setLink(ifName, { ...(n.mtu ? { mtu: n.mtu } : {}), ...(n.mac ? { mac: n.mac } : {}) });
  if (n.bridge) batch.setLink(ifName, { master: n.bridge });
  try {
    const [shown] = await batch.showLink(ifName).runShow(`set up tap ${ifName} in ${container}`);
    return shown!.link;
  } catch (e) {
    await ip.deleteLink(container, ifName).catch(() => undefined); // ours: we just made it
    throw e;
  }
}

async function add(args: CmdArgs) {
  const n = loadTapConf(args.stdinData, args.args);
  return addSandboxLink(args, {
    conf: n.conf,
    create: (container) => createContainerTap(container, args.ifName, n, (m) => args.stderr.write(m)),
    addressing: ipamType(n.conf) ? { from: "ipam" } : { from: "none" },
    sysctls: notifySysctls(args.ifName, { arp: true }),
    dns: "conf",
  });
}

async function del(args: CmdArgs): Promise<void> {
  await delSandboxLink(args, loadTapConf(args.stdinData, "").conf);
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadTapConf(args.stdinData, args.args);
  const info: Record<string, unknown> = { type: "tap", multi_queue: n.multiQueue };
  if (n.owner !== undefined) info["user"] = n.owner;
  if (n.group !== undefined) info["group"] = n.group;
  await checkSandboxLink(args, n.conf, { kind: "tun", info, ...(n.bridge ? { bridge: n.bridge } : {}) });
}

async function status(args: CmdArgs): Promise<void> {
  await statusSandboxLink(args, loadTapConf(args.stdinData, "").conf);
}

async function gc(args: CmdArgs): Promise<void> {
  await gcSandboxLink(args, loadTapConf(args.stdinData, "").conf);
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: TAP_SCHEMA, parse: loadTapConf },
};
