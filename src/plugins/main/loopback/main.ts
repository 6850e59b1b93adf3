/**
 * loopback: brings `lo` up in the container (CNI_IFNAME is ignored). With a prevResult it passes it through,
 * otherwise it reports lo with its first IPv4 and IPv6 address.
 * @module
 */

import { struct } from "#go-json/go-decode.js";
import { ipFamily } from "#ip/ip.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { NET_CONF_FIELDS } from "#spec/config.js";
import { failure } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { CURRENT_VERSION } from "#spec/version.js";

const LOOPBACK_V4 = /^127\./;

async function add(args: CmdArgs) {
  const { conf } = loadPluginConf(args.stdinData);
  const ns = await NetNS.open(args.netns);
  const [shown] = await ip.batch(ns).setLink("lo", { up: true }).showAddresses("lo").runShow(`bring up lo in ${ns}`);
  const addrs = shown?.addresses ?? [];
  for (const a of addrs) {
    const addr = a.cidr.split("/")[0]!;
    if (a.family === 4 ? !LOOPBACK_V4.test(addr) : addr !== "::1") {
      throw failure(`loopback interface found with non-loopback address "${addr}"`);
    }
  }
  const prev = parsePrevResult(conf);
  if (prev) return prev;
  const result: Result100 = {
    cniVersion: CURRENT_VERSION,
    interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: args.netns }],
    ips: [],
  };
  for (const family of [4, 6] as const) {
    const first = addrs.find((a) => ipFamily(a.cidr) === family);
    if (first) result.ips!.push({ interface: 0, address: first.cidr });
  }
  return result;
}

async function del(args: CmdArgs) {
  loadPluginConf(args.stdinData);
  const ns = await NetNS.openIfThere(args.netns);
  if (ns) await ip.setLink(ns, "lo", { up: false }); // (a namespace that is gone has no loopback to take down)
}

async function check(args: CmdArgs) {
  loadPluginConf(args.stdinData);
  const ns = await NetNS.open(args.netns);
  const lo = await ip.getLink(ns, "lo");
  if (!lo?.up) throw failure("loopback interface is down");
}

/** loopback reads nothing but the common keys. */
const LOOPBACK_SCHEMA = struct("NetConf", NET_CONF_FIELDS);

export const plugin: PluginModule = {
  funcs: { add, del, check },
  config: { schema: LOOPBACK_SCHEMA, parse: (stdin) => loadPluginConf(stdin).conf },
};
