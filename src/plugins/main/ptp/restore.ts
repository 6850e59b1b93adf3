/**
 * The ptp plugin's host firewall state, put back after a firewall reload: the attachment's masquerading
 * (`ipMasq`, with the backend its ADD used) for the cached result's addresses.
 * @module
 */
import { ipMasqMarks, restoreIPMasq, teardownIPMasq, type IPMasqBackend, type IPMasqTarget } from "../../../net/ipmasq.js";
import { cachedResultOf, ipMasqBackendOf, type RestoreRequest, type Restorer } from "../../common/restore.js";
import { loadPtpConf } from "./config.js";

async function masqOf(req: RestoreRequest): Promise<{ target: IPMasqTarget; backend: IPMasqBackend } | undefined> {
  const n = loadPtpConf(req.stdin);
  const addresses = (cachedResultOf(n.conf)?.ips ?? []).map((i) => i.address);
  if (!n.ipMasq || addresses.length === 0) return undefined;
  const backend = await ipMasqBackendOf(req, n.ipMasqBackend);
  return { target: { addresses, network: n.conf.name, ifName: req.ifName, containerID: req.containerID }, backend };
}

export const restorer: Restorer = {
  async restore(req) {
    const masq = await masqOf(req);
    return masq && (await restoreIPMasq(masq.target, masq.backend)) ? [`ipMasq (${masq.backend})`] : [];
  },
  async marks(req) {
    const masq = await masqOf(req);
    return masq ? ipMasqMarks(masq.target, masq.backend) : [];
  },
  async undo(req) {
    const masq = await masqOf(req);
    if (masq) await teardownIPMasq(masq.target);
  },
};
