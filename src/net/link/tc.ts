/**
 * Traffic control for rate limiting (the bandwidth plugin): token-bucket (tbf) qdiscs computed exactly as the
 * Go plugins compute them, an ingress qdisc whose traffic is redirected to another device, and reading back
 * what the kernel holds. Every step goes over route netlink when the runtime can send it (the standalone build,
 * unless TSCNI_NETLINK=0), with the requests `tc` sends; otherwise `tc` runs.
 *
 * The Go plugins hand the kernel a tbf buffer in scheduler ticks. `tc` cannot: it sends the burst in bytes and
 * the kernel derives the buffer itself, which differs slightly. So over netlink a tbf gets Go's buffer; through
 * `tc` it gets the burst whose derived buffer comes closest, and `acceptedTbfBuffers` says which buffers either
 * way may leave.
 * @module
 */
import { readFileSync } from "node:fs";
import { messageOf } from "#spec/errors.js";
import { kindOfErrno, type NetErrorKind, NetOpError } from "../errors.js";
import {
  decodeFilterRedirects,
  decodeQdisc,
  deleteQdiscRequest,
  dumpIngressFiltersRequest,
  dumpQdiscsRequest,
  ingressQdiscRequest,
  ingressRedirectRequest,
  RTM_NEWQDISC,
  RTM_NEWTFILTER,
  rootTbfRequest,
} from "../netlink/rtnetlink-messages.js";
import type { NetNS } from "../netns.js";
import { runIn } from "../tools.js";
import type { Qdisc } from "../types.js";
import { type NetlinkSession, withSession } from "./rtnetlink-backend.js";

/** The packet scheduler's clock, from /proc/net/psched. */
export interface PschedClock {
  /** Scheduler ticks per microsecond (15.625 on current kernels: one tick is 64 ns). */
  tickInUsec: number;
}

const TIME_UNITS_PER_SEC = 1_000_000;

/**
 * Reads /proc/net/psched as tc and Go's netlink library do: four hex numbers t2us, us2t, clock resolution,
 * hz; ticks per microsecond = t2us / us2t * (resolution / 1e6), with the old 1 GHz-resolution special case.
 */
export function parsePsched(text: string): PschedClock {
  const parts = text.trim().split(" ");
  const vals = parts.slice(0, 4).map((p) => (/^[0-9a-fA-F]{1,8}$/.test(p) ? parseInt(p, 16) : NaN));
  if (vals.length < 4 || vals.some((v) => Number.isNaN(v)) || vals[1] === 0) {
    throw new NetOpError("read the packet scheduler clock", `unexpected /proc/net/psched content ${JSON.stringify(text)}`);
  }
  let [t2us, us2t, resolution] = vals as [number, number, number, number];
  if (resolution === 1_000_000_000) t2us = us2t;
  return { tickInUsec: (t2us / us2t) * (resolution / TIME_UNITS_PER_SEC) };
}

export async function readPschedClock(file = "/proc/net/psched"): Promise<PschedClock> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new NetOpError("read the packet scheduler clock", messageOf(e));
  }
  return parsePsched(text);
}

/** Go's `uint32(f)` of a float64 on amd64: truncate to a 64-bit integer, keep the low 32 bits. */
export function goUint32(f: number): number {
  if (!Number.isFinite(f) || f >= 2 ** 63 || f < -(2 ** 63)) return 0;
  return Number(BigInt.asUintN(32, BigInt(Math.trunc(f))));
}

/** The latency the Go plugin gives every tbf (its queue holds 25 ms of traffic beyond the burst). */
export const TBF_LATENCY_MS = 25;

/** A tbf qdisc as the kernel holds it. */
export interface TbfParams {
  /** Bytes per second. */
  rate: number;
  /** Queue limit in bytes. */
  limit: number;
  /** Bucket depth in scheduler ticks. */
  buffer: number;
  /** The bucket depth in bytes it was computed from. */
  burst: number;
}

/**
 * A tbf for `rateBits` bits/s and a burst of `burstBits` bits, with the Go plugin's arithmetic (and its uint32
 * truncations): rate and burst in whole bytes, buffer = ticks(uint32(burst * 1e6 / rate) microseconds),
 * limit = uint32(rate * 25 ms) + burst. `burstBits / 8` must fit in 32 bits and `rateBits` be at least 8.
 */
export function tbfParams(rateBits: number, burstBits: number, clock: PschedClock): TbfParams {
  const rate = Math.floor(rateBits / 8);
  const burst = goUint32(Math.floor(burstBits / 8));
  const usec = goUint32((burst * TIME_UNITS_PER_SEC) / rate);
  const buffer = goUint32(usec * clock.tickInUsec);
  const latencyUsec = TIME_UNITS_PER_SEC * (TBF_LATENCY_MS / 1000.0);
  const limit = (goUint32((rate * latencyUsec) / TIME_UNITS_PER_SEC) + burst) >>> 0;
  return { rate, limit, buffer, burst };
}

