/**
 * CHECK helpers: the prevResult a CHECK needs, and comparing a result's addresses and routes with what the
 * container really has (routes wherever a later plugin of the chain, like sbr, legitimately moved them).
 * @module
 */

import { cidrContains, ipFamily, parseCIDR } from "#ip/ip.js";
import { ip } from "#net/link/links.js";
import { type IpRule, listRules, TABLE_MAIN } from "#net/link/policy-routing.js";
import type { NetNS } from "#net/netns.js";
import type { RouteSpec } from "#net/types.js";
import { parsePrevResult } from "#skel/conf.js";
import type { PluginConf } from "#spec/config.js";
import { failure, invalidConfig } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";

/** The prevResult in the current shape; CHECK without one is an error. */
export function requirePrevResult(conf: PluginConf): Result100 {
  const prev = parsePrevResult(conf);
  if (!prev) throw invalidConfig("Required prevResult missing");
  return toCurrentResult(prev);
}

/** Every address the result assigns to `ifName` must be on it. */
export async function checkInterfaceAddresses(ns: NetNS, ifName: string, result: Result100): Promise<void> {
  const have = new Set((await ip.listAddresses(ns, ifName)).map((a) => parseCIDR(a.cidr).text));
  for (const ipc of result.ips ?? []) {
    if (ipc.interface === undefined || result.interfaces?.[ipc.interface]?.name !== ifName) continue;
    if (!have.has(parseCIDR(ipc.address).text)) {
      throw failure(`address ${ipc.address} is missing from ${ifName}`);
    }
  }
}

/**
 * The routes traffic from given source addresses can use in a namespace: the main table's, and those of every
 * table that a `from <source>` policy rule sends it to — where sbr moves an interface's routes, so a chain with
 * sbr still passes CHECK while a missing route still fails it. Tables and rules are read once, when needed.
 */
export class RoutesFrom {
  private readonly tables = new Map<string, Promise<RouteSpec[]>>();
  private rules: Promise<IpRule[]> | undefined;
  constructor(
    private readonly ns: NetNS,
    private readonly sources: readonly string[],
  ) {}

  private table(family: 4 | 6, table?: number): Promise<RouteSpec[]> {
    const key = `${family}:${table ?? "main"}`;
    if (!this.tables.has(key)) this.tables.set(key, ip.listRoutes(this.ns, family, table));
    return this.tables.get(key)!;
  }

  /** Whether a route of `family` matching `wanted` is in the main table (or `table`, when given) or a source rule's table. */
  async has(family: 4 | 6, wanted: (r: RouteSpec) => boolean, table?: number): Promise<boolean> {
    if ((await this.table(family, table)).some(wanted)) return true;
    if (table !== undefined) return false;
    this.rules ??= listRules(this.ns);
    const sources = this.sources.map((s) => parseCIDR(s).ip).filter((a) => a.family === family);
    const ruleTables = (await this.rules)
      .filter((r) => r.family === family && r.src && r.table !== undefined && r.table !== TABLE_MAIN)
      .filter((r) => sources.some((src) => cidrContains(parseCIDR(r.src!), src)))
      .map((r) => r.table!);
    for (const t of new Set(ruleTables)) if ((await this.table(family, t)).some(wanted)) return true;
    return false;
  }
}

/** Every route of the result must exist in the namespace (destination and gateway), for its addresses' traffic. */
export async function checkRoutes(ns: NetNS, result: Result100): Promise<void> {
  const view = new RoutesFrom(
    ns,
    (result.ips ?? []).map((i) => i.address),
  );
  for (const route of result.routes ?? []) {
    const dst = parseCIDR(route.dst).text;
    const found = await view.has(ipFamily(route.dst), (r) => parseCIDR(r.dst).text === dst && (!route.gw || r.gw === route.gw), route.table);
    if (!found) throw failure(`route ${route.dst}${route.gw ? ` via ${route.gw}` : ""} is missing`);
  }
}
