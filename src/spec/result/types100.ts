/**
 * Results of spec 1.0.0 and 1.1.0: IPs without `version`, interfaces with mtu/socketPath/pciID.
 * The Go types serialise through a map, so keys come out sorted and an empty `dns` is left out.
 * @module
 */

import { getInt, getObject, getString } from "#go-json/go-decode.js";
import type { JsonObject } from "#go-json/json.js";
import { type DNS, decodeCIDR, decodeDNS, decodeOptionalIP, decodeResultLists, encodeDNS, encodeRoute, isDNSEmpty, type Route } from "./common.js";

export const VERSIONS_100 = ["1.0.0", "1.1.0"] as const;
/** The versions whose results have this shape. */
export type Version100 = (typeof VERSIONS_100)[number];
export const IMPLEMENTED_100 = "1.1.0";

/** An interface of a 1.x result. */
export interface Interface {
  name: string;
  mac?: string;
  mtu?: number;
  /** The netns path for container interfaces; absent for host interfaces. */
  sandbox?: string;
  socketPath?: string;
  pciID?: string;
}

/** An address of a 1.x result. */
export interface IPConfig {
  /** Index into `interfaces`; absent in IPAM results. */
  interface?: number;
  address: string;
  gateway?: string;
}

/** A result of spec 1.0.0 or 1.1.0 (the shape plugins build). */
export interface Result100 {
  cniVersion: Version100;
  interfaces?: Interface[];
  ips?: IPConfig[];
  routes?: Route[];
  dns?: DNS;
}

function decodeInterface(obj: JsonObject): Interface {
  const i: Interface = { name: getString(obj, "name", "Interface") ?? "" };
  const mac = getString(obj, "mac", "Interface");
  const mtu = getInt(obj, "mtu", "Interface");
  const sandbox = getString(obj, "sandbox", "Interface");
  const socketPath = getString(obj, "socketPath", "Interface");
  const pciID = getString(obj, "pciID", "Interface");
  if (mac) i.mac = mac;
  if (mtu) i.mtu = mtu;
  if (sandbox) i.sandbox = sandbox;
  if (socketPath) i.socketPath = socketPath;
  if (pciID) i.pciID = pciID;
  return i;
}

function decodeIPConfig(obj: JsonObject): IPConfig {
  const c: IPConfig = { address: decodeCIDR(obj, "address", "IPConfig") };
  const index = getInt(obj, "interface", "IPConfig");
  if (index !== undefined) c.interface = index;
  const gw = decodeOptionalIP(obj, "gateway", "IPConfig");
  if (gw) c.gateway = gw;
  return c;
}

export function decode100(obj: JsonObject, cniVersion: string): Result100 {
  return {
    cniVersion: cniVersion as Version100,
    dns: decodeDNS(getObject(obj, "dns", "Result", "types.DNS")),
    ...decodeResultLists(obj, decodeInterface, decodeIPConfig),
  };
}

function encodeInterface(i: Interface): JsonObject {
  const o: JsonObject = { name: i.name };
  if (i.mac) o["mac"] = i.mac;
  if (i.mtu) o["mtu"] = i.mtu;
  if (i.sandbox) o["sandbox"] = i.sandbox;
  if (i.socketPath) o["socketPath"] = i.socketPath;
  if (i.pciID) o["pciID"] = i.pciID;
  return o;
}

function encodeIPConfig(c: IPConfig): JsonObject {
  const o: JsonObject = {};
  if (c.interface !== undefined) o["interface"] = c.interface;
  o["address"] = c.address;
  if (c.gateway) o["gateway"] = c.gateway;
  return o;
}

/** JSON for a 1.x result (marshal it with sorted keys); an empty `dns` is omitted. */
export function encode100(r: Result100): JsonObject {
  const o: JsonObject = {};
  if (r.cniVersion) o["cniVersion"] = r.cniVersion;
  if (r.interfaces?.length) o["interfaces"] = r.interfaces.map(encodeInterface);
  if (r.ips?.length) o["ips"] = r.ips.map(encodeIPConfig);
  if (r.routes?.length) o["routes"] = r.routes.map(encodeRoute);
  if (!isDNSEmpty(r.dns)) o["dns"] = encodeDNS(r.dns!);
  return o;
}
