/**
 * Test doubles for the dhcp daemon's client and leases: a clock whose time only moves when the test says so,
 * a DHCP server that answers in memory (and can be told to stay silent, refuse, or ignore unicast), the
 * sockets of one interface connected to it, and a LeaseWorld with links that tests can remove. T1, T2 and
 * expiry then take no real time.
 * @module
 */
import { setImmediate as tick } from "node:timers/promises";
import type { Clock } from "../plugins/ipam/dhcp/clock.js";
import type { LeaseWorld } from "../plugins/ipam/dhcp/leases.js";
import { LinkGoneError, NetnsGoneError, type DhcpSockets } from "../plugins/ipam/dhcp/netns-sockets.js";
import {
  BOOTREPLY, decodeMessage, encodeClasslessRoutes, encodeMessage, ipv4Bytes, messageType, readAddresses, u32Option,
  type DhcpMessage,
} from "../plugins/ipam/dhcp/packet.js";
import { MessageType, Option } from "../plugins/ipam/dhcp/option-codes.js";
import { CniError } from "../spec/errors.js";

/** Lets pending promise chains and I/O callbacks run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await tick();
}

/** A clock that stands still until `advance`; random() is fixed, so resend jitter is zero. */
export class FakeClock implements Clock {
  private sleepers: Array<{ at: number; wake: () => void }> = [];
  constructor(public t = Date.UTC(2030, 0, 1)) {}

  now(): number {
    return this.t;
  }

  random(): number {
    return 0.5;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted || !(ms > 0)) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper = {
        at: this.t + ms,
        wake: () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          signal?.removeEventListener("abort", sleeper.wake);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener("abort", sleeper.wake, { once: true });
    });
  }

  /** Moves time forward by `ms`, waking sleepers in order and letting what they start run before the next. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const due = this.sleepers.filter((s) => s.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.t = Math.max(this.t, due.at);
      for (const s of this.sleepers.filter((x) => x.at <= this.t)) s.wake();
    }
    this.t = end;
    await settle();
  }
}

/** A message the fake server got, and how it came. */
export interface Received {
  type: number | undefined;
  how: "broadcast" | "unicast";
  msg: DhcpMessage;
}

/** An in-memory DHCP server on 10.9.0.0/24. */
export class FakeDhcpServer {
  readonly ip = "10.9.0.1";
  received: Received[] = [];
  /** Answers nothing at all. */
  silent = false;
  /** Ignores unicast (a container with no route to it). */
  deafToUnicast = false;
  /** Answers every REQUEST with a NAK. */
  refuse = false;
  leaseSeconds = 120;
  t1Seconds: number | undefined = 30;
  t2Seconds: number | undefined = 90;
  /** Sends option 121 when asked for it. */
  classless = true;
  private next = 10;
  /** Addresses by client id (hex). */
  readonly bindings = new Map<string, string>();

  private addressFor(m: DhcpMessage): string {
    const id = Buffer.from(m.options.get(Option.ClientID) ?? m.chaddr).toString("hex");
    let ip = this.bindings.get(id);
    if (!ip) {
      ip = `10.9.0.${this.next++}`;
      this.bindings.set(id, ip);
    }
    return ip;
  }

  /** The reply to `bytes`, if any. */
  handle(bytes: Uint8Array, how: Received["how"]): Uint8Array | undefined {
    const msg = decodeMessage(bytes);
    const type = messageType(msg);
    this.received.push({ type, how, msg });
    if (this.silent || (how === "unicast" && this.deafToUnicast)) return undefined;
    if (type === MessageType.Release) {
      this.bindings.delete(Buffer.from(msg.options.get(Option.ClientID) ?? msg.chaddr).toString("hex"));
      return undefined;
    }
    if (type !== MessageType.Discover && type !== MessageType.Request) return undefined;
    const requested = readAddresses(msg.options.get(Option.RequestedIP))?.[0];
    const ip = msg.ciaddr !== "0.0.0.0" ? msg.ciaddr : requested ?? this.addressFor(msg);
    const replyType = type === MessageType.Discover ? MessageType.Offer : this.refuse ? MessageType.Nak : MessageType.Ack;
    const reply: DhcpMessage = { ...msg, op: BOOTREPLY, yiaddr: replyType === MessageType.Nak ? "0.0.0.0" : ip, options: new Map() };
    reply.options.set(Option.MessageType, Uint8Array.of(replyType));
    reply.options.set(Option.ServerID, ipv4Bytes(this.ip));
    if (replyType !== MessageType.Nak) {
      reply.options.set(Option.LeaseTime, u32Option(this.leaseSeconds));
      if (this.t1Seconds !== undefined) reply.options.set(Option.RenewalTime, u32Option(this.t1Seconds));
      if (this.t2Seconds !== undefined) reply.options.set(Option.RebindingTime, u32Option(this.t2Seconds));
      reply.options.set(Option.SubnetMask, ipv4Bytes("255.255.255.0"));
      reply.options.set(Option.Router, ipv4Bytes(this.ip));
      reply.options.set(Option.DomainNameServer, Uint8Array.from([...ipv4Bytes("10.9.0.53"), ...ipv4Bytes("10.9.0.54")]));
      const asked = msg.options.get(Option.ParameterRequestList) ?? new Uint8Array();
      if (this.classless && asked.includes(Option.ClasslessStaticRoutes)) {
        reply.options.set(Option.ClasslessStaticRoutes, encodeClasslessRoutes([{ dst: "10.99.0.0/16", router: this.ip }, { dst: "0.0.0.0/0", router: this.ip }]));
      }
    } else {
      reply.options.set(Option.Message, Uint8Array.from(Buffer.from("wrong network")));
    }
    return encodeMessage(reply);
  }

