/**
 * The in-kernel MPTCP path manager of a network namespace (`ip mptcp`): its endpoints — local addresses it
 * announces to peers (signal) or opens additional subflows from (subflow), optionally as backup paths or in a full
 * mesh — and its limits on additional subflows and on addresses accepted from peers. Over generic netlink (family
 * "mptcp_pm", include/uapi/linux/mptcp_pm.h) with the requests `ip mptcp` sends; through `ip mptcp` under the Node
 * build or with TSCNI_NETLINK=0.
 * @module
 */
import { ipFromBytes, parseIP } from "#ip/ip.js";
import { concatBytes } from "#sys/bytes.js";
import { kindOfErrno, NetOpError } from "./errors.js";
import { netlinkAllowed } from "./link/rtnetlink-backend.js";
import { type GenlFamily, genlAttrs, openGenlFamily } from "./netlink/genetlink.js";
import { errnoText, NLM_F_DUMP, nlAttr, nlU32, parseAttrs } from "./netlink/rtnetlink.js";
import type { NetNS } from "./netns.js";
import { runIpIn } from "./tools.js";

/** The endpoint flags a configuration sets (MPTCP_PM_ADDR_FLAG_*), by their `ip mptcp` names. */
export const MPTCP_FLAGS = { signal: 0x1, subflow: 0x2, backup: 0x4, fullmesh: 0x8 } as const;
export type MptcpFlag = keyof typeof MPTCP_FLAGS;
/** The bits of MPTCP_FLAGS (the kernel marks endpoints it made itself with others: implicit, laminar). */
export const MPTCP_FLAG_MASK = 0xf;

/** An endpoint as the path manager lists it. */
export interface MptcpEndpoint {
  id: number;
  address: string;
  /** MPTCP_PM_ADDR_FLAG_* bits. */
  flags: number;
  /** The interface it is bound to: its index over netlink, its name through `ip`. */
  ifIndex?: number;
  dev?: string;
}

/** The path manager's limits: additional subflows per connection, ADD_ADDR announcements accepted per connection. */
export interface MptcpLimits {
  subflows: number;
  addAddrAccepted: number;
}

/** A new endpoint: an address on a link of the namespace (named and indexed), with its flags. */
export interface NewMptcpEndpoint {
  address: string;
  flags: number;
  link: { name: string; index: number };
}

/** The path manager of one namespace. Failures are NetOpErrors; adding an address that is an endpoint already is kind "exists". */
export interface MptcpPathManager {
  listEndpoints(): Promise<MptcpEndpoint[]>;
  addEndpoint(ep: NewMptcpEndpoint): Promise<void>;
  deleteEndpoint(ep: MptcpEndpoint): Promise<void>;
  getLimits(): Promise<MptcpLimits>;
  /** Sets the limits given, leaving the other as it is. */
  setLimits(limits: Partial<MptcpLimits>): Promise<void>;
  close(): void;
}

/** The names of the flags set in `flags`, in MPTCP_FLAGS order (what `ip mptcp` prints). */
export const flagNames = (flags: number): MptcpFlag[] => (Object.keys(MPTCP_FLAGS) as MptcpFlag[]).filter((f) => flags & MPTCP_FLAGS[f]);

/** Whether endpoint `ep` is bound to `link`. */
export const boundTo = (ep: MptcpEndpoint, link: { name: string; index: number }): boolean => ep.ifIndex === link.index || ep.dev === link.name;

/**
 * The path manager of `ns`, or undefined when its kernel has none (no CONFIG_MPTCP): over netlink when this
 * runtime can, else through `ip mptcp`.
 */
export async function openMptcpPM(ns: NetNS): Promise<MptcpPathManager | undefined> {
  if (netlinkAllowed()) {
    const family = await openGenlFamily(MPTCP_PM_NAME, MPTCP_PM_VERSION, ns.path);
    if (family === "absent") return undefined;
    if (family) return netlinkPM(family, ns);
  }
  return iproute2PM(ns);
}

// ---- generic netlink -------------------------------------------------------------------------------------------

