/**
 * The network layer's links, addresses and routes: `ip -json` to read, `ip` (batched where several changes go
 * to one namespace) to change — or, under the standalone build, the same steps over a route-netlink socket
 * (rtnetlink-ops.ts), which saves a process each. Every failure names the operation and carries the kernel's
 * reason, in `ip`'s words either way.
 * @module
 */
import { NetOpError } from "./exec.js";
import { broadcastWords, nsTarget, opWords, routeWords, vethLink, type IpOp } from "./ip-ops.js";
import type { NetNS } from "./netns.js";
import { netlinkCanRun, openNetlink, type NetlinkSession } from "./rtnetlink-ops.js";
import type { Address, Link, LinkChange, NewLink, RouteSpec, ShownLink, VethSpec } from "./types.js";

export { routeWords, vethAddWords } from "./ip-ops.js";

type Json = Record<string, unknown>;

function parseLink(j: Json): Link {
  const linkinfo = (j["linkinfo"] ?? {}) as Json;
  const slave = (linkinfo["info_slave_data"] ?? undefined) as Json | undefined;
  const flags = Array.isArray(j["flags"]) ? (j["flags"] as string[]) : [];
  const link: Link = {
    index: Number(j["ifindex"]),
    name: String(j["ifname"]),
    mtu: Number(j["mtu"] ?? 0),
    mac: String(j["address"] ?? ""),
    up: flags.includes("UP"),
    operstate: String(j["operstate"] ?? "UNKNOWN"),
    // The PROMISC flag is what was asked for (`ip link set promisc on`); promiscuity also counts packet sockets.
    promisc: flags.includes("PROMISC"),
    allmulti: flags.includes("ALLMULTI"),
    txqlen: Number(j["txqlen"] ?? 0), // `ip -json` leaves out a queue length of 0
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

/** Link details from `ip -json -d link show` output. */
export const linkFromJson = (j: Record<string, unknown>): Link => parseLink(j);
/** Addresses from `ip -json addr show` output. */
export const addressesFromJson = (j: Record<string, unknown>): Address[] => parseAddresses(j);

/**
 * Does `work` over a netlink socket in `ns` when every step of `ops` can go that way and the socket opens;
 * undefined when the iproute2 path has to do it.
 */
async function viaNetlink<T>(ns: NetNS, ops: readonly IpOp[], work: (session: NetlinkSession) => T): Promise<T | undefined> {
  if (!ops.every(netlinkCanRun)) return undefined;
  const session = await openNetlink(ns);
  if (!session) return undefined;
  try {
    return work(session);
  } finally {
    session.close();
  }
}

/** Several `ip` steps for one namespace, run by one process (or over one netlink socket). */
export class IpBatch {
  private readonly ops: IpOp[] = [];
  constructor(private readonly ns: NetNS) {}
  /** Any `ip` command by its words (a batch with one goes the iproute2 way). */
  add(...words: string[]): this {
    this.ops.push({ kind: "words", words });
    return this;
  }
  addLink(link: NewLink): this {
    this.ops.push({ kind: "link-add", link });
    return this;
  }
  setLink(name: string, change: LinkChange): this {
    this.ops.push({ kind: "link-set", name, change });
    return this;
  }
  /** Bridge-port flags of a link enslaved to a bridge (only the flags given). */
  setBridgePort(name: string, flags: { hairpin?: boolean; isolated?: boolean }): this {
    this.ops.push({ kind: "bridge-port", name, flags });
    return this;
  }
  deleteLink(name: string): this {
    this.ops.push({ kind: "link-del", name });
    return this;
  }
  addAddress(dev: string, cidr: string, extra: string[] = []): this {
    if (extra.length) return this.add("addr", "add", cidr, ...broadcastWords(cidr), "dev", dev, ...extra);
    this.ops.push({ kind: "addr-add", dev, cidr });
    return this;
  }
  /** Adds an address, or refreshes it when it is there already (never "File exists"). */
  replaceAddress(dev: string, cidr: string): this {
    this.ops.push({ kind: "addr-replace", dev, cidr });
    return this;
  }
  deleteAddress(dev: string, cidr: string): this {
    this.ops.push({ kind: "addr-del", dev, cidr });
    return this;
  }
  /** Reads a link back (see runShow). */
  showLink(name: string): this {
    this.ops.push({ kind: "show-link", name });
    return this;
  }
  /** Reads a link back with its addresses (see runShow). */
  showAddresses(name: string): this {
    this.ops.push({ kind: "show-addresses", name });
    return this;
  }
  /** `ip route append`: a route next to any with the same destination and metric. */
  addRoute(route: RouteSpec): this {
    return this.route("append", route);
  }
  /** `ip route add|append|replace|del`. */
  route(action: "add" | "append" | "replace" | "del", route: RouteSpec): this {
    this.ops.push({ kind: `route-${action}`, route });
    return this;
  }
  get size(): number {
    return this.ops.length;
  }

  /** Runs the batch; the error names the command that failed. */
  async run(operation: string): Promise<void> {
    await this.execute(operation);
  }

  /** Runs the batch; resolves with what each show step read, in order. */
  async runShow(operation: string): Promise<ShownLink[]> {
    return this.execute(operation);
  }

  private async execute(operation: string): Promise<ShownLink[]> {
    if (this.ops.length === 0) return [];
    const shown = await viaNetlink(this.ns, this.ops, (session) => {
      const out: ShownLink[] = [];
      for (const op of this.ops) {
        const s = session.run(op, `${operation} (ip ${opWords(op).join(" ")})`);
        if (s) out.push(s);
      }
      return out;
    });
    return shown ?? this.runIp(operation);
  }

  /** The iproute2 path: one `ip` command, or `ip -batch` (with `-json -d` when something is shown). */
  private async runIp(operation: string): Promise<ShownLink[]> {
    const lines = this.ops.map(opWords);
    const shows = this.ops.filter((op) => op.kind === "show-link" || op.kind === "show-addresses");
    if (shows.length === 0) {
      if (lines.length === 1) await this.ns.runIp([...lines[0]!], `${operation} (ip ${lines[0]!.join(" ")})`);
      else await this.runBatch(lines, [], operation);
      return [];
    }
    const stdout = await this.runBatch(lines, ["-json", "-d"], operation);
    const printed = stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Json[]);
    return shows.map((op, i) => {
      const j = printed[i]?.[0];
      if (!j) throw new NetOpError(operation, `ip printed nothing for "${opWords(op).join(" ")}"`);
      return { link: parseLink(j), addresses: op.kind === "show-addresses" ? parseAddresses(j) : [] };
    });
  }

  private async runBatch(lines: string[][], options: string[], operation: string): Promise<string> {
    const quote = (w: string) => (/^[\w.:/@%+-]+$/.test(w) ? w : `"${w.replace(/(["\\])/g, "\\$1")}"`);
    const input = lines.map((l) => l.map(quote).join(" ")).join("\n") + "\n";
    try {
      return (await this.ns.runIp([...options, "-batch", "-"], operation, input)).stdout;
    } catch (e) {
      if (!(e instanceof NetOpError)) throw e;
      const m = /Command failed -:(\d+)/.exec(e.reason);
      const failed = m ? lines[Number(m[1]) - 1] : undefined;
      const reason = e.reason.split("\n").filter((l) => !l.startsWith("Command failed")).join("; ");
      throw new NetOpError(failed ? `${operation} (ip ${failed.join(" ")})` : operation, reason, e.exitCode);
    }
  }
}

/** Reads and changes links, addresses and routes (over netlink when it can, else with iproute2). */
export class IpRoute2 {
  batch(ns: NetNS): IpBatch {
    return new IpBatch(ns);
  }

  private async ipJson(ns: NetNS, args: string[], operation: string): Promise<Json[]> {
    const { stdout } = await ns.runIp(["-json", ...args], operation);
    const text = stdout.trim();
    return text ? (JSON.parse(text) as Json[]) : [];
  }

  /** Runs one step over netlink when it can (see viaNetlink); false when the iproute2 path has to do it. */
  private async netlinkStep(ns: NetNS, op: IpOp, operation: string): Promise<boolean> {
    return (await viaNetlink(ns, [op], (s) => (s.run(op, operation), true))) ?? false;
  }

  async listLinks(ns: NetNS): Promise<Link[]> {
    const operation = `list links in ${ns}`;
    const links = await viaNetlink(ns, [], (s) => s.listLinks(operation));
    return links ?? (await this.ipJson(ns, ["-d", "link", "show"], operation)).map(parseLink);
  }

  /** A link by name; undefined when there is none. */
  async getLink(ns: NetNS, name: string): Promise<Link | undefined> {
    const operation = `read link ${name} in ${ns}`;
    try {
      const link = await viaNetlink(ns, [], (s) => s.getLink(name, operation));
      if (link) return link;
      const links = await this.ipJson(ns, ["-d", "link", "show", "dev", name], operation);
      return links[0] ? parseLink(links[0]) : undefined;
    } catch (e) {
      if ((e as { isNotFound?: boolean }).isNotFound) return undefined;
      throw e;
    }
  }

  /** Creates a veth pair with each end directly in its own namespace (no name clash in between). */
  async addVeth(spec: VethSpec): Promise<void> {
    await this.batch(spec.ns).addLink(vethLink(spec)).run(`create veth pair ${spec.name}/${spec.peerName}`);
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
    if (flags.hairpin === undefined && flags.isolated === undefined) return;
    const op: IpOp = { kind: "bridge-port", name, flags };
    const operation = `set bridge port flags of ${name}`;
    if (!(await this.netlinkStep(ns, op, operation))) await ns.runIp(opWords(op), operation);
  }

  /** Deletes a link; false when it did not exist. */
  async deleteLink(ns: NetNS, name: string): Promise<boolean> {
    const op: IpOp = { kind: "link-del", name };
    const operation = `delete link ${name} in ${ns}`;
    try {
      if (!(await this.netlinkStep(ns, op, operation))) await ns.runIp(opWords(op), operation);
      return true;
    } catch (e) {
      if ((e as { isNotFound?: boolean }).isNotFound) return false;
      throw e;
    }
  }

  async listAddresses(ns: NetNS, name: string): Promise<Address[]> {
    const operation = `read addresses of ${name} in ${ns}`;
    const viaSocket = await viaNetlink(ns, [], (s) => s.addressesOf(s.getLink(name, operation).index, operation));
    return viaSocket ?? (await this.ipJson(ns, ["addr", "show", "dev", name], operation)).flatMap(parseAddresses);
  }

  async addAddress(ns: NetNS, name: string, cidr: string, extra: string[] = []): Promise<void> {
    const operation = `add address ${cidr} to ${name} in ${ns}`;
    if (!extra.length && (await this.netlinkStep(ns, { kind: "addr-add", dev: name, cidr }, operation))) return;
    await ns.runIp(["addr", "add", cidr, ...broadcastWords(cidr), "dev", name, ...extra], operation);
  }

  async deleteAddress(ns: NetNS, name: string, cidr: string): Promise<void> {
    const op: IpOp = { kind: "addr-del", dev: name, cidr };
    const operation = `delete address ${cidr} from ${name} in ${ns}`;
    if (!(await this.netlinkStep(ns, op, operation))) await ns.runIp(opWords(op), operation);
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
    const op: IpOp = { kind: "route-append", route };
    const operation = `add route ${routeWords(route).join(" ")} in ${ns}`;
    if (!(await this.netlinkStep(ns, op, operation))) await ns.runIp(opWords(op), operation);
  }

  async deleteRoute(ns: NetNS, route: RouteSpec): Promise<void> {
    const op: IpOp = { kind: "route-del", route };
    const operation = `delete route ${routeWords(route).join(" ")} in ${ns}`;
    if (!(await this.netlinkStep(ns, op, operation))) await ns.runIp(opWords(op), operation);
  }
}

/** The process-wide backend. */
export const ip = new IpRoute2();
