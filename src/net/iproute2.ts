/**
 * The network layer backed by iproute2: `ip -json` to read, `ip` (batched where several changes go to one
 * namespace) to change. Every failure names the operation and carries the kernel's reason.
 * @module
 */
import { NetOpError } from "./exec.js";
import type { NetNS } from "./netns.js";
import type { Address, Link, LinkChange, RouteSpec, VethSpec } from "./types.js";

type Json = Record<string, unknown>;

/**
 * How `ip ... netns <X>` names a namespace: always a path (iproute2 takes a word without `/` as a name under
 * /run/netns), /proc/<our pid>/ns/net for this process's own.
 */
const nsTarget = (ns: NetNS): string => ns.path ?? `/proc/${process.pid}/ns/net`;

/** `brd +` for IPv4 (the broadcast address, as the Go plugins' netlink library sets it); nothing for IPv6. */
const broadcastWords = (cidr: string): string[] => (cidr.includes(":") ? [] : ["brd", "+"]);

function parseLink(j: Json): Link {
  const linkinfo = (j["linkinfo"] ?? {}) as Json;
  const slave = (linkinfo["info_slave_data"] ?? undefined) as Json | undefined;
  const link: Link = {
    index: Number(j["ifindex"]),
    name: String(j["ifname"]),
    mtu: Number(j["mtu"] ?? 0),
    mac: String(j["address"] ?? ""),
    up: Array.isArray(j["flags"]) && (j["flags"] as string[]).includes("UP"),
    operstate: String(j["operstate"] ?? "UNKNOWN"),
    // The PROMISC flag is what was asked for (`ip link set promisc on`); promiscuity also counts packet sockets.
    promisc: Array.isArray(j["flags"]) && (j["flags"] as string[]).includes("PROMISC"),
  };
  if (linkinfo["info_kind"]) link.kind = String(linkinfo["info_kind"]);
  if (linkinfo["info_data"]) link.info = linkinfo["info_data"] as Json;
  if (j["master"]) link.master = String(j["master"]);
  if (j["link_index"] !== undefined) link.peerIndex = Number(j["link_index"]);
  if (j["ifalias"]) link.alias = String(j["ifalias"]);
  if (linkinfo["info_slave_kind"] === "bridge" && slave) {
    link.bridgePort = { hairpin: slave["hairpin"] === true, isolated: slave["isolated"] === true };
  }
  return link;
}

function parseAddresses(j: Json): Address[] {
  const infos = (j["addr_info"] ?? []) as Json[];
  return infos.map((a) => ({
    cidr: `${String(a["local"])}/${String(a["prefixlen"])}`,
    family: a["family"] === "inet6" ? 6 : 4,
    scope: String(a["scope"] ?? "global"),
    tentative: a["tentative"] === true,
    dadFailed: a["dadfailed"] === true,
  }));
}

/** `ip route` words for a route. */
export function routeWords(r: RouteSpec): string[] {
  const w = [r.dst];
  if (r.gw) w.push("via", r.gw);
  if (r.dev) w.push("dev", r.dev);
  if (r.src) w.push("src", r.src);
  if (r.scope !== undefined) w.push("scope", String(r.scope));
  if (r.table !== undefined) w.push("table", String(r.table));
  if (r.metric !== undefined) w.push("metric", String(r.metric));
  if (r.mtu) w.push("mtu", String(r.mtu));
  if (r.advmss) w.push("advmss", String(r.advmss));
  return w;
}

/**
 * `ip link add` words for a veth pair. Both ends get txqueuelen 0, as the Go plugins' veths have (veth is
 * queueless anyway; the value only shows in `ip link`).
 */
export function vethAddWords(spec: VethSpec): string[] {
  const words = ["link", "add", "name", spec.name];
  if (spec.mtu) words.push("mtu", String(spec.mtu));
  if (spec.mac) words.push("address", spec.mac);
  words.push("txqueuelen", "0", "type", "veth", "peer", "name", spec.peerName);
  if (spec.mtu) words.push("mtu", String(spec.mtu));
  words.push("txqueuelen", "0", "netns", nsTarget(spec.peerNs));
  return words;
}

/** `ip link set` words for a change (master first: enslaving a link may reset its state). */
function linkSetWords(name: string, c: LinkChange): string[] {
  const w = ["link", "set", "dev", name];
  if (c.master !== undefined) w.push(...(c.master === null ? ["nomaster"] : ["master", c.master]));
  if (c.mtu !== undefined) w.push("mtu", String(c.mtu));
  if (c.mac !== undefined) w.push("address", c.mac);
  if (c.promisc !== undefined) w.push("promisc", c.promisc ? "on" : "off");
  if (c.allmulti !== undefined) w.push("allmulticast", c.allmulti ? "on" : "off");
  if (c.txqlen !== undefined) w.push("txqueuelen", String(c.txqlen));
  if (c.alias !== undefined) w.push("alias", c.alias);
  if (c.up !== undefined) w.push(c.up ? "up" : "down");
  return w;
}

