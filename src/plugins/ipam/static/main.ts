/**
 * static: the IPAM plugin that returns the addresses its config (or the runtime) names. ADD returns them with
 * the routes and DNS of the config; DEL has nothing to free; CHECK compares the configured gateways with the
 * prevResult.
 * @module
 */

import { tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { ipEqual } from "#ip/ip-math.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { failure, invalidConfig } from "#spec/errors.js";
import { toCurrentResult } from "#spec/result/index.js";
import { IMPLEMENTED_100, type Result100 } from "#spec/result/types100.js";
import { parseStaticConfig, STATIC_SCHEMA } from "./config.js";

export function add(args: CmdArgs): Result100 {
  const conf = parseStaticConfig(args.stdinData, args.args);
  return {
    cniVersion: IMPLEMENTED_100,
    ips: conf.addresses.map((a) => (a.gateway ? { address: a.address.text, gateway: a.gateway.text } : { address: a.address.text })),
    routes: conf.routes,
    dns: conf.dns,
  };
}

/**
 * Every configured address found in the prevResult must carry the configured gateway (when one is
 * configured). Configured addresses missing from the prevResult are not an error, as in Go.
 */
export function check(args: CmdArgs): void {
  const conf = parseStaticConfig(args.stdinData, args.args);
  const { conf: pluginConf } = loadPluginConf(args.stdinData);
  const prev = parsePrevResult(pluginConf);
  if (!prev) throw invalidConfig("Required prevResult missing");
  const ips = toCurrentResult(prev).ips ?? [];
  for (const configured of conf.addresses) {
    const match = ips.find((ip) => ipEqual(tryParseCIDR(ip.address)?.ip, configured.address.ip));
    if (!match || !configured.gateway) continue;
    const gateway = match.gateway ? tryParseIP(match.gateway) : undefined;
    if (!ipEqual(gateway, configured.gateway)) {
      throw failure(`static: Failed to match addr ${configured.address.ip.text} on interface ${args.ifName}`);
    }
  }
}

/** Nothing was allocated, so there is nothing to free (the config is not even read, as in Go). */
export function del(): void {}

export const plugin: PluginModule = {
  funcs: { add, check, del },
  config: { schema: STATIC_SCHEMA, parse: parseStaticConfig },
};
