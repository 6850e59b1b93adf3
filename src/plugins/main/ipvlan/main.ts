/**
 * ipvlan: gives the container an ipvlan link (l2, l3 or l3s) on a master interface, addressed by IPAM or,
 * chained after another plugin without `ipam`, with the addresses of the prevResult. This kernel has no
 * ipvlan: ADD fails with the kernel's reason and undoes what it had done.
 * @module
 */
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import {
  addSandboxLink,
  checkSandboxLink,
  createOnMaster,
  delSandboxLink,
  gcSandboxLink,
  notifySysctls,
  statusSandboxLink,
} from "../../common/sandbox-link.js";
import { decodeIpvlanConf, IPVLAN_SCHEMA, loadIpvlanConf } from "./config.js";

async function add(args: CmdArgs) {
  const n = loadIpvlanConf(args.stdinData);
  return addSandboxLink(args, {
    conf: n.conf,
    create: (container) => createOnMaster(container, args.ifName, n, { kind: "ipvlan", ipvlanMode: n.mode }),
    addressing: n.chainedResult ? { from: "prevResult", result: n.chainedResult } : { from: "ipam" },
    sysctls: notifySysctls(args.ifName, { arp: true, ndisc: true }),
    dns: "conf",
  });
}

/** DEL reads the keys only: no master (and so no default route) is needed to remove the link. */
async function del(args: CmdArgs): Promise<void> {
  await delSandboxLink(args, decodeIpvlanConf(args.stdinData).conf);
}

/**
 * CHECK compares the link's master only when `master` is configured: otherwise ADD took it from the default
 * route or from the prevResult of its chain, which CHECK no longer sees (its prevResult is ipvlan's own).
 */
async function check(args: CmdArgs): Promise<void> {
  const n = decodeIpvlanConf(args.stdinData);
  await checkSandboxLink(args, n.conf, {
    kind: "ipvlan",
    info: { mode: n.mode },
    ...(n.master ? { master: { name: n.master, linkInContainer: n.linkInContainer } } : {}),
  });
}

async function status(args: CmdArgs): Promise<void> {
  const n = decodeIpvlanConf(args.stdinData);
  await statusSandboxLink(args, n.conf, { name: n.master, inContainer: n.linkInContainer });
}

async function gc(args: CmdArgs): Promise<void> {
  await gcSandboxLink(args, decodeIpvlanConf(args.stdinData).conf);
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: IPVLAN_SCHEMA, parse: (stdin) => loadIpvlanConf(stdin) },
};
