/**
 * vlan: gives the container an 802.1Q VLAN link on a master interface, addressed by IPAM. This kernel has no
 * 8021q: ADD fails with the kernel's reason and undoes what it had done.
 * @module
 */
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { addSandboxLink, checkSandboxLink, createOnMaster, delSandboxLink, gcSandboxLink, statusSandboxLink } from "../../common/sandbox-link.js";
import { loadVlanConf, VLAN_SCHEMA } from "./config.js";

async function add(args: CmdArgs) {
  const n = loadVlanConf(args.stdinData);
  return addSandboxLink(args, {
    conf: n.conf,
    create: (container) => createOnMaster(container, args.ifName, n, { kind: "vlan", vlanId: n.vlanId }),
    addressing: { from: "ipam" },
    dns: "conf",
  });
}

/**
 * DEL does not look the master up (Go's does, and fails once the master is gone, although the kernel has
 * removed the VLAN link with it): IPAM, then the link if it is still there.
 */
async function del(args: CmdArgs): Promise<void> {
  await delSandboxLink(args, loadVlanConf(args.stdinData).conf);
}

async function check(args: CmdArgs): Promise<void> {
  const n = loadVlanConf(args.stdinData);
  await checkSandboxLink(args, n.conf, {
    kind: "vlan",
    master: { name: n.master, linkInContainer: n.linkInContainer },
    info: { id: n.vlanId },
    mtu: n.mtu,
  });
}

async function status(args: CmdArgs): Promise<void> {
  const n = loadVlanConf(args.stdinData);
  await statusSandboxLink(args, n.conf, { name: n.master, inContainer: n.linkInContainer });
}

async function gc(args: CmdArgs): Promise<void> {
  await gcSandboxLink(args, loadVlanConf(args.stdinData).conf);
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: VLAN_SCHEMA, parse: (stdin) => loadVlanConf(stdin) },
};
