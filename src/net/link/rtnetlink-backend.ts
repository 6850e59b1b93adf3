/**
 * The rtnetlink backend of the link facade (links.ts): the steps of ip-ops.ts carried out over a route-netlink
 * socket in their namespace, instead of by an `ip` process. It sends what `ip` sends and reports failures in
 * `ip`'s words (`Cannot find device "x"`, `RTNETLINK answers: File exists`), so callers cannot tell the
 * backends apart. It takes steps only under the standalone (Bun) build, when the socket opens and
 * TSCNI_NETLINK is not "0"; otherwise (and for steps it cannot carry) the iproute2 backend does.
 * @module
 */
import { closeSync, openSync } from "node:fs";
import { messageOf } from "#spec/errors.js";
import { atStep, kindOfErrno, kindOfText, type NetErrorKind, NetOpError } from "../errors.js";
import { ipErrorText, type NlMessage, openRtnetlink, type RtnetlinkSocket } from "../netlink/rtnetlink.js";
import {
  addressRequest,
  bridgePortRequest,
  bridgeSettingsRequest,
  cidrBytes,
  type DecodedLink,
  decodeAddress,
  decodeLink,
  decodeNsid,
  decodeRouteOif,
  deleteGroupRequest,
  deleteLinkRequest,
  dumpAddressesRequest,
  dumpLinksRequest,
  getLinkRequest,
  getNsidRequest,
  getRouteRequest,
  macBytes,
  moveLinkRequest,
  type NlRequest,
  newLinkRequest,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWNSID,
  RTM_NEWROUTE,
  renameLinkRequest,
  routeRequest,
  setGroupRequest,
  setLinkRequest,
} from "../netlink/rtnetlink-messages.js";
import type { NetNS } from "../netns.js";
import type { Address, Link, ShownLink } from "../types.js";
import { type IpOp, type LinkBackend, opWords } from "./ip-ops.js";

const ENODEV = 19;
/** ENETDOWN, ENETUNREACH, EHOSTUNREACH: `ip route get` has no route to show. */
const UNREACHABLE = new Set([100, 101, 113]);
const DUMP_ATTEMPTS = 3;

/** Whether the netlink path is allowed (TSCNI_NETLINK=0 switches it off). */
export const netlinkAllowed = (): boolean => process.env["TSCNI_NETLINK"] !== "0";

/** A name `ip` accepts for an interface (iproute2's check_ifname). */
const validIfName = (name: string): boolean => name.length > 0 && name.length < 16 && !/[/\s]/.test(name) && name !== "." && name !== "..";

/** Whether a step can go over netlink: its addresses, MACs, names and scopes read exactly as `ip` would read them. */
export function netlinkCanRun(op: IpOp): boolean {
  switch (op.kind) {
    case "words":
      return false;
    case "link-add":
      return validIfName(op.link.name) && (!op.link.peer || validIfName(op.link.peer.name)) && (!op.link.mac || !!macBytes(op.link.mac));
    case "link-rename":
      return validIfName(op.newName);
    case "link-set":
      return op.change.mac === undefined || !!macBytes(op.change.mac);
    case "addr-add":
    case "addr-replace":
    case "addr-del":
      return !!cidrBytes(op.cidr);
    case "route-add":
    case "route-append":
    case "route-replace":
    case "route-del":
      return !!routeRequest("add", op.route, op.route.dev === undefined ? undefined : 0);
    default:
      return true;
  }
}

/** A route-netlink session in `ns` for the netlink path, or null when the path is off or unavailable (use `ip` then). */
async function openSession(ns: NetNS): Promise<NetlinkSession | null> {
  if (!netlinkAllowed()) return null;
  const socket = await openRtnetlink(ns.path);
  return socket ? new NetlinkSession(socket) : null;
}

/** Steps and reads over one socket (link steps here, traffic control in tc.ts); close() when done. */
export class NetlinkSession {
  constructor(private readonly socket: RtnetlinkSocket) {}

  close(): void {
    this.socket.close();
  }

