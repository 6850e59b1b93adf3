/**
 * The ptp plugin's host firewall state, put back after a firewall reload: the attachment's masquerading
 * (`ipMasq`, with the engine its ADD used) for the cached result's addresses.
 * @module
 */
import { type IPMasqRules, type IPMasqTarget, ipMasqRules, teardownIPMasq } from "#net/firewall/ipmasq.js";
import { cachedResultOf, firewallOnce, type RestoreRequest, type Restorer } from "../../common/restore.js";
import { loadPtpConf } from "./config.js";

async function masqOf(req: RestoreRequest): Promise<{ target: IPMasqTarget; rules: IPMasqRules } | undefined> {
  const n = loadPtpConf(req.stdin);
  const addresses = (cachedResultOf(n.conf)?.ips ?? []).map((i) => i.address);
  if (!n.ipMasq || addresses.length === 0) return undefined;
  const rules = await firewallOnce(req, ipMasqRules, n.ipMasqBackend);
  return { target: { addresses, network: n.conf.name, ifName: req.ifName, containerID: req.containerID }, rules };
}

export const restorer: Restorer = {
  async restore(req) {
    const masq = await masqOf(req);
    return masq && (await masq.rules.restore(masq.target)) ? [`ipMasq (${masq.rules.name})`] : [];
  },
  async marks(req) {
    const masq = await masqOf(req);
    return masq ? masq.rules.marks(masq.target) : [];
  },
  async undo(req) {
    const masq = await masqOf(req);
    if (masq) await teardownIPMasq(masq.target);
  },
};
