/**
 * The result conversion registry: each family registers the (from, to) version pairs it can produce, and
 * `convertResult` looks the pair up. Data lost going down (extra IPs, interfaces, 1.1 route fields) is the
 * spec-upgrades loss table; a down-conversion with no IP to keep fails.
 * @module
 */

import { ipFamily } from "#ip/ip.js";
import { copyDNS, legacyRoute, type Route } from "./common.js";
import { type IPConfig020, type Result020, VERSIONS_020, type Version020 } from "./types020.js";
import { type IPConfig040, type Result040, VERSIONS_040, type Version040 } from "./types040.js";
import { type Result100, VERSIONS_100, type Version100 } from "./types100.js";

/** A result of any spec version. */
export type Result = Result020 | Result040 | Result100;
/** The result families: 0.1.0-0.2.0, 0.3.0-0.4.0, 1.0.0-1.1.0. */
export type ResultFamily = "020" | "040" | "100";

/** The result family a version string belongs to (exact membership), or undefined. */
export function familyOf(version: string): ResultFamily | undefined {
  if ((VERSIONS_020 as readonly string[]).includes(version)) return "020";
  if ((VERSIONS_040 as readonly string[]).includes(version)) return "040";
  if ((VERSIONS_100 as readonly string[]).includes(version)) return "100";
  return undefined;
}

type Converter = (result: Result, to: string) => Result;
const converters = new Map<string, Converter>();

function register(from: readonly string[], to: readonly string[], fn: Converter): void {
  for (const f of from) for (const t of to) converters.set(`${f}>${t}`, fn);
}

const copyRoutes = (routes: Route[] | undefined): Route[] | undefined => routes?.map((r) => ({ ...r }));

// 0.1.0 <-> 0.2.0: same shape.
function within020(result: Result, to: string): Result020 {
  const r = result as Result020;
  const copy = (c?: IPConfig020) => c && { ...c, routes: copyRoutes(c.routes) };
  return { cniVersion: to as Version020, ip4: copy(r.ip4), ip6: copy(r.ip6), dns: copyDNS(r.dns) };
}

// 0.1.0/0.2.0 -> 0.3.x/0.4.0: ip4 then ip6 become `ips`, their routes are concatenated.
function from020To040(result: Result, to: string): Result040 {
  const r = result as Result020;
  const out: Result040 = { cniVersion: to as Version040, dns: copyDNS(r.dns) };
  const ips = [];
  const routes: Route[] = [];
  for (const [version, c] of [
    ["4", r.ip4],
    ["6", r.ip6],
  ] as const) {
    if (!c) continue;
    ips.push(c.gateway ? { version, address: c.ip, gateway: c.gateway } : { version, address: c.ip });
    routes.push(...(copyRoutes(c.routes) ?? []));
  }
  if (ips.length) out.ips = ips;
  if (routes.length) out.routes = routes;
  return out;
}

// 0.3.x/0.4.0 -> 0.1.0/0.2.0: first "4" and first "6" IP only; routes follow their family, else dropped.
function from040To020(result: Result, to: string): Result020 {
  const r = result as Result040;
  const out: Result020 = { cniVersion: to as Version020, dns: copyDNS(r.dns) };
  for (const ip of r.ips ?? []) {
    if (ip.version === "4" && !out.ip4) out.ip4 = ip.gateway ? { ip: ip.address, gateway: ip.gateway } : { ip: ip.address };
    if (ip.version === "6" && !out.ip6) out.ip6 = ip.gateway ? { ip: ip.address, gateway: ip.gateway } : { ip: ip.address };
  }
  if (!out.ip4 && !out.ip6) throw new Error("cannot convert: no valid IP addresses");
  for (const route of r.routes ?? []) {
    const target = ipFamily(route.dst) === 4 ? out.ip4 : out.ip6;
    if (target) (target.routes ??= []).push(legacyRoute(route));
  }
  return out;
}

function within040(result: Result, to: string): Result040 {
  const r = result as Result040;
  const out: Result040 = { cniVersion: to as Version040, dns: copyDNS(r.dns) };
  if (r.interfaces) out.interfaces = r.interfaces.map((i) => ({ ...i }));
  if (r.ips) out.ips = r.ips.map((i) => ({ ...i }));
  if (r.routes) out.routes = copyRoutes(r.routes);
  return out;
}

// 0.3.x/0.4.0 -> 1.x: IPs lose `version`.
function from040To100(result: Result, to: string): Result100 {
  const r = result as Result040;
  const out: Result100 = { cniVersion: to as Version100, dns: copyDNS(r.dns) };
  if (r.interfaces) out.interfaces = r.interfaces.map((i) => ({ ...i }));
  if (r.ips) {
    out.ips = r.ips.map(({ interface: index, address, gateway }) => {
      const c: { interface?: number; address: string; gateway?: string } = { address };
      if (index !== undefined) c.interface = index;
      if (gateway) c.gateway = gateway;
      return c;
    });
  }
  if (r.routes) out.routes = copyRoutes(r.routes);
  return out;
}

// 1.x -> 0.3.x/0.4.0: `version` comes from the address family; interfaces lose the 1.x-only fields.
function from100To040(result: Result, to: string): Result040 {
  const r = result as Result100;
  const out: Result040 = { cniVersion: to as Version040, dns: copyDNS(r.dns) };
  if (r.interfaces) {
    out.interfaces = r.interfaces.map(({ name, mac, sandbox }) => {
      const i: { name: string; mac?: string; sandbox?: string } = { name };
      if (mac) i.mac = mac;
      if (sandbox) i.sandbox = sandbox;
      return i;
    });
  }
  if (r.ips) {
    out.ips = r.ips.map(({ interface: index, address, gateway }) => {
      const c: IPConfig040 = { version: String(ipFamily(address)), address };
      if (index !== undefined) c.interface = index;
      if (gateway) c.gateway = gateway;
      return c;
    });
  }
  if (r.routes) out.routes = copyRoutes(r.routes);
  return out;
}

function within100(result: Result, to: string): Result100 {
  const r = result as Result100;
  const out: Result100 = { cniVersion: to as Version100, dns: copyDNS(r.dns) };
  if (r.interfaces) out.interfaces = r.interfaces.map((i) => ({ ...i }));
  if (r.ips) out.ips = r.ips.map((i) => ({ ...i }));
  if (r.routes) out.routes = copyRoutes(r.routes);
  return out;
}

const V010_020 = ["0.1.0", "0.2.0"];
register(V010_020, V010_020, within020);
register(V010_020, VERSIONS_040, from020To040);
register(V010_020, VERSIONS_100, (r, to) => from040To100(from020To040(r, "0.4.0"), to));
register(VERSIONS_040, V010_020, from040To020);
register(VERSIONS_040, VERSIONS_040, within040);
register(VERSIONS_040, VERSIONS_100, from040To100);
register(VERSIONS_100, V010_020, (r, to) => from040To020(from100To040(r, "0.4.0"), to));
register(VERSIONS_100, VERSIONS_040, from100To040);
register(VERSIONS_100, VERSIONS_100, within100);

/**
 * Converts a result to another version's shape. The same version returns the same object; `""` means 0.1.0.
 */
export function convertResult(result: Result, to: string): Result {
  if (to === "") to = "0.1.0";
  if (result.cniVersion === to) return result;
  const fn = converters.get(`${result.cniVersion}>${to}`);
  if (!fn) throw new Error(`no converter for CNI result version ${result.cniVersion} to ${to}`);
  return fn(result, to);
}
