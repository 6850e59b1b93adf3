/**
 * The daemon's leases: per attachment (client id `containerID/network/ifName`) one DHCPv4 lease, one DHCPv6 lease or
 * both, as the config's `families` asks, acquired on ADD (or on a CHECK that finds none, as upstream), kept in memory
 * and on disk, renewed at T1 and rebound at T2 in the background, and released on DEL or GC, from the container's
 * interface only (a lease whose interface or namespace is gone is dropped without a RELEASE). An ADD that gets one
 * family but not the other gives back what it got (RELEASE sent, record removed) and fails. The upkeep stops when
 * the interface or its namespace disappears, and when the lease expires or the server refuses it: the address is
 * then no longer the container's to use, so a DHCPv4 lease sets the interface down (as upstream does) and a DHCPv6
 * one removes its address from the interface. Operations on one attachment run one after another; different
 * attachments proceed at once.
 * A lease acts only in the namespace its ADD opened: the caller's view of it (sys/caller-root.ts), held open for the
 * lease's life, is where every renewal, RELEASE and setting down happens, whatever the namespace's name comes to
 * name meanwhile. The name is looked up again (in the caller's root, as the ADD did) only to tell that the
 * namespace is gone: when nothing has that name any more, the lease is dropped as for a vanished namespace, sending
 * nothing, and the namespace held is let go. A lease taken up from disk has no caller: its namespace is opened
 * through `LeaseWorld.reopen`, which must show it is the one the lease was acquired in, else the lease is dropped.
 * Everything outside (sockets, files, time) comes in through `LeaseWorld`, so the whole life of a lease runs under
 * a fake clock in the tests.
 * @module
 */

import type { GCAttachment } from "#spec/config.js";
import { CniError, cniError, failure, invalidEnv, messageOf } from "#spec/errors.js";
import type { Result100 } from "#spec/result/types100.js";
import type { CallerFile } from "#sys/caller-root.js";
import { acquire, type ClientSettings, extend, formatDuration, release } from "./client.js";
import { acquire6, type Dhcp6Sockets, extend6, release6 } from "./client6.js";
import type { Clock } from "./clock.js";
import { type DhcpConfig, FAMILIES, type Family, parseDhcpBasics, parseDhcpConfig } from "./config.js";
import type { LeaseRecord, LeaseRecord4, LeaseRecord6 } from "./lease-file.js";
import type { DhcpSockets } from "./netns-sockets.js";
import { clientIdOf, clientIdOption, leasePrefix, leaseResult } from "./options.js";
import { combineResults, duidSource, leaseResult6, sendSpec6 } from "./options6.js";
import { decodeMessage } from "./packet.js";
import type { WireArgs } from "./protocol.js";

/** Everything the leases need from outside. */
export interface LeaseWorld {
  clock: Clock;
  settings: ClientSettings;
  /**
   * The namespace `netns` opened with no caller to see it as: for a lease taken up from disk, whose record holds
   * the inode (`inode`) of the namespace it was acquired in. Throws, saying why, unless what it opens is that
   * namespace (so with no inode it throws, but in the tests' fake world).
   */
  reopen(netns: string, inode: number | undefined): Promise<CallerFile>;
  store: { save(r: LeaseRecord): Promise<void>; remove(clientID: string, family: Family): Promise<void> };
  /** Opens the sockets of one DHCPv4 exchange on `ifName` in the namespace at `netns`; `bringUp` sets a down link up (acquiring). */
  open(netns: string, ifName: string, bringUp?: boolean): Promise<DhcpSockets>;
  /**
   * Opens the socket of one DHCPv6 exchange, waiting until `readyBy` (epoch ms) for the interface's link-local
   * address; `bringUp` (acquiring) enables IPv6 on the interface and sets it up.
   */
  open6(netns: string, ifName: string, opts: { bringUp?: boolean; readyBy: number }): Promise<Dhcp6Sockets>;
  linkExists(netns: string, ifName: string): Promise<boolean>;
  setLinkDown(netns: string, ifName: string): Promise<void>;
  /** Removes an IPv6 address from the interface; false when the interface does not carry it. */
  removeAddress6(netns: string, ifName: string, address: string): Promise<boolean>;
  /** Whether an error from `open` means the interface or its namespace no longer exists (or may not be used). */
  isGone(e: unknown): boolean;
  /** Turns an error from `open` into the CNI error ADD reports. */
  describeOpenError(e: unknown): CniError;
  log(line: string): void;
}