  /** Carries out one step; a show step gives the link (and addresses) read. */
  run(op: IpOp, operation: string): ShownLink | undefined {
    switch (op.kind) {
      case "link-add":
        this.createLink(op.link, operation);
        return undefined;
      case "link-set": {
        const master =
          typeof op.change.master === "string"
            ? this.indexOf(op.change.master, operation, (n) => `Error: argument "${n}" is wrong: Device does not exist`)
            : undefined;
        this.send(setLinkRequest(this.indexOf(op.name, operation), op.change, master), operation);
        return undefined;
      }
      case "bridge-port":
        this.send(bridgePortRequest(this.indexOf(op.name, operation), op.flags), operation);
        return undefined;
      case "bridge-set":
        this.send(bridgeSettingsRequest(this.indexOf(op.name, operation), op.settings), operation);
        return undefined;
      case "link-del":
        this.send(deleteLinkRequest(this.indexOf(op.name, operation)), operation);
        return undefined;
      case "link-rename":
        this.send(renameLinkRequest(this.indexOf(op.name, operation), op.newName), operation);
        return undefined;
      case "link-move": {
        const index = this.indexOf(op.name, operation);
        withNetnsFile(op.to, operation, (fd) => this.send(moveLinkRequest(index, fd), operation));
        return undefined;
      }
      case "addr-add":
      case "addr-replace":
      case "addr-del": {
        const req = addressRequest(
          op.kind === "addr-add" ? "add" : op.kind === "addr-del" ? "del" : "replace",
          this.indexOf(op.dev, operation),
          op.cidr,
        );
        this.send(req ?? fail(operation, `invalid address "${op.cidr}"`), operation);
        return undefined;
      }
      case "route-add":
      case "route-append":
      case "route-replace":
      case "route-del": {
        const oif = op.route.dev === undefined ? undefined : this.indexOf(op.route.dev, operation);
        const action = op.kind.slice("route-".length) as "add" | "append" | "replace" | "del";
        this.send(routeRequest(action, op.route, oif) ?? fail(operation, `invalid route to "${op.route.dst}"`), operation);
        return undefined;
      }
      case "show-link":
        return { link: this.getLink(op.name, operation), addresses: [] };
      case "show-addresses": {
        const link = this.getLink(op.name, operation);
        return { link, addresses: this.addressesOf(link.index, operation) };
      }
      case "words":
        return fail(operation, "not a netlink step");
    }
  }

  /** Every link (`ip -d link show`), or the ports of `master` (`ip -d link show master X`). */
  listLinks(operation: string, master?: string): Link[] {
    const masterIndex = master === undefined ? undefined : this.indexOf(master, operation, (n) => `Device "${n}" does not exist.`);
    const decoded = this.dump(dumpLinksRequest(masterIndex), operation)
      .filter((m) => m.type === RTM_NEWLINK)
      .map((m) => decodeLink(m.payload))
      .filter((d) => masterIndex === undefined || d.masterIndex === masterIndex);
    const names = new Map(decoded.map((d) => [d.link.index, d.link.name]));
    return decoded.map((d) => this.withMaster(d, operation, names));
  }

  /** A link by name (`ip -d link show dev X`); a missing one fails as `ip` does. */
  getLink(name: string, operation: string): Link {
    const missing = `Device "${name}" does not exist.`;
    if (!validIfName(name)) fail(operation, missing, 1, "not-found");
    const reply = this.exchange(getLinkRequest(name), operation);
    if (reply.error)
      fail(
        operation,
        reply.error.errno === ENODEV ? missing : ipErrorText(reply.error.errno, reply.error.message),
        reply.error.errno === ENODEV ? 1 : 2,
        kindOfErrno(reply.error.errno),
      );
    const m = reply.messages.find((x) => x.type === RTM_NEWLINK) ?? fail(operation, missing, 1, "not-found");
    return this.withMaster(decodeLink(m.payload), operation);
  }

  /** The link with interface index `index` as decoded (its peer's namespace id too), or undefined when there is none. */
  linkByIndex(index: number, operation: string): DecodedLink | undefined {
    const reply = this.exchange(getLinkRequest(index), operation);
    if (reply.error?.errno === ENODEV) return undefined;
    if (reply.error) fail(operation, ipErrorText(reply.error.errno, reply.error.message), 2, kindOfErrno(reply.error.errno));
    const m = reply.messages.find((x) => x.type === RTM_NEWLINK);
    return m ? decodeLink(m.payload) : undefined;
  }

