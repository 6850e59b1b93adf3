/**
 * The stores the crash simulator covers (run.ts), each as a scenario of calls that write state, a recovery as a
 * node does it after a crash, and the invariants that must then hold. A scenario runs for real in a directory
 * (its file operations recorded through sys/state.ts); recovery runs the product's own code (the plugins in this
 * process, libcni, the dhcp daemon's request handler, ...) on each crash state written out as a directory.
 *
 * After a process killed mid-call (`kill`) the node goes on — the runtime deletes the attachment whose call was cut
 * short and runs GC with the attachments it still has; after a power loss (`power`) the node reboots — no
 * container survives, /run is empty, the runtime deletes the attachments it remembers and runs GC with none valid.
 * Each in the three orders of RECOVERIES (no GC; GC first; DELs first). Then `check`: the invariants per
 * attachment, against what each ADD answered, and new ADDs (docs/state.md, "What the simulator checks").
 * @module
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { removeNetworkFile, writeNetworkFile } from "#cnitool/network.js";
import type { Env } from "#invoke/args.js";
import { type ExecOptions, type PluginExec, settlePluginRun } from "#invoke/exec.js";
import { setDefaultExec } from "#invoke/plugin.js";
import { CNIConfig } from "#libcni/api.js";
import type { Link } from "#net/types.js";
import type { Family } from "#plugins/ipam/dhcp/config.js";
import { handleRequest } from "#plugins/ipam/dhcp/daemon.js";
import { encodeLeaseRecord, type LeaseRecord, LeaseStore } from "#plugins/ipam/dhcp/lease-file.js";
import { LeaseManager } from "#plugins/ipam/dhcp/leases.js";
import { decodeRequest, encodeRequest, type WireArgs } from "#plugins/ipam/dhcp/protocol.js";
import { type DeviceKernel, useKernelModel as useDeviceKernelModel } from "#plugins/main/host-device/device-kernel.js";
import { listRecords as deviceListRecords, readRecord as deviceReadRecord } from "#plugins/main/host-device/record.js";
import { dnsRules, type InputRule } from "#plugins/meta/dnsname/firewall.js";
import { type DnsnameHost, useKernelModel as useDnsnameKernelModel } from "#plugins/meta/dnsname/host.js";
import { networkDir, otherNetworkUses, readState } from "#plugins/meta/dnsname/state.js";
import { type FirewallBackend, useKernelModel } from "#plugins/meta/firewall/backends.js";
import type { FirewallConf } from "#plugins/meta/firewall/config.js";
import { hostCidr } from "#plugins/meta/firewall/iptables.js";
import { readRecord } from "#plugins/meta/firewall/records.js";
import { readDelegateConfig } from "#plugins/meta/flannel/saved.js";
import type { ForwardTarget } from "#plugins/meta/portmap/config.js";
import { useKernelModel as useKernelModelOfPortmap } from "#plugins/meta/portmap/nftables.js";
import { backupFile, networkFileOf, readBackup } from "#plugins/meta/tuning/backup.js";
import { type LinkTunables, useKernelModel as useTuningKernelModel } from "#plugins/meta/tuning/link-tunables.js";
import { PLUGINS } from "#plugins/registry.js";
import { runPlugin } from "#skel/skel.js";
import { parseConfList } from "#spec/config.js";
import { CniError } from "#spec/errors.js";
import { ensureStateDir, isTemporaryName, removeStateFile, writeFileAtomicSync, writeFileInPlaceSync } from "#sys/state.js";
import { FakeWorld } from "../fake-dhcp.js";
import { FakeEtcd, type FakeEtcdState } from "../fake-etcd.js";
import { OUR_BIN } from "../harness.js";
import { readTree, seeded, type Tree, treeKey, writeTree } from "./model.js";

/** One pod of a scenario. */
export interface Pod {
  id: string;
  ifname: string;
}

/** A step of a scenario: what it does, and the pod it adds or deletes (for recovery's bookkeeping). */
export interface Step {
  kind: "add" | "del" | "other";
  pod?: Pod;
  /**
   * Runs the step; an ADD answers the addresses its result gave the pod (checked against the store after recovery).
   * `opsDone`: how many file operations the step has made so far (for a store whose state is outside the files too).
   */
  run(root: string, opsDone?: () => number): Promise<string[] | void>;
}

/**
 * How the runtime recovers (each crash state is recovered by each, on its own copy): `del-only`, DEL of every old
 * attachment and no GC (containerd, which has no GC; CRI-O between its start-ups); `gc-then-del`, GC with the
 * attachments still valid, then the DELs; `del-then-gc`, the DELs, then GC.
 */
export type Recovery = "del-only" | "gc-then-del" | "del-then-gc";
export const RECOVERIES: readonly Recovery[] = ["del-only", "gc-then-del", "del-then-gc"];

/** What recovery knows of the scenario at the crash: pods added and not deleted, and the one cut short. */
export interface CrashContext {
  root: string;
  mode: "kill" | "power";
  recovery: Recovery;
  /** Pods whose ADD completed and which were not deleted, before the crash (none after a reboot). */
  live: Pod[];
  /** The pod of the step the crash cut short (if it was an ADD or a DEL). */
  interrupted?: Pod;
  /** Every pod the scenario names. */
  all: Pod[];
  /** The attachments the runtime remembers at the crash: those live before it, and the one cut short. */
  remembered: Pod[];
  /** What the last complete ADD of each pod answered (`<id>/<ifname>` -> addresses), before the crash. */
  answered: ReadonlyMap<string, readonly string[]>;
  /** Steps of the scenario complete at the crash, and operations of the next one (the cut short) done. */
  stepsDone: number;
  opsOfInterrupted: number;
}

/** A store the simulator covers. */
export interface Store {
  name: string;
  /** Prepares the directory before the recorded scenario (its result is on disk for good). */
  setup?(root: string): Promise<void>;
  steps(root: string): Step[];
  /**
   * The runtime's recovery from the crash state in `ctx.root` (its calls, as ctx.recovery orders them); returns
   * what went wrong (a call failed, a reader took up what was never written). The simulator may kill it after any
   * of its file operations and run it again on what it left.
   */
  recover(ctx: CrashContext): Promise<string[]>;
  /** The invariants after recovery (empty: none broken); may add new attachments. */
  check?(ctx: CrashContext): Promise<string[]>;
  /** The recoveries that differ for this store (default: all three; a store without GC has one). */
  recoveries?: readonly Recovery[];
  /** Its files are under /run: a reboot empties them (a power loss leaves nothing of them). */
  volatile?: boolean;
  /** Directories of its kernel model (rules as files): kept as applied after a kill, emptied by a reboot. */
  kernel?: readonly string[];
  /** What its kernel model holds after a reboot, when not nothing (the host's devices). */
  kernelAtBoot?(): Tree;
  /** Power-loss states sampled per crash point (a cheap store explores more). */
  powerPerPoint?: number;
  /** The store keeps state outside the files too (recover picks it by ctx.stepsDone): states differ by step. */
  outsideState?: boolean;
  /** After every state was explored. */
  teardown?(): Promise<void>;
  /**
   * For a store whose state is outside the files too: the states it explored itself within recover, beyond those
   * run.ts counted — a call cut between two writes of that state (after a kill, after a power loss), and its
   * recovery killed after each of them.
   */
  innerStates?(): { kill: number; power: number; recoveryKilled: number };
}

/** `<id>/<ifname>`: an attachment's name in the simulator. */
export const podName = (p: Pod): string => `${p.id}/${p.ifname}`;

/** Pods of `ctx.all` not live after recovery: each was deleted (before the crash, or by recovery) or never added. */
const gonePods = (ctx: CrashContext): Pod[] => ctx.all.filter((p) => !ctx.live.some((l) => podName(l) === podName(p)));

/**
 * The runtime's calls after a crash, in ctx.recovery's order: after a kill, DEL of the attachment whose call was
 * cut short, GC with the live ones valid; after a reboot, DEL of every old attachment, GC with none valid. Each
 * must succeed (a failure is reported, and recovery goes on as a runtime would).
 */
async function runtimeRecovery(
  ctx: CrashContext,
  del: (p: Pod) => Promise<unknown>,
  gc?: (valid: Array<{ containerID: string; ifname: string }>) => Promise<unknown>,
): Promise<string[]> {
  const problems: string[] = [];
  const attempt = async (what: string, work: () => Promise<unknown>) => {
    try {
      await work();
    } catch (e) {
      problems.push(e instanceof CniError ? `${what} failed: ${e.msg}` : notCni(what, e));
    }
  };
  const valid = (ctx.mode === "kill" ? ctx.live : []).map((p) => ({ containerID: p.id, ifname: p.ifname }));
  const dels = deletedBy(ctx);
  const collect = async () => {
    if (gc) await attempt(ctx.mode === "kill" ? "GC" : "GC after the reboot", () => gc(valid));
  };
  if (ctx.recovery === "gc-then-del") await collect();
  for (const p of dels) await attempt(ctx.mode === "kill" ? `DEL of ${p.id} (its call cut short)` : `DEL of ${p.id} after the reboot`, () => del(p));
  if (ctx.recovery === "del-then-gc") await collect();
  return problems;
}

/** The pods a recovery DELs: the one cut short after a kill, every one the runtime remembers after a reboot. */
const deletedBy = (ctx: CrashContext): Pod[] => (ctx.mode === "power" ? ctx.remembered : ctx.interrupted ? [ctx.interrupted] : []);

const ranGC = (ctx: CrashContext): boolean => ctx.recovery !== "del-only";

/**
 * What is left of `p`, a pod no longer live, after recovery: a violation; except that a DEL which completed before
 * a power loss is not durable (no store syncs a removal: docs/state.md), so what the power loss brought back is
 * reclaimed only by a GC — a runtime with none never DELs that pod again. That case is a NOTE (run.ts counts them
 * apart and prints them): a known limitation, not a violation.
 */
const leftOf = (ctx: CrashContext, p: Pod, what: string): string =>
  ctx.mode === "power" && !ranGC(ctx) && !ctx.remembered.some((r) => podName(r) === podName(p))
    ? `${NOTE}${what} (its DEL completed before the power loss; only GC reclaims it)`
    : what;
export const NOTE = "note: ";