/** How often a held lease checks that its interface still exists, between renewals. */
export const LINK_CHECK_MS = 5000;

const at = (t: number): string => (Number.isFinite(t) ? new Date(t).toISOString() : "never");

/** The protocol's name, for messages. */
const protocolOf = (family: Family): string => (family === "ipv4" ? "DHCPv4" : "DHCPv6");

/** What a renewal or rebinding came to: the record with its new binding, a refusal, or no answer. */
type Extended = { record: LeaseRecord } | { nak: string } | { problem: string };

/** One renewal or rebinding of `r` by its family's client. */
async function extendRecord(world: LeaseWorld, netnsPath: string, r: LeaseRecord, mode: "renew" | "rebind", signal: AbortSignal): Promise<Extended> {
  const { settings, clock } = world;
  if (r.family === "ipv4") {
    const out = await extend(() => world.open(netnsPath, r.ifName), r.binding, mode, r.send, settings, clock, signal);
    return "binding" in out ? { record: { ...r, binding: out.binding } } : out;
  }
  const out = await extend6((readyBy) => world.open6(netnsPath, r.ifName, { readyBy }), r.binding, mode, r.send, settings, clock, signal);
  return "binding" in out ? { record: { ...r, binding: out.binding } } : out;
}

/** The RELEASE of `r` from its interface (in the namespace at `netnsPath`), by its family's client; how it was sent. */
function releaseRecord(world: LeaseWorld, r: LeaseRecord, netnsPath: string): Promise<string> {
  return r.family === "ipv4"
    ? release(() => world.open(netnsPath, r.ifName), r.binding, r.send, world.clock)
    : release6((readyBy) => world.open6(netnsPath, r.ifName, { readyBy }), r.binding, r.send, world.clock);
}

/** The IPAM result of one lease. */
const resultOf = (r: LeaseRecord, priority: number): Result100 =>
  r.family === "ipv4" ? leaseResult(decodeMessage(r.binding.ack), priority) : leaseResult6(r.binding.reply, r.binding.address);

/** A held lease, and its upkeep. */
class HeldLease {
  /** The upkeep gave the lease up (expired, refused, interface gone): there is nothing left to release. */
  ended = false;
  private readonly stopper = new AbortController();
  private upkeep: Promise<void> = Promise.resolve();

  /**
   * `view`: the namespace the lease was acquired in, held (as the caller that asked for the lease saw it, or as
   * LeaseWorld.reopen found it for a lease taken up from disk); this lease holds it until it is forgotten.
   */
  constructor(
    public record: LeaseRecord,
    private readonly world: LeaseWorld,
    private readonly onEnd: (lease: HeldLease, reason: string) => void,
    readonly view: CallerFile,
  ) {}

  /** Where the namespace held is opened: never by its name, which may name another namespace by now. */
  get netnsPath(): string {
    return this.view.path;
  }

  /** Lets go of the namespace's view (the lease is forgotten). */
  forget(): void {
    this.view.close();
  }

  /** `text` (a message about the namespace) with the namespace named as its caller named it. */
  inCallerTerms(text: string): string {
    return this.view.inCallerTerms(text);
  }

  /** Starts the upkeep; `graceUntil` lets a lease that expired while the daemon was down try to rebind until then. */
  start(graceUntil = 0): void {
    this.upkeep = this.keep(graceUntil).catch((e: unknown) => {
      this.world.log(`${this.record.clientID}: lease upkeep failed: ${this.inCallerTerms(messageOf(e))}`);
      this.end("its upkeep failed");
    });
  }

