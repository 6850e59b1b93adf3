/**
 * The DHCPv4 client's exchanges (RFC 2131) over the sockets of one interface: acquiring a lease (DISCOVER,
 * OFFER, REQUEST, ACK, resent with backoff until `-resendtimeout`), renewing it (REQUEST unicast to its
 * server), rebinding it (REQUEST broadcast) and releasing it (RELEASE unicast to its server). The sockets,
 * the clock and the randomness are passed in, so every exchange runs against a fake server in the tests.
 * @module
 */
import { messageOf, tryAgainLater } from "#spec/errors.js";
import { sameBytes } from "#sys/bytes.js";
import type { Clock } from "./clock.js";
import type { DhcpSockets } from "./netns-sockets.js";
import { MessageType, Option } from "./option-codes.js";
import {
  BOOTREPLY,
  DhcpFormatError,
  type DhcpMessage,
  decodeMessage,
  encodeMessage,
  FLAG_BROADCAST,
  INFINITE_TIME,
  ipv4Bytes,
  messageType,
  newRequest,
  readAddresses,
  readText,
  readU32,
} from "./packet.js";

/** The daemon's settings for every exchange. */
export interface ClientSettings {
  /** How long one request waits for its reply (`-timeout`). */
  timeoutMs: number;
  /** The longest pause between resends (`-resendmax`). */
  resendMaxMs: number;
  /** How long an acquisition resends before it gives up (`-resendtimeout`). */
  resendTimeoutMs: number;
  /** Whether requests ask the server to broadcast its replies (`-broadcast`). */
  broadcast: boolean;
}

/** What every message of a lease carries besides the client's own options. */
export interface SendSpec {
  /** Option 61 as sent (type byte and id), unless `options` provides 61 itself. */
  clientIdOption: Uint8Array;
  /** Options from the config (`provide`, host name), by code. */
  options: Map<number, Uint8Array>;
  /** The parameter request list (option 55). */
  requestList: number[];
}

/** A bound lease: the DHCPACK and what follows from it. Times are epoch milliseconds (Infinity: never). */
export interface Binding {
  /** The DHCPACK, as received. */
  ack: Uint8Array;
  address: string;
  /** The server identifier (option 54), where renewals and the release go. */
  server: string;
  /** The hardware address the client used. */
  mac: Uint8Array;
  boundAt: number;
  renewAt: number;
  rebindAt: number;
  expiresAt: number;
}

/** The lease time when the server gives none (upstream's default). */
export const DEFAULT_LEASE_SECONDS = 3600;
/** What the client accepts as a DHCP message (its receive buffer allows more; 1500 is what servers expect). */
const MAX_MESSAGE_SIZE = 1500;

/**
 * T1, T2 and expiry of a lease bound at `now`: the server's options 58, 59 and 51 (lease time 60 min when
 * absent; T1 half of it and T2 85% when absent, as upstream). Values that break T1 <= T2 < lease time are
 * replaced by the defaults; an infinite lease is never renewed.
 */
export function bindingTimes(ack: DhcpMessage, now: number): Pick<Binding, "boundAt" | "renewAt" | "rebindAt" | "expiresAt"> {
  const lease = readU32(ack.options.get(Option.LeaseTime)) ?? DEFAULT_LEASE_SECONDS;
  if (lease === INFINITE_TIME) return { boundAt: now, renewAt: Infinity, rebindAt: Infinity, expiresAt: Infinity };
  let t2 = readU32(ack.options.get(Option.RebindingTime));
  if (t2 === undefined || t2 >= lease) t2 = lease * 0.85;
  let t1 = readU32(ack.options.get(Option.RenewalTime));
  if (t1 === undefined || t1 >= lease) t1 = lease / 2;
  if (t1 > t2) t1 = t2;
  return { boundAt: now, renewAt: now + t1 * 1000, rebindAt: now + t2 * 1000, expiresAt: now + lease * 1000 };
}

