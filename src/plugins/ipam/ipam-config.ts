/**
 * What the IPAM plugins (host-local, static, cluster-ipam) read the same way: the Go schema pieces of their
 * configs (`args.cni.ips`, `ipam.routes`), the required `ipam` object, routes, CNI_ARGS, and the
 * one-address-per-family rule of old spec versions. Decoding follows Go's rules (go-json/go-decode.ts).
 * @module
 */

import { type Decoded, type GoType, list, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { type ArgParsers, loadCniArgs } from "#spec/args.js";
import { invalidConfig, invalidEnv, messageOf } from "#spec/errors.js";
import { ROUTE_TYPE, type Route, routeFrom } from "#spec/result/common.js";
import { versionGreaterThanOrEqualTo } from "#spec/version.js";

/** A short, quoted rendering of a JSON value for error messages. */
export function showValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * `args.cni.ips`: the per-attachment addresses of the conventions document (Go: `Args *struct{ A *IPAMArgs "cni" }`),
 * with `ips` of the given type (a plugin that reads them as it decodes refines the list).
 */
export function ipamArgsField<T>(ips: GoType<T>) {
  return ptr(struct("IPAMArgsWrapper", { cni: ptr(struct("IPAMArgs", { ips })) }));
}

/** `args.cni.ips` as strings, for plugins that read them only for some verbs. */
export const IPAM_ARGS_FIELD = ipamArgsField(list(string));

/** `ipam.routes` as decoded, for plugins that read them only for some verbs (see parseRoutes). */
export const ROUTES_FIELD = list(ptr(ROUTE_TYPE));

/** `ipam.routes` read as they are decoded (see parseRoutes); none when absent. */
export const ROUTES_KEY = withDefault(refine(ROUTES_FIELD, parseRoutes), []);

/** The `ipam` object, which an IPAM plugin cannot work without. */
export function requireIpam<T>(ipam: T | undefined): T {
  if (ipam === undefined) throw invalidConfig("IPAM config missing 'ipam' key");
  return ipam;
}

/** `ipam.routes` (at `at`, the key as written), copied to results as they are (with the 1.1.0 fields). */
export function parseRoutes(routes: ReadonlyArray<Decoded<typeof ROUTE_TYPE>> | undefined, at = "ipam.routes"): Route[] {
  return (routes ?? []).map((d, i) => {
    const where = `${at}[${i}]`;
    if (!d.dst) throw invalidConfig(`invalid route: dst is missing (${where})`);
    try {
      return routeFrom(d);
    } catch (e) {
      throw invalidConfig(`invalid route ${showValue(d)}: ${messageOf(e)} (${where})`);
    }
  });
}

/** Loads CNI_ARGS with the given keys (unknown keys fail unless IgnoreUnknown is true); errors are code 4. */
export function loadIpamArgs<T extends object>(cniArgs: string, parsers: ArgParsers<T>): Partial<T> {
  try {
    return loadCniArgs(cniArgs, parsers);
  } catch (e) {
    throw invalidEnv(messageOf(e));
  }
}

/** Spec 0.2.0 and older results hold one IPv4 and one IPv6 address at most. */
export function checkAddressesPerFamily(cniVersion: string, families: ReadonlyArray<4 | 6>): void {
  const v4 = families.filter((f) => f === 4).length;
  const v6 = families.length - v4;
  if (v4 <= 1 && v6 <= 1) return;
  let modern = false;
  try {
    modern = versionGreaterThanOrEqualTo(cniVersion, "0.3.0");
  } catch {
    /* an unparsable version is an old one, as in Go */
  }
  if (!modern) throw invalidConfig(`CNI version ${cniVersion} does not support more than 1 address per family`);
}
