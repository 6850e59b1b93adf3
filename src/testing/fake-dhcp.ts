/**
 * Test doubles for the dhcp daemon's client and leases: a clock whose time only moves when the test says so,
 * a DHCPv4 server and a DHCPv6 server that answer in memory (and can be told to stay silent, refuse, or ignore
 * unicast), the sockets of one interface connected to them, and a LeaseWorld with links that tests can remove.
 * T1, T2 and expiry then take no real time.
 * @module
 */
import { setImmediate as tick } from "node:timers/promises";
import { LinkGoneError, NetnsGoneError } from "#net/netlink/netns-sockets.js";
import type { Dhcp6Sockets } from "#plugins/ipam/dhcp/client6.js";
import type { Clock } from "#plugins/ipam/dhcp/clock.js";
import type { Family } from "#plugins/ipam/dhcp/config.js";
import type { LeaseWorld } from "#plugins/ipam/dhcp/leases.js";
import type { DhcpSockets } from "#plugins/ipam/dhcp/netns-sockets.js";
import { MessageType, Option } from "#plugins/ipam/dhcp/option-codes.js";
import {
  BOOTREPLY,
  type DhcpMessage,
  decodeMessage,
  encodeClasslessRoutes,
  encodeDomainSearch,
  encodeMessage,
  ipv4Bytes,
  messageType,
  readAddresses,
  u32Option,
} from "#plugins/ipam/dhcp/packet.js";
import {
  type Dhcp6Message,
  decodeIaAddress,
  decodeIaNa,
  decodeMessage6,
  decodeOro,
  duidLL,
  encodeIaAddress,
  encodeIaNa,
  encodeMessage6,
  encodeStatus,
  firstOption,
  ipv6Bytes,
  Message6,
  type Opt6,
  Option6,
  Status6,
} from "#plugins/ipam/dhcp/packet6.js";
import { CniError } from "#spec/errors.js";
import { hexOf } from "#sys/bytes.js";
import type { CallerFile } from "#sys/caller-root.js";

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
    const ip = msg.ciaddr !== "0.0.0.0" ? msg.ciaddr : (requested ?? this.addressFor(msg));
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
        reply.options.set(
          Option.ClasslessStaticRoutes,
          encodeClasslessRoutes([
            { dst: "10.99.0.0/16", router: this.ip },
            { dst: "0.0.0.0/0", router: this.ip },
          ]),
        );
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
  constructor(
    private readonly server: FakeDhcpServer,
    private readonly clock: FakeClock,
    readonly netns: string,
    readonly ifName: string,
    readonly mac: Uint8Array,
  ) {}

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

/** A message the fake DHCPv6 server got. */
export interface Received6 {
  type: number;
  msg: Dhcp6Message;
}

/** An in-memory DHCPv6 server on fd00:9::/64, giving addresses from fd00:9::10 on. */
export class FakeDhcp6Server {
  received: Received6[] = [];
  /** Answers nothing at all. */
  silent = false;
  /** Has no addresses: NoAddrsAvail in the IA of every ADVERTISE and REPLY. */
  exhausted = false;
  /** The Preference option of its ADVERTISE (none when undefined). */
  preference: number | undefined;
  /** Answers the next RENEW or REBIND with NoBinding (as a server that lost its leases). */
  forgetBindings = false;
  /** Ends the address in its next RENEW/REBIND REPLY (valid lifetime 0). */
  endNext = false;
  validSeconds = 120;
  preferredSeconds = 120;
  t1Seconds = 30;
  t2Seconds = 90;
  /** Addresses by DUID and IAID. */
  readonly bindings = new Map<string, string>();
  private next: number;

  constructor(
    readonly serverId = duidLL(1, Uint8Array.of(2, 0, 0, 0, 0, 0xfe)),
    firstHost = 0x10,
  ) {
    this.next = firstHost;
  }

  private bindingKey(duid: Uint8Array, iaid: number): string {
    return `${hexOf(duid, ":")}/${iaid}`;
  }

  /** The address asked for in the message's IA, if any. */
  private askedAddress(ia: ReturnType<typeof decodeIaNa>): string | undefined {
    const addr = firstOption(ia.options, Option6.IAAddr);
    return addr ? decodeIaAddress(addr).address : undefined;
  }

