/**
 * What sbr does, as data: from the prevResult, the config and what the container namespace holds (its rules
 * and routes), the `ip` commands of an ADD (each with the command that undoes it), the rules a DEL removes,
 * and what a CHECK expects. Pure, so every decision is unit-tested without a kernel.
 * @module
 */

import { cidrContains, networkOf, parseCIDR, parseIP } from "#ip/ip.js";
import {
  type IpCommand,
  type IpRule,
  type KernelRoute,
  kernelRouteWords,
  SCOPE_LINK,
  sourceRuleWords,
  TABLE_DEFAULT,
  TABLE_LOCAL,
  TABLE_MAIN,
} from "#net/link/policy-routing.js";
import { invalidConfig } from "#spec/errors.js";
import type { IPConfig, Result100 } from "#spec/result/index.js";

/** The first table id ADD considers, as in the Go plugin. */
export const FIRST_TABLE_ID = 100;

/** One `ip` command, and the command that reverts it. */
export interface IpStep extends IpCommand {
  undo?: IpCommand;
}

export interface SbrAddPlan {
  /** Commands that must all succeed; on a failure the done ones are undone. */
  steps: IpStep[];
  /** Best-effort commands after them (addSourceHints' main-table changes): a failure is only a warning. */
  bestEffort: IpStep[];
  /** The table each address's rule points at, in the order of `ips`. */
  tables: number[];
}

export interface SbrState {
  rules: IpRule[];
  /** Every route of the namespace, all tables. */
  routes: KernelRoute[];
}

export interface SbrSettings {
  ifName: string;
  table?: number;
  gateways: { 4?: string; 6?: string };
  addSourceHints: boolean;
}

/**
 * The prevResult addresses sbr routes for: those without an interface index, and those whose index names
 * CNI_IFNAME (an index outside the interface list counts as a match, as in the Go plugin).
 */
export function selectIPs(ifName: string, prev: Result100): IPConfig[] {
  if (!prev.ips?.length) {
    throw invalidConfig(`No IP addresses supplied on interface: ${ifName}`, 'the prevResult has no "ips"');
  }
  const interfaces = prev.interfaces ?? [];
  return prev.ips.filter(
    (c) => c.interface === undefined || c.interface < 0 || c.interface >= interfaces.length || interfaces[c.interface]!.name === ifName,
  );
}

/** `addr/32` or `addr/128`: a rule's source is one address, never the subnet. */
export const hostPrefix = (cidr: string): string => {
  const ip = parseCIDR(cidr).ip;
  return `${ip.text}/${ip.family === 4 ? 32 : 128}`;
};

/**
 * The first table id from `candidate` on that no rule and no route uses. (The Go plugin looks only at rules
 * and main-table routes, so it may pick a table that already holds routes; looking at every table avoids
 * mixing our routes with someone else's, and picks the same id in a fresh namespace.)
 */
export function nextFreeTable(state: SbrState, candidate: number): number {
  const used = new Set<number>([...state.rules.flatMap((r) => (r.table === undefined ? [] : [r.table])), ...state.routes.map((r) => r.table)]);
  let table = candidate;
  while (used.has(table)) table++;
  return table;
}

/** The gateway of an address's default route in its table: the static one of its family, else its own. */
export function gatewayFor(ipc: IPConfig, gateways: SbrSettings["gateways"]): string | undefined {
  return gateways[parseCIDR(ipc.address).ip.family] ?? ipc.gateway;
}

/** Whether ADD copies `route` into an address's table: its source or gateway is in the subnet, or it has neither. */
function belongsTo(route: KernelRoute, address: string): boolean {
  const cidr = parseCIDR(address);
  const inSubnet = (ip: string | undefined) => ip !== undefined && cidrContains(cidr, parseIP(ip));
  return inSubnet(route.src) || inSubnet(route.gw) || (!route.src && !route.gw);
}

/** `ip rule` assumes IPv4 unless told otherwise (and then keeps assuming it for the rest of a batch). */
const ruleOptions = (src: string): string[] => [parseCIDR(src).ip.family === 6 ? "-6" : "-4"];

const ruleStep = (src: string, table: number): IpStep => {
  const w = sourceRuleWords({ src, table });
  const options = ruleOptions(src);
  return { options, words: ["rule", "add", ...w], undo: { options, words: ["rule", "del", ...w] } };
};

/**
 * ADD. With `table`: one `from <ip> lookup <table>` rule per address, nothing else. Without: per address a
 * fresh table (the first free id from 100 on, then the next free one), a rule into it, a default route via
 * the gateway, and a copy of every main-table route of the interface that belongs to the address; then the
 * interface's main-table routes are removed (with addSourceHints: only the non-link-scope ones, and the
 * subnet routes get the address as source hint).
 */
