/**
 * The portmap plugin's host firewall state, put back after a firewall reload: per family of the container's
 * addresses, the forwarding of its mapped ports (and the shared chains and jumps it goes through) with the
 * backend its ADD used, from the cached capability arguments and result.
 * @module
 */
import { firewallProbesOnce, type RestoreRequest, type Restorer } from "../../common/restore.js";
import { type ForwardTarget, forwardTargets, loadPortMapConf, type PortForwarding, prevResultOf } from "./config.js";
import { portForwardingFor } from "./engines.js";

async function planOf(
  req: RestoreRequest,
): Promise<{ forwarding: PortForwarding; network: string; dataDir: string; targets: ForwardTarget[] } | undefined> {
  const n = loadPortMapConf(req.stdin);
  const prev = prevResultOf(n);
  if (!prev || n.mappings.length === 0) return undefined;
  const forwarding = await portForwardingFor(n, firewallProbesOnce(req));
  // (`restore` writes no GC record: that is ADD's to write and DEL's to forget.)
  return { forwarding, network: n.conf.name, dataDir: n.dataDir, targets: forwardTargets(n, req.containerID, req.ifName, prev) };
}

export const restorer: Restorer = {
  async restore(req) {
    const plan = await planOf(req);
    const done: string[] = [];
    for (const t of plan?.targets ?? []) {
      if (await plan!.forwarding.restore(t)) done.push(`${plan!.forwarding.name} IPv${t.container.ip.family}`);
    }
    return done;
  },
  async marks(req) {
    const plan = await planOf(req);
    return (plan?.targets ?? []).flatMap((t) => plan!.forwarding.marks(t));
  },
  async undo(req) {
    const plan = await planOf(req);
    if (!plan) return;
    // As DEL: the attachment is gone (its DEL has forgotten the GC record, or will find nothing to forget).
    await plan.forwarding.remove({ network: plan.network, containerID: req.containerID, dataDir: plan.dataDir });
  },
};
