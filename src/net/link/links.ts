/**
 * Links, addresses and routes: the facade every plugin uses (`ip`), over two backends with one interface.
 * The rtnetlink backend (rtnetlink-backend.ts: a route-netlink socket, no process; standalone build only) is
 * asked first; the iproute2 backend (iproute2.ts: the `ip` command, batched) carries whatever the first cannot.
 * Either way a step sends what `ip` sends and fails with `ip`'s words, naming the operation and the step.
 * @module
 */

import type { NetNS } from "../netns.js";
import type { Address, BridgeSettings, Link, LinkChange, NewLink, RouteSpec, ShownLink, VethSpec } from "../types.js";
import { broadcastWords, type IpOp, type LinkBackend, vethLink } from "./ip-ops.js";
import { iproute2Backend } from "./iproute2.js";
import { rtnetlinkBackend } from "./rtnetlink-backend.js";

export { type LinkBackend, routeWords, vethAddWords } from "./ip-ops.js";

/** The backends, in the order they are asked. */
const BACKENDS: readonly LinkBackend[] = [rtnetlinkBackend, iproute2Backend];

/** The first answer a backend gives (the iproute2 backend always answers). */
async function firstAnswer<T>(ask: (backend: LinkBackend) => Promise<T | undefined>): Promise<T> {
  for (const backend of BACKENDS) {
    const answer = await ask(backend);
    if (answer !== undefined) return answer;
  }
  throw new Error("no link backend answered"); // unreachable: iproute2 always does
}

const runOps = (ns: NetNS, ops: readonly IpOp[], operation: string) => firstAnswer((b) => b.run(ns, ops, operation));

const isNotFound = (e: unknown): boolean => (e as { isNotFound?: boolean }).isNotFound === true;

/** Several steps for one namespace, carried out together (one socket, or one `ip -batch` process). */
export class IpBatch {
  private readonly ops: IpOp[] = [];
  constructor(private readonly ns: NetNS) {}
  /** Any `ip` command by its words (only the iproute2 backend carries those). */
  add(...words: string[]): this {
    this.ops.push({ kind: "words", words });
    return this;
  }
  /** Creates a link (veth pairs included). */
  addLink(link: NewLink): this {
    this.ops.push({ kind: "link-add", link });
    return this;
  }
  /** Changes a link (see LinkChange). */
  setLink(name: string, change: LinkChange): this {
    this.ops.push({ kind: "link-set", name, change });
    return this;
  }
  /** Bridge-port flags of a link enslaved to a bridge (only the flags given). */
  setBridgePort(name: string, flags: { hairpin?: boolean; isolated?: boolean }): this {
    this.ops.push({ kind: "bridge-port", name, flags });
    return this;
  }
  /** Settings of a bridge (only those given). */
  setBridge(name: string, settings: BridgeSettings): this {
    this.ops.push({ kind: "bridge-set", name, settings });
    return this;
  }
  /** Renames a link (`ip link set dev NAME name NEW`). */
  renameLink(name: string, newName: string): this {
    this.ops.push({ kind: "link-rename", name, newName });
    return this;
  }
  /** Moves a link to another namespace (`ip link set dev NAME netns PATH`). */
  moveLink(name: string, to: NetNS): this {
    this.ops.push({ kind: "link-move", name, to });
    return this;
  }
  /** Deletes a link. */
  deleteLink(name: string): this {
    this.ops.push({ kind: "link-del", name });
    return this;
  }
  /** Adds an address (`ip addr add`, with `brd +` for IPv4). */
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
  /** Deletes an address. */
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
  /** How many steps the batch holds. */
  get size(): number {
    return this.ops.length;
  }

  /** Runs the batch; the error names the step that failed. */
  async run(operation: string): Promise<void> {
    if (this.ops.length) await runOps(this.ns, this.ops, operation);
  }

  /** Runs the batch; resolves with what each show step read, in order. */
  async runShow(operation: string): Promise<ShownLink[]> {
    return this.ops.length ? runOps(this.ns, this.ops, operation) : [];
  }
}

/** Reads and changes links, addresses and routes (see the module comment). */
export class Links {
  /** A batch of steps for `ns`, carried out together by `run` or `runShow`. */
  batch(ns: NetNS): IpBatch {
    return new IpBatch(ns);
  }

  /** Every link of `ns`. */
  listLinks(ns: NetNS): Promise<Link[]> {
    return firstAnswer((b) => b.listLinks(ns, `list links in ${ns}`));
  }

