/**
 * The firewall plugin's host state, put back after a firewall reload: the attachment's rules with the backend
 * CHECK would use (the configured one, else firewalld when it runs, else iptables): iptables chains, jumps and
 * per-address rules, the nftables table, or the firewalld zone sources (which firewalld forgets when it reloads).
 * The admin chain comes back empty: its rules are the administrator's.
 * @module
 */

import { Firewalld } from "#net/firewall/firewalld.js";
import type { RestoreRequest, Restorer } from "../../common/restore.js";
import { type Attachment, type FirewallBackend, selectBackend } from "./backends.js";
import { loadFirewallConf } from "./config.js";
import { attachmentOf, requirePrev } from "./main.js";

async function planOf(req: RestoreRequest): Promise<{ backend: FirewallBackend; attachment: Attachment }> {
  const n = loadFirewallConf(req.stdin);
  const attachment = attachmentOf(n, req, requirePrev(n));
  const fw = new Firewalld(undefined, req.env);
  const backend = await selectBackend(n, fw, () => req.once("firewalld running", () => fw.running()));
  return { backend, attachment };
}

export const restorer: Restorer = {
  async restore(req) {
    const { backend, attachment } = await planOf(req);
    return (await backend.restore(attachment)) ? [backend.name] : [];
  },
  async marks(req) {
    const { backend, attachment } = await planOf(req);
    return backend.marks(attachment);
  },
  async undo(req) {
    const { backend, attachment } = await planOf(req);
    await backend.remove(attachment);
  },
};
