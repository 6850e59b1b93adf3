/**
 * Deleting veth pairs together. Unregistering one veth takes the kernel ~18 ms on this project's VM (50 deleted
 * one by one: 906 ms; the same 50 in one request by device group: 64 ms), and a netlink request is carried out in
 * the thread that sends it: a resident server deleting the interfaces of 100 concurrent DELs one by one would hold
 * its only thread ~1.8 s for the kernel alone. So a container interface that is a veth whose peer is in this
 * process's namespace (bridge and ptp put it there) is deleted through its peer, with the peers of the other DELs
 * under way: each joins the current batch by putting its peer in the batch's device group, and the batch is then
 * deleted with one RTM_DELLINK for the group (deleting either end removes the pair). DELs that arrive while a batch
 * is deleted form the next one (held open while they keep joining: BURST_QUIET_MS); a lone DEL (exec mode) is a
 * batch of one, sent at once. In the resident server a DEL waiting for its batch lends its place (sys/call-signal.ts
 * stepAside, resident/places.ts) to a call waiting for one, which can then join the same batch.
 *
 * The peer is the container link's IFLA_LINK in this namespace only when that link here is a veth whose own
 * IFLA_LINK is the container link's index in the namespace whose id here is the container's (every namespace
 * numbers its links from 1, so an index alone says nothing); otherwise, and without the netlink path (the Node
 * build, TSCNI_NETLINK=0), nothing is batched and the caller deletes by name.
 * @module
 */
import { stepAside } from "#sys/call-signal.js";
import { phase } from "#sys/phase-trace.js";
import { NetNS } from "../netns.js";
import type { ShownLink } from "../types.js";
import { withSession } from "./rtnetlink-backend.js";

/** A batch: the device group its peers are put in, and the DELs waiting for its deletion. */
interface Batch {
  group: number;
  waiting: Array<{ resolve: () => void; reject: (e: unknown) => void }>;
  /** In a burst: when it began to form, and the timer that sends it. */
  formedAt: number;
  timer?: ReturnType<typeof setTimeout>;
}

let current: Batch | undefined;
let lastSentAt = -Infinity;
/**
 * In a burst (a batch sent less than BURST_GAP_MS ago), a batch is sent once no DEL has joined it for
 * BURST_QUIET_MS, or BURST_MAX_MS after it began to form. A batch costs the kernel 10-30 ms (busy VM, 50-pod
 * burst) whether it holds 1 veth or 30, and its deletion holds the process's thread, while the DELs that arrive
 * meanwhile are read one after another as soon as it ends: waiting for them saves a batch per wait.
 */
const BURST_QUIET_MS = 2;
const BURST_MAX_MS = 20;
const BURST_GAP_MS = 100;

/** A device group for a batch: random, far from the small numbers people give groups by hand. */
const newGroup = (): number => 0x10000000 + Math.floor(Math.random() * 0x60000000);

/** What this process has batched: batches sent and the veths they deleted (tests read it). */
export const vethBatchStats = { batches: 0, veths: 0 };

function send(batch: Batch): void {
  if (current === batch) current = undefined;
  lastSentAt = performance.now();
  vethBatchStats.batches++;
  vethBatchStats.veths += batch.waiting.length;
  void withSession(NetNS.host, (s) => s.deleteGroup(batch.group, `delete veth group ${batch.group}`)).then(
    () => batch.waiting.forEach((w) => w.resolve()),
    (e: unknown) => batch.waiting.forEach((w) => w.reject(e)),
  );
}

/** The batch a DEL joins now: the one forming, or a new one (sent at once when no burst is under way). */
function joinable(): Batch {
  const now = performance.now();
  if (current) {
    const batch = current;
    if (batch.timer !== undefined) {
      // One more joined: wait for the next, while the batch is young enough.
      clearTimeout(batch.timer);
      batch.timer = setTimeout(() => send(batch), Math.max(0, Math.min(BURST_QUIET_MS, batch.formedAt + BURST_MAX_MS - now)));
    }
    return batch;
  }
  const batch: Batch = { group: newGroup(), waiting: [], formedAt: now };
  current = batch;
  if (now - lastSentAt < BURST_GAP_MS) batch.timer = setTimeout(() => send(batch), BURST_QUIET_MS);
  else setImmediate(() => send(batch));
  return batch;
}

/**
 * Deletes veth `name` in `ns` with the batch, and gives the link and addresses it had; undefined when it cannot be
 * batched (not a veth with its peer here, no netlink path, not found), and then nothing was changed.
 */
export async function deleteVethBatched(ns: NetNS, name: string): Promise<ShownLink | undefined> {
  if (!ns.path) return undefined; // (a host link has its peer elsewhere, if anywhere)
  let shown: ShownLink | undefined;
  try {
    shown = await withSession(ns, (s) => {
      const link = s.getLink(name, `show link ${name} in ${ns}`);
      return { link, addresses: s.addressesOf(link.index, `show addresses of ${name} in ${ns}`) };
    });
  } catch {
    return undefined; // not found, or unreadable: the caller's own path says which
  }
  const container = shown?.link;
  if (!shown || container?.kind !== "veth" || container.peerIndex === undefined) return undefined;
  let batch: Batch | undefined;
  try {
    batch = await withSession(NetNS.host, (s) => {
      const operation = `join veth ${name} of ${ns} to a batch`;
      const peer = s.linkByIndex(container.peerIndex!, operation);
      if (peer?.link.kind !== "veth" || peer.link.peerIndex !== container.index) return undefined;
      // Indexes repeat across namespaces (each numbers its links from 1): the peer's peer must be in `ns` itself.
      const nsid = s.netnsIdOf(ns, operation);
      if (nsid === undefined || peer.peerNetnsId !== nsid) return undefined;
      const b = joinable();
      s.setGroup(peer.link.index, b.group, operation);
      return b;
    });
  } catch {
    return undefined;
  }
  if (!batch) return undefined;
  try {
    // Its place in the resident server goes meanwhile to a DEL waiting for one, which can join this batch too.
    await phase("batch wait", "veth deletions of the DELs under way", () =>
      stepAside(new Promise<void>((resolve, reject) => batch.waiting.push({ resolve, reject }))),
    );
  } catch {
    return undefined; // the group was not deleted: the caller deletes by name (or finds it gone)
  }
  return shown;
}