  /** The interface of the route to `address` (`ip route get`): none when the kernel has no route to it. */
  routeDevice(address: string, operation: string): { dev?: string } | undefined {
    const req = getRouteRequest(address);
    if (!req) return undefined;
    const reply = this.exchange(req, operation);
    if (reply.error && UNREACHABLE.has(reply.error.errno)) return {};
    if (reply.error) fail(operation, ipErrorText(reply.error.errno, reply.error.message), 2, kindOfErrno(reply.error.errno));
    const m = reply.messages.find((x) => x.type === RTM_NEWROUTE);
    const oif = m ? decodeRouteOif(m.payload) : undefined;
    return oif === undefined ? {} : { dev: this.nameOf(oif, operation) };
  }

  /** The id this namespace gives namespace `ns` (undefined: none, or not asked for one). */
  netnsIdOf(ns: NetNS, operation: string): number | undefined {
    const reply = withNetnsFile(ns, operation, (fd) => this.exchange(getNsidRequest(fd), operation));
    if (reply.error) return undefined;
    const m = reply.messages.find((x) => x.type === RTM_NEWNSID);
    const id = m ? decodeNsid(m.payload) : undefined;
    return id === undefined || id < 0 ? undefined : id;
  }

  /** Puts link `index` in device group `group` (`ip link set dev X group G`). */
  setGroup(index: number, group: number, operation: string): void {
    this.send(setGroupRequest(index, group), operation);
  }

  /** Deletes every link of device group `group` at once (`ip link delete group G`). */
  deleteGroup(group: number, operation: string): void {
    this.send(deleteGroupRequest(group), operation);
  }

  /** The addresses of link `index` (`ip addr show dev X`), in the kernel's order: IPv4, then IPv6. */
  addressesOf(index: number, operation: string): Address[] {
    return this.dump(dumpAddressesRequest(), operation)
      .filter((m) => m.type === RTM_NEWADDR)
      .map((m) => decodeAddress(m.payload))
      .filter((a) => a.index === index)
      .map((a) => a.address);
  }

  /** A new link: the parent looked up here (as `ip` does, with its words when missing), namespaces opened for the request. */
  private createLink(link: Extract<IpOp, { kind: "link-add" }>["link"], operation: string): void {
    const parentIndex = link.parent === undefined ? undefined : this.indexOf(link.parent, operation);
    withNetnsFile(link.peer?.ns, operation, (peerNsFd) =>
      withNetnsFile(link.netns, operation, (netnsFd) => this.send(newLinkRequest(link, { peerNsFd, netnsFd, parentIndex }), operation)),
    );
  }

  /** The name of link `index` here (`ip` shows the name, or `if<N>` when it cannot find one). */
  nameOf(index: number, operation: string, names?: Map<number, string>): string {
    const known = names?.get(index);
    if (known !== undefined) return known;
    const reply = this.exchange(getLinkRequest(index), operation);
    const m = reply.messages.find((x) => x.type === RTM_NEWLINK);
    return m ? decodeLink(m.payload).link.name : `if${index}`;
  }

  /** The link with its master and same-namespace peer named. */
  private withMaster(d: DecodedLink, operation: string, names?: Map<number, string>): Link {
    const link = { ...d.link };
    if (d.masterIndex !== undefined) link.master = this.nameOf(d.masterIndex, operation, names);
    if (d.peerLinkIndex !== undefined) link.peerName = this.nameOf(d.peerLinkIndex, operation, names);
    return link;
  }