const MPTCP_PM_NAME = "mptcp_pm";
const MPTCP_PM_VERSION = 1;
/** MPTCP_PM_CMD_*. */
const CMD = { addAddr: 1, delAddr: 2, getAddr: 3, setLimits: 5, getLimits: 6 } as const;
/** MPTCP_PM_ATTR_*. */
const ATTR_ADDR = 1;
const ATTR_RCV_ADD_ADDRS = 2;
const ATTR_SUBFLOWS = 3;
/** MPTCP_PM_ADDR_ATTR_*. */
const ADDR = { family: 1, id: 2, addr4: 3, addr6: 4, flags: 6, ifIdx: 7 } as const;
const NLA_F_NESTED = 0x8000;
const AF_INET = 2;
const AF_INET6 = 10;

const nlU16 = (type: number, v: number): Uint8Array => nlAttr(type, Uint8Array.of(v & 0xff, v >> 8));
const u32Of = (b: Uint8Array): number => new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0, true);

/** MPTCP_PM_ATTR_ADDR of MPTCP_PM_CMD_ADD_ADDR, in `ip mptcp endpoint add ADDR dev DEV FLAGS`'s order. */
export function addEndpointAttrs(address: string, flags: number, ifIndex: number): Uint8Array[] {
  const ip = parseIP(address);
  const addr = ip.family === 4 ? nlAttr(ADDR.addr4, ip.bytes) : nlAttr(ADDR.addr6, ip.bytes);
  const nested = concatBytes(nlU32(ADDR.flags, flags), nlU32(ADDR.ifIdx, ifIndex), nlU16(ADDR.family, ip.family === 4 ? AF_INET : AF_INET6), addr);
  return [nlAttr(NLA_F_NESTED | ATTR_ADDR, nested)];
}

/** MPTCP_PM_ATTR_ADDR of MPTCP_PM_CMD_DEL_ADDR for endpoint `id` (`ip mptcp endpoint delete id ID`). */
export const deleteEndpointAttrs = (id: number): Uint8Array[] => [nlAttr(NLA_F_NESTED | ATTR_ADDR, nlAttr(ADDR.id, Uint8Array.of(id)))];

/** The attributes of MPTCP_PM_CMD_SET_LIMITS for the limits given (`ip mptcp limits set`). */
export function setLimitsAttrs(limits: Partial<MptcpLimits>): Uint8Array[] {
  const attrs: Uint8Array[] = [];
  if (limits.addAddrAccepted !== undefined) attrs.push(nlU32(ATTR_RCV_ADD_ADDRS, limits.addAddrAccepted));
  if (limits.subflows !== undefined) attrs.push(nlU32(ATTR_SUBFLOWS, limits.subflows));
  return attrs;
}

/** An endpoint from MPTCP_PM_ATTR_ADDR; undefined when it has no address. */
export function decodeEndpoint(attrs: Map<number, Uint8Array>): MptcpEndpoint | undefined {
  const nested = attrs.get(ATTR_ADDR);
  if (!nested) return undefined;
  const a = parseAttrs(nested);
  const bytes = a.get(ADDR.addr4) ?? a.get(ADDR.addr6);
  if (!bytes) return undefined;
  const ep: MptcpEndpoint = {
    id: a.get(ADDR.id)?.[0] ?? 0,
    address: ipFromBytes(bytes).text,
    flags: a.has(ADDR.flags) ? u32Of(a.get(ADDR.flags)!) : 0,
  };
  const ifIdx = a.get(ADDR.ifIdx);
  if (ifIdx && u32Of(ifIdx)) ep.ifIndex = u32Of(ifIdx);
  return ep;
}

function netlinkPM(family: GenlFamily, ns: NetNS): MptcpPathManager {
  const where = ns.path ?? "the host namespace";
  /** Sends one command; a refusal is a NetOpError in the kernel's words. */
  const send = (cmd: number, flags: number, attrs: Uint8Array[], operation: string) => {
    const reply = family.exchange(cmd, flags, attrs, operation);
    if (reply.error) {
      const text = errnoText(reply.error.errno);
      throw new NetOpError(
        operation,
        reply.error.message ? `${reply.error.message} (${text})` : text,
        null,
        undefined,
        kindOfErrno(reply.error.errno),
      );
    }
    return reply.messages;
  };
  return {
    async listEndpoints() {
      return send(CMD.getAddr, NLM_F_DUMP, [], `list MPTCP endpoints in ${where}`).flatMap((m) => decodeEndpoint(genlAttrs(m)) ?? []);
    },
    async addEndpoint({ address, flags, link }) {
      send(CMD.addAddr, 0, addEndpointAttrs(address, flags, link.index), `add MPTCP endpoint ${address} on ${link.name} in ${where}`);
    },
    async deleteEndpoint(ep) {
      send(CMD.delAddr, 0, deleteEndpointAttrs(ep.id), `delete MPTCP endpoint ${ep.address} (id ${ep.id}) in ${where}`);
    },
    async getLimits() {
      const attrs = send(CMD.getLimits, 0, [], `read MPTCP limits in ${where}`).map(genlAttrs)[0] ?? new Map<number, Uint8Array>();
      const value = (type: number) => (attrs.has(type) ? u32Of(attrs.get(type)!) : 0);
      return { subflows: value(ATTR_SUBFLOWS), addAddrAccepted: value(ATTR_RCV_ADD_ADDRS) };
    },
    async setLimits(limits) {
      const attrs = setLimitsAttrs(limits);
      if (attrs.length) send(CMD.setLimits, 0, attrs, `set MPTCP limits in ${where}`);
    },
    close: () => family.close(),
  };
}