/** The kernel's rate arithmetic (psched_ratecfg_precompute): nanoseconds per byte as mult >> shift. */
function kernelRateFactors(rate: bigint): { mult: bigint; shift: bigint } {
  let factor = 1_000_000_000n;
  let mult = 1n;
  let shift = 0n;
  if (rate <= 0n) return { mult, shift };
  for (;;) {
    mult = BigInt.asUintN(32, factor / rate);
    if (mult & (1n << 31n) || factor & (1n << 63n)) break;
    factor <<= 1n;
    shift++;
  }
  return { mult, shift };
}

/** The buffer (in ticks, as the kernel reports it) of a tbf created by `tc` with a burst of `bytes`. */
export function kernelBufferForBurst(rate: number, bytes: number): number {
  const { mult, shift } = kernelRateFactors(BigInt(rate));
  const ns = (BigInt(bytes) * mult) >> shift;
  return Number(BigInt.asUintN(32, ns >> 6n));
}

/**
 * The burst in bytes to give `tc` so that the buffer the kernel derives is `params.buffer`, or as close to it
 * as whole bytes allow (at rates under ~125 Mbit/s a byte is worth more than one tick).
 */
export function tcBurstFor(params: TbfParams, clock: PschedClock): number {
  const estimate = Math.floor(((params.buffer / clock.tickInUsec) * params.rate) / TIME_UNITS_PER_SEC);
  let best = Math.max(1, estimate);
  let bestDistance = Infinity;
  for (let b = Math.max(1, estimate - 2); b <= Math.min(0xffffffff, estimate + 3); b++) {
    const distance = Math.abs(kernelBufferForBurst(params.rate, b) - params.buffer);
    if (distance < bestDistance) {
      best = b;
      bestDistance = distance;
    }
  }
  return best;
}

/** The buffers a tbf for `params` may show: exactly Go's, or what `tc` makes of the closest burst. */
export function acceptedTbfBuffers(params: TbfParams, clock: PschedClock): number[] {
  return [...new Set([params.buffer, kernelBufferForBurst(params.rate, tcBurstFor(params, clock))])];
}

/** `tc` in a namespace. */
const runTc = (ns: NetNS, args: string[], operation: string, input?: string) => runIn(ns, "tc", args, operation, input);

/**
 * `overNetlink` on a route-netlink session in `ns`; `withTc` where the runtime has none (the Node build, or
 * TSCNI_NETLINK=0).
 */
async function viaNetlinkOrTc<T>(ns: NetNS, overNetlink: (s: NetlinkSession) => T, withTc: () => Promise<T>): Promise<T> {
  const done = await withSession(ns, (s) => ({ value: overNetlink(s) }));
  return done ? done.value : withTc();
}

/** The `tc` words creating the same tbf (see tcBurstFor for the burst). */
export function tbfTcWords(dev: string, params: TbfParams, clock: PschedClock): string[] {
  return [
    "qdisc",
    "add",
    "dev",
    dev,
    "root",
    "handle",
    "1:",
    "tbf",
    "rate",
    `${params.rate}bps`,
    "burst",
    String(tcBurstFor(params, clock)),
    "limit",
    String(params.limit),
  ];
}

/**
 * Adds a root tbf (handle 1:) to `dev` (interface index `ifindex`). A root qdisc other than the default is an
 * error, as with the Go plugin.
 */
export async function addRootTbf(ns: NetNS, dev: string, ifindex: number, params: TbfParams, clock: PschedClock): Promise<void> {
  const operation = `add tbf qdisc (rate ${params.rate} bytes/s) to ${dev}`;
  await viaNetlinkOrTc<unknown>(
    ns,
    (s) => s.send(rootTbfRequest(ifindex, params), operation),
    () => runTc(ns, tbfTcWords(dev, params, clock), operation),
  );
}

/**
 * Redirects everything arriving on `dev` to the egress of `target`: an ingress qdisc (ffff:) and a match-all
 * u32 filter (priority 1, flow 1:1) with a mirred redirect, as the Go plugin sets up. Two requests, or one `tc`
 * process.
 */
export async function addIngressRedirect(ns: NetNS, dev: string, target: string): Promise<void> {
  const operation = `redirect ingress traffic of ${dev} to ${target}`;
  await viaNetlinkOrTc<unknown>(
    ns,
    (s) => {
      const index = s.indexOf(dev, operation);
      const targetIndex = s.indexOf(target, operation);
      s.send(ingressQdiscRequest(index), operation);
      s.send(ingressRedirectRequest(index, targetIndex), operation);
    },
    () => {
      const input =
        [
          `qdisc add dev ${dev} handle ffff: ingress`,
          `filter add dev ${dev} parent ffff: protocol all prio 1 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev ${target}`,
        ].join("\n") + "\n";
      return runTc(ns, ["-batch", "-"], operation, input);
    },
  );
}

