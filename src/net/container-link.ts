/**
 * Links that sit on a parent (macvlan, ipvlan, vlan) put into a container: created under a temporary random
 * name, then renamed to the container's interface name inside the container. A name is only unique within
 * one namespace, so creating the link straight under its final name could clash with a link of that name
 * wherever it is created first; the temporary `veth…` name makes that practically impossible, and the rename
 * happens where the final name has to be free. Also the lookup the Go plugins use for a parent that is not
 * configured: the interface of the first default route.
 * @module
 */
import { CniError, ErrorCode } from "../spec/errors.js";
import { parseCIDR } from "../spec/ip.js";
import { NetOpError } from "../sys/exec.js";
import { ip } from "./links.js";
import { randomVethName } from "./names.js";
import type { NetNS } from "./netns.js";
import type { Link, NewLink } from "./types.js";

/** What to create in the container: a link of `kind` on `parent`, with its kind's settings (see NewLink). */
export type ContainerLinkSpec = Omit<NewLink, "name" | "netns" | "peer" | "parent"> & {
  kind: "macvlan" | "ipvlan" | "vlan";
  parent: string;
};

const MAX_NAME_ATTEMPTS = 10;

/**
 * Creates `ifName` in `container` as a link on `spec.parent`, which is looked up in `parentNs`: the host, or
 * the container itself (the same NetNS object as `container`). From the host the link is created directly into the container (the request names the
 * container's namespace), so it never exists in the host; either way it is made under a random temporary name,
 * then renamed to `ifName` inside the container. If the rename fails the link is removed again. Returns the
 * link as read back (its MAC is the kernel's choice unless `spec.mac` was given).
 */
export async function createContainerLink(container: NetNS, ifName: string, spec: ContainerLinkSpec, parentNs: NetNS): Promise<Link> {
  const inContainer = parentNs === container;
  let tmpName = "";
  for (let attempt = 0; !tmpName; attempt++) {
    if (attempt >= MAX_NAME_ATTEMPTS) throw new CniError(ErrorCode.Internal, `failed to find a unique temporary name for the ${spec.kind} link`);
    const candidate = randomVethName();
    try {
      await ip.createLink(parentNs, { ...spec, name: candidate, ...(inContainer ? {} : { netns: container }) });
      tmpName = candidate;
    } catch (e) {
      // Only a clash of the random name is worth another try; anything else (no parent, a refused mode) is final.
      if (!(e instanceof NetOpError && e.isExists && (await ip.getLink(container, candidate)))) throw e;
    }
  }
  try {
    const [shown] = await ip.batch(container).renameLink(tmpName, ifName).showLink(ifName).runShow(`rename ${spec.kind} ${tmpName} to ${ifName} in ${container}`);
    return shown!.link;
  } catch (e) {
    await ip.deleteLink(container, tmpName).catch(() => undefined);
    if (e instanceof NetOpError && e.isExists) {
      throw new CniError(ErrorCode.Internal, `container interface name provided (${ifName}) already exists`, `an interface named "${ifName}" exists in ${container}`);
    }
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
