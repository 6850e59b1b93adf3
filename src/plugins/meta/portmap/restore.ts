/**
 * The portmap plugin's host firewall state, put back after a firewall reload: per family of the container's
 * addresses, the forwarding of its mapped ports (and the shared chains and jumps it goes through) with the
 * backend its ADD used, from the cached capability arguments and result.
 * @module
 */
import { iptablesUsableOnce, nftablesUsableOnce, type RestoreRequest, type Restorer } from "../../common/restore.js";
import { chooseBackend, forwardTargets, loadPortMapConf, prevResultOf, type ForwardTarget, type PortMapBackend } from "./config.js";
import { forwardIptables, forwardingMarks as iptablesMarks, unforwardIptables } from "./iptables.js";
import { forwardingMarks as nftablesMarks, restoreNftables, unforwardNftables } from "./nftables.js";

async function planOf(req: RestoreRequest): Promise<{ backend: PortMapBackend; network: string; targets: ForwardTarget[] } | undefined> {
  const n = loadPortMapConf(req.stdin);
  const prev = prevResultOf(n);
  if (!prev || n.mappings.length === 0) return undefined;
  const backend = await chooseBackend(n, { iptables: () => iptablesUsableOnce(req), nftables: () => nftablesUsableOnce(req) });
  return { backend, network: n.conf.name, targets: forwardTargets(n, req.containerID, req.ifName, prev) };
}

export const restorer: Restorer = {
  async restore(req) {
    const plan = await planOf(req);
    const done: string[] = [];
    for (const t of plan?.targets ?? []) {
      const restored = plan!.backend === "iptables" ? await forwardIptables(t) : await restoreNftables(t);
      if (restored) done.push(`${plan!.backend} IPv${t.container.ip.family}`);
    }
    return done;
  },
  async marks(req) {
    const plan = await planOf(req);
    return (plan?.targets ?? []).flatMap((t) => (plan!.backend === "iptables" ? iptablesMarks(t) : nftablesMarks(t)));
  },
  async undo(req) {
    const plan = await planOf(req);
    if (!plan) return;
    // (The GC record is DEL's to forget; the restore wrote none.)
    if (plan.backend === "iptables") await unforwardIptables(plan.network, req.containerID);
    else await unforwardNftables([req.containerID]);
  },
};