/** Removes the root qdisc of `dev` (back to the default); false when it had none of its own. */
export function deleteRootQdisc(ns: NetNS, dev: string): Promise<boolean> {
  return deleteQdisc(ns, dev, "root");
}

/** Removes the ingress qdisc of `dev` and its filters; false when it had none. */
export function deleteIngressQdisc(ns: NetNS, dev: string): Promise<boolean> {
  return deleteQdisc(ns, dev, "ingress");
}

const EINVAL = 22;
/** What a refused qdisc delete means: EINVAL is the kernel's "Invalid handle" for an ingress qdisc that is not there. */
const qdiscDeleteKind = (errno: number): NetErrorKind => (errno === EINVAL ? "not-found" : kindOfErrno(errno));

async function deleteQdisc(ns: NetNS, dev: string, which: "root" | "ingress"): Promise<boolean> {
  const operation = `delete ${which} qdisc of ${dev}`;
  try {
    await viaNetlinkOrTc<unknown>(
      ns,
      (s) => s.send(deleteQdiscRequest(s.indexOf(dev, operation), which), operation, qdiscDeleteKind),
      () => runTc(ns, ["qdisc", "del", "dev", dev, which], operation),
    );
    return true;
  } catch (e) {
    if (e instanceof NetOpError && e.isNotFound) return false;
    throw e;
  }
}

export type { Qdisc };

type Json = Record<string, unknown>;

function qdiscFromJson(j: Json): Qdisc {
  const q: Qdisc = { kind: String(j["kind"]), handle: String(j["handle"] ?? ""), root: j["root"] === true };
  if (j["parent"] !== undefined) q.parent = String(j["parent"]);
  const o = (j["options"] ?? {}) as Json;
  if (q.kind === "tbf") {
    q.tbf = { rate: Number(o["rate"] ?? 0), limit: Number(o["limit"] ?? 0), buffer: parseInt(String(o["burst_raw"] ?? "0"), 16) };
  }
  return q;
}

async function tcJson(ns: NetNS, args: string[], operation: string): Promise<Json[]> {
  const { stdout } = await runTc(ns, ["-json", ...args], operation);
  const text = stdout.trim();
  return text ? (JSON.parse(text) as Json[]) : [];
}

/** The qdiscs of `dev`, with raw tbf numbers (rate in bytes/s, limit in bytes, buffer in ticks). */
export async function listQdiscs(ns: NetNS, dev: string): Promise<Qdisc[]> {
  const operation = `list qdiscs of ${dev}`;
  return viaNetlinkOrTc(
    ns,
    (s) => {
      const index = s.indexOf(dev, operation);
      return s
        .dump(dumpQdiscsRequest(index), operation)
        .filter((m) => m.type === RTM_NEWQDISC)
        .map((m) => decodeQdisc(m.payload))
        .filter((d) => d.index === index)
        .map((d) => d.qdisc);
    },
    async () => (await tcJson(ns, ["-raw", "qdisc", "show", "dev", dev], operation)).map(qdiscFromJson),
  );
}

/** The devices that the ingress filters of `dev` redirect traffic to (mirred egress redirect actions). */
export async function listIngressRedirects(ns: NetNS, dev: string): Promise<string[]> {
  const operation = `list ingress filters of ${dev}`;
  return viaNetlinkOrTc(
    ns,
    (s) => {
      const index = s.indexOf(dev, operation);
      return s
        .dump(dumpIngressFiltersRequest(index), operation)
        .filter((m) => m.type === RTM_NEWTFILTER)
        .flatMap((m) => decodeFilterRedirects(m.payload).targets)
        .map((target) => s.nameOf(target, operation));
    },
    async () => redirectTargetsFromJson(await tcJson(ns, ["filter", "show", "dev", dev, "ingress"], operation)),
  );
}

/** The mirred egress-redirect targets of filters as `tc -json filter show` shows them. */
function redirectTargetsFromJson(filters: Json[]): string[] {
  const targets: string[] = [];
  for (const f of filters) {
    const actions = (((f["options"] ?? {}) as Json)["actions"] ?? []) as Json[];
    for (const a of actions) {
      if (a["kind"] === "mirred" && a["mirred_action"] === "redirect" && a["direction"] === "egress" && a["to_dev"]) {
        targets.push(String(a["to_dev"]));
      }
    }
  }
  return targets;
}