  /** The index of link `name`; a missing one fails with `ip`'s words for it. */
  indexOf(name: string, operation: string, missing = (n: string) => `Cannot find device "${n}"`): number {
    if (!validIfName(name)) fail(operation, missing(name), 1, "not-found");
    const reply = this.exchange(getLinkRequest(name), operation);
    if (reply.error?.errno === ENODEV) fail(operation, missing(name), 1, "not-found");
    if (reply.error) fail(operation, ipErrorText(reply.error.errno, reply.error.message), 2, kindOfErrno(reply.error.errno));
    const m = reply.messages.find((x) => x.type === RTM_NEWLINK) ?? fail(operation, missing(name), 1, "not-found");
    return decodeLink(m.payload).link.index;
  }

  private exchange(req: NlRequest, operation: string) {
    return this.socket.exchange(req.type, req.flags, req.body, operation);
  }

  /** Sends a request that is only acknowledged; a refusal fails in `ip`'s words, of the kind `kindOf` gives its errno. */
  send(req: NlRequest, operation: string, kindOf: (errno: number) => NetErrorKind = kindOfErrno): void {
    const { error } = this.exchange(req, operation);
    if (error) fail(operation, ipErrorText(error.errno, error.message), 2, kindOf(error.errno));
  }

  /** A dump, repeated when the kernel says something changed while it ran. */
  dump(req: NlRequest, operation: string): NlMessage[] {
    for (let attempt = 1; ; attempt++) {
      const reply = this.exchange(req, operation);
      if (reply.error) fail(operation, ipErrorText(reply.error.errno, reply.error.message), 2, kindOfErrno(reply.error.errno));
      if (!reply.interrupted || attempt === DUMP_ATTEMPTS) return reply.messages;
    }
  }
}

/** A failure in `ip`'s words, of the kind the kernel's errno (or the missing object) says; without one, its words say. */
function fail(operation: string, reason: string, exitCode = 2, kind: NetErrorKind = kindOfText(reason)): never {
  throw new NetOpError(operation, reason, exitCode, undefined, kind);
}

/**
 * Runs `work` with an open file of namespace `ns` (its fd), closed afterwards; with no namespace, `work` gets
 * undefined. A namespace that cannot be opened fails as `ip` does.
 */
function withNetnsFile<T>(ns: NetNS, operation: string, work: (fd: number) => T): T;
function withNetnsFile<T>(ns: NetNS | undefined, operation: string, work: (fd: number | undefined) => T): T;
function withNetnsFile<T>(ns: NetNS | undefined, operation: string, work: (fd: number) => T): T {
  if (!ns) return (work as (fd: number | undefined) => T)(undefined);
  const nsPath = ns.path ?? "/proc/self/ns/net";
  let fd: number;
  try {
    fd = openSync(nsPath, "r");
  } catch (e) {
    return fail(operation, `Cannot open network namespace "${nsPath}": ${messageOf(e)}`, 1);
  }
  try {
    return work(fd);
  } finally {
    closeSync(fd);
  }
}

/** Does `work` over a socket in `ns`; undefined when the socket does not open (off, or not under Bun). */
export async function withSession<T>(ns: NetNS, work: (session: NetlinkSession) => T): Promise<T | undefined> {
  const session = await openSession(ns);
  if (!session) return undefined;
  try {
    return work(session);
  } finally {
    session.close();
  }
}

/** Link steps and reads over route-netlink (see the module comment); routes are read by iproute2. */
export const rtnetlinkBackend: LinkBackend = {
  name: "rtnetlink",
  run: (ns, ops, operation) =>
    ops.every(netlinkCanRun)
      ? withSession(ns, (s) =>
          ops.flatMap((op, i) => {
            try {
              return s.run(op, `${operation} (ip ${opWords(op).join(" ")})`) ?? [];
            } catch (e) {
              return atStep(i)(e);
            }
          }),
        )
      : Promise.resolve(undefined),
  listLinks: (ns, operation, master) => withSession(ns, (s) => s.listLinks(operation, master)),
  getLink: (ns, name, operation) => withSession(ns, (s) => s.getLink(name, operation)),
  listAddresses: (ns, name, operation) => withSession(ns, (s) => s.addressesOf(s.getLink(name, operation).index, operation)),
  listRoutes: () => Promise.resolve(undefined),
  routeDevice: async (ns, address, operation) => (await withSession(ns, (s) => s.routeDevice(address, operation))) ?? undefined,
};
