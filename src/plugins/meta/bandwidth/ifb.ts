/**
 * IFB (intermediate functional block) devices: where traffic redirected from another device's ingress is
 * queued and shaped (the bandwidth plugin's egress limit).
 * @module
 */
import { ip } from "#net/link/links.js";
import type { NetNS } from "#net/netns.js";
import type { Link } from "#net/types.js";

/**
 * Creates IFB `name` up, with `mtu` and a transmit queue length of 0 (as the Go plugin creates it), and an
 * optional alias recording who made it. Returns the new link (its MAC is the kernel's random one).
 */
export async function createIfb(ns: NetNS, name: string, opts: { mtu: number; alias?: string }): Promise<Link> {
  const batch = ip.batch(ns).addLink({ name, kind: "ifb", mtu: opts.mtu, txqlen: 0, up: true });
  if (opts.alias) batch.setLink(name, { alias: opts.alias });
  const [shown] = await batch.showLink(name).runShow(`create ifb device ${name} in ${ns}`);
  return shown!.link;
}

/** Deletes IFB `name`; false when there is no such link. A link of another kind by that name is left alone. */
export async function deleteIfb(ns: NetNS, name: string): Promise<boolean> {
  const link = await ip.getLink(ns, name);
  if (link?.kind !== "ifb") return false;
  return ip.deleteLink(ns, name);
}

/** Every IFB device in `ns`. */
export async function listIfbs(ns: NetNS): Promise<Link[]> {
  return (await ip.listLinks(ns)).filter((l) => l.kind === "ifb");
}
