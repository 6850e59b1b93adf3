/**
 * Results of spec 0.1.0 and 0.2.0: at most one IPv4 (`ip4`) and one IPv6 (`ip6`) configuration, no interfaces.
 * @module
 */

import { getList, getObject } from "#go-json/go-decode.js";
import type { JsonObject } from "#go-json/json.js";
import { type DNS, decodeCIDR, decodeDNS, decodeOptionalIP, decodeRoute, encodeDNS, encodeRoute, type Route } from "./common.js";

export const VERSIONS_020 = ["", "0.1.0", "0.2.0"] as const;
/** The versions whose results have this shape. */
export type Version020 = (typeof VERSIONS_020)[number];
export const IMPLEMENTED_020 = "0.2.0";

/** The `ip4`/`ip6` part of a 0.1.0/0.2.0 result. */
export interface IPConfig020 {
  ip: string;
  gateway?: string;
  routes?: Route[];
}

/** A result of spec 0.1.0 or 0.2.0. */
export interface Result020 {
  cniVersion: Version020;
  ip4?: IPConfig020;
  ip6?: IPConfig020;
  dns?: DNS;
}

function decodeIPConfig(obj: JsonObject): IPConfig020 {
  const c: IPConfig020 = { ip: decodeCIDR(obj, "ip", "IPConfig") };
  const gw = decodeOptionalIP(obj, "gateway", "IPConfig");
  if (gw) c.gateway = gw;
  const routes = getList(obj, "routes", "IPConfig", "Route", decodeRoute);
  if (routes) c.routes = routes;
  return c;
}

export function decode020(obj: JsonObject, cniVersion: string): Result020 {
  const r: Result020 = { cniVersion: cniVersion as Version020, dns: decodeDNS(getObject(obj, "dns", "Result", "types.DNS")) };
  const ip4 = getObject(obj, "ip4", "Result", "types020.IPConfig");
  const ip6 = getObject(obj, "ip6", "Result", "types020.IPConfig");
  if (ip4) r.ip4 = decodeIPConfig(ip4);
  if (ip6) r.ip6 = decodeIPConfig(ip6);
  return r;
}

function encodeIPConfig(c: IPConfig020): JsonObject {
  const o: JsonObject = { ip: c.ip };
  if (c.gateway) o["gateway"] = c.gateway;
  if (c.routes?.length) o["routes"] = c.routes.map(encodeRoute);
  return o;
}

/** JSON in Go's struct order; `dns` is always present (`{}` when empty). */
export function encode020(r: Result020): JsonObject {
  const o: JsonObject = {};
  if (r.cniVersion) o["cniVersion"] = r.cniVersion;
  if (r.ip4) o["ip4"] = encodeIPConfig(r.ip4);
  if (r.ip6) o["ip6"] = encodeIPConfig(r.ip6);
  o["dns"] = encodeDNS(r.dns ?? {});
  return o;
}