/** Runs one of our plugins in this process, as an exec would: its stdout, and the CNI error when it failed. */
export async function callPlugin(type: string, env: Record<string, string>, config: unknown): Promise<{ stdout: string; error?: CniError }> {
  const plugin = await PLUGINS[type]!.load();
  const out: string[] = [];
  const failure = await runPlugin(plugin.funcs, plugin.versionInfo, plugin.about, {
    env,
    readStdin: async () => Buffer.from(JSON.stringify(config)),
    writeStdout: (s) => out.push(s),
    writeStderr: () => undefined,
  });
  return failure ? { stdout: out.join(""), error: failure } : { stdout: out.join("") };
}

/** An exec for libcni that runs every plugin in this process (by the name of the file found in CNI_PATH). */
export class InProcessExec implements PluginExec {
  async execPlugin(pluginPath: string, stdin: Uint8Array, env: Env, options: ExecOptions = {}): Promise<Buffer> {
    const plugin = await PLUGINS[path.basename(pluginPath)]!.load();
    const out: string[] = [];
    const failure = await runPlugin(plugin.funcs, plugin.versionInfo, plugin.about, {
      env: { ...env },
      readStdin: async () => Buffer.from(stdin),
      writeStdout: (s) => out.push(s),
      writeStderr: () => undefined,
    });
    if (failure) out.push(failure.print());
    return settlePluginRun(
      failure ? "exit status 1" : undefined,
      Buffer.from(out.join("")),
      Buffer.alloc(0),
      options.stderr ?? ({ write: () => true } as never),
    );
  }
}

/** A failure of recovery that is not a CNI error: a stack trace a runtime would have got. */
const notCni = (what: string, e: unknown): string => `${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} (not a CNI error)`;

// ---- host-local ---------------------------------------------------------------------------------------------

const SUBNET = "10.99.0.0/28"; // .2 to .14: 13 addresses
const SUBNET6 = "fd99::/124"; // ::2 to ::e: 13 addresses
const RANGES = [[{ subnet: SUBNET }], [{ subnet: SUBNET6 }]];
const hostLocalConf = (root: string, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "crashnet",
  type: "host-local",
  ...extra,
  ipam: { type: "host-local", ranges: RANGES, dataDir: path.join(root, "networks") },
});
const podEnv = (command: string, pod: Pod): Record<string, string> => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: pod.id,
  CNI_NETNS: "/run/netns/crash",
  CNI_IFNAME: pod.ifname,
  CNI_PATH: "/nonexistent",
});
const pods = (...ids: string[]): Pod[] => ids.map((id) => ({ id, ifname: "eth0" }));

/**
 * The scenario of an IPAM store: 24 calls of pods that come and go (seeded, so every run is the same), some on a
 * second interface, with the range's round-robin wrapping (13 addresses of each family).
 */
function scenarioOf(step: (kind: "add" | "del", pod: Pod) => Step): Step[] {
  const random = seeded(24);
  const out: Step[] = [];
  const live: Pod[] = [];
  let next = 0;
  while (out.length < 24) {
    if (live.length > 0 && (live.length >= 8 || random() < 0.4)) {
      const pod = live.splice(Math.floor(random() * live.length), 1)[0]!;
      out.push(step("del", pod));
    } else {
      const pod: Pod = { id: `p${next}`, ifname: random() < 0.25 ? "net1" : "eth0" };
      next++;
      live.push(pod);
      out.push(step("add", pod));
    }
  }
  return out;
}

/** host-local's allocations: address -> owner text, and files that are not allocations nor the store's own. */
function allocations(root: string): Map<string, string> {
  const dir = path.join(root, "networks", "crashnet");
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === "lock" || name.startsWith("last_reserved_ip.") || isTemporaryName(name)) continue;
    out.set(name, readFileSync(path.join(dir, name), "utf8"));
  }
  return out;
}

/** The address of a host-local (or libcni) ADD result. */
const addressesOf = (result: unknown): string[] => (result as { ips: Array<{ address: string }> }).ips.map((i) => i.address.split("/")[0]!);

/** New pods added after recovery: each gets addresses no other new pod got and no live attachment holds. */
async function addNew(add: (pod: Pod) => Promise<string[]>, liveAddresses: Set<string>, count: number): Promise<string[]> {
  const problems: string[] = [];
  const got = new Set<string>();
  for (const pod of pods(...Array.from({ length: count }, (_, i) => `new${i}`))) {
    let addresses: string[];
    try {
      addresses = await add(pod);
    } catch (e) {
      problems.push(e instanceof CniError ? `ADD of ${pod.id} after recovery failed: ${e.msg}` : notCni(`ADD of ${pod.id}`, e));
      continue;
    }
    for (const address of addresses) {
      if (got.has(address) || liveAddresses.has(address)) problems.push(`ADD of ${pod.id} got ${address}, which another live attachment holds`);
      got.add(address);
    }
  }
  return problems;
}

const ownerOf = (p: Pod): string => `${p.id}\r\n${p.ifname}`;

/**
 * The invariants of an IPAM store after recovery, per attachment and against what each ADD answered: every address
 * an ADD gave a live pod is still that pod's (each address, each family); no address was given to two live pods;
 * nothing is held by an attachment whose DEL succeeded; after a GC, nothing by any attachment not valid; new
 * attachments get addresses no live one holds.
 */
async function ipamInvariants(ctx: CrashContext, owners: () => Map<string, string>, add: (pod: Pod) => Promise<string[]>): Promise<string[]> {
  const problems: string[] = [];
  const held = owners();
  const liveOwner = new Set(ctx.live.map(ownerOf));
  const given = new Map<string, string>();
  for (const p of ctx.live) {
    for (const address of ctx.answered.get(podName(p)) ?? []) {
      const other = given.get(address);
      if (other) problems.push(`${address} was answered to both ${other} and ${podName(p)}, both live`);
      given.set(address, podName(p));
      const now = held.get(address);
      if (now !== ownerOf(p))
        problems.push(
          `live ${podName(p)} lost ${address}, which its ADD answered (${now === undefined ? "now free" : `now held by ${JSON.stringify(now)}`})`,
        );
    }
  }
  for (const [address, owner] of held) {
    if (liveOwner.has(owner)) continue;
    const gone = ctx.all.find((p) => ownerOf(p) === owner);
    if (gone) problems.push(leftOf(ctx, gone, `${address} is still held by ${podName(gone)} after its DEL`));
    else if (ranGC(ctx)) problems.push(`${address} is still held (by ${JSON.stringify(owner)}) after GC: not reclaimed`);
    // A reservation whose owner no one can read (an ADD killed between its create and its write, a power loss) is
    // found by no DEL (docs/state.md): with no GC it stays.
    else problems.push(`${NOTE}${address} is held by ${JSON.stringify(owner)}, which no DEL can name: only GC reclaims it`);
  }
  const liveAddresses = new Set([...given.keys(), ...[...held].filter(([, o]) => liveOwner.has(o)).map(([a]) => a)]);
  // (As many as the range has free: a DEL undone by a power loss, with no GC, holds its address: a NOTE above.)
  const heldV4 = [...held.keys()].filter((a) => !a.includes(":")).length;
  problems.push(...(await addNew(add, liveAddresses, Math.min(4, 13 - heldV4))));
  return problems;
}

/** How recovery reaches an IPAM store: DEL and ADD of a pod, GC with the valid attachments. Each throws on failure. */
interface IpamOps {
  del(pod: Pod): Promise<unknown>;
  gc(valid: Array<{ containerID: string; ifname: string }>): Promise<unknown>;
  add(pod: Pod): Promise<string[]>;
}

/** Runs `type` in this process; its stdout, or throws its CNI error. */
async function runOrThrow(type: string, env: Record<string, string>, conf: unknown): Promise<string> {
  const r = await callPlugin(type, env, conf);
  if (r.error) throw r.error;
  return r.stdout;
}

/** host-local's calls over the store in `root`. */
const hostLocalOps = (root: string): IpamOps => ({
  del: (p) => runOrThrow("host-local", podEnv("DEL", p), hostLocalConf(root)),
  gc: (valid) =>
    runOrThrow("host-local", { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, hostLocalConf(root, { "cni.dev/valid-attachments": valid })),
  add: async (p) => addressesOf(JSON.parse(await runOrThrow("host-local", podEnv("ADD", p), hostLocalConf(root)))),
});

/** A scenario of an IPAM store's ADDs and DELs through `ops` (an ADD answers its addresses). */
const ipamSteps = (ops: (root: string) => IpamOps) => (root: string) =>
  scenarioOf((kind, pod) => ({ kind, pod, run: async () => (kind === "add" ? ops(root).add(pod) : void (await ops(root).del(pod))) }));

export const HOST_LOCAL: Store = {
  name: "host-local",
  powerPerPoint: 24,
  steps: ipamSteps(hostLocalOps),
  recover: (ctx) => runtimeRecovery(ctx, hostLocalOps(ctx.root).del, hostLocalOps(ctx.root).gc),
  check: (ctx) => ipamInvariants(ctx, () => allocations(ctx.root), hostLocalOps(ctx.root).add),
};

// ---- libcni's result cache, with host-local behind it ---------------------------------------------------------

const cacheList = (root: string) =>
  parseConfList(
    Buffer.from(
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "crashnet",
        plugins: [{ type: "host-local", ipam: { type: "host-local", ranges: RANGES, dataDir: path.join(root, "networks") } }],
      }),
    ),
  );
const cni = (root: string) => new CNIConfig({ path: [OUR_BIN], exec: new InProcessExec(), cacheDir: path.join(root, "cache") });
const runtimeConf = (p: Pod) => ({ containerID: p.id, netNS: "/run/netns/crash", ifName: p.ifname });
const libcniOps = (root: string): IpamOps => ({
  del: (p) => cni(root).delNetworkList(cacheList(root), runtimeConf(p)),
  gc: (validAttachments) => cni(root).gcNetworkList(cacheList(root), { validAttachments }),
  add: async (p) => addressesOf(await cni(root).addNetworkList(cacheList(root), runtimeConf(p))),
});
/** An attachment's cache file (Go's name: `<network>-<containerID>-<ifname>`). */
const cacheFileOf = (root: string, p: Pod): string => path.join(root, "cache", "results", `crashnet-${p.id}-${p.ifname}`);