// ---- ip mptcp --------------------------------------------------------------------------------------------------

/** An endpoint as `ip -json mptcp endpoint show` prints it: each flag a key set to true. */
export function endpointFromJson(j: Record<string, unknown>): MptcpEndpoint {
  const flags = (Object.keys(MPTCP_FLAGS) as MptcpFlag[]).reduce((bits, f) => (j[f] === true ? bits | MPTCP_FLAGS[f] : bits), 0);
  const ep: MptcpEndpoint = { id: Number(j["id"] ?? 0), address: String(j["address"]), flags };
  if (typeof j["dev"] === "string") ep.dev = j["dev"];
  return ep;
}

/** The limits as `ip mptcp limits show` prints them (iproute2 has no JSON for them): `add_addr_accepted 0 subflows 2`. */
export function limitsFromText(text: string): MptcpLimits {
  const value = (word: string) => Number(new RegExp(`\\b${word} (\\d+)`).exec(text)?.[1] ?? 0);
  return { subflows: value("subflows"), addAddrAccepted: value("add_addr_accepted") };
}

/** `ip mptcp` words for the limits given. */
const limitWords = (l: Partial<MptcpLimits>): string[] => [
  ...(l.subflows !== undefined ? ["subflows", String(l.subflows)] : []),
  ...(l.addAddrAccepted !== undefined ? ["add_addr_accepted", String(l.addAddrAccepted)] : []),
];

async function iproute2PM(ns: NetNS): Promise<MptcpPathManager | undefined> {
  const where = ns.path ?? "the host namespace";
  /** Runs `ip [-json] mptcp ARGS` in the namespace. */
  const mptcp = async (args: string[], operation: string, json = false) => {
    return (await runIpIn(ns, [...(json ? ["-json"] : []), "mptcp", ...args], operation)).stdout;
  };
  let known: MptcpLimits | undefined;
  try {
    known = limitsFromText(await mptcp(["limits", "show"], `read MPTCP limits in ${where}`));
  } catch (e) {
    // No mptcp_pm family: `ip` cannot resolve it from the controller (its strerror alone: not-found).
    if (e instanceof NetOpError && (e.kind === "unsupported" || e.kind === "not-found")) return undefined;
    throw e;
  }
  return {
    async listEndpoints() {
      const out = await mptcp(["endpoint", "show"], `list MPTCP endpoints in ${where}`, true);
      return ((JSON.parse(out.trim() || "[]") as Array<Record<string, unknown>>) ?? []).map(endpointFromJson);
    },
    async addEndpoint({ address, flags, link }) {
      await mptcp(["endpoint", "add", address, "dev", link.name, ...flagNames(flags)], `add MPTCP endpoint ${address} on ${link.name} in ${where}`);
    },
    async deleteEndpoint(ep) {
      await mptcp(["endpoint", "delete", "id", String(ep.id)], `delete MPTCP endpoint ${ep.address} (id ${ep.id}) in ${where}`);
    },
    async getLimits() {
      const read = known ?? limitsFromText(await mptcp(["limits", "show"], `read MPTCP limits in ${where}`));
      known = undefined; // read once at opening: later reads ask again
      return read;
    },
    async setLimits(l) {
      known = undefined;
      if (limitWords(l).length) await mptcp(["limits", "set", ...limitWords(l)], `set MPTCP limits in ${where}`);
    },
    close: () => undefined,
  };
}