  /** Stops the upkeep (sending nothing) and waits for it. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.upkeep;
  }

  private end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this, reason);
  }

  /**
   * The address is no longer the container's to use: a DHCPv4 lease sets the interface down (as upstream); a
   * DHCPv6 lease removes its address, leaving the link (and an IPv4 lease on it) alone.
   */
  private async retire(why: string): Promise<void> {
    const { log } = this.world;
    const { clientID, ifName, binding } = this.record;
    if (this.record.family === "ipv4") {
      log(`${clientID}: ${why}; setting ${ifName} down`);
      await this.world.setLinkDown(this.netnsPath, ifName).catch((e: Error) => log(`${clientID}: cannot set ${ifName} down: ${e.message}`));
      return;
    }
    log(`${clientID}: ${why}; removing it from ${ifName}`);
    await this.world.removeAddress6(this.netnsPath, ifName, binding.address).then(
      (removed) => removed || log(`${clientID}: ${binding.address} was not on ${ifName}`),
      (e: Error) => log(`${clientID}: cannot remove ${binding.address} from ${ifName}: ${e.message}`),
    );
  }

  private async keep(graceUntil: number): Promise<void> {
    const { clock, settings, log } = this.world;
    const signal = this.stopper.signal;
    const { clientID, ifName } = this.record;
    while (!signal.aborted) {
      const b = this.record.binding;
      if (!(await this.view.stillNamed())) return this.end(`${this.record.netns} is gone`);
      if (signal.aborted) return;
      let present = true;
      try {
        present = await this.world.linkExists(this.netnsPath, ifName);
      } catch (e) {
        log(`${clientID}: cannot tell whether ${ifName} still exists: ${this.inCallerTerms(messageOf(e))}`);
      }
      if (signal.aborted) return;
      if (!present) return this.end(`${ifName} in ${this.record.netns} is gone`);
      const now = clock.now();
      if (now < b.renewAt) {
        await clock.sleep(Math.min(b.renewAt - now, LINK_CHECK_MS), signal);
        continue;
      }
      const expiry = Math.max(b.expiresAt, graceUntil);
      if (now >= expiry) {
        await this.retire(`lease of ${b.address} expired at ${at(b.expiresAt)}`);
        return this.end("it expired");
      }
      const mode = now < b.rebindAt ? "renew" : "rebind";
      let outcome: Extended;
      try {
        outcome = await extendRecord(this.world, this.netnsPath, this.record, mode, signal);
      } catch (e) {
        if (this.world.isGone(e)) return this.end(`${ifName} in ${this.record.netns} is gone`);
        outcome = { problem: messageOf(e) };
      }
      if (signal.aborted) return;
      if ("record" in outcome) {
        this.record = outcome.record;
        const renewed = outcome.record.binding;
        graceUntil = 0;
        await this.world.store.save(this.record).catch((e: Error) => log(`${clientID}: cannot save the lease: ${e.message}`));
        log(
          `${clientID}: ${mode === "renew" ? "renewed" : "rebound"} ${b.address} with ${renewed.server}; renew at ${at(renewed.renewAt)}, expires at ${at(renewed.expiresAt)}`,
        );
        continue;
      }
      if ("nak" in outcome) {
        await this.retire(`the server refused ${b.address} (${outcome.nak})`);
        return this.end("the server refused it");
      }
      // No answer: try again after half the time left to the next stage (RFC 2131 §4.4.5), 1 s to -resendmax.
      const after = clock.now();
      const nextStage = mode === "renew" ? b.rebindAt : expiry;
      const pause = Math.min(Math.max((nextStage - after) / 2, 1000), settings.resendMaxMs, Math.max(0, nextStage - after));
      log(`${clientID}: ${mode} of ${b.address} failed (${this.inCallerTerms(outcome.problem)}); next try in ${formatDuration(pause)}`);
      await clock.sleep(pause, signal);
    }
  }
}

/** Every lease of the daemon. */
export class LeaseManager {
  /** The held leases by family, each keyed by client id. */
  private readonly held: Record<Family, Map<string, HeldLease>> = { ipv4: new Map(), ipv6: new Map() };
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly stopping = new AbortController();

  constructor(private readonly world: LeaseWorld) {}

  /** The records of the leases held now (IPv4 first). */
  records(): LeaseRecord[] {
    return FAMILIES.flatMap((f) => [...this.held[f].values()].map((l) => l.record));
  }

