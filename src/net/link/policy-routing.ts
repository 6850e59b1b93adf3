/**
 * Policy routing with iproute2: `ip rule` entries and routes with every attribute the kernel reports, read
 * numerically (`ip -N`, so tables, protocols and scopes are numbers whatever /etc/iproute2 names), and the
 * words that re-create or delete a route exactly as it was read. Used by sbr (source rules and per-interface
 * tables) and vrf (moving routes into a VRF's table).
 * @module
 */
import { parseCIDR } from "#ip/ip.js";
import { NetOpError } from "../errors.js";
import type { NetNS } from "../netns.js";
import { runIpIn } from "../tools.js";

export const TABLE_DEFAULT = 253;
export const TABLE_MAIN = 254;
export const TABLE_LOCAL = 255;

/** Kernel route scopes (rtm_scope). */
export const SCOPE_UNIVERSE = 0;
export const SCOPE_LINK = 253;
export const SCOPE_HOST = 254;

type Json = Record<string, unknown>;

/** One `ip rule` entry. */
export interface IpRule {
  family: 4 | 6;
  priority: number;
  /** The source selector as `addr/prefix`; undefined for `from all`. */
  src?: string;
  /** The table it looks up; undefined for rules with another action (goto, nop, blackhole...). */
  table?: number;
}

/** A route as the kernel holds it (the fields the Go plugins copy when they move a route to another table). */
export interface KernelRoute {
  family: 4 | 6;
  /** Kernel route type number (1 unicast, 2 local, 3 broadcast...). */
  type: number;
  /** `addr/prefix`; `0.0.0.0/0` or `::/0` for default routes. */
  dst: string;
  gw?: string;
  dev?: string;
  table: number;
  protocol?: number;
  scope: number;
  /** The preferred source address (`src`). */
  src?: string;
  metric?: number;
  /** IPv6 router preference (`low`, `medium`, `high`). */
  pref?: string;
  mtu?: number;
  advmss?: number;
}

const ROUTE_TYPES: Record<number, string> = {
  1: "unicast",
  2: "local",
  3: "broadcast",
  4: "anycast",
  5: "multicast",
  6: "blackhole",
  7: "unreachable",
  8: "prohibit",
  9: "throw",
  10: "nat",
};

const num = (v: unknown): number | undefined => (v === undefined || v === null || v === "" ? undefined : Number(v));

/** A host address or `addr` plus a `len` field as `addr/prefix`. */
function withPrefix(addr: string, family: 4 | 6, len: unknown): string {
  const prefix = num(len) ?? (family === 4 ? 32 : 128);
  return parseCIDR(`${addr}/${prefix}`).text;
}

export function parseRule(j: Json, family: 4 | 6): IpRule {
  const rule: IpRule = { family, priority: Number(j["priority"] ?? 0) };
  const src = j["src"];
  if (typeof src === "string" && src !== "all") rule.src = withPrefix(src, family, j["srclen"]);
  const table = num(j["table"]);
  if (table !== undefined && Number.isInteger(table)) rule.table = table;
  return rule;
}

export function parseRoute(j: Json): KernelRoute {
  const rawDst = String(j["dst"]);
  const family: 4 | 6 = rawDst.includes(":") || String(j["gateway"] ?? "").includes(":") ? 6 : 4;
  const dst = rawDst === "default" ? (family === 4 ? "0.0.0.0/0" : "::/0") : withPrefix(rawDst.split("/")[0]!, family, rawDst.split("/")[1]);
  const route: KernelRoute = {
    family,
    type: num(j["type"]) ?? 1,
    dst,
    table: num(j["table"]) ?? TABLE_MAIN,
    scope: num(j["scope"]) ?? SCOPE_UNIVERSE,
  };
  if (j["gateway"]) route.gw = String(j["gateway"]);
  if (j["dev"]) route.dev = String(j["dev"]);
  if (j["protocol"] !== undefined) route.protocol = num(j["protocol"]);
  if (j["prefsrc"]) route.src = String(j["prefsrc"]);
  if (j["metric"] !== undefined) route.metric = num(j["metric"]);
  if (j["pref"]) route.pref = String(j["pref"]);
  for (const m of (j["metrics"] ?? []) as Json[]) {
    if (m["mtu"] !== undefined) route.mtu = num(m["mtu"]);
    if (m["advmss"] !== undefined) route.advmss = num(m["advmss"]);
  }
  return route;
}

/**
 * The words of `ip route replace|del ...` for a route (in `table`, default its own): the same type,
 * destination, gateway, device, protocol, scope, source, metric and preference, so the kernel sees the route
 * it listed (with its flags cleared, as the Go plugins do).
 */
