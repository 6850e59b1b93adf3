/**
 * The DHCPv6 client's exchanges (RFC 8415) for one address (an IA_NA) on one interface: acquiring it (SOLICIT,
 * ADVERTISE, REQUEST, REPLY), renewing it (RENEW to its server), rebinding it (REBIND to any server) and releasing
 * it (RELEASE), every message multicast to All_DHCP_Relay_Agents_and_Servers from the interface's link-local
 * address. Retransmissions follow RFC 8415 §15 (each wait doubling from the message's initial timeout up to its
 * maximum, ±10%), bounded by the daemon's `-resendtimeout` for an acquisition. The sockets, the clock and the
 * randomness are passed in, so every exchange runs against a fake server in the tests.
 * @module
 */
import { type CniError, messageOf, tryAgainLater } from "#spec/errors.js";
import { hexOf, sameBytes } from "#sys/bytes.js";
import { type ClientSettings, formatDuration } from "./client.js";
import type { Clock } from "./clock.js";
import { DhcpFormatError } from "./packet.js";
import {
  allOptions,
  type Dhcp6Message,
  decodeIaAddress,
  decodeIaNa,
  decodeMessage6,
  elapsedTime,
  encodeIaAddress,
  encodeIaNa,
  encodeMessage6,
  encodeOro,
  firstOption,
  type IaAddress,
  type IaNa,
  INFINITY6,
  MESSAGE6_NAMES,
  Message6,
  type Opt6,
  Option6,
  Status6,
  statusOf,
  statusText,
} from "./packet6.js";

