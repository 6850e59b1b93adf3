/**
 * The parts every result version shares: routes (with the 1.1.0 fields the Go types carry in every version)
 * and DNS settings.
 * @module
 */

import { decodeGo, getList, getString, int, list, ptr, type StructOf, string, struct } from "#go-json/go-decode.js";
import type { JsonObject } from "#go-json/json.js";
import { canonicalCIDR, canonicalIP } from "#ip/ip.js";

/** A route of a result (types.Route, with the 1.1.0 fields). */
export interface Route {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

/** DNS settings of a result or a config (types.DNS). */
export interface DNS {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/** Decodes an IP that may be given as "" (meaning absent), canonicalising it. */
export function decodeOptionalIP(obj: JsonObject, name: string, struct: string): string | undefined {
  const s = getString(obj, name, struct);
  return s ? canonicalIP(s) : undefined;
}

export function decodeCIDR(obj: JsonObject, name: string, struct: string): string {
  return canonicalCIDR(getString(obj, name, struct) ?? "");
}

/** Go's types.Route (the 1.1.0 fields included). */
export const ROUTE_TYPE = struct(
  "Route",
  {
    dst: string,
    gw: string,
    mtu: int,
    advmss: int,
    priority: int,
    table: ptr(int),
    scope: ptr(int),
  },
  "types",
);

export const decodeRoute = (obj: JsonObject): Route => routeFrom(decodeGo(ROUTE_TYPE, obj));

/** A route from its decoded fields, addresses canonicalised (throws on an invalid dst or gw). */
export function routeFrom(d: StructOf<typeof ROUTE_TYPE.fields>): Route {
  const r: Route = { dst: canonicalCIDR(d.dst ?? "") };
  if (d.gw) r.gw = canonicalIP(d.gw);
  for (const key of ["mtu", "advmss", "priority", "table", "scope"] as const) {
    const v = d[key];
    if (v !== undefined) r[key] = v;
  }
  return r;
}

/** Route JSON in Go's field order; mtu/advmss/priority are omitted when 0, table/scope only when absent. */
export function encodeRoute(r: Route): JsonObject {
  const o: JsonObject = { dst: r.dst };
  if (r.gw) o["gw"] = r.gw;
  if (r.mtu) o["mtu"] = r.mtu;
  if (r.advmss) o["advmss"] = r.advmss;
  if (r.priority) o["priority"] = r.priority;
  if (r.table !== undefined) o["table"] = r.table;
  if (r.scope !== undefined) o["scope"] = r.scope;
  return o;
}

/** Routes reduced to what 0.1.0/0.2.0 know. */
export const legacyRoute = (r: Route): Route => (r.gw ? { dst: r.dst, gw: r.gw } : { dst: r.dst });

/** Go's types.DNS. */
export const DNS_TYPE = struct("DNS", { nameservers: list(string), domain: string, search: list(string), options: list(string) }, "types");

/** DNS settings as decoded by DNS_TYPE, without the empty ones. */
export function compactDNS(d: StructOf<typeof DNS_TYPE.fields> | undefined): DNS {
  const dns: DNS = {};
  if (d?.nameservers) dns.nameservers = d.nameservers;
  if (d?.domain) dns.domain = d.domain;
  if (d?.search) dns.search = d.search;
  if (d?.options) dns.options = d.options;
  return dns;
}

export function decodeDNS(obj: JsonObject | undefined): DNS {
  return obj ? compactDNS(decodeGo(DNS_TYPE, obj)) : {};
}

export function encodeDNS(dns: DNS): JsonObject {
  const o: JsonObject = {};
  if (dns.nameservers?.length) o["nameservers"] = [...dns.nameservers];
  if (dns.domain) o["domain"] = dns.domain;
  if (dns.search?.length) o["search"] = [...dns.search];
  if (dns.options?.length) o["options"] = [...dns.options];
  return o;
}

export const isDNSEmpty = (dns: DNS | undefined): boolean =>
  !dns || (!dns.nameservers?.length && !dns.domain && !dns.search?.length && !dns.options?.length);

export const copyDNS = (dns: DNS | undefined): DNS => decodeDNS(encodeDNS(dns ?? {}));

/** The lists every 0.3+ result has, decoded with the family's own interface and IP decoders. */
export function decodeResultLists<I, P>(
  obj: JsonObject,
  decodeInterface: (o: JsonObject) => I,
  decodeIP: (o: JsonObject) => P,
): { interfaces?: I[]; ips?: P[]; routes?: Route[] } {
  const out: { interfaces?: I[]; ips?: P[]; routes?: Route[] } = {};
  const interfaces = getList(obj, "interfaces", "Result", "Interface", decodeInterface);
  const ips = getList(obj, "ips", "Result", "IPConfig", decodeIP);
  const routes = getList(obj, "routes", "Result", "Route", decodeRoute);
  if (interfaces) out.interfaces = interfaces;
  if (ips) out.ips = ips;
  if (routes) out.routes = routes;
  return out;
}
