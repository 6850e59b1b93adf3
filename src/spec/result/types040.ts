/**
 * Results of spec 0.3.0, 0.3.1 and 0.4.0: interfaces, IPs with a `version` ("4"/"6") and interface index,
 * routes and DNS.
 * @module
 */

import { getInt, getObject, getString } from "#go-json/go-decode.js";
import type { JsonObject } from "#go-json/json.js";
import { type DNS, decodeCIDR, decodeDNS, decodeOptionalIP, decodeResultLists, encodeDNS, encodeRoute, type Route } from "./common.js";

export const VERSIONS_040 = ["0.3.0", "0.3.1", "0.4.0"] as const;
/** The versions whose results have this shape. */
export type Version040 = (typeof VERSIONS_040)[number];
export const IMPLEMENTED_040 = "0.4.0";

/** An interface of a 0.3.x/0.4.0 result. */
export interface Interface040 {
  name: string;
  mac?: string;
  sandbox?: string;
}

/** An address of a 0.3.x/0.4.0 result. */
export interface IPConfig040 {
  version: string;
  /** Index into `interfaces`; may be absent (IPAM results) or -1. */
  interface?: number;
  address: string;
  gateway?: string;
}

/** A result of spec 0.3.0, 0.3.1 or 0.4.0. */
export interface Result040 {
  cniVersion: Version040;
  interfaces?: Interface040[];
  ips?: IPConfig040[];
  routes?: Route[];
  dns?: DNS;
}

export function decodeInterface040(obj: JsonObject): Interface040 {
  const i: Interface040 = { name: getString(obj, "name", "Interface") ?? "" };
  const mac = getString(obj, "mac", "Interface");
  const sandbox = getString(obj, "sandbox", "Interface");
  if (mac) i.mac = mac;
  if (sandbox) i.sandbox = sandbox;
  return i;
}

function decodeIPConfig(obj: JsonObject): IPConfig040 {
  const c: IPConfig040 = { version: getString(obj, "version", "IPConfig") ?? "", address: decodeCIDR(obj, "address", "IPConfig") };
  const index = getInt(obj, "interface", "IPConfig");
  if (index !== undefined) c.interface = index;
  const gw = decodeOptionalIP(obj, "gateway", "IPConfig");
  if (gw) c.gateway = gw;
  return c;
}

export function decode040(obj: JsonObject, cniVersion: string): Result040 {
  return {
    cniVersion: cniVersion as Version040,
    dns: decodeDNS(getObject(obj, "dns", "Result", "types.DNS")),
    ...decodeResultLists(obj, decodeInterface040, decodeIPConfig),
  };
}

function encodeInterface(i: Interface040): JsonObject {
  const o: JsonObject = { name: i.name };
  if (i.mac) o["mac"] = i.mac;
  if (i.sandbox) o["sandbox"] = i.sandbox;
  return o;
}

function encodeIPConfig(c: IPConfig040): JsonObject {
  const o: JsonObject = { version: c.version };
  if (c.interface !== undefined) o["interface"] = c.interface;
  o["address"] = c.address;
  if (c.gateway) o["gateway"] = c.gateway;
  return o;
}

/** JSON in Go's struct order; empty lists omitted, `dns` always present. */
export function encode040(r: Result040): JsonObject {
  const o: JsonObject = { cniVersion: r.cniVersion };
  if (!r.cniVersion) delete o["cniVersion"];
  if (r.interfaces?.length) o["interfaces"] = r.interfaces.map(encodeInterface);
  if (r.ips?.length) o["ips"] = r.ips.map(encodeIPConfig);
  if (r.routes?.length) o["routes"] = r.routes.map(encodeRoute);
  o["dns"] = encodeDNS(r.dns ?? {});
  return o;
}
