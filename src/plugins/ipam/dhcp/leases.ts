/**
 * The daemon's leases: one per attachment (client id `containerID/network/ifName`), acquired on ADD (or on a
 * CHECK that finds none, as upstream), kept in memory and on disk, renewed at T1 and rebound at T2 in the
 * background, and released on DEL or GC, from the container's interface only (a lease whose interface or
 * namespace is gone is dropped without a RELEASE). The upkeep stops when the interface or its namespace disappears,
 * and when the lease expires or the server refuses it (the interface is then set down, as upstream does, since
 * its address is no longer the container's to use). Operations on one attachment run one after another;
 * different attachments proceed at once. Everything outside (sockets, files, time) comes in through
 * `LeaseWorld`, so the whole life of a lease runs under a fake clock in the tests.
 * @module
 */
import { CniError, ErrorCode } from "../../../spec/errors.js";
import type { GCAttachment } from "../../../spec/config.js";
import type { Result100 } from "../../../spec/result/types100.js";
import { acquire, extend, formatDuration, release, type Binding, type ClientSettings, type RenewOutcome, type SendSpec } from "./client.js";
import type { Clock } from "./clock.js";
import { parseDhcpBasics, parseDhcpConfig } from "./config.js";
import type { LeaseRecord } from "./lease-file.js";
import type { DhcpSockets } from "./netns-sockets.js";
import { clientIdOf, clientIdOption, leasePrefix, leaseResult } from "./options.js";
import { decodeMessage } from "./packet.js";
import type { WireArgs } from "./protocol.js";

/** Everything the leases need from outside. */
export interface LeaseWorld {
  clock: Clock;
  settings: ClientSettings;
  /** Prefixed to every namespace path (`-hostprefix`). */
  hostPrefix: string;
  store: { save(r: LeaseRecord): Promise<void>; remove(clientID: string): Promise<void> };
  /** Opens the sockets of one exchange on `ifName` in the namespace at `netns`; `bringUp` sets a down link up (acquiring). */
  open(netns: string, ifName: string, bringUp?: boolean): Promise<DhcpSockets>;
  linkExists(netns: string, ifName: string): Promise<boolean>;
  setLinkDown(netns: string, ifName: string): Promise<void>;
  /** Whether an error from `open` means the interface or its namespace no longer exists (or may not be used). */
  isGone(e: unknown): boolean;
  /** Turns an error from `open` into the CNI error ADD reports. */
  describeOpenError(e: unknown): CniError;
  log(line: string): void;
}

/** How often a held lease checks that its interface still exists, between renewals. */
export const LINK_CHECK_MS = 5000;

const at = (t: number): string => (Number.isFinite(t) ? new Date(t).toISOString() : "never");

/** A lease the daemon holds, and its upkeep. */
class HeldLease {
  /** The upkeep gave the lease up (expired, refused, interface gone): there is nothing left to release. */
  ended = false;
  private readonly stopper = new AbortController();
  private upkeep: Promise<void> = Promise.resolve();

  constructor(public record: LeaseRecord, private readonly world: LeaseWorld, private readonly onEnd: (lease: HeldLease, reason: string) => void) {}

  get netnsPath(): string {
    return this.world.hostPrefix + this.record.netns;
  }