export const LIBCNI_CACHE: Store = {
  name: "libcni cache",
  // (Its calls are the dearest: fewer sampled states, the last operations of each call still all of them.)
  powerPerPoint: 12,
  steps: ipamSteps(libcniOps),
  recover: (ctx) => runtimeRecovery(ctx, libcniOps(ctx.root).del, libcniOps(ctx.root).gc),
  check: async (ctx) => {
    // The cache files first: a live pod's is whole (no crash of another call touches it); a deleted one's is gone.
    const problems: string[] = [];
    for (const p of ctx.live) {
      try {
        JSON.parse(readFileSync(cacheFileOf(ctx.root, p), "utf8"));
      } catch (e) {
        problems.push(`the cache file of live ${podName(p)} is ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "gone" : "unreadable"}`);
      }
    }
    for (const p of gonePods(ctx))
      if (existsSync(cacheFileOf(ctx.root, p))) problems.push(leftOf(ctx, p, `the cache file of ${podName(p)} is left after its DEL`));
    return [...problems, ...(await ipamInvariants(ctx, () => allocations(ctx.root), libcniOps(ctx.root).add))];
  },
};

// ---- cluster-ipam: its node's blocks hint, etcd behind it ----------------------------------------------------

/**
 * cluster-ipam keeps one file on the node, the hint of its blocks (rewritten in place); the allocations are in etcd,
 * here an etcd in memory whose state after every step of the scenario, and after each write transaction within a
 * step, is kept, so recovery meets etcd as it was at the crash: a crash with j of a call's file operations done
 * may come right after any etcd write the call made with j done (or before the first), and each is explored.
 */
const clusterEtcd = new FakeEtcd();
const clusterSnapshots: FakeEtcdState[] = [];
/** Per step, etcd after each of its write transactions, with the step's file operations done by then. */
const clusterCuts: Array<Array<{ ops: number; etcd: FakeEtcdState }>> = [];
let clusterInitial: FakeEtcdState | undefined;
const clusterConf = (root: string, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "crashnet",
  ...extra,
  ipam: {
    type: "cluster-ipam",
    etcd: { endpoints: [clusterEtcd.endpoint] },
    ranges: [[{ subnet: SUBNET }]],
    blockSize: 30,
    nodeName: "node1",
    lockDir: path.join(root, "locks"),
  },
});
/** The allocations in etcd: address -> owner (`<containerID>\r\n<ifname>`, as host-local's files say it). */
const clusterAllocations = (): Map<string, string> =>
  new Map(
    clusterEtcd
      .entries("")
      .filter(([k]) => k.includes("/ips/"))
      .map(([, v]) => {
        const r = JSON.parse(v) as { ip: string; containerID: string; ifname: string };
        return [r.ip, `${r.containerID}\r\n${r.ifname}`];
      }),
  );

