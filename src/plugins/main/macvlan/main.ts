/**
 * macvlan: gives the container a macvlan link on a master interface of the host (or, with
 * `linkInContainer`, of the container itself), with its own MAC, addressed by IPAM when `ipam` is set
 * (otherwise the link is only brought up, for L2 use).
 * @module
 */
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { ipamType } from "../../common/ipam.js";
import {
  addSandboxLink,
  checkSandboxLink,
  createOnMaster,
  delSandboxLink,
  gcSandboxLink,
  notifySysctls,
  statusSandboxLink,
} from "../../common/sandbox-link.js";
import { loadMacvlanConf, MACVLAN_SCHEMA } from "./config.js";

async function add(args: CmdArgs) {
  const n = loadMacvlanConf(args.stdinData, args.args);
  return addSandboxLink(args, {
    conf: n.conf,
    create: (container) =>
      createOnMaster(container, args.ifName, n, {
        kind: "macvlan",
        macvlanMode: n.mode,
        mac: n.mac,
        bcqueuelen: n.bcqueuelen,
      }),
    addressing: ipamType(n.conf) ? { from: "ipam" } : { from: "none" },
    sysctls: notifySysctls(args.ifName, { arp: true, ndisc: true }),
    dns: "conf",
  });
}

/** DEL needs no master: IPAM, then the link (gone with its master, or with the netns, is fine). */
async function del(args: CmdArgs): Promise<void> {
  await delSandboxLink(args, loadMacvlanConf(args.stdinData, "").conf);
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadMacvlanConf(args.stdinData, args.args);
  await checkSandboxLink(args, n.conf, {
    kind: "macvlan",
    master: { name: n.master, linkInContainer: n.linkInContainer },
    info: { mode: n.mode },
  });
}

async function status(args: CmdArgs): Promise<void> {
  const n = loadMacvlanConf(args.stdinData, "");
  await statusSandboxLink(args, n.conf, { name: n.master, inContainer: n.linkInContainer });
}

async function gc(args: CmdArgs): Promise<void> {
  await gcSandboxLink(args, loadMacvlanConf(args.stdinData, "").conf);
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: MACVLAN_SCHEMA, parse: loadMacvlanConf },
};