  /** The messages of one type the server got. */
  got(type: number): Received[] {
    return this.received.filter((r) => r.type === type);
  }
}

/** The sockets of one interface, wired to a fake server; replies wait in a queue until received. */
export class FakeSockets implements DhcpSockets {
  closed = false;
  private queue: Uint8Array[] = [];
  /** Whether the interface has its lease's address configured (then unicast reaches the server). */
  configured = true;
  constructor(private readonly server: FakeDhcpServer, private readonly clock: FakeClock, readonly netns: string, readonly ifName: string, readonly mac: Uint8Array) {}

  hasAddress(): boolean {
    return this.configured;
  }

  sendBroadcast(payload: Uint8Array): void {
    const reply = this.server.handle(payload, "broadcast");
    if (reply) this.queue.push(reply);
  }

  sendUnicast(payload: Uint8Array, dst: string): void {
    if (dst !== this.server.ip) throw new Error(`no route to ${dst}`);
    const reply = this.server.handle(payload, "unicast");
    if (reply) this.queue.push(reply);
  }

  async receive(deadline: number, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const next = this.queue.shift();
    if (next) return next;
    await this.clock.sleep(deadline - this.clock.now(), signal);
    return this.queue.shift();
  }

  close(): void {
    this.closed = true;
  }
}

/** A LeaseWorld over a fake server: links by `netns/ifName`, removable; everything logged into `lines`. */
export class FakeWorld implements LeaseWorld {
  readonly clock = new FakeClock();
  readonly server = new FakeDhcpServer();
  settings = { timeoutMs: 2000, resendMaxMs: 62_000, resendTimeoutMs: 10_000, broadcast: false };
  hostPrefix = "";
  readonly links = new Set<string>();
  /** Links whose lease address the main plugin has not configured. */
  readonly unconfigured = new Set<string>();
  readonly down: string[] = [];
  readonly lines: string[] = [];
  readonly opened: FakeSockets[] = [];
  readonly saved = new Map<string, unknown>();
  store: LeaseWorld["store"];

  constructor(store?: LeaseWorld["store"]) {
    this.store = store ?? {
      save: async (r) => void this.saved.set(r.clientID, r),
      remove: async (id) => void this.saved.delete(id),
    };
  }

  addLink(netns: string, ifName: string): void {
    this.links.add(`${netns}/${ifName}`);
  }

  removeLink(netns: string, ifName: string): void {
    this.links.delete(`${netns}/${ifName}`);
  }

  async open(netns: string, ifName: string): Promise<DhcpSockets> {
    if (![...this.links].some((l) => l.startsWith(`${netns}/`))) throw new NetnsGoneError(netns);
    if (!this.links.has(`${netns}/${ifName}`)) throw new LinkGoneError(ifName, netns);
    const index = [...this.links].indexOf(`${netns}/${ifName}`);
    const s = new FakeSockets(this.server, this.clock, netns, ifName, Uint8Array.of(2, 0, 0, 0, index >> 8, index & 0xff));
    s.configured = !this.unconfigured.has(`${netns}/${ifName}`);
    this.opened.push(s);
    return s;
  }

  async linkExists(netns: string, ifName: string): Promise<boolean> {
    return this.links.has(`${netns}/${ifName}`);
  }

  async setLinkDown(netns: string, ifName: string): Promise<void> {
    this.down.push(`${netns}/${ifName}`);
  }

  isGone(e: unknown): boolean {
    return e instanceof NetnsGoneError || e instanceof LinkGoneError;
  }

  describeOpenError(e: unknown): CniError {
    return CniError.from(e);
  }

  log = (line: string): void => {
    this.lines.push(line);
  };
}