/** cluster-ipam's calls (etcd as it is now, the node's files in `root`). */
const clusterOps = (root: string): IpamOps => ({
  del: (p) => runOrThrow("cluster-ipam", podEnv("DEL", p), clusterConf(root)),
  gc: (valid) =>
    runOrThrow("cluster-ipam", { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, clusterConf(root, { "cni.dev/valid-attachments": valid })),
  add: async (p) => addressesOf(JSON.parse(await runOrThrow("cluster-ipam", podEnv("ADD", p), clusterConf(root)))),
});

export const CLUSTER_IPAM: Store = {
  name: "cluster-ipam",
  outsideState: true,
  // The blocks hint is under /run: a reboot empties it (etcd keeps the allocations).
  volatile: true,
  powerPerPoint: 128,
  setup: async () => {
    if (!clusterEtcd.endpoint) await clusterEtcd.start();
    clusterEtcd.restore({ revision: 1, entries: [] });
    clusterInitial = clusterEtcd.save();
  },
  steps: (root) =>
    ipamSteps(clusterOps)(root).map((s, i) => ({
      ...s,
      run: async (r: string, opsDone?: () => number) => {
        const cuts: Array<{ ops: number; etcd: FakeEtcdState }> = [];
        clusterEtcd.onWrite = () => cuts.push({ ops: opsDone?.() ?? 0, etcd: clusterEtcd.save() });
        try {
          return await s.run(r);
        } finally {
          clusterEtcd.onWrite = undefined;
          clusterCuts[i] = cuts;
          clusterSnapshots[i] = clusterEtcd.save();
        }
      },
    })),
  // (recover does it all, checks too: etcd is put back for each variant of the crash state.)
  recover: async (ctx) => {
    const before = ctx.stepsDone > 0 ? clusterSnapshots[ctx.stepsDone - 1]! : clusterInitial!;
    // With j of the cut-short call's file operations done: etcd as the last write before the j-th left it, or
    // right after any write made while j were done.
    const cuts = ctx.stepsDone < clusterSnapshots.length ? (clusterCuts[ctx.stepsDone] ?? []) : [];
    const j = ctx.opsOfInterrupted;
    const atJ = cuts.filter((c) => c.ops < j).at(-1)?.etcd ?? before;
    const unique = new Map([atJ, ...cuts.filter((c) => c.ops === j).map((c) => c.etcd)].map((e) => [JSON.stringify(e), e] as const));
    const variants = [...unique.values()];
    // (The first variant is the state run.ts counted; the others are the store's own.)
    const files = variants.length > 1 ? treeKey(readTree(ctx.root)) : "";
    for (const e of variants.slice(1)) clusterCutStates[ctx.mode].add(`${files}:${ctx.live.map(podName).join(",")}:${JSON.stringify(e)}`);
    const problems: string[] = [];
    for (const [i, state] of variants.entries()) {
      // Each variant on its own copy of the crash state's files.
      const root = variants.length > 1 ? `${ctx.root}.v${i}` : ctx.root;
      if (root !== ctx.root) cpSync(ctx.root, root, { recursive: true });
      const found = await clusterRecovery({ ...ctx, root }, state, true);
      problems.push(...found.map((f) => (variants.length > 1 ? `etcd variant ${i} (revision ${variants[i]!.revision}): ${f}` : f)));
      if (root !== ctx.root) rmSync(root, { recursive: true, force: true });
    }
    return problems;
  },
  innerStates: () => ({ kill: clusterCutStates.kill.size, power: clusterCutStates.power.size, recoveryKilled: clusterKills.size }),
  teardown: () => clusterEtcd.stop(),
};

/** The states of cluster-ipam's recoveries killed (etcd and the files, by fingerprint) explored so far. */
const clusterKills = new Set<string>();
/** The states of a call cut between two etcd writes explored so far, by the crash's kind. */
const clusterCutStates = { kill: new Set<string>(), power: new Set<string>() };

/**
 * cluster-ipam's recovery from etcd in `state` and the files in ctx.root, then the invariants. Unless `nested`,
 * the recovery is then killed after each of its etcd writes (the files and etcd as they were right then, the
 * call's answer lost) and recovered again from there: what run.ts does for the other stores after each file
 * operation, which cannot put etcd back.
 */
async function clusterRecovery(ctx: CrashContext, state: FakeEtcdState, nested: boolean): Promise<string[]> {
  clusterEtcd.restore(state);
  const ops = clusterOps(ctx.root);
  const kills: Array<{ etcd: FakeEtcdState; tree: Tree }> = [];
  if (nested) clusterEtcd.onWrite = () => kills.push({ etcd: clusterEtcd.save(), tree: readTree(ctx.root) });
  let failed: string[];
  try {
    failed = await runtimeRecovery(ctx, ops.del, ops.gc);
  } finally {
    clusterEtcd.onWrite = undefined;
  }
  const problems = failed.length ? failed : await ipamInvariants(ctx, clusterAllocations, ops.add);
  for (const [n, kill] of kills.entries()) {
    const key = `${ctx.mode}:${ctx.recovery}:${ctx.remembered.map(podName).join(",")}:${ctx.live.map(podName).join(",")}:${treeKey(kill.tree)}:${JSON.stringify(kill.etcd)}`;
    if (clusterKills.has(key)) continue;
    clusterKills.add(key);
    const root = `${ctx.root}.k${n}`;
    writeTree(root, kill.tree);
    const found = await clusterRecovery({ ...ctx, root }, kill.etcd, false);
    problems.push(...found.map((f) => `its recovery killed after its etcd write ${n + 1}: ${f}`));
    rmSync(root, { recursive: true, force: true });
  }
  return problems;
}

// ---- the dhcp daemon: its leases, their files, and the DHCP servers --------------------------------------------

/**
 * The dhcp store runs the daemon's own code: its request handler (daemon.ts `handleRequest`, each request through
 * the wire protocol's encoding) over its LeaseManager and LeaseStore, in a fake world (src/testing/fake-dhcp.ts:
 * a fake clock, in-memory DHCPv4 and DHCPv6 servers, namespaces as links that exist or not). The servers are
 * another machine, which neither a kill nor the node's power loss touches: their bindings are files under
 * `<root>/server/`, one per binding, written durably through sys/state.ts after each message, so that every crash
 * state holds the bindings as the servers had them at that point (a kill or a power loss between the RELEASE and
 * the removal of the lease file, or the other way round, is a state of its own).
 */
const DHCP_NET = "net";
/** Every third pod holds a DHCPv6 lease beside its DHCPv4 one. */
const dhcpDual = (p: Pod): boolean => Number(p.id.slice(1)) % 3 === 1;
const dhcpNetns = (p: Pod): string => `/run/netns/${p.id}`;
const dhcpConf = (p: Pod) =>
  Buffer.from(
    JSON.stringify({
      cniVersion: "1.1.0",
      name: DHCP_NET,
      type: "dhcp",
      ipam: { type: "dhcp", ...(dhcpDual(p) ? { families: ["ipv4", "ipv6"] } : {}) },
    }),
  );
const dhcpArgs = (p: Pod): WireArgs => ({
  containerID: p.id,
  netns: dhcpNetns(p),
  ifName: p.ifname,
  args: "",
  path: "/opt/cni/bin",
  stdinData: dhcpConf(p),
});
/** GC's request: the network's config naming the attachments still valid; no attachment of its own. */
const dhcpGcArgs = (valid: Array<{ containerID: string; ifname: string }>): WireArgs => ({
  containerID: "",
  netns: "",
  ifName: "",
  args: "",
  path: "/opt/cni/bin",
  stdinData: Buffer.from(
    JSON.stringify({ cniVersion: "1.1.0", name: DHCP_NET, type: "dhcp", "cni.dev/valid-attachments": valid, ipam: { type: "dhcp" } }),
  ),
});
const dhcpFamilies = (p: Pod): Family[] => (dhcpDual(p) ? ["ipv4", "ipv6"] : ["ipv4"]);
const dhcpClientID = (p: Pod): string => `${p.id}/${DHCP_NET}/${p.ifname}`;

/** One request to the daemon, as the plugin sends it and the daemon decodes and runs it. */
const daemonCall = (leases: LeaseManager, method: "ADD" | "DEL" | "GC", args: WireArgs) =>
  handleRequest(leases, decodeRequest(encodeRequest({ method, args }).trimEnd()));

const serverDir = (root: string) => path.join(root, "server");
/** A binding's file: `v4-<client id, hex>` or `v6-<DUID/IAID, hex>`, holding its address. */
const bindingFiles = (world: FakeWorld): Map<string, string> =>
  new Map([
    ...[...world.server.bindings].map(([id, a]) => [`v4-${id}`, a] as const),
    ...[...world.server6.bindings].map(([key, a]) => [`v6-${Buffer.from(key).toString("hex")}`, a] as const),
  ]);
/** The servers' bindings now, in files (durably: the server's state is not the node's to lose). */
function saveBindings(root: string, world: FakeWorld): void {
  const dir = serverDir(root);
  ensureStateDir(dir, 0o700);
  const want = bindingFiles(world);
  const have = readdirSync(dir).filter((n) => !isTemporaryName(n));
  for (const n of have) if (!want.has(n)) removeStateFile(path.join(dir, n), { durable: true });
  for (const [n, address] of want)
    if (!have.includes(n) || readFileSync(path.join(dir, n), "utf8") !== address) writeFileAtomicSync(path.join(dir, n), address, { durable: true });
}
/** The bindings in `root`'s files (each whole: written durably before its rename; a temporary one is no binding). */
function loadBindings(root: string, world: FakeWorld): void {
  const dir = serverDir(root);
  if (!existsSync(dir)) return;
  for (const n of readdirSync(dir)) {
    if (isTemporaryName(n)) continue;
    const address = readFileSync(path.join(dir, n), "utf8");
    if (n.startsWith("v4-")) world.server.bindings.set(n.slice(3), address);
    if (n.startsWith("v6-")) world.server6.bindings.set(Buffer.from(n.slice(3), "hex").toString(), address);
  }
}

/** A fake world over the lease files in `root`, whose servers keep their bindings in `root` too. */
function dhcpWorld(root: string, save?: (r: LeaseRecord) => void): FakeWorld {
  const files = new LeaseStore(path.join(root, "leases"));
  const world = new FakeWorld({
    save: async (r) => {
      save?.(r);
      await files.save(r);
    },
    remove: (id, family) => files.remove(id, family),
  });
  world.server6.preference = 255; // (the first ADVERTISE is taken at once: no fake time passes)
  loadBindings(root, world);
  const handle4 = world.server.handle.bind(world.server);
  world.server.handle = (bytes, how) => {
    const reply = handle4(bytes, how);
    saveBindings(root, world);
    return reply;
  };
  const handle6 = world.server6.handle.bind(world.server6);
  world.server6.handle = (bytes) => {
    const reply = handle6(bytes);
    saveBindings(root, world);
    return reply;
  };
  return world;
}

/** Every lease record the scenario wrote: only those may be taken up. */
const dhcpWritten = new Set<string>();
/** What each ADD of the scenario answered, by pod (kept after its DEL: its DHCPv6 binding is found by address). */
const dhcpAnswered = new Map<string, string[]>();
/** The scenario's steps (recovery tells an ADD cut short from a DEL), and its daemon (stopped at the end). */
let dhcpScenario: Step[] = [];
let dhcpDaemon: LeaseManager | undefined;

export const DHCP_LEASES: Store = {
  name: "dhcp leases",
  powerPerPoint: 48,
  setup: async (root) => new LeaseStore(path.join(root, "leases")).init(),
  steps: (root) => {
    const world = dhcpWorld(root, (r) => dhcpWritten.add(encodeLeaseRecord(r)));
    const leases = new LeaseManager(world);
    dhcpDaemon = leases;
    // Pods come and go (seeded), one in three dual-stack; now and then time passes beyond T1 and every lease held
    // is renewed (its file rewritten).
    const random = seeded(6);
    const live: Pod[] = [];
    const out: Step[] = [];
    let next = 0;
    while (out.length < 16) {
      const r = random();
      if (live.length > 0 && r < 0.12) {
        out.push({ kind: "other", run: () => world.clock.advance(31_000) });
      } else if (live.length > 0 && (live.length >= 5 || r < 0.45)) {
        const pod = live.splice(Math.floor(random() * live.length), 1)[0]!;
        out.push({
          kind: "del",
          pod,
          run: async () => {
            await daemonCall(leases, "DEL", dhcpArgs(pod));
            world.removeLink(dhcpNetns(pod), pod.ifname); // the runtime removes the namespace after the DEL
          },
        });
      } else {
        const pod: Pod = { id: `p${next++}`, ifname: "eth0" };
        live.push(pod);
        out.push({
          kind: "add",
          pod,
          run: async () => {
            world.addLink(dhcpNetns(pod), pod.ifname); // the main plugin made the interface
            const got = addressesOf(await daemonCall(leases, "ADD", dhcpArgs(pod)));
            dhcpAnswered.set(podName(pod), got);
            return got;
          },
        });
      }
    }
    dhcpScenario = out;
    return out;
  },
  recover: async (ctx) => {
    const world = dhcpWorld(ctx.root);
    // The namespaces still there: after a kill, the live pods' and the one cut short; none after a reboot.
    if (ctx.mode === "kill") for (const p of ctx.remembered) world.addLink(dhcpNetns(p), p.ifname);
    const store = new LeaseStore(path.join(ctx.root, "leases"));
    const leases = new LeaseManager(world);
    try {
      // The daemon's own start (daemon.ts): the lease files loaded, each taken up or dropped.
      let loaded: Awaited<ReturnType<LeaseStore["loadAll"]>>;
      try {
        loaded = await store.loadAll();
      } catch (e) {
        return [notCni("the lease store's load", e)];
      }
      const problems: string[] = [];
      for (const r of loaded.records) if (!dhcpWritten.has(encodeLeaseRecord(r))) problems.push(`a lease never written was taken up: ${r.clientID}`);
      await leases.resume(loaded.records);
      problems.push(
        ...(await runtimeRecovery(
          ctx,
          async (p) => {
            await daemonCall(leases, "DEL", dhcpArgs(p));
            world.removeLink(dhcpNetns(p), p.ifname);
          },
          (valid) => daemonCall(leases, "GC", dhcpGcArgs(valid)),
        )),
      );
      if (problems.length) return problems;
      return await dhcpInvariants(ctx, world, leases, store, loaded.records);
    } finally {
      await leases.shutdown();
    }
  },
  teardown: async () => {
    await dhcpDaemon?.shutdown();
  },
};

/**
 * The dhcp daemon's invariants after recovery: a live pod's leases (each family it asked for) are held by the
 * daemon, with the address its ADD answered, in their files, and still bound at the server; nothing of a pod no
 * longer live is held or left in a file; after a kill (its namespace still there), the server's binding of a pod
 * deleted is released — but for a lease its ADD, cut short, had not saved yet: no DEL can know it (the server's
 * lease expires; Go's daemon does the same), a known limitation.
 */
async function dhcpInvariants(
  ctx: CrashContext,
  world: FakeWorld,
  leases: LeaseManager,
  store: LeaseStore,
  loaded: readonly LeaseRecord[],
): Promise<string[]> {
  const problems: string[] = [];
  const held = new Map(leases.records().map((r) => [`${r.family}:${r.clientID}`, r]));
  const files = new Map((await store.loadAll()).records.map((r) => [`${r.family}:${r.clientID}`, r]));
  const bound = new Set(world.server.bindings.values());
  const bound6 = new Set(world.server6.bindings.values());
  for (const p of ctx.live) {
    const answered = ctx.answered.get(podName(p)) ?? [];
    for (const family of dhcpFamilies(p)) {
      const k = `${family}:${dhcpClientID(p)}`;
      const lease = held.get(k);
      const address = lease?.binding.address;
      if (!lease) problems.push(`live ${podName(p)}'s ${family} lease is not held by the daemon after a kill`);
      else if (!answered.includes(address!))
        problems.push(`live ${podName(p)} holds ${address}, which its ADD did not answer (${answered.join(", ")})`);
      if (files.get(k)?.binding.address !== address)
        problems.push(`the ${family} lease file of live ${podName(p)} is gone or not its lease after a kill`);
      if (address && !(family === "ipv4" ? bound : bound6).has(address))
        problems.push(`live ${podName(p)}'s ${address} is no longer bound at the server`);
    }
  }
  // (A file the daemon cannot read is left by no one: its load removes it.)
  const unread = readdirSync(store.dir).filter((n) => n.startsWith("lease")).length - files.size;
  if (unread > 0) problems.push(`${unread} lease file(s) the daemon cannot read are left after recovery`);
  const interruptedAdd = ctx.interrupted && dhcpScenario[ctx.stepsDone]?.kind === "add" ? podName(ctx.interrupted) : undefined;
  for (const p of gonePods(ctx)) {
    for (const family of dhcpFamilies(p)) {
      const k = `${family}:${dhcpClientID(p)}`;
      if (held.has(k)) problems.push(leftOf(ctx, p, `the daemon still holds the ${family} lease of ${podName(p)} after its DEL`));
      if (files.has(k)) problems.push(leftOf(ctx, p, `the ${family} lease file of ${podName(p)} is left after its DEL`));
    }
    if (ctx.mode !== "kill") continue;
    // Its bindings left at the servers: DHCPv4's by its client id, DHCPv6's by an address it was given.
    const ownLoaded = loaded.filter((r) => r.clientID === dhcpClientID(p));
    const its6 = new Set([...(dhcpAnswered.get(podName(p)) ?? []), ...ownLoaded.map((r) => r.binding.address)].filter((a) => a.includes(":")));
    const left4 = world.server.bindings.get(Buffer.from(`\0${dhcpClientID(p)}`).toString("hex"));
    const left = [
      ...(left4 === undefined ? [] : [{ family: "ipv4", address: left4 }]),
      ...[...world.server6.bindings.values()].filter((a) => its6.has(a)).map((address) => ({ family: "ipv6", address })),
    ];
    for (const { family, address } of left) {
      if (podName(p) === interruptedAdd && !ownLoaded.some((r) => r.family === family))
        problems.push(`${NOTE}${address}, acquired by ${podName(p)}'s ADD killed before its lease file was saved, stays bound until it expires`);
      else problems.push(`${address} is still bound to ${podName(p)} at the server after its DEL: the lease was not released`);
    }
  }
  return problems;
}

// ---- the firewall plugin's attachment records ---------------------------------------------------------------

/**
 * The invariants of a store of one file per attachment: a live attachment's file is whole after a crash of another
 * call; nothing is left of an attachment whose DEL succeeded.
 */
async function keyedInvariants(ctx: CrashContext, read: (p: Pod) => Promise<"ok" | "damaged" | "none">): Promise<string[]> {
  const problems: string[] = [];
  for (const p of ctx.live) {
    const state = await read(p);
    if (state !== "ok") problems.push(`the file of live ${podName(p)} is ${state === "none" ? "gone" : state} after a kill`);
  }
  for (const p of gonePods(ctx)) if ((await read(p)) !== "none") problems.push(leftOf(ctx, p, `the file of ${podName(p)} is left after its DEL`));
  return problems;
}

const fwDir = (root: string) => path.join(root, "firewall");
const fwFile = (root: string, p: Pod) => path.join(fwDir(root), "net", `${p.id}:${p.ifname}`);

/**
 * The kernel model of the firewall store: one file per rule under `<root>/kernel/firewall/`, named by the host
 * address it allows (as the iptables backend's rules are found: removeAddressRules), made and removed through
 * sys/state.ts so that the simulator crashes the kernel's state with the files — a kill leaves the rules applied
 * so far, a reboot none (run.ts drops `kernel/` from every power-loss state). The backend mirrors the iptables
 * one: add ensures a rule per address, remove drops the rules of the addresses it is given, collect those of the
 * stale records' addresses no live record claims.
 */
const kernelRules = (dataDir: string) => path.join(path.dirname(dataDir), "kernel", "firewall");
const ruleFile = (dataDir: string, address: string) => path.join(kernelRules(dataDir), hostCidr(address).replace("/", "_"));
function modelBackend(n: FirewallConf): FirewallBackend {
  const dir = kernelRules(n.dataDir);
  return {
    name: "iptables",
    add: async (a) => {
      ensureStateDir(dir, 0o700);
      for (const address of a.addresses) writeFileInPlaceSync(ruleFile(n.dataDir, address), a.containerID);
      return true;
    },
    check: async (a) => a.addresses.filter((address) => !existsSync(ruleFile(n.dataDir, address))),
    restore: async () => false,
    marks: () => [],
    remove: async (a) => {
      for (const address of a.addresses) removeStateFile(ruleFile(n.dataDir, address));
    },
    collect: async (g) => {
      for (const address of new Set(g.stale.flatMap((r) => r.addresses.map(hostCidr))))
        if (!g.claimed.has(address)) removeStateFile(ruleFile(n.dataDir, address));
    },
  };
}

/** The address the firewall scenario gives each pod (`p<n>` gets 10.88.0.<n+2>). */
const fwAddress = (p: Pod) => `10.88.0.${Number(p.id.slice(1)) + 2}/24`;
const fwConf = (root: string, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "net",
  type: "firewall",
  backend: "iptables",
  dataDir: fwDir(root),
  ...extra,
});
const fwPrev = (p: Pod) => ({ cniVersion: "1.1.0", ips: [{ address: fwAddress(p) }] });
/** The firewall plugin's calls; DEL with the cached prevResult when the runtime has one (`withPrev`). */
const fwOps = (root: string) => ({
  add: async (p: Pod) => {
    await runOrThrow("firewall", podEnv("ADD", p), fwConf(root, { prevResult: fwPrev(p) }));
    return [fwAddress(p).split("/")[0]!];
  },
  del: (p: Pod, withPrev: boolean) => runOrThrow("firewall", podEnv("DEL", p), fwConf(root, withPrev ? { prevResult: fwPrev(p) } : {})),
  gc: (valid: Array<{ containerID: string; ifname: string }>) =>
    runOrThrow("firewall", { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, fwConf(root, { "cni.dev/valid-attachments": valid })),
});

/**
 * The firewall plugin's own code (ADD, DEL, GC) over its records and the kernel model. The runtime DELs with the
 * cached prevResult, except an ADD cut short (nothing cached: the record is all DEL has). Checked: a live pod's
 * record is whole and its rules there after a kill; after an attachment's DEL, neither its record nor any rule
 * of its address is left.
 */
export const FIREWALL: Store = {
  name: "firewall",
  powerPerPoint: 64,
  kernel: ["kernel"],
  setup: async () => useKernelModel(modelBackend),
  teardown: async () => useKernelModel(undefined),
  steps: (root) =>
    churn(16, 7, (kind, pod) => ({
      kind,
      pod,
      run: async () => (kind === "add" ? fwOps(root).add(pod) : void (await fwOps(root).del(pod, true))),
    })),
  recover: (ctx) => {
    const ops = fwOps(ctx.root);
    // (A pod whose ADD completed has its result cached; one whose ADD was cut short has none.)
    return runtimeRecovery(ctx, (p) => ops.del(p, ctx.answered.has(podName(p))), ops.gc);
  },
  check: async (ctx) => {
    const problems = await keyedInvariants(ctx, async (p) =>
      !existsSync(fwFile(ctx.root, p)) ? "none" : readRecord(fwDir(ctx.root), "net", p.id, p.ifname) ? "ok" : "damaged",
    );
    for (const p of ctx.live)
      if (!existsSync(ruleFile(fwDir(ctx.root), fwAddress(p)))) problems.push(`the rule of live ${podName(p)} is gone after a kill`);
    for (const p of gonePods(ctx))
      if (existsSync(ruleFile(fwDir(ctx.root), fwAddress(p))))
        problems.push(`the rule of ${podName(p)} (${fwAddress(p)}) is left in the kernel after its DEL`);
    return problems;
  },
};

// ---- dnsname: its network directory, dnsmasq and the INPUT rules ----------------------------------------------

/** A pod's hosts line on the dnsname network (`p<n>` has 10.88.0.<n+2>). */
const dnsAddress = (p: Pod) => `10.88.0.${Number(p.id.slice(1)) + 2}`;
const dnsLine = (p: Pod) => `${dnsAddress(p)}\t${p.id}`;
const dnsDir = (root: string) => networkDir(path.join(root, "containers", "cni", "dnsname"), "net");

/**
 * dnsname's kernel model, under `<root>/kernel/dnsname/`: the network's dnsmasq as a file (`dnsmasq.<network>`,
 * there while it runs, holding the hosts lines it serves: those it read at its start or last SIGHUP), and each
 * INPUT rule as a file. Made through sys/state.ts, so the simulator crashes them with the files.
 */
const dnsKernel = (root: string) => path.join(root, "kernel", "dnsname");
const dnsmasqFile = (root: string, files: { dir: string }) => path.join(dnsKernel(root), `dnsmasq.${path.basename(files.dir)}`);
const dnsRuleFile = (root: string, r: InputRule) => path.join(dnsKernel(root), `rule.${r.family}.${r.rule.join("_")}`);
/** The lines the network's dnsmasq serves; undefined when it does not run. */
const dnsServed = (root: string): string[] | undefined =>
  existsSync(dnsmasqFile(root, dnsDir(root))) ? (JSON.parse(readFileSync(dnsmasqFile(root, dnsDir(root)), "utf8")) as string[]) : undefined;
const dnsnameModel = (root: string): DnsnameHost => {
  const removeRules = async (rules: readonly InputRule[]) => {
    for (const r of rules) removeStateFile(dnsRuleFile(root, r));
  };
  return {
    nameservers: async () => ["10.88.0.1"],
    dnsmasqBinary: () => "/usr/sbin/dnsmasq",
    runningDnsmasq: (files) => (existsSync(dnsmasqFile(root, files)) ? 4242 : undefined),
    // (Started or sent SIGHUP: it serves the hosts file as it is now.)
    reloadDnsmasq: async (_binary, files) => {
      ensureStateDir(dnsKernel(root), 0o700);
      const text = existsSync(files.hosts) ? readFileSync(files.hosts, "utf8") : "";
      writeFileAtomicSync(dnsmasqFile(root, files), JSON.stringify(text.split("\n").filter((l) => l && !l.startsWith("#"))));
    },
    stopDnsmasq: async (files) => removeStateFile(dnsmasqFile(root, files)),
    acceptDns: async (bridge, families) => {
      ensureStateDir(dnsKernel(root), 0o700);
      const inserted: InputRule[] = [];
      for (const r of dnsRules(bridge, families)) {
        if (existsSync(dnsRuleFile(root, r))) continue;
        writeFileInPlaceSync(dnsRuleFile(root, r), "");
        inserted.push(r);
      }
      return inserted;
    },
    removeDnsRulesUnlessShared: async (d, bridge) => {
      if (bridge && !otherNetworkUses(d, bridge)) await removeRules(dnsRules(bridge));
    },
    removeRules,
  };
};
const dnsConf = (p?: Pod, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "net",
  type: "dnsname",
  domainName: "dns.crash",
  ...(p
    ? {
        prevResult: {
          cniVersion: "1.1.0",
          interfaces: [{ name: "br0" }, { name: `veth${p.id}` }, { name: p.ifname, sandbox: "/run/netns/crash" }],
          ips: [{ address: `${dnsAddress(p)}/24`, interface: 2 }],
        },
      }
    : {}),
  ...extra,
});
const dnsEnv = (command: string, p: Pod, root: string) => ({ ...podEnv(command, p), CNI_ARGS: `K8S_POD_NAME=${p.id}`, XDG_RUNTIME_DIR: root });
const dnsOps = (root: string) => {
  useDnsnameKernelModel(dnsnameModel(root));
  return {
    add: async (p: Pod) => {
      await runOrThrow("dnsname", dnsEnv("ADD", p, root), dnsConf(p));
      return [dnsAddress(p)];
    },
    // (The runtime DELs with the cached prevResult when it has one: an ADD cut short has none.)
    del: (p: Pod, withPrev: boolean) => runOrThrow("dnsname", dnsEnv("DEL", p, root), withPrev ? dnsConf(p) : dnsConf()),
    check: (p: Pod) => runOrThrow("dnsname", dnsEnv("CHECK", p, root), dnsConf(p)),
    gc: (valid: Array<{ containerID: string; ifname: string }>) =>
      runOrThrow(
        "dnsname",
        { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent", XDG_RUNTIME_DIR: root },
        dnsConf(undefined, { "cni.dev/valid-attachments": valid }),
      ),
  };
};

/**
 * The dnsname plugin's own code (ADD, CHECK, DEL, GC) over its network directory (dnsmasq.conf, the hosts file, the
 * records) and a kernel model of its dnsmasq and INPUT rules. Checked: a live pod's hosts line survives a crash of
 * another pod's call, dnsmasq runs and serves it, the rules are there and its CHECK passes; after an attachment's DEL
 * (or a GC) its line is neither in the hosts file nor served; with no pod left, the directory, dnsmasq and the rules
 * are gone.
 */
export const DNSNAME: Store = {
  name: "dnsname",
  powerPerPoint: 128,
  volatile: true, // under /run, dnsmasq and the rules: all gone at a reboot
  steps: (root) =>
    churn(12, 5, (kind, pod) => ({
      kind,
      pod,
      run: async () => (kind === "add" ? dnsOps(root).add(pod) : void (await dnsOps(root).del(pod, true))),
    })),
  recover: (ctx) => {
    const ops = dnsOps(ctx.root);
    return runtimeRecovery(ctx, (p) => ops.del(p, ctx.answered.has(podName(p))), ops.gc);
  },
  check: async (ctx) => {
    const d = dnsDir(ctx.root);
    const ops = dnsOps(ctx.root);
    const lines = existsSync(d.dir) ? readState(d).lines : [];
    const served = dnsServed(ctx.root);
    const rules = existsSync(dnsKernel(ctx.root)) ? readdirSync(dnsKernel(ctx.root)).filter((n) => n.startsWith("rule.")) : [];
    const problems: string[] = [];
    for (const p of ctx.live) {
      if (!lines.includes(dnsLine(p))) problems.push(`the hosts line of live ${podName(p)} is gone after a kill`);
      else if (!served?.includes(dnsLine(p)))
        problems.push(`dnsmasq does not serve live ${podName(p)} after a kill (${served ? "not reloaded" : "not running"})`);
      else
        await ops
          .check(p)
          .catch((e: unknown) => problems.push(e instanceof CniError ? `CHECK of live ${podName(p)} failed: ${e.msg}` : notCni("CHECK", e)));
    }
    if (ctx.live.length && rules.length === 0) problems.push("the INPUT rules for the bridge are gone after a kill");
    for (const p of gonePods(ctx)) {
      if (lines.some((l) => l.endsWith(`\t${p.id}`))) problems.push(`the hosts line of ${podName(p)} is left after its DEL`);
      if (served?.some((l) => l.endsWith(` ${p.id}`) || l.endsWith(`\t${p.id}`))) problems.push(`dnsmasq still serves ${podName(p)} after its DEL`);
    }
    if (ctx.live.length === 0) {
      if (existsSync(d.dir)) problems.push("the network's directory is left after its last DEL");
      if (served) problems.push("dnsmasq still runs after the network's last DEL");
      if (rules.length) problems.push(`INPUT rules are left after the network's last DEL: ${rules.join(", ")}`);
    }
    return problems;
  },
  teardown: async () => useDnsnameKernelModel(undefined),
};

// ---- tuning's backups -----------------------------------------------------------------------------------------

/**
 * tuning's kernel model: each pod's link as a file `<root>/kernel/tuning/<containerID>.json` (its tunables), made
 * and changed through sys/state.ts so that the simulator crashes it with the files. A pod's namespace is a link
 * under the scratch directory to this process's own (`/proc/self/ns/net`: NetNS.open accepts it, and nothing
 * enters it: every link operation goes to the model), named by the pod; after a reboot it is gone.
 */
const tuningKernel = (root: string) => path.join(root, "kernel", "tuning");
const tuningLink = (root: string, id: string) => path.join(tuningKernel(root), `${id}.json`);
const ORIGINAL: LinkTunables = { mac: "02:00:00:00:00:01", mtu: 1500, promisc: false, allmulti: false, txQLen: 1000 };
const namespaces = path.join(existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir(), `tscni-crash-netns-${String(process.pid).padStart(8, "0")}`);
const netnsOf = (p: Pod) => path.join(namespaces, p.id);
const tuningModel = (root: string) => ({
  read: async (ns: { path: string | undefined }, name: string): Promise<LinkTunables | undefined> => {
    if (name !== "eth0" || !ns.path) return undefined;
    try {
      return JSON.parse(readFileSync(tuningLink(root, path.basename(ns.path)), "utf8")) as LinkTunables;
    } catch {
      return undefined; // (a link is there or not: its file is made whole, in place)
    }
  },
  set: async (ns: { path: string | undefined }, _name: string, change: Partial<LinkTunables>) => {
    const file = tuningLink(root, path.basename(ns.path!));
    const now = JSON.parse(readFileSync(file, "utf8")) as LinkTunables;
    // (A kernel change is whole or not done: atomic, so a kill never leaves half of one.)
    writeFileAtomicSync(file, JSON.stringify({ ...now, ...Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)) }));
  },
});
const tuningConf = (root: string, p: Pod, mtu: number) => ({
  cniVersion: "1.1.0",
  name: "net",
  type: "tuning",
  mtu,
  dataDir: path.join(root, "tuning"),
  prevResult: { cniVersion: "1.1.0", interfaces: [{ name: p.ifname, sandbox: netnsOf(p) }], ips: [] },
});
// (CNI_NETNS_OVERRIDE: the namespace is this process's own, which skel refuses otherwise.)
const tuningEnv = (command: string, p: Pod, netns = netnsOf(p)) => ({ ...podEnv(command, p), CNI_NETNS: netns, CNI_NETNS_OVERRIDE: "1" });