/**
 * The pause before resend number `attempt` (0-based): four quick ones of 2 s, then 4 s doubling up to
 * `resendMaxMs`, each ±1 s at random (RFC 2131 §4.1, with upstream's quick start).
 */
export function backoffDelay(attempt: number, resendMaxMs: number, random: () => number): number {
  const base = attempt < 4 ? 2000 : Math.min(4000 * 2 ** Math.min(attempt - 4, 20), Math.max(resendMaxMs, 1000));
  return Math.max(0, base + (random() * 2 - 1) * 1000);
}

const randomXid = (clock: Clock): number => Math.floor(clock.random() * 0x100000000) >>> 0;

interface MessageFields {
  xid: number;
  mac: Uint8Array;
  secs?: number;
  broadcast?: boolean;
  ciaddr?: string;
  requestedIP?: string;
  serverID?: string;
}

/** A client message: type, client id, the addresses it names, then (but for RELEASE) the config's options and the request list. */
export function buildMessage(type: number, f: MessageFields, spec: SendSpec): Uint8Array {
  const m = newRequest({
    xid: f.xid,
    chaddr: f.mac,
    secs: f.secs ?? 0,
    flags: f.broadcast ? FLAG_BROADCAST : 0,
    ...(f.ciaddr ? { ciaddr: f.ciaddr } : {}),
  });
  m.options.set(Option.MessageType, Uint8Array.of(type));
  m.options.set(Option.ClientID, spec.options.get(Option.ClientID) ?? spec.clientIdOption);
  if (f.requestedIP) m.options.set(Option.RequestedIP, ipv4Bytes(f.requestedIP));
  if (f.serverID) m.options.set(Option.ServerID, ipv4Bytes(f.serverID));
  if (type !== MessageType.Release) {
    m.options.set(Option.MaxMessageSize, Uint8Array.of(MAX_MESSAGE_SIZE >> 8, MAX_MESSAGE_SIZE & 0xff));
    for (const [code, value] of spec.options) if (code !== Option.ClientID) m.options.set(code, value);
    if (spec.requestList.length) m.options.set(Option.ParameterRequestList, Uint8Array.from(spec.requestList));
  }
  return encodeMessage(m);
}

/**
 * Waits until `deadline` for a reply to `xid` for this client of one of `types`; anything else that arrives
 * (other clients' replies, malformed packets) is skipped.
 */
async function awaitReply(
  sockets: DhcpSockets,
  xid: number,
  types: readonly number[],
  deadline: number,
  signal?: AbortSignal,
): Promise<{ msg: DhcpMessage; bytes: Uint8Array } | undefined> {
  for (;;) {
    const bytes = await sockets.receive(deadline, signal);
    if (!bytes) return undefined;
    let msg: DhcpMessage;
    try {
      msg = decodeMessage(bytes);
    } catch (e) {
      if (e instanceof DhcpFormatError) continue;
      throw e;
    }
    if (msg.op !== BOOTREPLY || msg.xid !== xid || !sameBytes(msg.chaddr.subarray(0, sockets.mac.length), sockets.mac)) continue;
    const type = messageType(msg);
    if (type !== undefined && types.includes(type)) return { msg, bytes };
  }
}

const serverOf = (m: DhcpMessage): string | undefined => readAddresses(m.options.get(Option.ServerID))?.[0];

/** Seconds as Go prints a duration ("10s", "1m2s"). */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${Number(s.toFixed(3))}s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = Number((s % 60).toFixed(3));
  return `${h ? `${h}h` : ""}${m || h ? `${m}m` : ""}${rest}s`;
}

/** What a round that got no lease came to; `nak` when the server refused the offered address. */
interface Miss {
  problem: string;
  nak?: boolean;
}

