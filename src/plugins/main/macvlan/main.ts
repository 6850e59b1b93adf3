/**
 * macvlan: gives the container a macvlan link on a master interface of the host (or, with
 * `linkInContainer`, of the container itself), with its own MAC, addressed by IPAM when `ipam` is set
 * (otherwise the link is only brought up, for L2 use).
 * @module
 */
import { ALL_VERSIONS, VersionInfo } from "../../../spec/version.js";
import { createContainerLink } from "../../../net/container-link.js";
import type { CmdArgs, PluginDefinition } from "../../../skel/skel.js";
import { ipamType } from "../../common/ipam.js";
import {
  addSandboxLink, checkMtuFitsMaster, checkSandboxLink, delSandboxLink, findMaster, gcSandboxLink, masterPlace, notifySysctls, statusSandboxLink,
} from "../../common/sandbox-link.js";
import { loadMacvlanConf, MACVLAN_SCHEMA } from "./config.js";

async function add(args: CmdArgs) {
  const n = loadMacvlanConf(args.stdinData, args.args);
  return addSandboxLink(args, {
    conf: n.conf,
    create: async (container) => {
      const place = masterPlace(container, n.linkInContainer);
      const master = await findMaster(n.master, place);
      checkMtuFitsMaster(n.mtu, master);
      return createContainerLink(container, args.ifName, {
        kind: "macvlan", parent: master.name, macvlanMode: n.mode, mtu: n.mtu, mac: n.mac, bcqueuelen: n.bcqueuelen,
      }, place.ns);
    },
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
    kind: "macvlan", master: { name: n.master, linkInContainer: n.linkInContainer }, info: { mode: n.mode },
  });
}

async function status(args: CmdArgs): Promise<void> {
  await statusSandboxLink(args, loadMacvlanConf(args.stdinData, "").conf);
}

async function gc(args: CmdArgs): Promise<void> {
  await gcSandboxLink(args, loadMacvlanConf(args.stdinData, "").conf);
}

export const plugin: PluginDefinition = {
  funcs: { add, del, check, status, gc },
  versionInfo: new VersionInfo(ALL_VERSIONS),
  about: "CNI macvlan plugin (tscni)",
  config: { schema: MACVLAN_SCHEMA, parse: loadMacvlanConf },
};
