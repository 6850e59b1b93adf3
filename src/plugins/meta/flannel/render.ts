/**
 * The delegate's config, rendered from the flannel config and subnet.env exactly as the flannel-io plugin
 * renders it: `delegate` as the base; `runtimeConfig` copied in; `name` set; `type` (default bridge), `ipMasq`
 * (default: the opposite of FLANNEL_IPMASQ — if flanneld does not masquerade, the delegate should), `mtu`
 * (default FLANNEL_MTU) and, for bridge, `isGateway` (default true) only where the delegate leaves them out;
 * `cniVersion` copied when set; and `ipam` built from the config's `ipam` (type default host-local) with one
 * host-local range set per node subnet and the config's routes followed by a route to each flannel network.
 * The bytes are Go's json.Marshal of that map: keys sorted, routes in types.Route's field order, compact.
 * @module
 */
import { compareBytes, type JsonObject, type JsonValue, marshalJson, quoteJsonString } from "#go-json/json.js";
import { encodeRoute } from "#spec/result/common.js";
import { type FlannelConf, ipamRoutes } from "./config.js";
import type { SubnetEnv } from "./subnet-env.js";

/** Objects written in their own key order (Go structs); every other object is a Go map, written sorted. */
const structs = new WeakSet<object>();

const hasKey = (obj: JsonObject, key: string): boolean => Object.hasOwn(obj, key);

/** The delegate's `ipam`: the config's own, with flannel's ranges and routes. */
function delegateIpam(n: FlannelConf, env: SubnetEnv): JsonObject {
  const ipam: JsonObject = { ...n.ipam };
  if (!hasKey(ipam, "type")) ipam["type"] = "host-local";
  const ranges: JsonValue[] = [];
  if (env.subnet) ranges.push([{ subnet: env.subnet }]);
  if (env.ipv6Subnet) ranges.push([{ subnet: env.ipv6Subnet }]);
  ipam["ranges"] = ranges;
  const routes = [...ipamRoutes(n.ipam), ...env.networks.map((dst) => ({ dst })), ...env.ipv6Networks.map((dst) => ({ dst }))].map((r) => {
    const o = encodeRoute(r);
    structs.add(o);
    return o;
  });
  ipam["routes"] = routes;
  return ipam;
}

/** The delegate's config as a JSON object (see the module comment for the rules). */
export function renderDelegate(n: FlannelConf, env: SubnetEnv): JsonObject {
  const d: JsonObject = { ...n.delegate };
  if (n.runtimeConfig) d["runtimeConfig"] = n.runtimeConfig;
  d["name"] = n.conf.name;
  if (!hasKey(d, "type")) d["type"] = "bridge";
  if (!hasKey(d, "ipMasq")) d["ipMasq"] = !env.ipMasq;
  if (!hasKey(d, "mtu")) d["mtu"] = env.mtu;
  if (d["type"] === "bridge" && !hasKey(d, "isGateway")) d["isGateway"] = true;
  if (n.conf.cniVersion) d["cniVersion"] = n.conf.cniVersion;
  d["ipam"] = delegateIpam(n, env);
  return d;
}

/** Go's json.Marshal of a rendered config: maps sorted by key, structs (routes) in field order. */
export function encodeDelegate(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(encodeDelegate).join(",")}]`;
  if (value === null || typeof value !== "object") return marshalJson(value);
  const keys = Object.keys(value);
  if (!structs.has(value)) keys.sort(compareBytes);
  return `{${keys.map((k) => `${quoteJsonString(k)}:${encodeDelegate(value[k]!)}`).join(",")}}`;
}

/** The bytes flannel saves and hands to the delegate. */
export const renderDelegateBytes = (n: FlannelConf, env: SubnetEnv): Buffer => Buffer.from(encodeDelegate(renderDelegate(n, env)));