/** Several `ip` commands for one namespace, run by one process. */
export class IpBatch {
  private readonly lines: string[][] = [];
  constructor(private readonly ns: NetNS) {}
  add(...words: string[]): this {
    this.lines.push(words);
    return this;
  }
  setLink(name: string, change: LinkChange): this {
    return this.add(...linkSetWords(name, change));
  }
  addAddress(dev: string, cidr: string, extra: string[] = []): this {
    return this.add("addr", "add", cidr, ...broadcastWords(cidr), "dev", dev, ...extra);
  }
  /** Adds an address, or refreshes it when it is there already (never "File exists"). */
  replaceAddress(dev: string, cidr: string): this {
    return this.add("addr", "replace", cidr, ...broadcastWords(cidr), "dev", dev);
  }
  /** Prints a link as JSON (see runJson). */
  showLink(name: string): this {
    return this.add("link", "show", "dev", name);
  }
  /** Prints a link's addresses as JSON (see runJson). */
  showAddresses(name: string): this {
    return this.add("addr", "show", "dev", name);
  }
  addRoute(route: RouteSpec): this {
    return this.add("route", "append", ...routeWords(route));
  }
  get size(): number {
    return this.lines.length;
  }
  /** Runs the batch; the error names the command that failed. */
  async run(operation: string): Promise<void> {
    if (this.lines.length === 0) return;
    if (this.lines.length === 1) {
      await this.ns.runIp([...this.lines[0]!], `${operation} (ip ${this.lines[0]!.join(" ")})`);
      return;
    }
    await this.runBatch([], operation);
  }

  /**
   * Runs the batch with `-json -d`; resolves with the output of each command that prints something (the
   * `show` commands), in order.
   */
  async runJson(operation: string): Promise<Json[][]> {
    if (this.lines.length === 0) return [];
    const stdout = await this.runBatch(["-json", "-d"], operation);
    return stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Json[]);
  }

  private async runBatch(options: string[], operation: string): Promise<string> {
    const quote = (w: string) => (/^[\w.:/@%+-]+$/.test(w) ? w : `"${w.replace(/(["\\])/g, "\\$1")}"`);
    const input = this.lines.map((l) => l.map(quote).join(" ")).join("\n") + "\n";
    try {
      return (await this.ns.runIp([...options, "-batch", "-"], operation, input)).stdout;
    } catch (e) {
      if (!(e instanceof NetOpError)) throw e;
      const m = /Command failed -:(\d+)/.exec(e.reason);
      const failed = m ? this.lines[Number(m[1]) - 1] : undefined;
      const reason = e.reason.split("\n").filter((l) => !l.startsWith("Command failed")).join("; ");
      throw new NetOpError(failed ? `${operation} (ip ${failed.join(" ")})` : operation, reason, e.exitCode);
    }
  }
}

/** Link details from `ip -json -d link show` output. */
export const linkFromJson = (j: Record<string, unknown>): Link => parseLink(j);
/** Addresses from `ip -json addr show` output. */
export const addressesFromJson = (j: Record<string, unknown>): Address[] => parseAddresses(j);

/** Reads and changes links, addresses and routes with iproute2. */
export class IpRoute2 {
  batch(ns: NetNS): IpBatch {
    return new IpBatch(ns);
  }

  private async ipJson(ns: NetNS, args: string[], operation: string): Promise<Json[]> {
    const { stdout } = await ns.runIp(["-json", ...args], operation);
    const text = stdout.trim();
    return text ? (JSON.parse(text) as Json[]) : [];
  }

  async listLinks(ns: NetNS): Promise<Link[]> {
    return (await this.ipJson(ns, ["-d", "link", "show"], `list links in ${ns}`)).map(parseLink);
  }

  /** A link by name; undefined when there is none. */
  async getLink(ns: NetNS, name: string): Promise<Link | undefined> {
    try {
      const links = await this.ipJson(ns, ["-d", "link", "show", "dev", name], `read link ${name} in ${ns}`);
      return links[0] ? parseLink(links[0]) : undefined;
    } catch (e) {
      if ((e as { isNotFound?: boolean }).isNotFound) return undefined;
      throw e;
    }
  }

  /** Creates a veth pair with each end directly in its own namespace (no name clash in between). */
  async addVeth(spec: VethSpec): Promise<void> {
    await this.batch(spec.ns).add(...vethAddWords(spec)).run(`create veth pair ${spec.name}/${spec.peerName}`);
  }