  /** The ports of bridge (or bond) `master` in `ns`: one filtered dump, not every link. */
  listPorts(ns: NetNS, master: string): Promise<Link[]> {
    return firstAnswer((b) => b.listLinks(ns, `list the ports of ${master} in ${ns}`, master));
  }

  /** A link by name; undefined when there is none. */
  async getLink(ns: NetNS, name: string): Promise<Link | undefined> {
    try {
      return await firstAnswer((b) => b.getLink(ns, name, `read link ${name} in ${ns}`));
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /** Creates a veth pair with each end directly in its own namespace (no name clash in between). */
  addVeth(spec: VethSpec): Promise<void> {
    return this.batch(spec.ns).addLink(vethLink(spec)).run(`create veth pair ${spec.name}/${spec.peerName}`);
  }

  /**
   * Creates a link (a macvlan, ipvlan or vlan on its `parent`, looked up in `ns`; directly in `link.netns`
   * when given), as `ip link add` does.
   */
  createLink(ns: NetNS, link: NewLink): Promise<void> {
    return this.batch(ns).addLink(link).run(`create ${link.kind} ${link.name} in ${ns}`);
  }

  /** Changes link `name` in `ns` (see LinkChange). */
  setLink(ns: NetNS, name: string, change: LinkChange): Promise<void> {
    return this.batch(ns).setLink(name, change).run(`configure link ${name} in ${ns}`);
  }

  /** Moves a link to another namespace, optionally renaming it there. */
  async moveLink(from: NetNS, name: string, to: NetNS, newName?: string): Promise<void> {
    await this.batch(from).moveLink(name, to).run(`move link ${name} from ${from} to ${to}`);
    if (newName && newName !== name) await this.renameLink(to, name, newName);
  }

  /** Renames link `name` in `ns`. */
  renameLink(ns: NetNS, name: string, newName: string): Promise<void> {
    return this.batch(ns).renameLink(name, newName).run(`rename link ${name} to ${newName} in ${ns}`);
  }

  /** Bridge-port flags of a link enslaved to a bridge. */
  async setBridgePort(ns: NetNS, name: string, flags: { hairpin?: boolean; isolated?: boolean }): Promise<void> {
    if (flags.hairpin === undefined && flags.isolated === undefined) return;
    await this.batch(ns).setBridgePort(name, flags).run(`set bridge port flags of ${name}`);
  }

  /** Deletes a link; false when it did not exist. */
  async deleteLink(ns: NetNS, name: string): Promise<boolean> {
    try {
      await this.batch(ns).deleteLink(name).run(`delete link ${name} in ${ns}`);
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  }

  /** The addresses of link `name` in `ns`. */
  listAddresses(ns: NetNS, name: string): Promise<Address[]> {
    return firstAnswer((b) => b.listAddresses(ns, name, `read addresses of ${name} in ${ns}`));
  }

  /** Adds an address to link `name` in `ns`. */
  addAddress(ns: NetNS, name: string, cidr: string, extra: string[] = []): Promise<void> {
    return this.batch(ns).addAddress(name, cidr, extra).run(`add address ${cidr} to ${name} in ${ns}`);
  }

  /** Deletes an address from link `name` in `ns`. */
  deleteAddress(ns: NetNS, name: string, cidr: string): Promise<void> {
    return this.batch(ns).deleteAddress(name, cidr).run(`delete address ${cidr} from ${name} in ${ns}`);
  }

  /** Routes of one family (all tables when `table` is "all"). */
  listRoutes(ns: NetNS, family: 4 | 6, table?: number | "all"): Promise<RouteSpec[]> {
    return firstAnswer((b) => b.listRoutes(ns, family, table, `read IPv${family} routes in ${ns}`));
  }

  /** The name of the interface that routes to `address` in `ns` (`ip route get`), or undefined when there is no route. */
  async routeDevice(ns: NetNS, address: string): Promise<string | undefined> {
    return (await firstAnswer((b) => b.routeDevice(ns, address, `look up the route to ${address} in ${ns}`))).dev;
  }

  /** Adds a route in `ns` (`ip route append`). */
  addRoute(ns: NetNS, route: RouteSpec): Promise<void> {
    return this.batch(ns).addRoute(route).run(`add route in ${ns}`);
  }

  /** Deletes a route in `ns`. */
  deleteRoute(ns: NetNS, route: RouteSpec): Promise<void> {
    return this.batch(ns).route("del", route).run(`delete route in ${ns}`);
  }
}

/** The process-wide facade. */
export const ip = new Links();
