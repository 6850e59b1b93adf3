/**
 * The bridge plugin's host firewall state, put back after a firewall reload: the attachment's masquerading
 * (`ipMasq`, with the engine its ADD used) and its MAC spoof check (`macspoofchk`), from the cached result's
 * addresses and interfaces.
 * @module
 */

import type { FirewallMark } from "#net/firewall/firewall-marks.js";
import { type IPMasqRules, type IPMasqTarget, ipMasqRules, teardownIPMasq } from "#net/firewall/ipmasq.js";
import { invalidConfig } from "#spec/errors.js";
import type { Result100 } from "#spec/result/index.js";
import { ipamType } from "../../common/ipam.js";
import { cachedResultOf, firewallOnce, type RestoreRequest, type Restorer } from "../../common/restore.js";
import { type BridgeConf, loadBridgeConf } from "./config.js";
import { restoreSpoofCheck, spoofCheckMarks, teardownSpoofCheck } from "./spoofcheck.js";

/** What the attachment's ADD set up on the host firewall. */
interface Plan {
  masq?: { target: IPMasqTarget; rules: IPMasqRules };
  spoofCheck?: { hostIface: string; mac: string; refId: string };
}

/** The host veth (interface 1 of a bridge result) and the container's MAC (its `ifName` in a sandbox). */
function spoofCheckOf(req: RestoreRequest, result: Result100): Plan["spoofCheck"] {
  const hostIface = result.interfaces?.[1]?.name;
  const mac = result.interfaces?.find((i) => i.name === req.ifName && i.sandbox)?.mac;
  if (!hostIface || !mac) {
    throw invalidConfig("macspoofchk: the cached result names no host veth or container MAC", JSON.stringify(result.interfaces ?? []));
  }
  return { hostIface, mac, refId: `${req.containerID}-${req.ifName}` };
}

async function planOf(req: RestoreRequest): Promise<Plan> {
  const n: BridgeConf = loadBridgeConf(req.stdin, req.args);
  const result = cachedResultOf(n.conf);
  const plan: Plan = {};
  if (!result) return plan;
  const addresses = (result.ips ?? []).map((i) => i.address);
  if (n.ipMasq && ipamType(n.conf) && addresses.length) {
    const rules = await firewallOnce(req, ipMasqRules, n.ipMasqBackend);
    plan.masq = { target: { addresses, network: n.conf.name, ifName: req.ifName, containerID: req.containerID }, rules };
  }
  if (n.macspoofchk) plan.spoofCheck = spoofCheckOf(req, result);
  return plan;
}

export const restorer: Restorer = {
  async restore(req) {
    const plan = await planOf(req);
    const done: string[] = [];
    // In ADD's order (the spoof check first), so tables and chains come back in their order.
    const s = plan.spoofCheck;
    if (s && (await restoreSpoofCheck(s.hostIface, s.mac, s.refId))) done.push("macspoofchk");
    if (plan.masq && (await plan.masq.rules.restore(plan.masq.target))) done.push(`ipMasq (${plan.masq.rules.name})`);
    return done;
  },
  async marks(req) {
    const plan = await planOf(req);
    const marks: FirewallMark[] = [];
    if (plan.spoofCheck) marks.push(...spoofCheckMarks(plan.spoofCheck.refId));
    if (plan.masq) marks.push(...plan.masq.rules.marks(plan.masq.target));
    return marks;
  },
  async undo(req) {
    const plan = await planOf(req);
    if (plan.spoofCheck) await teardownSpoofCheck(plan.spoofCheck.refId);
    if (plan.masq) await teardownIPMasq(plan.masq.target);
  },
};
