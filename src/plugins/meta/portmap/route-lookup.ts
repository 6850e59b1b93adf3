/**
 * Route look-ups: which interface the kernel would send a packet to an address out of (`ip route get`).
 * @module
 */
import { NetOpError } from "../../../sys/exec.js";
import type { NetNS } from "../../../net/netns.js";

/** The name of the interface that routes to `address` in `ns`, or undefined when there is no route. */
export async function routeInterface(ns: NetNS, address: string): Promise<string | undefined> {
  let stdout: string;
  try {
    ({ stdout } = await ns.runIp(["-json", "route", "get", address], `look up the route to ${address}`));
  } catch (e) {
    if (e instanceof NetOpError && /unreachable|no route|network is down/i.test(e.reason)) return undefined;
    throw e;
  }
  const routes = JSON.parse(stdout || "[]") as Array<{ dev?: string }>;
  return routes.find((r) => r.dev)?.dev;
}
