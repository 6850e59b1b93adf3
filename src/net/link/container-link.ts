/**
 * Links that sit on a parent (macvlan, ipvlan, vlan) put into a container: created straight into the container
 * under the container's interface name (the request names the container's namespace, so the name only has to
 * be free there). Go's plugins create the link in the host under a temporary `veth…` name, move it and rename
 * it; a plugin killed between those steps leaves a link that no DEL can find (it looks for the interface name).
 * One creation is all or nothing. Also the lookup the Go plugins use for a parent that is not configured: the
 * interface of the first default route.
 * @module
 */

import { parseCIDR } from "#ip/ip.js";
import { type CniError, failure } from "#spec/errors.js";
import { NetOpError } from "../errors.js";
import type { NetNS } from "../netns.js";
import type { Link, NewLink } from "../types.js";
import { ip } from "./links.js";

/** What to create in the container: a link of `kind` (on `parent`, but a dummy), with its kind's settings (see NewLink). */
export type ContainerLinkSpec = Omit<NewLink, "name" | "netns" | "peer" | "parent"> & {
  kind: "macvlan" | "ipvlan" | "vlan" | "dummy";
  parent?: string;
};

/** The error for a container interface name that is taken, in Go's words. */
export const interfaceNameTaken = (ifName: string, container: NetNS): CniError =>
  failure(`container interface name provided (${ifName}) already exists`, `an interface named "${ifName}" exists in ${container}`);

/**
 * Creates `ifName` in `container` as a link on `spec.parent` (a dummy has none), which is looked up in
 * `parentNs`: the host, or the container itself (the same NetNS object as `container`). From the host the link is created directly into
 * the container, so it never exists in the host. Returns the link as read back (its MAC is the kernel's choice
 * unless `spec.mac` was given).
 */
export async function createContainerLink(container: NetNS, ifName: string, spec: ContainerLinkSpec, parentNs: NetNS): Promise<Link> {
  const inContainer = parentNs === container;
  try {
    await ip.createLink(parentNs, { ...spec, name: ifName, ...(inContainer ? {} : { netns: container }) });
  } catch (e) {
    if (e instanceof NetOpError && e.isExists) throw interfaceNameTaken(ifName, container);
    throw e;
  }
  try {
    const link = await ip.getLink(container, ifName);
    if (!link) throw failure(`the ${spec.kind} link ${ifName} is not in ${container} after its creation`);
    return link;
  } catch (e) {
    await ip.deleteLink(container, ifName).catch(() => undefined);
    throw e;
  }
}

/**
 * The interface of the first default route of `ns`'s main table, IPv4 before IPv6 (the order the Go plugins
 * read them in); undefined when there is none. A default route without an interface (a multipath one) is
 * passed over.
 */
export async function defaultRouteInterface(ns: NetNS): Promise<string | undefined> {
  for (const family of [4, 6] as const) {
    const route = (await ip.listRoutes(ns, family)).find((r) => r.dev && parseCIDR(r.dst).prefix === 0);
    if (route) return route.dev;
  }
  return undefined;
}