  /** Starts the upkeep; `graceUntil` lets a lease that expired while the daemon was down try to rebind until then. */
  start(graceUntil = 0): void {
    this.upkeep = this.keep(graceUntil).catch((e: unknown) => {
      this.world.log(`${this.record.clientID}: lease upkeep failed: ${(e as Error).message}`);
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

  private async keep(graceUntil: number): Promise<void> {
    const { clock, settings, log } = this.world;
    const signal = this.stopper.signal;
    const { clientID, ifName } = this.record;
    while (!signal.aborted) {
      const b = this.record.binding;
      let present = true;
      try {
        present = await this.world.linkExists(this.netnsPath, ifName);
      } catch (e) {
        log(`${clientID}: cannot tell whether ${ifName} still exists: ${(e as Error).message}`);
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
        log(`${clientID}: lease of ${b.address} expired at ${at(b.expiresAt)}; setting ${ifName} down`);
        await this.world.setLinkDown(this.netnsPath, ifName).catch((e: Error) => log(`${clientID}: cannot set ${ifName} down: ${e.message}`));
        return this.end("it expired");
      }
      const mode = now < b.rebindAt ? "renew" : "rebind";
      let outcome: RenewOutcome;
      try {
        outcome = await extend(() => this.world.open(this.netnsPath, ifName), b, mode, this.record.send, settings, clock, signal);
      } catch (e) {
        if (this.world.isGone(e)) return this.end(`${ifName} in ${this.record.netns} is gone`);
        outcome = { problem: (e as Error).message };
      }
      if (signal.aborted) return;
      if ("binding" in outcome) {
        this.record = { ...this.record, binding: outcome.binding };
        graceUntil = 0;
        await this.world.store.save(this.record).catch((e: Error) => log(`${clientID}: cannot save the lease: ${e.message}`));
        log(`${clientID}: ${mode === "renew" ? "renewed" : "rebound"} ${b.address} with ${outcome.binding.server}; renew at ${at(outcome.binding.renewAt)}, expires at ${at(outcome.binding.expiresAt)}`);
        continue;
      }
      if ("nak" in outcome) {
        log(`${clientID}: the server refused ${b.address} (${outcome.nak}); setting ${ifName} down`);
        await this.world.setLinkDown(this.netnsPath, ifName).catch((e: Error) => log(`${clientID}: cannot set ${ifName} down: ${e.message}`));
        return this.end("the server refused it");
      }
      // No answer: try again after half the time left to the next stage (RFC 2131 §4.4.5), 1 s to -resendmax.
      const after = clock.now();
      const nextStage = mode === "renew" ? b.rebindAt : expiry;
      const pause = Math.min(Math.max((nextStage - after) / 2, 1000), settings.resendMaxMs, Math.max(0, nextStage - after));
      log(`${clientID}: ${mode} of ${b.address} failed (${outcome.problem}); next try in ${formatDuration(pause)}`);
      await clock.sleep(pause, signal);
    }
  }
}

/** Every lease of the daemon. */
export class LeaseManager {
  private readonly held = new Map<string, HeldLease>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly stopping = new AbortController();

  constructor(private readonly world: LeaseWorld) {}

  /** The records of the leases held now. */
  records(): LeaseRecord[] {
    return [...this.held.values()].map((l) => l.record);
  }

  /** Runs `op` after every earlier operation on `key` has finished. */
  private serial<T>(key: string, op: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(key) ?? Promise.resolve()).then(op);
    const tail = run.then(() => undefined, () => undefined);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }

  /** ADD: the attachment's lease (acquired now unless it is held) and its result. */
  async add(args: WireArgs): Promise<Result100> {
    const conf = parseDhcpConfig(args.stdinData, args.args);
    const key = clientIdOf(args.containerID, conf.name, args.ifName);
    return this.serial(key, async () => {
      const lease = await this.ensure(key, args, conf.name, { clientIdOption: clientIdOption(key), options: conf.sendOptions, requestList: conf.requestList });
      return leaseResult(decodeMessage(lease.binding.ack), conf.priority);
    });
  }

  /** CHECK: the lease is held, not expired, and its interface exists; with none held, one is acquired (as upstream). */
  async check(args: WireArgs): Promise<void> {
    const conf = parseDhcpConfig(args.stdinData, args.args);
    const key = clientIdOf(args.containerID, conf.name, args.ifName);
    await this.serial(key, async () => {
      const lease = this.held.get(key);
      if (!lease || lease.ended || lease.record.netns !== args.netns) {
        await this.ensure(key, args, conf.name, { clientIdOption: clientIdOption(key), options: conf.sendOptions, requestList: conf.requestList });
        return;
      }
      if (!(await this.world.linkExists(lease.netnsPath, args.ifName))) {
        throw new CniError(ErrorCode.Internal, `the DHCP lease of ${key} is held, but ${args.ifName} does not exist in ${args.netns}`);
      }
      const b = lease.record.binding;
      if (this.world.clock.now() >= b.expiresAt) throw new CniError(ErrorCode.Internal, `the DHCP lease of ${b.address} for ${key} expired at ${at(b.expiresAt)}`);
    });
  }

  /** DEL: stops the upkeep, releases the lease (when its interface is still there) and forgets it; an unknown lease is success. */
  async del(args: WireArgs): Promise<void> {
    const conf = parseDhcpBasics(args.stdinData);
    const key = clientIdOf(args.containerID, conf.name, args.ifName);
    await this.serial(key, () => this.drop(key, "DEL"));
  }

  /** GC: releases the network's leases whose attachment is not in `cni.dev/valid-attachments`. */
  async gc(args: WireArgs): Promise<number> {
    const conf = parseDhcpBasics(args.stdinData);
    const valid = (r: LeaseRecord) => conf.validAttachments.some((a: GCAttachment) => a.containerID === r.containerID && a.ifname === r.ifName);
    const stale = this.records().filter((r) => r.network === conf.name && !valid(r));
    await Promise.all(stale.map((r) => this.serial(r.clientID, () => this.drop(r.clientID, "GC"))));
    return stale.length;
  }

  /** The held lease of `key` for this attachment, acquiring one (and dropping another attachment's) when needed. */
  private async ensure(key: string, args: WireArgs, network: string, send: SendSpec): Promise<LeaseRecord> {
    const existing = this.held.get(key);
    if (existing && !existing.ended && existing.record.netns === args.netns) return existing.record;
    if (existing) await this.drop(key, `a new attachment in ${args.netns}`);
    if (!args.netns.startsWith("/")) throw new CniError(ErrorCode.InvalidEnvironmentVariables, `the netns path ${JSON.stringify(args.netns)} is not absolute`);
    const netnsPath = this.world.hostPrefix + args.netns;
    let binding: Binding;
    try {
      binding = await acquire(() => this.world.open(netnsPath, args.ifName, true), send, this.world.settings, this.world.clock, this.stopping.signal);
    } catch (e) {
      throw e instanceof CniError ? e : this.world.describeOpenError(e);
    }
    const record: LeaseRecord = { clientID: key, containerID: args.containerID, network, ifName: args.ifName, netns: args.netns, send, binding };
    try {
      const prefix = leasePrefix(decodeMessage(binding.ack)); // a lease the result cannot describe is given back
      await this.world.store.save(record);
      this.world.log(`${key}: acquired ${binding.address}/${prefix} from ${binding.server} on ${args.ifName} in ${args.netns}; renew at ${at(binding.renewAt)}, expires at ${at(binding.expiresAt)}`);
    } catch (e) {
      await this.sendRelease(record);
      throw CniError.from(e);
    }
    const lease = new HeldLease(record, this.world, (l, reason) => this.forgetLater(l, reason));
    this.held.set(key, lease);
    lease.start();
    return record;
  }

  /** Stops and releases the held lease of `key` (if any) and removes its file. */
  private async drop(key: string, why: string): Promise<void> {
    const lease = this.held.get(key);
    if (!lease) return;
    this.held.delete(key);
    await lease.stop();
    if (!lease.ended) await this.sendRelease(lease.record, why);
    await this.world.store.remove(key);
  }

  /**
   * Sends the RELEASE of a lease from its interface. When the interface or its namespace is gone nothing is sent
   * (there is no other place a RELEASE may come from); failing to send is logged, never an error (the server's
   * lease then just expires).
   */
  private async sendRelease(r: LeaseRecord, why = "giving it back"): Promise<void> {
    try {
      const how = await release(() => this.world.open(this.world.hostPrefix + r.netns, r.ifName), r.binding, r.send, this.world.clock);
      this.world.log(`${r.clientID}: released ${r.binding.address} (${why}): ${how}`);
    } catch (e) {
      this.world.log(this.world.isGone(e)
        ? `${r.clientID}: dropped ${r.binding.address} without a RELEASE (${why}): ${(e as Error).message}`
        : `${r.clientID}: could not release ${r.binding.address} (${why}): ${(e as Error).message}`);
    }
  }

  /** The upkeep gave `lease` up: forget it, after whatever else is under way for its attachment. */
  private forgetLater(lease: HeldLease, reason: string): void {
    const key = lease.record.clientID;
    this.world.log(`${key}: no longer maintained: ${reason}`);
    void this.serial(key, async () => {
      if (this.held.get(key) !== lease) return;
      this.held.delete(key);
      await this.world.store.remove(key);
    }).catch((e: Error) => this.world.log(`${key}: cannot remove the lease file: ${e.message}`));
  }

  /**
   * Takes up the leases a previous daemon left on disk: those whose interface still exists are maintained
   * again (renewed at once when T1 has passed; one that expired meanwhile may still rebind for
   * `-resendtimeout`), the others are dropped.
   */
  async resume(records: readonly LeaseRecord[]): Promise<void> {
    for (const r of records) {
      const netnsPath = this.world.hostPrefix + r.netns;
      let present = true;
      try {
        present = await this.world.linkExists(netnsPath, r.ifName);
      } catch (e) {
        this.world.log(`${r.clientID}: cannot tell whether ${r.ifName} in ${r.netns} exists (${(e as Error).message}); keeping the lease`);
      }
      if (!present) {
        this.world.log(`${r.clientID}: dropping the lease of ${r.binding.address}: ${r.ifName} in ${r.netns} is gone`);
        await this.world.store.remove(r.clientID);
        continue;
      }
      const lease = new HeldLease(r, this.world, (l, reason) => this.forgetLater(l, reason));
      this.held.set(r.clientID, lease);
      const now = this.world.clock.now();
      lease.start(now >= r.binding.expiresAt ? now + this.world.settings.resendTimeoutMs : 0);
      this.world.log(`${r.clientID}: resumed the lease of ${r.binding.address} on ${r.ifName} in ${r.netns}; renew at ${at(r.binding.renewAt)}, expires at ${at(r.binding.expiresAt)}`);
    }
  }

  /** Stops every upkeep and every acquisition under way, releasing nothing: the leases stay on disk. */
  async shutdown(): Promise<void> {
    this.stopping.abort();
    await Promise.all([...this.held.values()].map((l) => l.stop()));
  }
}