export function planSbrAdd(ips: IPConfig[], state: SbrState, s: SbrSettings): SbrAddPlan {
  if (s.table !== undefined) {
    return { steps: ips.map((c) => ruleStep(hostPrefix(c.address), s.table!)), bestEffort: [], tables: ips.map(() => s.table!) };
  }
  const linkRoutes = state.routes.filter((r) => r.table === TABLE_MAIN && r.dev === s.ifName);
  const plan: SbrAddPlan = { steps: [], bestEffort: [], tables: [] };
  let table = nextFreeTable(state, FIRST_TABLE_ID);
  for (const ipc of ips) {
    plan.tables.push(table);
    plan.steps.push(ruleStep(hostPrefix(ipc.address), table));
    const gw = gatewayFor(ipc, s.gateways);
    if (gw) {
      const dst = parseCIDR(ipc.address).ip.family === 4 ? "0.0.0.0/0" : "::/0";
      const route = [dst, "via", gw, "dev", s.ifName, "table", String(table)];
      plan.steps.push({ words: ["route", "add", ...route], undo: { words: ["route", "del", ...route] } });
    }
    // A static gateway wins: the interface's own default route of that family is not copied over it (the Go
    // plugin copies it, and so replaces the static gateway's route whenever main has a default route).
    const family = parseCIDR(ipc.address).ip.family;
    const replacesStatic = (r: KernelRoute) => s.gateways[family] !== undefined && r.family === family && parseCIDR(r.dst).prefix === 0;
    for (const r of linkRoutes.filter((r) => belongsTo(r, ipc.address) && !replacesStatic(r))) {
      const words = kernelRouteWords(r, table);
      plan.steps.push({ words: ["route", "replace", ...words], undo: { words: ["route", "del", ...words] } });
    }
    table = nextFreeTable(state, table + 1);
  }
  const removal = (r: KernelRoute): IpStep => ({
    words: ["route", "del", ...kernelRouteWords(r)],
    undo: { words: ["route", "add", ...kernelRouteWords(r)] },
  });
  if (!s.addSourceHints) {
    plan.steps.push(...linkRoutes.map(removal));
    return plan;
  }
  for (const ipc of ips) {
    const cidr = parseCIDR(ipc.address);
    plan.bestEffort.push({
      words: ["route", "replace", networkOf(cidr).text, "dev", s.ifName, "src", cidr.ip.text, "scope", "link", "table", String(TABLE_MAIN)],
    });
  }
  plan.bestEffort.push(...linkRoutes.filter((r) => r.scope !== SCOPE_LINK).map(removal));
  return plan;
}

/**
 * DEL: every rule (of `table` only, when set) whose source is one of `addresses`, the interface's current
 * addresses and the prevResult's. As in the Go plugin the routes stay: they go with the interface.
 */
export function planSbrDel(rules: IpRule[], addresses: string[], table?: number): IpStep[] {
  const ips = new Set(addresses.map((a) => parseCIDR(a.includes("/") ? a : `${a}/${a.includes(":") ? 128 : 32}`).ip.text));
  return rules
    .filter((r) => r.src && ips.has(parseCIDR(r.src).ip.text) && (table === undefined || r.table === table))
    .map((r) => ({
      options: ruleOptions(r.src!),
      words: ["rule", "del", ...sourceRuleWords({ src: r.src!, table: r.table ?? 0, priority: r.priority })],
    }));
}

const RESERVED_TABLES = new Set([0, TABLE_DEFAULT, TABLE_MAIN, TABLE_LOCAL]);

/**
 * CHECK: for every address a source rule (into `table` when set, else into a table of its own), and without
 * `table`, that table's default route via the address's gateway on the interface. Returns what is missing.
 */
export function verifySbr(ips: IPConfig[], state: SbrState, s: SbrSettings): string[] {
  const problems: string[] = [];
  for (const ipc of ips) {
    const src = hostPrefix(ipc.address);
    const rules = state.rules.filter((r) => r.src === src && r.table !== undefined);
    const rule = s.table !== undefined ? rules.find((r) => r.table === s.table) : rules.find((r) => !RESERVED_TABLES.has(r.table!));
    if (!rule) {
      problems.push(`no rule "from ${src} lookup ${s.table ?? "<table>"}"`);
      continue;
    }
    if (s.table !== undefined) continue;
    const gw = gatewayFor(ipc, s.gateways);
    if (!gw) continue;
    const family = parseCIDR(ipc.address).ip.family;
    const dst = family === 4 ? "0.0.0.0/0" : "::/0";
    const gwText = parseIP(gw).text;
    const found = state.routes.some(
      (r) => r.table === rule.table && r.dst === dst && r.dev === s.ifName && r.gw !== undefined && parseIP(r.gw).text === gwText,
    );
    if (!found) problems.push(`table ${rule.table} has no default route via ${gw} dev ${s.ifName}`);
  }
  return problems;
}