  /** Creates a link of a simple kind (`bridge`, `dummy`, `macvlan ...`): `ip link add name X [mtu] type <kind...>`. */
  async addLink(ns: NetNS, name: string, typeWords: string[], opts: { mtu?: number; mac?: string; link?: string; netns?: NetNS } = {}): Promise<void> {
    const words = ["link", "add"];
    if (opts.link) words.push("link", opts.link);
    words.push("name", name);
    if (opts.mtu) words.push("mtu", String(opts.mtu));
    if (opts.mac) words.push("address", opts.mac);
    if (opts.netns) words.push("netns", nsTarget(opts.netns));
    words.push("type", ...typeWords);
    await ns.runIp([...words], `create ${typeWords[0]} ${name} in ${ns}`);
  }

  async setLink(ns: NetNS, name: string, change: LinkChange): Promise<void> {
    await this.batch(ns).setLink(name, change).run(`configure link ${name} in ${ns}`);
  }

  /** Moves a link to another namespace, optionally renaming it there. */
  async moveLink(from: NetNS, name: string, to: NetNS, newName?: string): Promise<void> {
    const words = ["link", "set", "dev", name, "netns", nsTarget(to)];
    await from.runIp([...words], `move link ${name} from ${from} to ${to}`);
    if (newName && newName !== name) await this.renameLink(to, name, newName);
  }

  async renameLink(ns: NetNS, name: string, newName: string): Promise<void> {
    await ns.runIp(["link", "set", "dev", name, "name", newName], `rename link ${name} to ${newName} in ${ns}`);
  }

  /** Bridge-port flags of a link enslaved to a bridge. */
  async setBridgePort(ns: NetNS, name: string, flags: { hairpin?: boolean; isolated?: boolean }): Promise<void> {
    const words = ["link", "set", "dev", name, "type", "bridge_slave"];
    if (flags.hairpin !== undefined) words.push("hairpin", flags.hairpin ? "on" : "off");
    if (flags.isolated !== undefined) words.push("isolated", flags.isolated ? "on" : "off");
    if (words.length > 6) await ns.runIp([...words], `set bridge port flags of ${name}`);
  }

  /** Deletes a link; false when it did not exist. */
  async deleteLink(ns: NetNS, name: string): Promise<boolean> {
    try {
      await ns.runIp(["link", "del", "dev", name], `delete link ${name} in ${ns}`);
      return true;
    } catch (e) {
      if ((e as { isNotFound?: boolean }).isNotFound) return false;
      throw e;
    }
  }

  async listAddresses(ns: NetNS, name: string): Promise<Address[]> {
    const out = await this.ipJson(ns, ["addr", "show", "dev", name], `read addresses of ${name} in ${ns}`);
    return out.flatMap(parseAddresses);
  }

  async addAddress(ns: NetNS, name: string, cidr: string, extra: string[] = []): Promise<void> {
    await ns.runIp(["addr", "add", cidr, ...broadcastWords(cidr), "dev", name, ...extra], `add address ${cidr} to ${name} in ${ns}`);
  }

  async deleteAddress(ns: NetNS, name: string, cidr: string): Promise<void> {
    await ns.runIp(["addr", "del", cidr, "dev", name], `delete address ${cidr} from ${name} in ${ns}`);
  }

  /** Routes of one family (all tables when `table` is "all"). */
  async listRoutes(ns: NetNS, family: 4 | 6, table?: number | "all"): Promise<RouteSpec[]> {
    const args = [`-${family}`, "route", "show"];
    if (table !== undefined) args.push("table", String(table));
    const out = await this.ipJson(ns, args, `read IPv${family} routes in ${ns}`);
    const defaultDst = family === 4 ? "0.0.0.0/0" : "::/0";
    return out.map((r) => {
      let dst = String(r["dst"]);
      if (dst === "default") dst = defaultDst;
      else if (!dst.includes("/")) dst += family === 4 ? "/32" : "/128";
      const route: RouteSpec = { dst };
      if (r["gateway"]) route.gw = String(r["gateway"]);
      if (r["dev"]) route.dev = String(r["dev"]);
      if (r["prefsrc"]) route.src = String(r["prefsrc"]);
      if (r["scope"]) route.scope = String(r["scope"]);
      if (r["table"] !== undefined) route.table = r["table"] === "main" ? 254 : Number(r["table"]);
      if (r["metric"] !== undefined) route.metric = Number(r["metric"]);
      if (r["protocol"]) route.protocol = String(r["protocol"]);
      return route;
    });
  }

  async addRoute(ns: NetNS, route: RouteSpec): Promise<void> {
    await ns.runIp(["route", "append", ...routeWords(route)], `add route ${routeWords(route).join(" ")} in ${ns}`);
  }

  async deleteRoute(ns: NetNS, route: RouteSpec): Promise<void> {
    await ns.runIp(["route", "del", ...routeWords(route)], `delete route ${routeWords(route).join(" ")} in ${ns}`);
  }
}

/** The process-wide backend. */
export const ip = new IpRoute2();