/** One DISCOVER-OFFER-REQUEST-ACK round: a binding, or what went wrong. */
async function acquireOnce(
  sockets: DhcpSockets,
  spec: SendSpec,
  settings: ClientSettings,
  clock: Clock,
  started: number,
  deadline: number,
  signal?: AbortSignal,
): Promise<Binding | Miss> {
  const xid = randomXid(clock);
  const secs = Math.min(0xffff, Math.floor((clock.now() - started) / 1000));
  const fields = { xid, mac: sockets.mac, secs, broadcast: settings.broadcast };
  const replyBy = () => Math.min(clock.now() + settings.timeoutMs, deadline);
  try {
    sockets.sendBroadcast(buildMessage(MessageType.Discover, fields, spec), "0.0.0.0");
  } catch (e) {
    return { problem: `cannot send a DHCPDISCOVER (${messageOf(e)})` };
  }
  const offer = await awaitReply(sockets, xid, [MessageType.Offer], replyBy(), signal);
  if (!offer) return { problem: "no DHCPOFFER" };
  const server = serverOf(offer.msg);
  if (!server) return { problem: "a DHCPOFFER without a server identifier" };
  const address = offer.msg.yiaddr;
  try {
    sockets.sendBroadcast(buildMessage(MessageType.Request, { ...fields, requestedIP: address, serverID: server }, spec), "0.0.0.0");
  } catch (e) {
    return { problem: `cannot send a DHCPREQUEST (${messageOf(e)})` };
  }
  const reply = await awaitReply(sockets, xid, [MessageType.Ack, MessageType.Nak], replyBy(), signal);
  if (!reply) return { problem: `no DHCPACK from ${server} for ${address}` };
  if (messageType(reply.msg) === MessageType.Nak) return { problem: `DHCPNAK from ${server} for ${address}${nakReason(reply.msg)}`, nak: true };
  if (reply.msg.yiaddr !== address) return { problem: `the DHCPACK from ${server} gives ${reply.msg.yiaddr}, not the offered ${address}` };
  return { ack: reply.bytes, address, server: serverOf(reply.msg) ?? server, mac: sockets.mac, ...bindingTimes(reply.msg, clock.now()) };
}

const nakReason = (m: DhcpMessage): string => {
  const text = readText(m.options.get(Option.Message));
  return text ? ` (${text})` : "";
};

/** Opens the sockets of one exchange; throws what the opener throws (the link or namespace being gone). */
export type SocketOpener = () => Promise<DhcpSockets>;

/** How many refusals in a row start a new round at once (RFC 2131 §3.1: a NAK restarts the client). */
const QUICK_RESTARTS_AFTER_NAK = 3;

/**
 * Acquires a lease: DISCOVER/OFFER/REQUEST/ACK rounds, each request waiting `timeoutMs`, resent with backoff
 * until `resendTimeoutMs` has passed; a NAK (the offered address went to another client meanwhile, say) starts
 * the next round at once, a few times. Fails with code 11 ("try again later") naming the interface, the
 * namespace and what was last missing.
 */
export async function acquire(open: SocketOpener, spec: SendSpec, settings: ClientSettings, clock: Clock, signal?: AbortSignal): Promise<Binding> {
  const started = clock.now();
  const deadline = started + settings.resendTimeoutMs;
  const sockets = await open();
  try {
    let naks = 0;
    for (let tries = 1, resends = 0; ; tries++) {
      const outcome = await acquireOnce(sockets, spec, settings, clock, started, deadline, signal);
      if (!("problem" in outcome)) return outcome;
      if (signal?.aborted)
        throw tryAgainLater(`acquiring a DHCP lease on ${sockets.ifName} in ${sockets.netns} was cut short: the daemon is stopping`);
      naks = outcome.nak ? naks + 1 : 0;
      const pause = outcome.nak && naks <= QUICK_RESTARTS_AFTER_NAK ? 0 : backoffDelay(resends++, settings.resendMaxMs, () => clock.random());
      if (clock.now() + pause >= deadline) {
        throw tryAgainLater(
          `no DHCP lease for ${sockets.ifName} in ${sockets.netns}: ${outcome.problem} within ${formatDuration(settings.resendTimeoutMs)} (${tries} ${tries > 1 ? "tries" : "try"})`,
        );
      }
      await clock.sleep(pause, signal);
    }
  } finally {
    sockets.close();
  }
}

