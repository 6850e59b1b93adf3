/**
 * dnsname's host firewall state, put back after a firewall reload: the INPUT rules that let DNS through to the
 * bridge its dnsmasq listens on. Nothing when the network runs no dnsmasq (it has no dnsmasq.conf); dnsmasq
 * itself and the names it serves are not firewall state and are left alone.
 * @module
 */
import { tryParseIP } from "../../../spec/ip.js";
import { iptablesFor, type IPFamilyNum } from "../../../net/iptables.js";
import type { RestoreRequest, Restorer } from "../../common/restore.js";
import { attachmentOf, loadDnsnameConf } from "./config.js";
import { acceptDns, dnsRules, removeRules } from "./firewall.js";
import { baseDir, confOf, networkDir, otherNetworkUses, readState } from "./state.js";

/** The bridge dnsmasq listens on and the families ADD opened DNS in (IPv4 always, as ADD), if the network has a dnsmasq. */
function planOf(req: RestoreRequest): { bridge: string; families: IPFamilyNum[] } | undefined {
  const n = loadDnsnameConf(req.stdin, req.args);
  const a = attachmentOf(n.prevResult!);
  const s = readState(networkDir(baseDir(req.env), n.conf.name));
  if (s.confText === undefined) return undefined;
  const families = new Set<IPFamilyNum>([4, ...a.addresses.map((x) => tryParseIP(x)!.family as IPFamilyNum)]);
  return { bridge: confOf(s).interface ?? a.bridge, families: [...families].sort() };
}

/** The families whose iptables works here (ADD skips the others with a warning, so there is nothing to restore). */
async function usableFamilies(req: RestoreRequest, families: readonly IPFamilyNum[]): Promise<IPFamilyNum[]> {
  const usable: IPFamilyNum[] = [];
  for (const f of families) if (await req.once(f === 4 ? "iptables usable" : "ip6tables usable", () => iptablesFor(f).usable())) usable.push(f);
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
    return dnsRules(plan.bridge, await usableFamilies(req, plan.families))
      .map((r) => ({ kind: "iptables-rule", family: r.family, table: "filter", rule: `-A INPUT ${r.rule.join(" ")}` }));
  },
  async undo(req) {
    // The rules are the network's, not the attachment's: they go only when the network's dnsmasq went with its
    // last container (as DEL's teardown) and no other network serves DNS on the bridge.
    const n = loadDnsnameConf(req.stdin, req.args);
    const d = networkDir(baseDir(req.env), n.conf.name);
    if (readState(d).confText !== undefined) return;
    const bridge = attachmentOf(n.prevResult!).bridge;
    if (bridge && !otherNetworkUses(d, bridge)) await removeRules(dnsRules(bridge), () => undefined);
  },
};
