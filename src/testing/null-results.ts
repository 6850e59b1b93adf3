/**
 * Results with `null` where an entry or a list belongs — what real runtimes and plugins have been seen to write and
 * what crashes Go's libcni conversions (containernetworking/cni PRs #1191 and #1192: a nil entry of `ips`,
 * `interfaces` or `routes` dereferenced while converting). Shared by the conversion, skel and libcni tests: each
 * must give a result or an error with a message, never a TypeError or a stack.
 * @module
 */
import type { JsonObject } from "#go-json/json.js";

const IFACE = { name: "eth0", mac: "0a:58:0a:01:00:02", sandbox: "/var/run/netns/nr" };
const IP4 = { address: "10.1.0.2/24", gateway: "10.1.0.1", interface: 1 };
const IP6 = { address: "fd00::2/64", interface: 1 };

/** The body (cniVersion aside) of each result with nulls, in the 0.3.0+ shape and the 0.1.0/0.2.0 one. */
export const NULL_RESULT_BODIES: Readonly<Record<string, JsonObject>> = {
  "ips: [null]": { ips: [null] },
  "ips: [null, an address]": { ips: [null, IP4] },
  "interfaces: [null, an interface]": { interfaces: [null, IFACE], ips: [IP4] },
  "routes: null": { interfaces: [IFACE], ips: [IP4], routes: null },
  "routes: [null]": { ips: [IP4], routes: [null] },
  "dns: null": { ips: [IP4], dns: null },
  "dns.nameservers: [null]": { ips: [IP4], dns: { nameservers: [null] } },
  "every list null": { interfaces: null, ips: null, routes: null, dns: null },
  "every entry null": { interfaces: [null, IFACE], ips: [null, IP4, IP6], routes: [null], dns: null },
  "ip4: null, ip6: null (0.2.0 shape)": { ip4: null, ip6: null, dns: null },
  "ip4.routes: [null] (0.2.0 shape)": { ip4: { ip: "10.1.0.2/24", routes: [null] } },
  "ip4.routes: null (0.2.0 shape)": { ip4: { ip: "10.1.0.2/24", routes: null } },
};

/** Each null result in `version` (cniVersion set), with its label. */
export function nullResults(version: string): Array<{ label: string; result: JsonObject }> {
  return Object.entries(NULL_RESULT_BODIES).map(([label, body]) => ({ label, result: { cniVersion: version, ...body } }));
}

/** An error a decoder or converter may throw on them: anything but the kinds that mean a crash (a bug). */
export function crashKind(e: unknown): string | undefined {
  if (e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError) return `${e.name}: ${e.message}`;
  if (!(e instanceof Error)) return `a non-Error was thrown: ${String(e)}`;
  if (!e.message.trim()) return "an error without a message";
  return undefined;
}
