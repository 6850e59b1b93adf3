/**
 * dummy: gives the container a dummy link (a device that drops what it sends, holding addresses for
 * services that only need them bound), addressed by IPAM, which is required. Unlike the other link plugins
 * it keeps IPAM's DNS in its result, as the Go plugin does. This kernel has no dummy links: ADD fails with
 * the kernel's reason and undoes what it had done.
 * @module
 */

import { struct } from "#go-json/go-decode.js";
import { createContainerLink } from "#net/link/container-link.js";
import { loadPluginConf } from "#skel/conf.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidConfig } from "#spec/errors.js";
import { ipamType } from "../../common/ipam.js";
import { decodeConfig } from "../../common/keys.js";
import { addSandboxLink, checkSandboxLink, delSandboxLink, gcSandboxLink, statusSandboxLink } from "../../common/sandbox-link.js";

/** The Go plugin reads the common keys only. */
export const DUMMY_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS }, "types");

/** Parses the dummy config; `ipam` is required. */
export function loadDummyConf(stdin: Buffer): PluginConf {
  const { conf, raw } = loadPluginConf(stdin);
  decodeConfig(DUMMY_SCHEMA, raw);
  if (!ipamType(conf)) throw invalidConfig('invalid "ipam": missing (a dummy interface needs an IPAM plugin: set ipam.type)');
  return conf;
}

async function add(args: CmdArgs) {
  const conf = loadDummyConf(args.stdinData);
  return addSandboxLink(args, {
    conf,
    create: (container) => createContainerLink(container, args.ifName, { kind: "dummy" }, container),
    addressing: { from: "ipam" },
    dns: "ipam",
  });
}

async function del(args: CmdArgs): Promise<void> {
  await delSandboxLink(args, loadDummyConf(args.stdinData));
}

async function check(args: CmdArgs): Promise<void> {
  await checkSandboxLink(args, loadDummyConf(args.stdinData), { kind: "dummy" });
}

async function status(args: CmdArgs): Promise<void> {
  await statusSandboxLink(args, loadDummyConf(args.stdinData));
}

async function gc(args: CmdArgs): Promise<void> {
  await gcSandboxLink(args, loadDummyConf(args.stdinData));
}

export const plugin: PluginModule = {
  funcs: { add, del, check, status, gc },
  config: { schema: DUMMY_SCHEMA, parse: (stdin) => loadDummyConf(stdin) },
};
