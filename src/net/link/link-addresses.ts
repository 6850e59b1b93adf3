/**
 * Deleting an interface while remembering its addresses: teardown that needs the addresses afterwards
 * (ipMasq's iptables rules are keyed by them) reads them from the link it is about to remove.
 * @module
 */
import { type IPAddress, parseCIDR } from "#ip/ip.js";
import { NetOpError } from "../errors.js";
import type { NetNS } from "../netns.js";
import type { ShownLink } from "../types.js";
import { ip } from "./links.js";
import { deleteVethBatched } from "./veth-batch.js";

/** Go's net.IP.IsGlobalUnicast: not unspecified, loopback, link-local, multicast or the v4 broadcast. */
export function isGlobalUnicast(addr: IPAddress): boolean {
  const b = addr.bytes;
  if (addr.family === 4) {
    if (b.every((x) => x === 0) || b.every((x) => x === 255)) return false;
    return b[0] !== 127 && !(b[0] === 169 && b[1] === 254) && (b[0]! & 0xf0) !== 224; // 224.0.0.0/4 is multicast
  }
  if (b.every((x) => x === 0)) return false; // ::
  if (b.slice(0, 15).every((x) => x === 0) && b[15] === 1) return false; // ::1
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return false; // fe80::/10
  return b[0] !== 0xff; // ff00::/8
}

/**
 * Deletes `name` in `ns` and returns its global unicast addresses (`addr/prefix`); undefined when there is
 * no such link (already deleted, which callers treat as success). One batch of steps reads and deletes it, or,
 * for a veth whose peer is in this namespace, it is deleted with the other DELs under way (veth-batch.ts).
 */
export async function deleteLinkWithAddresses(ns: NetNS, name: string): Promise<string[] | undefined> {
  // A veth with its peer here goes with the other DELs under way (veth-batch.ts), else on its own.
  let shown: ShownLink | undefined = await deleteVethBatched(ns, name);
  if (!shown) {
    try {
      [shown] = await ip.batch(ns).showAddresses(name).deleteLink(name).runShow(`delete link ${name} in ${ns}`);
    } catch (e) {
      if (e instanceof NetOpError && e.isNotFound) return undefined;
      throw e;
    }
  }
  return (shown?.addresses ?? [])
    .map((a) => parseCIDR(a.cidr))
    .filter((c) => isGlobalUnicast(c.ip))
    .map((c) => c.text);
}