  /** Runs `op` after every earlier operation on `key` has finished. */
  private serial<T>(key: string, op: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(key) ?? Promise.resolve()).then(op);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }

  /** ADD: the attachment's leases (acquired now unless held) and their one result. */
  async add(args: WireArgs): Promise<Result100> {
    const conf = parseDhcpConfig(args.stdinData, args.args);
    const key = clientIdOf(args.containerID, conf.name, args.ifName);
    return this.serial(key, async () => {
      const records = await this.ensureAll(key, args, conf);
      return combineResults(records.map((r) => resultOf(r, conf.priority)));
    });
  }

  /**
   * CHECK: each lease the config asks for is held, not expired, and its interface exists; a family with none held is
   * acquired (as upstream does for DHCPv4).
   */
  async check(args: WireArgs): Promise<void> {
    const conf = parseDhcpConfig(args.stdinData, args.args);
    const key = clientIdOf(args.containerID, conf.name, args.ifName);
    await this.serial(key, async () => {
      const heldBefore = conf.families.filter((f) => this.usable(f, key, args.netns));
      await this.ensureAll(key, args, conf);
      for (const family of heldBefore) {
        const lease = this.held[family].get(key)!;
        if (!(await this.world.linkExists(lease.netnsPath, args.ifName))) {
          throw failure(`the ${protocolOf(family)} lease of ${key} is held, but ${args.ifName} does not exist in ${args.netns}`);
        }
        const b = lease.record.binding;
        if (this.world.clock.now() >= b.expiresAt)
          throw failure(`the ${protocolOf(family)} lease of ${b.address} for ${key} expired at ${at(b.expiresAt)}`);
      }
    });
  }

  /** DEL: stops the upkeep, releases the leases of both families (when the interface is still there) and forgets them; none held is success. */
  async del(args: WireArgs): Promise<void> {
    const conf = parseDhcpBasics(args.stdinData);
    const key = clientIdOf(args.containerID, conf.name, args.ifName);
    await this.serial(key, () => this.drop(key, "DEL"));
  }

  /** GC: releases the network's leases whose attachment is not in `cni.dev/valid-attachments`; returns how many attachments. */
  async gc(args: WireArgs): Promise<number> {
    const conf = parseDhcpBasics(args.stdinData);
    const valid = (r: LeaseRecord) => conf.validAttachments.some((a: GCAttachment) => a.containerID === r.containerID && a.ifname === r.ifName);
    const stale = [
      ...new Set(
        this.records()
          .filter((r) => r.network === conf.name && !valid(r))
          .map((r) => r.clientID),
      ),
    ];
    await Promise.all(stale.map((key) => this.serial(key, () => this.drop(key, "GC"))));
    return stale.length;
  }

  /** Whether `family`'s lease of `key` is held for the attachment in `netns`. */
  private usable(family: Family, key: string, netns: string): boolean {
    const lease = this.held[family].get(key);
    return !!lease && !lease.ended && lease.record.netns === netns;
  }

  /**
   * The held leases of every family the config asks for, acquiring those missing (at once). When one cannot be had,
   * those acquired here are released again, and the failure is thrown (the code of the first family that failed,
   * the words of each), saying what was given back.
   */
  private async ensureAll(key: string, args: WireArgs, conf: DhcpConfig): Promise<LeaseRecord[]> {
    const outcomes = await Promise.allSettled(conf.families.map((family) => this.ensure(family, key, args, conf)));
    const failures = outcomes.flatMap((o) => (o.status === "rejected" ? [CniError.from(o.reason)] : []));
    if (!failures.length) return outcomes.map((o) => (o as PromiseFulfilledResult<{ record: LeaseRecord }>).value.record);
    const fresh = outcomes.flatMap((o) => (o.status === "fulfilled" && o.value.fresh ? [o.value.record] : []));
    for (const r of fresh) await this.dropOne(r.family, key, "rolling back: the other family's lease could not be had");
    const undone = fresh.map((r) => ` (the ${protocolOf(r.family)} lease of ${r.binding.address} acquired meanwhile was released)`).join("");
    if (failures.length === 1 && !undone) throw failures[0];
    throw cniError(
      failures[0]!.code,
      `${failures.map((e) => e.msg).join("; ")}${undone}`,
      failures
        .map((e) => e.details)
        .filter(Boolean)
        .join("; "),
    );
  }

  /** The held lease of `family` for this attachment, acquiring one (and dropping another attachment's) when needed. */
  private async ensure(family: Family, key: string, args: WireArgs, conf: DhcpConfig): Promise<{ record: LeaseRecord; fresh: boolean }> {
    const existing = this.held[family].get(key);
    if (existing && !existing.ended && existing.record.netns === args.netns) return { record: existing.record, fresh: false };
    if (existing) await this.dropOne(family, key, `a new attachment in ${args.netns}`);
    if (!args.netns.startsWith("/")) throw invalidEnv(`the netns path ${JSON.stringify(args.netns)} is not absolute`);
    // The daemon always sends the caller's view; without one (the tests' fake world) reopen says what to use.
    const view = args.view?.retain() ?? (await this.world.reopen(args.netns, undefined));
    let record: LeaseRecord;
    try {
      record = family === "ipv4" ? await this.acquire4(key, args, conf, view) : await this.acquire6(key, args, conf, view);
    } catch (e) {
      view.close();
      throw e instanceof CniError ? e : this.world.describeOpenError(e);
    }
    try {
      const described =
        record.family === "ipv4" ? `${record.binding.address}/${leasePrefix(decodeMessage(record.binding.ack))}` : `${record.binding.address}/128`; // (DHCPv6 gives no prefix: options6.ts)
      await this.world.store.save(record);
      const b = record.binding;
      this.world.log(
        `${key}: acquired ${described} from ${b.server} on ${args.ifName} in ${args.netns}; renew at ${at(b.renewAt)}, expires at ${at(b.expiresAt)}`,
      );
    } catch (e) {
      // a lease the result cannot describe, or that cannot be kept, is given back
      await this.sendRelease(record, view);
      view.close();
      throw CniError.from(e);
    }
    const lease = new HeldLease(record, this.world, (l, reason) => this.forgetLater(l, reason), view);
    this.held[family].set(key, lease);
    lease.start();
    return { record, fresh: true };
  }

  private async acquire4(key: string, args: WireArgs, conf: DhcpConfig, view: CallerFile): Promise<LeaseRecord4> {
    const send = { clientIdOption: clientIdOption(key), options: conf.sendOptions, requestList: conf.requestList };
    const netnsPath = view.path;
    const binding = await acquire(
      () => this.world.open(netnsPath, args.ifName, true),
      send,
      this.world.settings,
      this.world.clock,
      this.stopping.signal,
    );
    return {
      family: "ipv4",
      clientID: key,
      containerID: args.containerID,
      network: conf.name,
      ifName: args.ifName,
      netns: args.netns,
      netnsInode: view.ino,
      send,
      binding,
    };
  }

  private async acquire6(key: string, args: WireArgs, conf: DhcpConfig, view: CallerFile): Promise<LeaseRecord6> {
    const { clock, settings } = this.world;
    const netnsPath = view.path;
    const base = { ...sendSpec6(key, conf.sendOptions), duid: duidSource(conf.duidKind, key, () => clock.now()) };
    const { binding, spec } = await acquire6(
      (readyBy) => this.world.open6(netnsPath, args.ifName, { bringUp: true, readyBy }),
      base,
      settings,
      clock,
      this.stopping.signal,
    );
    return {
      family: "ipv6",
      clientID: key,
      containerID: args.containerID,
      network: conf.name,
      ifName: args.ifName,
      netns: args.netns,
      netnsInode: view.ino,
      send: spec,
      binding,
    };
  }

  /** Stops and releases the held leases of `key` (of both families) and removes their files. */
  private async drop(key: string, why: string): Promise<void> {
    await Promise.all(FAMILIES.map((f) => this.dropOne(f, key, why)));
  }

  /** Stops and releases the held lease of `family` for `key` (if any) and removes its file. */
  private async dropOne(family: Family, key: string, why: string): Promise<void> {
    const lease = this.held[family].get(key);
    if (!lease) return;
    this.held[family].delete(key);
    await lease.stop();
    if (!lease.ended) await this.sendRelease(lease.record, lease.view, why);
    lease.forget();
    await this.world.store.remove(key, family);
  }

  /**
   * Sends the RELEASE of a lease from its interface, in the namespace `view` holds. When the interface or the
   * namespace is gone (its name too: the namespace is then alive only through `view`) nothing is sent (there is no
   * other place a RELEASE may come from); failing to send is logged, never an error (the server's lease then just
   * expires).
   */
  private async sendRelease(r: LeaseRecord, view: CallerFile, why = "giving it back"): Promise<void> {
    const words = (m: string) => view.inCallerTerms(m);
    if (!(await view.stillNamed())) {
      this.world.log(`${r.clientID}: dropped ${r.binding.address} without a RELEASE (${why}): network namespace ${r.netns} does not exist`);
      return;
    }
    try {
      const how = await releaseRecord(this.world, r, view.path);
      this.world.log(`${r.clientID}: released ${r.binding.address} (${why}): ${how}`);
    } catch (e) {
      this.world.log(
        this.world.isGone(e)
          ? `${r.clientID}: dropped ${r.binding.address} without a RELEASE (${why}): ${words(messageOf(e))}`
          : `${r.clientID}: could not release ${r.binding.address} (${why}): ${words(messageOf(e))}`,
      );
    }
  }

  /** The upkeep gave `lease` up: forget it, after whatever else is under way for its attachment. */
  private forgetLater(lease: HeldLease, reason: string): void {
    const { clientID: key, family } = lease.record;
    this.world.log(`${key}: no longer maintained: ${reason}`);
    void this.serial(key, async () => {
      if (this.held[family].get(key) !== lease) return;
      this.held[family].delete(key);
      lease.forget();
      await this.world.store.remove(key, family);
    }).catch((e: Error) => this.world.log(`${key}: cannot remove the lease file: ${e.message}`));
  }

  /**
   * Takes up the leases a previous daemon left on disk: those whose namespace LeaseWorld.reopen shows to be the
   * one they were acquired in, and whose interface still exists there, are maintained again (renewed at once when
   * T1 has passed; one that expired meanwhile may still rebind for `-resendtimeout`); the others are dropped
   * (their files removed, nothing sent), as for a vanished namespace.
   */
  async resume(records: readonly LeaseRecord[]): Promise<void> {
    for (const r of records) {
      const dropping = async (why: string) => {
        this.world.log(`${r.clientID}: dropping the lease of ${r.binding.address}: ${why}`);
        await this.world.store.remove(r.clientID, r.family);
      };
      if (r.netnsInode === undefined) {
        await dropping(`its file does not say which namespace ${r.netns} was when it was acquired (written by an older daemon)`);
        continue;
      }
      let view: CallerFile;
      try {
        view = await this.world.reopen(r.netns, r.netnsInode);
      } catch (e) {
        await dropping(messageOf(e));
        continue;
      }
      let present = true;
      try {
        present = await this.world.linkExists(view.path, r.ifName);
      } catch (e) {
        this.world.log(
          `${r.clientID}: cannot tell whether ${r.ifName} in ${r.netns} exists (${view.inCallerTerms(messageOf(e))}); keeping the lease`,
        );
      }
      if (!present) {
        view.close();
        await dropping(`${r.ifName} in ${r.netns} is gone`);
        continue;
      }
      const lease = new HeldLease(r, this.world, (l, reason) => this.forgetLater(l, reason), view);
      this.held[r.family].set(r.clientID, lease);
      const now = this.world.clock.now();
      lease.start(now >= r.binding.expiresAt ? now + this.world.settings.resendTimeoutMs : 0);
      this.world.log(
        `${r.clientID}: resumed the lease of ${r.binding.address} on ${r.ifName} in ${r.netns}; renew at ${at(r.binding.renewAt)}, expires at ${at(r.binding.expiresAt)}`,
      );
    }
  }

  /** Stops every upkeep and every acquisition under way, releasing nothing: the leases stay on disk. */
  async shutdown(): Promise<void> {
    this.stopping.abort();
    await Promise.all(FAMILIES.flatMap((f) => [...this.held[f].values()]).map((l) => l.stop()));
  }
}