/**
 * The tuning plugin's own code (ADD, DEL, GC) over its backups and a kernel model of the pods' links. A pod's ADD
 * step makes its link (the main plugin's part) and then calls tuning, which backs the link up and sets its MTU;
 * its DEL step calls tuning, then deletes the link. Checked: a live pod's link keeps its MTU and its backup after
 * a kill; after an attachment's DEL its backup is gone and its link, if still there, is as it was before the ADD.
 */
export const TUNING: Store = {
  name: "tuning",
  volatile: true, // backups under /run, links in the kernel: both gone at a reboot
  setup: async () => void mkdirSync(namespaces, { recursive: true }),
  steps: (root) => {
    useTuningKernelModel(tuningModel(root));
    return churn(14, 6, (kind, pod, n) => ({
      kind,
      pod,
      run: async () => {
        if (kind === "add") {
          if (!existsSync(netnsOf(pod))) symlinkSync("/proc/self/ns/net", netnsOf(pod));
          ensureStateDir(tuningKernel(root), 0o700);
          writeFileAtomicSync(tuningLink(root, pod.id), JSON.stringify(ORIGINAL));
          await runOrThrow("tuning", tuningEnv("ADD", pod), tuningConf(root, pod, 1400 + n));
        } else {
          await runOrThrow("tuning", tuningEnv("DEL", pod), tuningConf(root, pod, 1400 + n));
          removeStateFile(tuningLink(root, pod.id));
        }
      },
    }));
  },
  recover: (ctx) => {
    useTuningKernelModel(tuningModel(ctx.root));
    // (After a reboot the pods' namespaces are gone.)
    const netns = (p: Pod) => (ctx.mode === "power" ? path.join(namespaces, "gone") : netnsOf(p));
    return runtimeRecovery(
      ctx,
      (p) => runOrThrow("tuning", tuningEnv("DEL", p, netns(p)), tuningConf(ctx.root, p, 1400)),
      (valid) =>
        runOrThrow(
          "tuning",
          { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" },
          { cniVersion: "1.1.0", name: "net", type: "tuning", dataDir: path.join(ctx.root, "tuning"), "cni.dev/valid-attachments": valid },
        ),
    );
  },
  check: async (ctx) => {
    const problems = await keyedInvariants(ctx, async (p) => {
      const file = backupFile(path.join(ctx.root, "tuning"), p.id, p.ifname);
      const backup = await readBackup(file);
      if (backup === undefined) return existsSync(networkFileOf(file)) ? "damaged" : "none";
      return backup === "unreadable" ? "damaged" : "ok";
    });
    const link = (p: Pod) =>
      existsSync(tuningLink(ctx.root, p.id)) ? (JSON.parse(readFileSync(tuningLink(ctx.root, p.id), "utf8")) as LinkTunables) : undefined;
    for (const p of ctx.live) if (link(p)?.mtu === ORIGINAL.mtu) problems.push(`the link of live ${podName(p)} lost its MTU after a kill`);
    for (const p of gonePods(ctx)) {
      const l = link(p);
      if (!l || l.mtu === ORIGINAL.mtu) continue;
      const what = `the link of ${podName(p)} is not put back after its DEL (MTU ${l.mtu})`;
      // A GC before the DEL takes the backup of an attachment not valid (an ADD cut short has none in the runtime's
      // cache) and cannot put its link back (GC knows no namespace): the DEL then finds nothing to restore from.
      problems.push(ctx.recovery === "gc-then-del" ? `${NOTE}${what}: GC before the DEL dropped its backup` : what);
    }
    return problems;
  },
  teardown: async () => {
    useTuningKernelModel(undefined);
    rmSync(namespaces, { recursive: true, force: true });
  },
};

// ---- host-device: its records and a kernel model of the devices ---------------------------------------------

/** host-device's kernel model: every namespace's links, one file (a kernel request changes it whole, atomically). */
const deviceLinksFile = (root: string) => path.join(root, "kernel", "host-device", "links.json");
type ModelLink = Link & { addresses: string[] };
type ModelLinks = Record<string, ModelLink[]>;
/** The host's devices at boot: `hd<n>`, one for each pod `p<n>` of the scenario. */
const DEVICES = 14;
const bootDevice = (n: number): ModelLink => ({
  index: 10 + n,
  name: `hd${n}`,
  mtu: 1500,
  mac: `02:00:00:00:01:${n.toString(16).padStart(2, "0")}`,
  up: true,
  operstate: "UP",
  promisc: false,
  alias: "",
  addresses: [`192.0.2.${n + 1}/24`],
});
const deviceBoot = (): Tree => {
  const bytes = Buffer.from(JSON.stringify({ host: Array.from({ length: DEVICES }, (_, n) => bootDevice(n)) }));
  return new Map<string, "dir" | Buffer>([
    ["kernel", "dir"],
    ["kernel/host-device", "dir"],
    ["kernel/host-device/links.json", bytes],
  ]);
};
/** A namespace's name in the model: `host`, or the pod's (its path's last part). */
const nsKey = (ns: { path: string | undefined }) => (ns.path === undefined ? "host" : path.basename(ns.path));
const readLinks = (root: string): ModelLinks => JSON.parse(readFileSync(deviceLinksFile(root), "utf8")) as ModelLinks;
/** One kernel request: `change` applied to the links, written whole. */
const changeLinks = (root: string, change: (links: ModelLinks) => void) => {
  const links = readLinks(root);
  change(links);
  writeFileAtomicSync(deviceLinksFile(root), JSON.stringify(links));
};
const modelLink = (links: ModelLinks, ns: string, name: string): ModelLink => {
  const link = links[ns]?.find((l) => l.name === name);
  if (!link) throw new CniError(1, `model: no link ${name} in ${ns}`);
  return link;
};
const deviceModel = (root: string): DeviceKernel => ({
  sysfsRoot: path.join(root, "no-sysfs"),
  hostLinks: async () => readLinks(root).host ?? [],
  getLink: async (ns, name) => readLinks(root)[nsKey(ns)]?.find((l) => l.name === name),
  addresses: async (ns, name) => modelLink(readLinks(root), nsKey(ns), name).addresses,
  move: async (from, name, to, newName, alias) =>
    changeLinks(root, (links) => {
      const link = modelLink(links, nsKey(from), name);
      if (links[nsKey(to)]?.some((l) => l.name === newName)) throw new CniError(1, `model: ${newName} exists in ${nsKey(to)}`);
      links[nsKey(from)] = links[nsKey(from)]!.filter((l) => l !== link);
      // (A link moved to another namespace is down there and has lost its addresses.)
      (links[nsKey(to)] ??= []).push({ ...link, name: newName, alias, up: false, addresses: [] });
    }),
  bringUp: async (ns, name) => {
    changeLinks(root, (links) => void (modelLink(links, nsKey(ns), name).up = true));
    return modelLink(readLinks(root), nsKey(ns), name);
  },
  renameLink: async (name, newName) => changeLinks(root, (links) => Object.assign(modelLink(links, "host", name), { name: newName, up: false })),
  restore: async (name, s) =>
    changeLinks(root, (links) => {
      const link = modelLink(links, "host", name);
      if (s.mtu !== undefined) link.mtu = s.mtu;
      if (s.alias !== undefined) link.alias = s.alias;
      link.addresses = [...new Set([...link.addresses, ...s.addresses])];
      if (s.up) link.up = true;
    }),
  configure: async (ns, ifName, result) =>
    changeLinks(root, (links) => {
      const link = modelLink(links, nsKey(ns), ifName);
      link.addresses = [...new Set([...link.addresses, ...(result.ips ?? []).map((i) => i.address)])];
    }),
  checkConfigured: async (ns, ifName, result) => {
    const link = modelLink(readLinks(root), nsKey(ns), ifName);
    for (const i of result.ips ?? [])
      if (!link.addresses.includes(i.address)) throw new CniError(1, `address ${i.address} is missing from ${ifName}`);
  },
});
const deviceConf = (root: string, p?: Pod, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "net",
  type: "host-device",
  ...(p ? { device: `hd${p.id.slice(1)}` } : {}),
  dataDir: path.join(root, "host-device"),
  ...extra,
});
/** host-device's calls (the pod's namespace: as tuning's, a link to this process's own). */
const deviceOps = (root: string, mode: "kill" | "power" = "kill") => ({
  add: async (p: Pod) => {
    if (!existsSync(netnsOf(p))) symlinkSync("/proc/self/ns/net", netnsOf(p));
    await runOrThrow("host-device", tuningEnv("ADD", p), deviceConf(root, p));
    return [];
  },
  // (After a reboot the pods' namespaces are gone.)
  del: (p: Pod) => runOrThrow("host-device", tuningEnv("DEL", p, mode === "power" ? path.join(namespaces, "gone") : netnsOf(p)), deviceConf(root, p)),
  check: (p: Pod, mac: string) =>
    runOrThrow(
      "host-device",
      tuningEnv("CHECK", p),
      deviceConf(root, p, { prevResult: { cniVersion: "1.1.0", interfaces: [{ name: p.ifname, mac, sandbox: netnsOf(p) }], ips: [] } }),
    ),
  gc: (valid: Array<{ containerID: string; ifname: string }>) =>
    runOrThrow("host-device", { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, deviceConf(root, undefined, { "cni.dev/valid-attachments": valid })),
});

/** A host-device record as its DEL reads it. */
const deviceState = (root: string) => async (p: Pod) => {
  const dir = path.join(root, "host-device");
  const r = await deviceReadRecord(dir, p.id, p.ifname);
  await deviceListRecords(dir);
  return r === undefined ? "none" : r === "damaged" ? "damaged" : "ok";
};

/**
 * The host-device plugin's own code (ADD, CHECK, DEL, GC) over its records and a kernel model of the devices (each
 * namespace's links with their addresses: a move takes a device's addresses away, DEL puts them back). A pod's ADD
 * moves `hd<n>` into its namespace; its DEL gives it back. A reboot gives every device back to the host as it was at
 * boot. Checked: a live pod's record is whole, its device in its namespace and its CHECK passes after a kill; after
 * an attachment's DEL (or a GC) its record is gone and its device is in the host, named, addressed, up and aliased
 * as at boot.
 */
export const HOST_DEVICE: Store = {
  name: "host-device",
  powerPerPoint: 12,
  kernel: ["kernel"],
  kernelAtBoot: deviceBoot,
  setup: async (root) => {
    mkdirSync(namespaces, { recursive: true });
    writeTree(root, deviceBoot());
  },
  steps: (root) => {
    useDeviceKernelModel(deviceModel(root));
    return churn(14, 6, (kind, pod) => ({
      kind,
      pod,
      run: async () => (kind === "add" ? deviceOps(root).add(pod) : void (await deviceOps(root).del(pod))),
    }));
  },
  recover: (ctx) => {
    useDeviceKernelModel(deviceModel(ctx.root));
    const ops = deviceOps(ctx.root, ctx.mode);
    return runtimeRecovery(ctx, ops.del, ops.gc);
  },
  check: async (ctx) => {
    const problems = await keyedInvariants(ctx, deviceState(ctx.root));
    const links = readLinks(ctx.root);
    const holder = (mac: string) => Object.keys(links).filter((ns) => links[ns]!.some((l) => l.mac === mac));
    for (const p of ctx.live) {
      const boot = bootDevice(Number(p.id.slice(1)));
      const inside = links[p.id]?.find((l) => l.name === p.ifname);
      if (inside?.mac !== boot.mac) problems.push(`the device ${boot.name} of live ${podName(p)} is not in its namespace after a kill`);
      else
        await deviceOps(ctx.root)
          .check(p, boot.mac)
          .catch((e: unknown) => problems.push(e instanceof CniError ? `CHECK of live ${podName(p)} failed: ${e.msg}` : notCni("CHECK", e)));
    }
    for (const p of gonePods(ctx)) {
      const boot = bootDevice(Number(p.id.slice(1)));
      const host = links["host"]?.find((l) => l.name === boot.name);
      const where = holder(boot.mac);
      if (!host || host.mac !== boot.mac || where.length !== 1)
        problems.push(
          `the device ${boot.name} of ${podName(p)} is not given back to the host after its DEL (it is in ${where.join(", ") || "no namespace"})`,
        );
      else if (host.mtu !== boot.mtu || !host.up || host.alias !== "" || !boot.addresses.every((a) => host.addresses.includes(a)))
        problems.push(`the device ${boot.name} of ${podName(p)} is back in the host but not as it was (${JSON.stringify(host)})`);
    }
    return problems;
  },
  teardown: async () => {
    useDeviceKernelModel(undefined);
    rmSync(namespaces, { recursive: true, force: true });
  },
};

// ---- flannel: its saved delegate configs, and the delegate (host-local) behind them ------------------------

/** A saved delegate config as flannel's DEL reads it. */
const flannelState = (root: string) => async (p: Pod) => {
  const bytes = await readDelegateConfig(path.join(root, "flannel"), p.id).catch((e: unknown) => {
    if (e instanceof CniError) return "damaged" as const; // a DEL then says so, and goes on without it
    throw e;
  });
  if (bytes === undefined) return "none";
  try {
    return bytes !== "damaged" && (JSON.parse(bytes.toString()) as { type?: string }).type === "host-local" ? "ok" : "damaged";
  } catch {
    return "damaged";
  }
};
/** flanneld's view of the node: the subnet host-local hands out (SUBNET's 13 addresses). */
const FLANNEL_ENV = "FLANNEL_NETWORK=10.99.0.0/16\nFLANNEL_SUBNET=10.99.0.1/28\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n";
const flannelConf = (root: string, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "crashnet",
  type: "flannel",
  subnetFile: path.join(root, "subnet.env"),
  dataDir: path.join(root, "flannel"),
  // (The delegate is host-local itself: its reservations are the delegate's state, files the simulator crashes.)
  delegate: { type: "host-local" },
  ipam: { dataDir: path.join(root, "networks") },
  ...extra,
});
const flannelEnv = (command: string, p: Pod) => ({ ...podEnv(command, p), CNI_PATH: OUR_BIN });
const flannelOps = (root: string) => {
  // (flannel delegates through the default exec: the delegate runs in this process, as every plugin here.)
  setDefaultExec(new InProcessExec());
  return {
    add: async (p: Pod) => addressesOf(JSON.parse(await runOrThrow("flannel", flannelEnv("ADD", p), flannelConf(root)))),
    del: (p: Pod) => runOrThrow("flannel", flannelEnv("DEL", p), flannelConf(root)),
    check: (p: Pod, addresses: readonly string[]) =>
      runOrThrow(
        "flannel",
        flannelEnv("CHECK", p),
        flannelConf(root, { prevResult: { cniVersion: "1.1.0", ips: addresses.map((a) => ({ address: `${a}/28` })) } }),
      ),
  };
};