/** The sockets of one DHCPv6 exchange on one interface in a container's namespace. */
export interface Dhcp6Sockets {
  readonly ifName: string;
  readonly netns: string;
  /** The interface's hardware type (ARPHRD_*) and address, for a DUID made from them. */
  readonly hwType: number;
  readonly mac: Uint8Array;
  /** Sends a message to ff02::1:2 port 547 from the interface's link-local address, port 546. */
  send(payload: Uint8Array): void;
  /** The next datagram from port 547, or undefined at `deadline` (epoch ms) or on abort. */
  receive(deadline: number, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  close(): void;
}

/**
 * Opens the sockets of one exchange; may wait until `readyBy` (epoch ms) for the interface's link-local address
 * to be usable. Throws what the opener throws (the link or namespace being gone, no link-local address in time).
 */
export type Socket6Opener = (readyBy: number) => Promise<Dhcp6Sockets>;

/** What every message of a lease carries. */
export interface SendSpec6 {
  /** The client's DUID (option 1). */
  duid: Uint8Array;
  /** The IA_NA's identifier. */
  iaid: number;
  /** The options asked for (option 6). */
  oro: number[];
  /** Option 39's value, when the client names itself. */
  fqdn?: Uint8Array;
}

/** The client's DUID: made in advance, or from the interface's hardware type and address once it is open. */
export type DuidSource = Uint8Array | ((link: { hwType: number; mac: Uint8Array }) => Uint8Array);

/** A bound address: the REPLY and what follows from it. Times are epoch milliseconds (Infinity: never). */
export interface Binding6 {
  /** The REPLY, as received. */
  reply: Uint8Array;
  address: string;
  /** The server's DUID (option 2), which RENEW and RELEASE name. */
  serverId: Uint8Array;
  /** The server's DUID as text, for logs. */
  server: string;
  boundAt: number;
  renewAt: number;
  rebindAt: number;
  expiresAt: number;
}

/** What a renewal or rebinding came to: a new binding, a refusal, or no usable answer. */
export type RenewOutcome6 = { binding: Binding6 } | { nak: string } | { problem: string };

/** RFC 8415 §7.6's transmission parameters used here, in milliseconds (MRC for REQUEST and RELEASE). */
export const TIMING6 = {
  SOL_TIMEOUT: 1000,
  SOL_MAX_RT: 3_600_000,
  REQ_TIMEOUT: 1000,
  REQ_MAX_RT: 30_000,
  REQ_MAX_RC: 10,
  REL_TIMEOUT: 1000,
  REL_MAX_RC: 4,
} as const;

/** How long a RELEASE waits for its REPLY, retransmissions included: DEL is not held up by a server that is gone. */
export const RELEASE_BUDGET_MS = 3000;

/**
 * The wait after a transmission (RFC 8415 §15): the initial timeout `irt` ±10% for the first (strictly above it for
 * the first SOLICIT), twice the previous one ±10% after, at most `mrt` ±10% (0: no maximum).
 */
export function retransmissionTimeout(previous: number | undefined, irt: number, mrt: number, random: () => number, firstSolicit = false): number {
  const rand = firstSolicit && previous === undefined ? (1 - random()) * 0.1 : (random() * 2 - 1) * 0.1;
  let rt = previous === undefined ? irt + rand * irt : 2 * previous + rand * previous;
  if (mrt > 0 && rt > mrt) rt = mrt + rand * mrt;
  return rt;
}

/**
 * T1, T2 and expiry of an address bound at `now` (RFC 8415 §21.4, §18.2.4): the IA_NA's T1 and T2, or half and 80%
 * of the address's preferred lifetime (its valid lifetime when that is 0) when the server leaves them 0; the valid
 * lifetime as expiry. Infinity for 0xffffffff. T2 is never before T1 nor T1 after expiry.
 */
export function bindingTimes6(ia: IaNa, addr: IaAddress, now: number): Pick<Binding6, "boundAt" | "renewAt" | "rebindAt" | "expiresAt"> {
  const at = (seconds: number) => (seconds === INFINITY6 ? Infinity : now + seconds * 1000);
  const expiresAt = at(addr.valid);
  const base = addr.preferred || addr.valid;
  let t1 = ia.t1;
  let t2 = ia.t2;
  if (t1 === 0 || t2 === 0) {
    t1 = base === INFINITY6 ? INFINITY6 : base * 0.5;
    t2 = base === INFINITY6 ? INFINITY6 : base * 0.8;
  }
  const renewAt = Math.min(at(t1), expiresAt);
  return { boundAt: now, renewAt, rebindAt: Math.min(Math.max(at(t2), renewAt), expiresAt), expiresAt };
}

const randomXid = (clock: Clock): number => Math.floor(clock.random() * 0x1000000) & 0xffffff;

interface MessageFields {
  xid: number;
  /** Milliseconds since the exchange began (the Elapsed Time option). */
  elapsedMs: number;
  /** The server's DUID (REQUEST, RENEW, RELEASE). */
  serverId?: Uint8Array;
  /** The address the IA_NA names (all but SOLICIT). */
  address?: string;
}

/**
 * A client message: Client Identifier, Server Identifier when one is named, the IA_NA (T1 and T2 0, the address
 * with lifetimes 0: the server chooses), Elapsed Time, then (but for RELEASE) the Option Request and the client's
 * name. RFC 8415 §18.2.
 */
export function buildMessage6(type: number, f: MessageFields, spec: SendSpec6): Uint8Array {
  const iaOptions: Opt6[] = f.address
    ? [{ code: Option6.IAAddr, value: encodeIaAddress({ address: f.address, preferred: 0, valid: 0, options: [] }) }]
    : [];
  const options: Opt6[] = [{ code: Option6.ClientID, value: spec.duid }];
  if (f.serverId) options.push({ code: Option6.ServerID, value: f.serverId });
  options.push({ code: Option6.IANA, value: encodeIaNa({ iaid: spec.iaid, t1: 0, t2: 0, options: iaOptions }) });
  options.push({ code: Option6.ElapsedTime, value: elapsedTime(f.elapsedMs) });
  if (type !== Message6.Release) {
    if (spec.oro.length) options.push({ code: Option6.ORO, value: encodeOro(spec.oro) });
    if (spec.fqdn) options.push({ code: Option6.ClientFQDN, value: spec.fqdn });
  }
  return encodeMessage6({ type, xid: f.xid, options });
}

/**
 * Waits until `deadline` for a message of `type` answering `xid` for this client (its Client Identifier, a Server
 * Identifier); anything else that arrives (other clients' answers, malformed packets) is skipped.
 */
async function awaitMessage(
  sockets: Dhcp6Sockets,
  type: number,
  xid: number,
  duid: Uint8Array,
  deadline: number,
  signal?: AbortSignal,
): Promise<{ msg: Dhcp6Message; bytes: Uint8Array } | undefined> {
  for (;;) {
    const bytes = await sockets.receive(deadline, signal);
    if (!bytes) return undefined;
    let msg: Dhcp6Message;
    try {
      msg = decodeMessage6(bytes);
    } catch (e) {
      if (e instanceof DhcpFormatError) continue;
      throw e;
    }
    if (
      msg.type !== type ||
      msg.xid !== xid ||
      !sameBytes(firstOption(msg.options, Option6.ClientID) ?? new Uint8Array(), duid) ||
      !firstOption(msg.options, Option6.ServerID)
    )
      continue;
    return { msg, bytes };
  }
}

/** The IA_NA of `iaid` in a message (a malformed one is skipped); undefined when there is none. */
function iaOf(msg: Dhcp6Message, iaid: number): IaNa | undefined {
  for (const value of allOptions(msg.options, Option6.IANA)) {
    try {
      const ia = decodeIaNa(value);
      if (ia.iaid === iaid) return ia;
    } catch (e) {
      if (!(e instanceof DhcpFormatError)) throw e;
    }
  }
  return undefined;
}

/** The IA's addresses (malformed ones skipped). */
function addressesOf(ia: IaNa): IaAddress[] {
  const out: IaAddress[] = [];
  for (const value of allOptions(ia.options, Option6.IAAddr)) {
    try {
      out.push(decodeIaAddress(value));
    } catch (e) {
      if (!(e instanceof DhcpFormatError)) throw e;
    }
  }
  return out;
}

const serverText = (msg: Dhcp6Message): string => hexOf(firstOption(msg.options, Option6.ServerID)!, ":");

/**
 * What an ADVERTISE or REPLY gives this client's IA: an address the server binds (`address` equal to `want` when
 * given) with its IA, or why there is none (a status of the message or of the IA, no such address, T1 after T2).
 */
function readGrant(msg: Dhcp6Message, iaid: number, want?: string): { ia: IaNa; addr: IaAddress } | { problem: string; status?: number } {
  const what = `${MESSAGE6_NAMES[msg.type]} from ${serverText(msg)}`;
  const top = statusOf(msg.options);
  if (top.code !== Status6.Success) return { problem: `${what}: ${statusText(top)}`, status: top.code };
  const ia = iaOf(msg, iaid);
  if (!ia) return { problem: `${what} without an IA_NA for IAID ${iaid}` };
  const iaStatus = statusOf(ia.options);
  if (iaStatus.code !== Status6.Success) return { problem: `${what}: ${statusText(iaStatus)}`, status: iaStatus.code };
  if (ia.t1 !== 0 && ia.t2 !== 0 && ia.t1 > ia.t2) return { problem: `${what}: T1 ${ia.t1} s is after T2 ${ia.t2} s` };
  const usable = addressesOf(ia).filter((a) => a.valid > 0 && statusOf(a.options).code === Status6.Success && a.preferred <= a.valid);
  const addr = want === undefined ? usable[0] : usable.find((a) => a.address === want);
  if (!addr) return { problem: want === undefined ? `${what} gives no address` : `${what} does not give ${want}` };
  return { ia, addr };
}

/** The server's preference (option 7; 0 when absent). */
const preferenceOf = (msg: Dhcp6Message): number => firstOption(msg.options, Option6.Preference)?.[0] ?? 0;

const cutShort = (sockets: Dhcp6Sockets): CniError =>
  tryAgainLater(`acquiring a DHCPv6 lease on ${sockets.ifName} in ${sockets.netns} was cut short: the daemon is stopping`);

/**
 * SOLICIT until an ADVERTISE offers an address or `deadline` passes. Answers are collected for the first timeout
 * and the most preferred (first among equals) chosen, unless one has preference 255; after a retransmission the
 * first that offers an address is taken (RFC 8415 §18.2.1). Records what went wrong in `last`.
 */
async function solicit(
  sockets: Dhcp6Sockets,
  spec: SendSpec6,
  settings: ClientSettings,
  clock: Clock,
  deadline: number,
  last: { problem: string; sent: number },
  signal?: AbortSignal,
): Promise<Dhcp6Message | undefined> {
  const xid = randomXid(clock);
  const began = clock.now();
  let rt: number | undefined;
  const offers: Dhcp6Message[] = [];
  while (clock.now() < deadline && !signal?.aborted) {
    const sentAt = clock.now();
    try {
      sockets.send(buildMessage6(Message6.Solicit, { xid, elapsedMs: sentAt - began }, spec));
      last.sent++;
    } catch (e) {
      last.problem = `cannot send a SOLICIT (${messageOf(e)})`;
    }
    const first = rt === undefined;
    rt = retransmissionTimeout(rt, TIMING6.SOL_TIMEOUT, Math.min(TIMING6.SOL_MAX_RT, settings.resendMaxMs), () => clock.random(), true);
    const until = Math.min(sentAt + rt, deadline);
    for (;;) {
      const got = await awaitMessage(sockets, Message6.Advertise, xid, spec.duid, until, signal);
      if (!got) break;
      const grant = readGrant(got.msg, spec.iaid);
      if ("problem" in grant) {
        last.problem = grant.problem; // RFC 8415 §18.2.9: an ADVERTISE without addresses is ignored
        continue;
      }
      if (preferenceOf(got.msg) === 255 || !first) return got.msg;
      offers.push(got.msg);
    }
    if (offers.length) return offers.reduce((best, m) => (preferenceOf(m) > preferenceOf(best) ? m : best));
  }
  return undefined;
}

/**
 * REQUEST for the ADVERTISE's address to its server until a REPLY (REQ_MAX_RC transmissions or `deadline`): the
 * binding, or what went wrong.
 */
async function request(
  sockets: Dhcp6Sockets,
  spec: SendSpec6,
  advertise: Dhcp6Message,
  settings: ClientSettings,
  clock: Clock,
  deadline: number,
  signal?: AbortSignal,
): Promise<Binding6 | { problem: string }> {
  const offered = readGrant(advertise, spec.iaid);
  if ("problem" in offered) return offered;
  const serverId = firstOption(advertise.options, Option6.ServerID)!;
  const address = offered.addr.address;
  const xid = randomXid(clock);
  const began = clock.now();
  let rt: number | undefined;
  for (let count = 0; count < TIMING6.REQ_MAX_RC && clock.now() < deadline && !signal?.aborted; count++) {
    const sentAt = clock.now();
    try {
      sockets.send(buildMessage6(Message6.Request, { xid, elapsedMs: sentAt - began, serverId, address }, spec));
    } catch (e) {
      return { problem: `cannot send a REQUEST (${messageOf(e)})` };
    }
    rt = retransmissionTimeout(rt, TIMING6.REQ_TIMEOUT, Math.min(TIMING6.REQ_MAX_RT, settings.resendMaxMs), () => clock.random());
    const reply = await awaitMessage(sockets, Message6.Reply, xid, spec.duid, Math.min(sentAt + rt, deadline), signal);
    if (!reply) continue;
    const grant = readGrant(reply.msg, spec.iaid, address);
    if ("problem" in grant) return grant;
    return bindingOf(reply.bytes, reply.msg, grant, clock.now());
  }
  return { problem: `no REPLY from ${hexOf(serverId, ":")} for ${address}` };
}

function bindingOf(bytes: Uint8Array, msg: Dhcp6Message, grant: { ia: IaNa; addr: IaAddress }, now: number): Binding6 {
  const serverId = firstOption(msg.options, Option6.ServerID)!;
  return { reply: bytes, address: grant.addr.address, serverId, server: hexOf(serverId, ":"), ...bindingTimes6(grant.ia, grant.addr, now) };
}

/**
 * Acquires an address: SOLICIT/ADVERTISE/REQUEST/REPLY rounds until `resendTimeoutMs` has passed (a round that ends
 * without a binding — the server refused, never replied — starts the next at once). The DUID is made once the
 * interface is open. Fails with code 11 naming the interface, the namespace and what was last missing.
 */
export async function acquire6(
  open: Socket6Opener,
  base: Omit<SendSpec6, "duid"> & { duid: DuidSource },
  settings: ClientSettings,
  clock: Clock,
  signal?: AbortSignal,
): Promise<{ binding: Binding6; spec: SendSpec6 }> {
  const started = clock.now();
  const deadline = started + settings.resendTimeoutMs;
  const sockets = await open(deadline);
  try {
    const spec: SendSpec6 = { ...base, duid: typeof base.duid === "function" ? base.duid({ hwType: sockets.hwType, mac: sockets.mac }) : base.duid };
    const last = { problem: "no ADVERTISE", sent: 0 };
    while (clock.now() < deadline) {
      const advertise = await solicit(sockets, spec, settings, clock, deadline, last, signal);
      if (signal?.aborted) throw cutShort(sockets);
      if (!advertise) break;
      const outcome = await request(sockets, spec, advertise, settings, clock, deadline, signal);
      if (signal?.aborted) throw cutShort(sockets);
      if (!("problem" in outcome)) return { binding: outcome, spec };
      last.problem = outcome.problem;
    }
    throw tryAgainLater(
      `no DHCPv6 lease for ${sockets.ifName} in ${sockets.netns}: ${last.problem} within ${formatDuration(settings.resendTimeoutMs)} (${last.sent} SOLICIT${last.sent === 1 ? "" : "s"})`,
    );
  } finally {
    sockets.close();
  }
}

/**
 * One RENEW (to the lease's server) or REBIND (to any), waiting `timeoutMs` for the REPLY. A REPLY saying the server
 * has no binding (NoBinding) is followed by a REQUEST for the same address to that server (RFC 8415 §18.2.10.1);
 * an address the server ends (valid lifetime 0) or a NotOnLink is a refusal.
 */
export async function extend6(
  open: Socket6Opener,
  current: Binding6,
  mode: "renew" | "rebind",
  spec: SendSpec6,
  settings: ClientSettings,
  clock: Clock,
  signal?: AbortSignal,
): Promise<RenewOutcome6> {
  const sockets = await open(clock.now() + settings.timeoutMs);
  try {
    const xid = randomXid(clock);
    const type = mode === "renew" ? Message6.Renew : Message6.Rebind;
    try {
      sockets.send(
        buildMessage6(type, { xid, elapsedMs: 0, address: current.address, ...(mode === "renew" ? { serverId: current.serverId } : {}) }, spec),
      );
    } catch (e) {
      return { problem: `cannot send the ${MESSAGE6_NAMES[type]} (${messageOf(e)})` };
    }
    const reply = await awaitMessage(sockets, Message6.Reply, xid, spec.duid, clock.now() + settings.timeoutMs, signal);
    if (!reply) return { problem: mode === "renew" ? `no REPLY from ${current.server}` : "no REPLY to a REBIND" };
    return await readRenewal(sockets, reply, current, spec, settings, clock, signal);
  } finally {
    sockets.close();
  }
}

async function readRenewal(
  sockets: Dhcp6Sockets,
  reply: { msg: Dhcp6Message; bytes: Uint8Array },
  current: Binding6,
  spec: SendSpec6,
  settings: ClientSettings,
  clock: Clock,
  signal?: AbortSignal,
): Promise<RenewOutcome6> {
  const grant = readGrant(reply.msg, spec.iaid, current.address);
  if (!("problem" in grant)) return { binding: bindingOf(reply.bytes, reply.msg, grant, clock.now()) };
  if (grant.status === Status6.NoBinding) {
    const serverId = firstOption(reply.msg.options, Option6.ServerID)!;
    const xid = randomXid(clock);
    sockets.send(buildMessage6(Message6.Request, { xid, elapsedMs: 0, serverId, address: current.address }, spec));
    const again = await awaitMessage(sockets, Message6.Reply, xid, spec.duid, clock.now() + settings.timeoutMs, signal);
    if (!again) return { problem: `${grant.problem}, and no REPLY to the REQUEST that followed` };
    const regained = readGrant(again.msg, spec.iaid, current.address);
    if (!("problem" in regained)) return { binding: bindingOf(again.bytes, again.msg, regained, clock.now()) };
    return { nak: regained.problem };
  }
  if (grant.status === Status6.NotOnLink) return { nak: grant.problem };
  const ia = iaOf(reply.msg, spec.iaid);
  const ended = ia && addressesOf(ia).some((a) => a.address === current.address && a.valid === 0);
  if (ended) return { nak: `REPLY from ${serverText(reply.msg)} ends ${current.address} (valid lifetime 0)` };
  return { problem: grant.problem };
}

/**
 * Releases an address: RELEASE to its server, retransmitted (RFC 8415 §18.2.7) until a REPLY or RELEASE_BUDGET_MS.
 * Returns how it went. Throws what `open` throws, so an interface or namespace that is gone is the caller's to
 * handle: a RELEASE is sent from the container's interface or not at all.
 */
export async function release6(open: Socket6Opener, current: Binding6, spec: SendSpec6, clock: Clock): Promise<string> {
  const began = clock.now();
  const sockets = await open(began + TIMING6.REL_TIMEOUT);
  try {
    const xid = randomXid(clock);
    let rt: number | undefined;
    for (let count = 1; count <= TIMING6.REL_MAX_RC; count++) {
      const sentAt = clock.now();
      sockets.send(buildMessage6(Message6.Release, { xid, elapsedMs: sentAt - began, serverId: current.serverId, address: current.address }, spec));
      rt = retransmissionTimeout(rt, TIMING6.REL_TIMEOUT, 0, () => clock.random());
      const until = Math.min(sentAt + rt, began + RELEASE_BUDGET_MS);
      const reply = await awaitMessage(sockets, Message6.Reply, xid, spec.duid, until, undefined);
      if (reply) return `confirmed by ${serverText(reply.msg)} (${statusText(statusOf(reply.msg.options))})`;
      if (until >= began + RELEASE_BUDGET_MS)
        return `sent ${count} time${count === 1 ? "" : "s"}, no REPLY within ${formatDuration(RELEASE_BUDGET_MS)}`;
    }
    return `sent ${TIMING6.REL_MAX_RC} times, no REPLY`;
  } finally {
    sockets.close();
  }
}