  /** The reply to `bytes`, if any. */
  handle(bytes: Uint8Array): Uint8Array | undefined {
    const msg = decodeMessage6(bytes);
    this.received.push({ type: msg.type, msg });
    if (this.silent) return undefined;
    const duid = firstOption(msg.options, Option6.ClientID)!;
    const ia = decodeIaNa(firstOption(msg.options, Option6.IANA)!);
    const key = this.bindingKey(duid, ia.iaid);
    const named = firstOption(msg.options, Option6.ServerID);
    if (named && hexOf(named) !== hexOf(this.serverId)) return undefined; // for another server
    const options: Opt6[] = [
      { code: Option6.ClientID, value: duid },
      { code: Option6.ServerID, value: this.serverId },
    ];
    const reply = (type: number, iaOptions: Opt6[], extra: Opt6[] = []) => {
      options.push(
        { code: Option6.IANA, value: encodeIaNa({ iaid: ia.iaid, t1: this.t1Seconds, t2: this.t2Seconds, options: iaOptions }) },
        ...extra,
      );
      const oro = firstOption(msg.options, Option6.ORO);
      const asked = oro ? decodeOro(oro) : [];
      if (asked.includes(Option6.DNSServers))
        options.push({ code: Option6.DNSServers, value: Uint8Array.from([...ipv6Bytes("fd00:9::53"), ...ipv6Bytes("fd00:9::54")]) });
      if (asked.includes(Option6.DomainList)) options.push({ code: Option6.DomainList, value: encodeDomainSearch(["tscni.test"]) });
      return encodeMessage6({ type, xid: msg.xid, options });
    };
    const status = (code: number, message: string): Opt6 => ({ code: Option6.StatusCode, value: encodeStatus({ code, message }) });
    const grant = (address: string, valid = this.validSeconds): Opt6 => ({
      code: Option6.IAAddr,
      value: encodeIaAddress({ address, preferred: Math.min(this.preferredSeconds, valid), valid, options: [] }),
    });
    switch (msg.type) {
      case Message6.Solicit: {
        if (this.exhausted) return reply(Message6.Advertise, [status(Status6.NoAddrsAvail, "no addresses")]);
        let address = this.bindings.get(key);
        if (!address) {
          address = `fd00:9::${(this.next++).toString(16)}`;
          this.bindings.set(key, address);
        }
        const pref: Opt6[] = this.preference === undefined ? [] : [{ code: Option6.Preference, value: Uint8Array.of(this.preference) }];
        return reply(Message6.Advertise, [grant(address)], pref);
      }
      case Message6.Request: {
        if (this.exhausted) return reply(Message6.Reply, [status(Status6.NoAddrsAvail, "no addresses")]);
        const address = this.askedAddress(ia)!;
        this.bindings.set(key, address);
        return reply(Message6.Reply, [grant(address)]);
      }
      case Message6.Renew:
      case Message6.Rebind: {
        const address = this.askedAddress(ia)!;
        if (this.forgetBindings) {
          this.forgetBindings = false;
          this.bindings.delete(key);
          return reply(Message6.Reply, [status(Status6.NoBinding, "no binding")]);
        }
        if (this.endNext) {
          this.endNext = false;
          return reply(Message6.Reply, [grant(address, 0)]);
        }
        return reply(Message6.Reply, [grant(address)]);
      }
      case Message6.Release:
        this.bindings.delete(key);
        options.push(status(Status6.Success, "released"));
        return encodeMessage6({ type: Message6.Reply, xid: msg.xid, options });
      default:
        return undefined;
    }
  }

  /** The messages of one type the server got. */
  got(type: number): Received6[] {
    return this.received.filter((r) => r.type === type);
  }
}

/** The DHCPv6 socket of one interface, wired to fake servers; replies wait in a queue until received. */
export class FakeSockets6 implements Dhcp6Sockets {
  closed = false;
  readonly hwType = 1;
  private queue: Uint8Array[] = [];
  constructor(
    private readonly servers: readonly FakeDhcp6Server[],
    private readonly clock: FakeClock,
    readonly netns: string,
    readonly ifName: string,
    readonly mac: Uint8Array,
  ) {}

  send(payload: Uint8Array): void {
    for (const s of this.servers) {
      const reply = s.handle(payload);
      if (reply) this.queue.push(reply);
    }
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
  /** The DHCPv6 server on every link. */
  readonly server6 = new FakeDhcp6Server();
  settings = { timeoutMs: 2000, resendMaxMs: 62_000, resendTimeoutMs: 10_000, broadcast: false };
  hostPrefix = "";
  readonly links = new Set<string>();
  /** Links whose lease address the main plugin has not configured. */
  readonly unconfigured = new Set<string>();
  readonly down: string[] = [];
  readonly lines: string[] = [];
  readonly opened: FakeSockets[] = [];
  readonly opened6: FakeSockets6[] = [];
  /** IPv6 addresses removed from links, as `netns/ifName address`. */
  readonly removed6: string[] = [];
  /** Saved records by client id (DHCPv4) or `ipv6 <client id>`. */
  readonly saved = new Map<string, unknown>();
  store: LeaseWorld["store"];

  constructor(store?: LeaseWorld["store"]) {
    const savedKey = (id: string, family: Family) => (family === "ipv6" ? `ipv6 ${id}` : id);
    this.store = store ?? {
      save: async (r) => void this.saved.set(savedKey(r.clientID, r.family), r),
      remove: async (id, family) => void this.saved.delete(savedKey(id, family)),
    };
  }

  /**
   * The namespace at `hostPrefix + netns`: the path itself stands for the descriptor a real view holds, and the
   * name is still there while any link is; its inode follows from the path, the same in every fake world (a
   * restarted daemon's). `inode`, when given, must be that one.
   */
  async reopen(netns: string, inode: number | undefined): Promise<CallerFile> {
    const at = this.hostPrefix + netns;
    const ino = 4026532000 + [...at].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 1_000_000, 7);
    if (inode !== undefined && inode !== ino) throw new Error(`${netns} is not the network namespace the lease was acquired in any more`);
    const view: CallerFile = {
      path: at,
      dev: 4,
      ino,
      inCallerTerms: (text) => text,
      stillNamed: async () => [...this.links].some((l) => l.startsWith(`${at}/`)),
      retain: () => view,
      close: () => undefined,
    };
    return view;
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

  async open6(netns: string, ifName: string): Promise<Dhcp6Sockets> {
    if (![...this.links].some((l) => l.startsWith(`${netns}/`))) throw new NetnsGoneError(netns);
    if (!this.links.has(`${netns}/${ifName}`)) throw new LinkGoneError(ifName, netns);
    const index = [...this.links].indexOf(`${netns}/${ifName}`);
    const s = new FakeSockets6([this.server6], this.clock, netns, ifName, Uint8Array.of(2, 0, 0, 0, index >> 8, index & 0xff));
    this.opened6.push(s);
    return s;
  }

  async removeAddress6(netns: string, ifName: string, address: string): Promise<boolean> {
    this.removed6.push(`${netns}/${ifName} ${address}`);
    return true;
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
