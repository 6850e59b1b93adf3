/**
 * The per-link settings a meta plugin may tune and later put back: MAC, MTU, promiscuous and all-multicast
 * modes, transmit queue length. Read in one step, changed in one.
 * @module
 */
import { ip } from "#net/link/links.js";
import type { NetNS } from "#net/netns.js";
import type { Link } from "#net/types.js";

export interface LinkTunables {
  mac: string;
  mtu: number;
  /** The PROMISC flag (what `ip link set promisc on` sets). */
  promisc: boolean;
  /** The ALLMULTI flag. */
  allmulti: boolean;
  txQLen: number;
}

/**
 * The crash simulator's kernel model (src/testing/crash/stores.ts): while set, links are read and changed there,
 * so the plugin's own code runs over links the simulator can crash. Nothing in the product sets it.
 */
let kernelModel:
  | { read(ns: NetNS, name: string): Promise<LinkTunables | undefined>; set(ns: NetNS, name: string, change: Partial<LinkTunables>): Promise<void> }
  | undefined;
export function useKernelModel(model: typeof kernelModel): void {
  kernelModel = model;
}

/** A link's tunables; undefined when there is no such link. */
export async function readLinkTunables(ns: NetNS, name: string): Promise<LinkTunables | undefined> {
  if (kernelModel) return kernelModel.read(ns, name);
  let link: Link | undefined;
  try {
    [{ link } = { link: undefined }] = await ip.batch(ns).showLink(name).runShow(`read link ${name} in ${ns}`);
  } catch (e) {
    if ((e as { isNotFound?: boolean }).isNotFound) return undefined;
    throw e;
  }
  if (!link) return undefined;
  return { mac: link.mac, mtu: link.mtu, promisc: link.promisc, allmulti: !!link.allmulti, txQLen: link.txqlen ?? 0 };
}

/** Changes the given tunables of a link with one `ip link set`. */
export async function setLinkTunables(ns: NetNS, name: string, change: Partial<LinkTunables>): Promise<void> {
  if (Object.values(change).every((v) => v === undefined)) return;
  if (kernelModel) return kernelModel.set(ns, name, change);
  await ip.setLink(ns, name, { mac: change.mac, mtu: change.mtu, promisc: change.promisc, allmulti: change.allmulti, txqlen: change.txQLen });
}
