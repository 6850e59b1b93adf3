/**
 * dnsname's host firewall state, put back after a firewall reload: the INPUT rules that let DNS through to the
 * bridge its dnsmasq listens on. Nothing when the network runs no dnsmasq (it has no dnsmasq.conf); dnsmasq
 * itself and the names it serves are not firewall state and are left alone.
 * @module
 */
import type { IPFamilyNum } from "#net/firewall/iptables.js";
import { iptablesUsableOnce, type RestoreRequest, type Restorer } from "../../common/restore.js";
import { loadDnsnameConf } from "./config.js";
import { acceptDns, dnsFamilies, dnsRules, removeDnsRulesUnlessShared } from "./firewall.js";
import { baseDir, confOf, networkDir, readState } from "./state.js";

/** The bridge dnsmasq listens on and the families ADD opened DNS in (IPv4 always, as ADD), if the network has a dnsmasq. */
function planOf(req: RestoreRequest): { bridge: string; families: IPFamilyNum[] } | undefined {
  const n = loadDnsnameConf(req.stdin, req.args);
  const s = readState(networkDir(baseDir(req.env), n.conf.name));
  if (s.confText === undefined) return undefined;
  return { bridge: confOf(s).interface ?? n.attachment.bridge, families: dnsFamilies(n.attachment.addresses) };
}

/** The families whose iptables works here (ADD skips the others with a warning, so there is nothing to restore). */
async function usableFamilies(req: RestoreRequest, families: readonly IPFamilyNum[]): Promise<IPFamilyNum[]> {
  const usable: IPFamilyNum[] = [];
  for (const f of families) if (await iptablesUsableOnce(req, f)) usable.push(f);
  return usable;
}

export const restorer: Restorer = {
  async restore(req) {
    const plan = planOf(req);
    if (!plan) return [];
    const inserted = await acceptDns(plan.bridge, await usableFamilies(req, plan.families), () => undefined);
    return inserted.length ? [`DNS to ${plan.bridge}`] : [];
  },
  async marks(req) {
    const plan = planOf(req);
    if (!plan) return [];
    return dnsRules(plan.bridge, await usableFamilies(req, plan.families)).map((r) => ({
      kind: "iptables-rule",
      family: r.family,
      table: "filter",
      rule: `-A INPUT ${r.rule.join(" ")}`,
    }));
  },
  async undo(req) {
    // The rules are the network's, not the attachment's: they go only when the network's dnsmasq went with its
    // last container (as DEL's teardown) and no other network serves DNS on the bridge.
    const n = loadDnsnameConf(req.stdin, req.args);
    const d = networkDir(baseDir(req.env), n.conf.name);
    if (readState(d).confText !== undefined) return;
    await removeDnsRulesUnlessShared(d, n.attachment.bridge, () => undefined);
  },
};