/**
 * The flannel plugin's own code (ADD, CHECK, DEL) over its saved delegate configs and its delegate's state: the
 * delegate is host-local, so what flannel's DEL must reach is a reservation (a torn saved config: DEL renders the
 * delegate again from subnet.env). flannel has no GC (nor has the flannel-io plugin): a runtime's GC does nothing
 * to it, so its one recovery is the DELs. Checked: a live pod's saved config is whole, its address still its own
 * and its CHECK passes after a kill; after an attachment's DEL neither its saved config nor its address is left;
 * new pods get free addresses.
 */
export const FLANNEL: Store = {
  name: "flannel",
  powerPerPoint: 24,
  recoveries: ["del-only"],
  setup: async (root) => writeTree(root, new Map([["subnet.env", Buffer.from(FLANNEL_ENV)]])),
  steps: (root) =>
    churn(14, 6, (kind, pod) => ({
      kind,
      pod,
      run: async () => (kind === "add" ? flannelOps(root).add(pod) : void (await flannelOps(root).del(pod))),
    })),
  recover: (ctx) => runtimeRecovery(ctx, flannelOps(ctx.root).del),
  check: async (ctx) => {
    const ops = flannelOps(ctx.root);
    const problems = await keyedInvariants(ctx, flannelState(ctx.root));
    for (const p of ctx.live)
      await ops
        .check(p, ctx.answered.get(podName(p)) ?? [])
        .catch((e: unknown) => problems.push(e instanceof CniError ? `CHECK of live ${podName(p)} failed: ${e.msg}` : notCni("CHECK", e)));
    if (problems.length) return problems;
    return ipamInvariants(ctx, () => allocations(ctx.root), ops.add);
  },
};