/** What a renewal or rebinding came to: a new binding, a refusal (NAK), or no answer. */
export type RenewOutcome = { binding: Binding } | { nak: string } | { problem: string };

/**
 * One REQUEST for the bound address (`ciaddr` set, no server identifier), waiting `timeoutMs` for the answer:
 * when renewing, unicast to the lease's server and, if that goes unanswered, once more as a broadcast; when
 * rebinding, or when the interface does not have the address (its main plugin has not configured it, so
 * there is no route to the server), broadcast.
 */
export async function extend(
  open: SocketOpener,
  current: Binding,
  mode: "renew" | "rebind",
  spec: SendSpec,
  settings: ClientSettings,
  clock: Clock,
  signal?: AbortSignal,
): Promise<RenewOutcome> {
  const sockets = await open();
  try {
    let problem = "";
    const unicastFirst = mode === "renew" && sockets.hasAddress(current.address);
    for (const how of unicastFirst ? (["unicast", "broadcast"] as const) : (["broadcast"] as const)) {
      if (signal?.aborted) break;
      const xid = randomXid(clock);
      const msg = buildMessage(MessageType.Request, { xid, mac: sockets.mac, ciaddr: current.address }, spec);
      try {
        if (how === "unicast") sockets.sendUnicast(msg, current.server);
        else sockets.sendBroadcast(msg, current.address);
      } catch (e) {
        problem = `cannot send the DHCPREQUEST (${messageOf(e)})`;
        continue;
      }
      const reply = await awaitReply(sockets, xid, [MessageType.Ack, MessageType.Nak], clock.now() + settings.timeoutMs, signal);
      if (!reply) {
        problem = how === "unicast" ? `no answer from ${current.server}` : "no answer to a broadcast";
        continue;
      }
      const from = serverOf(reply.msg) ?? current.server;
      if (messageType(reply.msg) === MessageType.Nak) return { nak: `DHCPNAK from ${from}${nakReason(reply.msg)}` };
      if (reply.msg.yiaddr !== current.address) return { nak: `the DHCPACK from ${from} gives ${reply.msg.yiaddr}, not ${current.address}` };
      return { binding: { ack: reply.bytes, address: current.address, server: from, mac: sockets.mac, ...bindingTimes(reply.msg, clock.now()) } };
    }
    return { problem };
  } finally {
    sockets.close();
  }
}

/**
 * Releases a lease from the container's interface: RELEASE unicast to its server; broadcast on the interface when
 * the container cannot route to the server (the interface does not have the address, or the kernel refuses the
 * unicast). Returns how it was sent. Throws what `open` throws, so an interface or namespace that is gone is the
 * caller's to handle: a RELEASE is sent from the container's interface or not at all.
 */
export async function release(open: SocketOpener, current: Binding, spec: SendSpec, clock: Clock): Promise<string> {
  const fields = { xid: randomXid(clock), ciaddr: current.address, serverID: current.server };
  const sockets = await open();
  try {
    const msg = buildMessage(MessageType.Release, { ...fields, mac: sockets.mac }, spec);
    if (sockets.hasAddress(current.address)) {
      try {
        sockets.sendUnicast(msg, current.server);
        return `unicast to ${current.server}`;
      } catch {
        /* no route after all: broadcast */
      }
    }
    sockets.sendBroadcast(msg, current.address);
    return `broadcast (${current.address} is not on ${sockets.ifName}, so there is no route to ${current.server})`;
  } finally {
    sockets.close();
  }
}