export function kernelRouteWords(r: KernelRoute, table = r.table): string[] {
  const w: string[] = [];
  if (r.type !== 1) w.push(ROUTE_TYPES[r.type] ?? String(r.type));
  w.push(r.dst);
  if (r.gw) w.push("via", r.gw);
  if (r.dev) w.push("dev", r.dev);
  if (r.protocol !== undefined) w.push("proto", String(r.protocol));
  w.push("scope", String(r.scope));
  if (r.src) w.push("src", r.src);
  if (r.metric !== undefined) w.push("metric", String(r.metric));
  if (r.pref) w.push("pref", r.pref);
  w.push("table", String(table));
  if (r.mtu) w.push("mtu", String(r.mtu));
  if (r.advmss) w.push("advmss", String(r.advmss));
  return w;
}

/**
 * The words after `ip rule add|del` for a source rule: `from <src>` (which also gives iproute2 the family, so
 * the words work inside `ip -batch`), the table, and the priority when one is known.
 */
export function sourceRuleWords(rule: { src: string; table: number; priority?: number }): string[] {
  const w = ["from", rule.src, "table", String(rule.table)];
  if (rule.priority !== undefined) w.push("priority", String(rule.priority));
  return w;
}

async function ipJson(ns: NetNS, args: string[], operation: string): Promise<Json[]> {
  const { stdout } = await runIpIn(ns, ["-N", "-json", ...args], operation);
  const text = stdout.trim();
  return text ? (JSON.parse(text) as Json[]) : [];
}

/** Every IPv4 and IPv6 rule of a namespace. */
export async function listRules(ns: NetNS): Promise<IpRule[]> {
  const [v4, v6] = await Promise.all([
    ipJson(ns, ["-4", "rule", "show"], `list IPv4 rules in ${ns}`),
    ipJson(ns, ["-6", "rule", "show"], `list IPv6 rules in ${ns}`),
  ]);
  return [...v4.map((j) => parseRule(j, 4)), ...v6.map((j) => parseRule(j, 6))];
}

/** Every route of every table, both families (cloned/cache entries excluded). */
export async function listAllRoutes(ns: NetNS): Promise<KernelRoute[]> {
  return (await ipJson(ns, ["-d", "route", "show", "table", "all"], `list routes in ${ns}`)).map(parseRoute);
}

/**
 * One `ip` command: global options (e.g. `-6`, which `ip rule` needs for IPv6 since it assumes IPv4) and the
 * words after them.
 */
export interface IpCommand {
  options?: readonly string[];
  words: readonly string[];
}

/** A failed run of `ip` commands: which command (0-based) failed, when iproute2 says. */
export class IpCommandsError extends NetOpError {
  constructor(
    operation: string,
    reason: string,
    readonly failedIndex: number | undefined,
    exitCode: number | null,
  ) {
    super(operation, reason, exitCode);
    this.name = "IpCommandsError";
  }
}

const sameOptions = (a: IpCommand, b: IpCommand) => (a.options ?? []).join(" ") === (b.options ?? []).join(" ");

/**
 * Runs `ip` commands in `ns`, one `ip -batch` process per run of consecutive commands with the same options.
 * Without `force` it stops at the first failure and the error says which command it was; with `force` it runs
 * them all and fails if any failed.
 */
export async function runIpCommands(ns: NetNS, commands: readonly IpCommand[], operation: string, opts: { force?: boolean } = {}): Promise<void> {
  let failure: IpCommandsError | undefined;
  for (let start = 0; start < commands.length; ) {
    let end = start + 1;
    while (end < commands.length && sameOptions(commands[end]!, commands[start]!)) end++;
    const group = commands.slice(start, end);
    const input = group.map((c) => c.words.join(" ")).join("\n") + "\n";
    try {
      await runIpIn(ns, [...(opts.force ? ["-force"] : []), ...(group[0]!.options ?? []), "-batch", "-"], operation, input);
    } catch (e) {
      if (!(e instanceof NetOpError)) throw e;
      const index = e.step !== undefined ? start + e.step : undefined;
      const failed = index !== undefined ? commands[index] : undefined;
      const where = failed ? ` (ip ${[...(failed.options ?? []), ...failed.words].join(" ")})` : "";
      failure ??= new IpCommandsError(`${operation}${where}`, e.reason, index, e.exitCode);
      if (!opts.force) throw failure;
    }
    start = end;
  }
  if (failure) throw failure;
}
