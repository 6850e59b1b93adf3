/**
 * CHECK helpers: the prevResult a CHECK needs, and comparing a result's addresses and routes with what the
 * container really has.
 * @module
 */
import type { PluginConf } from "../../spec/config.js";
import { CniError, ErrorCode } from "../../spec/errors.js";
import { ipFamily, parseCIDR } from "../../spec/ip.js";
import { toCurrentResult, type Result100 } from "../../spec/result/index.js";
import { parsePrevResult } from "../../skel/conf.js";
import { ip } from "../../net/links.js";
import type { NetNS } from "../../net/netns.js";

/** The prevResult in the current shape; CHECK without one is an error. */
export function requirePrevResult(conf: PluginConf): Result100 {
  const prev = parsePrevResult(conf);
  if (!prev) throw new CniError(ErrorCode.InvalidNetworkConfig, "Required prevResult missing");
  return toCurrentResult(prev);
}

/** Every address the result assigns to `ifName` must be on it. */
export async function checkInterfaceAddresses(ns: NetNS, ifName: string, result: Result100): Promise<void> {
  const have = new Set((await ip.listAddresses(ns, ifName)).map((a) => parseCIDR(a.cidr).text));
  for (const ipc of result.ips ?? []) {
    if (ipc.interface === undefined || result.interfaces?.[ipc.interface]?.name !== ifName) continue;
    if (!have.has(parseCIDR(ipc.address).text)) {
      throw new CniError(ErrorCode.Internal, `address ${ipc.address} is missing from ${ifName}`);
    }
  }
}

/** Every route of the result must exist in the namespace (destination and gateway). */
export async function checkRoutes(ns: NetNS, result: Result100): Promise<void> {
  const tables = new Map<string, Array<{ dst: string; gw?: string }>>();
  for (const route of result.routes ?? []) {
    const family = ipFamily(route.dst);
    const key = `${family}:${route.table ?? "main"}`;
    if (!tables.has(key)) tables.set(key, await ip.listRoutes(ns, family, route.table));
    const dst = parseCIDR(route.dst).text;
    const found = tables.get(key)!.some((r) => parseCIDR(r.dst).text === dst && (!route.gw || r.gw === route.gw));
    if (!found) throw new CniError(ErrorCode.Internal, `route ${route.dst}${route.gw ? ` via ${route.gw}` : ""} is missing`);
  }
}