/**
 * portmap's kernel model: one file per forwarded container and family under `<root>/kernel/portmap/` (nftables'
 * rules are found by their container ID), made through sys/state.ts so the simulator crashes them with the files.
 */
const portmapKernel = (root: string) => path.join(root, "kernel", "portmap");
const portmapModel = (root: string) => ({
  forward: async (t: ForwardTarget) => {
    ensureStateDir(portmapKernel(root), 0o700);
    writeFileInPlaceSync(path.join(portmapKernel(root), `${t.containerID}.${t.container.ip.family}`), JSON.stringify(t.mappings));
  },
  unforward: async (ids: readonly string[]) => {
    for (const id of ids) for (const family of [4, 6]) removeStateFile(path.join(portmapKernel(root), `${id}.${family}`));
  },
});
const portmapAddress = (p: Pod) => `10.88.0.${Number(p.id.slice(1)) + 2}/24`;
const portmapConf = (root: string, p: Pod | undefined, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "net",
  type: "portmap",
  backend: "nftables",
  snat: false, // (no route_localnet on the host)
  dataDir: path.join(root, "portmap"),
  runtimeConfig: { portMappings: p ? [{ hostPort: 8000 + Number(p.id.slice(1)), containerPort: 80, protocol: "tcp" }] : [] },
  ...extra,
});
const portmapPrev = (p: Pod) => ({
  cniVersion: "1.1.0",
  interfaces: [{ name: p.ifname, sandbox: "/run/netns/crash" }],
  ips: [{ address: portmapAddress(p), interface: 0 }],
});
const portmapOps = (root: string) => ({
  add: (p: Pod) => runOrThrow("portmap", podEnv("ADD", p), portmapConf(root, p, { prevResult: portmapPrev(p) })),
  del: (p: Pod) => runOrThrow("portmap", podEnv("DEL", p), portmapConf(root, p)),
  gc: (valid: Array<{ containerID: string; ifname: string }>) =>
    runOrThrow("portmap", { CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, portmapConf(root, undefined, { "cni.dev/valid-attachments": valid })),
});

/**
 * The portmap plugin's own code (ADD, DEL, GC; nftables, whose GC records are the store) over a kernel model of
 * its rules. Checked: a live pod's record and rules survive a kill; after an attachment's DEL or a GC, neither its
 * record nor its rules are left.
 */
export const PORTMAP: Store = {
  name: "portmap",
  volatile: true, // records and rules: /run and the kernel, both gone at a reboot
  steps: (root) => {
    useKernelModelOfPortmap(portmapModel(root));
    return churn(14, 6, (kind, pod) => ({
      kind,
      pod,
      run: async () => void (await (kind === "add" ? portmapOps(root).add(pod) : portmapOps(root).del(pod))),
    }));
  },
  recover: (ctx) => {
    useKernelModelOfPortmap(portmapModel(ctx.root));
    return runtimeRecovery(ctx, portmapOps(ctx.root).del, portmapOps(ctx.root).gc);
  },
  check: async (ctx) => {
    const recorded = (p: Pod) => existsSync(path.join(ctx.root, "portmap", "net", p.id));
    const forwarded = (p: Pod) => existsSync(path.join(portmapKernel(ctx.root), `${p.id}.4`));
    const problems: string[] = [];
    for (const p of ctx.live) {
      if (!recorded(p)) problems.push(`the record of live ${podName(p)} is gone after a kill`);
      if (!forwarded(p)) problems.push(`the forwarding of live ${podName(p)} is gone after a kill`);
    }
    for (const p of gonePods(ctx)) {
      if (recorded(p)) problems.push(leftOf(ctx, p, `the record of ${podName(p)} is left after its DEL`));
      if (forwarded(p)) problems.push(`the forwarding of ${podName(p)} is left in the kernel after its DEL`);
    }
    return problems;
  },
  teardown: async () => useKernelModelOfPortmap(undefined),
};

/**
 * Pods added and deleted in turn, `count` steps over at most `pool` pods at once (seeded): a scenario for the
 * stores that keep one file per attachment. `make` gets the pod and a number unique to the step.
 */
function churn(count: number, pool: number, make: (kind: "add" | "del", pod: Pod, n: number) => Step): Step[] {
  const random = seeded(count * 31 + pool);
  const live: Pod[] = [];
  const out: Step[] = [];
  let next = 0;
  while (out.length < count) {
    if (live.length > 0 && (live.length >= pool || random() < 0.4)) {
      out.push(make("del", live.splice(Math.floor(random() * live.length), 1)[0]!, out.length));
    } else {
      const pod: Pod = { id: `p${next++}`, ifname: "eth0" };
      live.push(pod);
      out.push(make("add", pod, out.length));
    }
  }
  return out;
}

// ---- network configs (`cnitool network create`, `rm`): durable -------------------------------------------------

/** The networks after each step of the scenario, and each one's config text. */
const networksAfter: Array<Map<string, string>> = [];
const networkConfig = (name: string, n: number) => ({
  cniVersion: "1.0.0",
  name,
  plugins: [{ type: "bridge", bridge: `cni-podman${n}`, ipam: { type: "host-local", ranges: [[{ subnet: `10.89.${n}.0/24` }]] } }],
});

export const NETWORK_CONFIGS: Store = {
  name: "network configs",
  powerPerPoint: 128,
  recoveries: ["del-only"],
  setup: async (root) => ensureStateDir(path.join(root, "net.d"), 0o755),
  steps: (root) => {
    const dir = path.join(root, "net.d");
    const random = seeded(8);
    const out: Step[] = [];
    const now = new Map<string, string>();
    for (let n = 0; out.length < 10; n++) {
      const names = [...now.keys()];
      if (names.length > 0 && random() < 0.35) {
        const name = names[Math.floor(random() * names.length)]!;
        now.delete(name);
        out.push({ kind: "other", run: async () => removeNetworkFile(path.join(dir, `${name}.conflist`)) });
      } else {
        const name = `net${n}`;
        now.set(name, JSON.stringify(networkConfig(name, n), null, 3));
        out.push({ kind: "other", run: () => writeNetworkFile(path.join(dir, `${name}.conflist`), networkConfig(name, n)) });
      }
      networksAfter.push(new Map(now));
    }
    return out;
  },
  // What a runtime does after the crash: it loads the directory. Every network made stays, whole; every one removed
  // stays removed; the one whose call was cut short is there whole or not at all.
  recover: async (ctx) => {
    const dir = path.join(ctx.root, "net.d");
    const problems: string[] = [];
    const found = new Map<string, string>();
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (isTemporaryName(name)) continue;
      const text = readFileSync(path.join(dir, name), "utf8");
      try {
        parseConfList(Buffer.from(text));
      } catch {
        problems.push(`${name} does not load: ${JSON.stringify(text.slice(0, 40))}`);
      }
      found.set(name.replace(/\.conflist$/, ""), text);
    }
    const before = ctx.stepsDone > 0 ? networksAfter[ctx.stepsDone - 1]! : new Map<string, string>();
    const after = networksAfter[ctx.stepsDone];
    for (const [name, text] of before)
      if (found.get(name) !== text && !(after && !after.has(name) && !found.has(name)))
        problems.push(`network ${name}, made before the crash, is ${found.has(name) ? "not as written" : "gone"}`);
    for (const [name, text] of found)
      if (!before.has(name) && !(after?.get(name) === text)) problems.push(`network ${name}, removed or never made before the crash, is there`);
    return problems;
  },
};

/** Every store, in the order run.ts reports them. */
export const STORES: readonly Store[] = [
  HOST_LOCAL,
  LIBCNI_CACHE,
  CLUSTER_IPAM,
  DHCP_LEASES,
  FIREWALL,
  DNSNAME,
  TUNING,
  HOST_DEVICE,
  FLANNEL,
  PORTMAP,
  NETWORK_CONFIGS,
];
