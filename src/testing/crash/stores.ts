/**
 * The stores the crash simulator covers (run.ts), each as a scenario of calls that write state, a recovery as a
 * node does it after a crash, and the invariants that must then hold. A scenario runs for real in a directory
 * (its file operations recorded through sys/state.ts); recovery runs the product's own code (the plugins in this
 * process, libcni, the dhcp daemon's lease store, ...) on each crash state written out as a directory.
 *
 * Two recoveries: after a process killed mid-call (`kill`) the node goes on — the runtime deletes the attachment
 * whose call was cut short, runs GC with the attachments it still has, and adds new ones; after a power loss
 * (`power`) the node reboots — no container survives, the runtime runs GC with none valid and deletes the old
 * attachments it remembers, then adds new ones.
 * @module
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { CniError } from "#spec/errors.js";
import { runPlugin } from "#skel/skel.js";
import { PLUGINS } from "#plugins/registry.js";
import { settlePluginRun, type ExecOptions, type PluginExec } from "#invoke/exec.js";
import type { Env } from "#invoke/args.js";
import { CNIConfig } from "#libcni/api.js";
import { parseConfList } from "#spec/config.js";
import { LeaseStore, encodeLeaseRecord, type LeaseRecord } from "#plugins/ipam/dhcp/lease-file.js";
import { listRecords, readRecord, removeRecord, writeRecord, type AttachmentRecord } from "#plugins/meta/firewall/records.js";
import { networkDir, readState, removeNetworkDir, writeConfIfMissing, writeState, withNetworkLock } from "#plugins/meta/dnsname/state.js";
import { backupFile, readBackup, removeBackup, staleBackups, writeNetworkOf, encodeBackup } from "#plugins/meta/tuning/backup.js";
import { writeFileAtomic, isTemporaryName } from "#sys/state.js";
import {
  listRecords as deviceListRecords,
  readRecord as deviceReadRecord,
  removeRecord as deviceRemoveRecord,
  writeRecord as deviceWriteRecord,
  type DeviceRecord,
} from "#plugins/main/host-device/record.js";
import { readDelegateConfig, removeDelegateConfig, saveDelegateConfig } from "#plugins/meta/flannel/saved.js";
import { forgetForwarding, recordForwarding, recordedContainers } from "#plugins/meta/portmap/records.js";
import { OUR_BIN } from "../harness.js";
import { seeded } from "./model.js";
import { FakeEtcd, type FakeEtcdState } from "../fake-etcd.js";

/** One pod of a scenario. */
export interface Pod {
  id: string;
  ifname: string;
}

/** A step of a scenario: what it does, and the pod it adds or deletes (for recovery's bookkeeping). */
export interface Step {
  kind: "add" | "del" | "other";
  pod?: Pod;
  run(root: string): Promise<void>;
}

/** What recovery knows of the scenario at the crash: pods added and not deleted, and the one cut short. */
export interface CrashContext {
  root: string;
  mode: "kill" | "power";
  /** Pods whose ADD completed and which were not deleted, before the crash. */
  live: Pod[];
  /** The pod of the step the crash cut short (if it was an ADD or a DEL). */
  interrupted?: Pod;
  /** Every pod the scenario names. */
  all: Pod[];
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
  /** Recovers from the crash state in `ctx.root`; returns the invariants broken (empty: none). */
  recover(ctx: CrashContext): Promise<string[]>;
  /** Power-loss states sampled per crash point (a cheap store explores more). */
  powerPerPoint?: number;
  /** The store keeps state outside the files too (recover picks it by ctx.stepsDone): states differ by step. */
  outsideState?: boolean;
  /** After every state was explored. */
  teardown?(): Promise<void>;
}

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

/** New pods added after recovery: each gets an address, none shared, none a live pod's. */
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

/** The common invariants of an IPAM store after recovery, given how to list its allocations and to add. */
async function ipamInvariants(ctx: CrashContext, owners: () => Map<string, string>, add: (pod: Pod) => Promise<string[]>): Promise<string[]> {
  const problems: string[] = [];
  const held = owners();
  const liveOwner = new Set(ctx.live.map((p) => `${p.id}\r\n${p.ifname}`));
  for (const [address, owner] of held) {
    if (!liveOwner.has(owner)) problems.push(`${address} is still held (by ${JSON.stringify(owner)}) after DEL and GC: not reclaimed`);
  }
  const liveAddresses = new Set([...held].filter(([, o]) => liveOwner.has(o)).map(([a]) => a));
  for (const p of ctx.live) {
    if (![...held.values()].includes(`${p.id}\r\n${p.ifname}`)) problems.push(`live pod ${p.id} lost its address`);
  }
  problems.push(...(await addNew(add, liveAddresses, Math.min(4, 13 - ctx.live.length))));
  return problems;
}

/** How recovery reaches an IPAM store: DEL and ADD of a pod, GC with the valid attachments. Each throws on failure. */
interface IpamOps {
  del(pod: Pod): Promise<unknown>;
  gc(valid: Array<{ containerID: string; ifname: string }>): Promise<unknown>;
  add(pod: Pod): Promise<string[]>;
}

/**
 * Recovery of an IPAM store (see the module comment): after a kill, DEL of the call cut short and GC with the live
 * attachments; after a reboot, GC with none valid and DEL of every old attachment. Each must succeed; then the
 * store's invariants (ipamInvariants).
 */
async function recoverIpam(ctx: CrashContext, ops: IpamOps, owners: () => Map<string, string> = () => allocations(ctx.root)): Promise<string[]> {
  const problems: string[] = [];
  const attempt = async (what: string, work: () => Promise<unknown>) => {
    try {
      await work();
    } catch (e) {
      problems.push(e instanceof CniError ? `${what} failed: ${e.msg}` : notCni(what, e));
    }
  };
  const valid = (ctx.mode === "kill" ? ctx.live : []).map((p) => ({ containerID: p.id, ifname: p.ifname }));
  if (ctx.mode === "kill") {
    if (ctx.interrupted) await attempt(`DEL of ${ctx.interrupted.id} (its call cut short)`, () => ops.del(ctx.interrupted!));
    await attempt("GC", () => ops.gc(valid));
  } else {
    await attempt("GC after the reboot", () => ops.gc(valid));
    for (const p of ctx.all) await attempt(`DEL of ${p.id} after the reboot`, () => ops.del(p));
  }
  if (problems.length) return problems;
  return ipamInvariants(ctx, owners, ops.add);
}

export const HOST_LOCAL: Store = {
  name: "host-local",
  steps: (root) => {
    const step = (kind: "add" | "del", pod: Pod): Step => ({
      kind,
      pod,
      run: async () => {
        const r = await callPlugin("host-local", podEnv(kind === "add" ? "ADD" : "DEL", pod), hostLocalConf(root));
        if (r.error) throw r.error;
      },
    });
    return scenarioOf(step);
  },
  recover: (ctx) => {
    const run = async (env: Record<string, string>, conf: unknown) => {
      const r = await callPlugin("host-local", env, conf);
      if (r.error) throw r.error;
      return r.stdout;
    };
    return recoverIpam(ctx, {
      del: (p) => run(podEnv("DEL", p), hostLocalConf(ctx.root)),
      gc: (valid) => run({ CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, hostLocalConf(ctx.root, { "cni.dev/valid-attachments": valid })),
      add: async (p) => addressesOf(JSON.parse(await run(podEnv("ADD", p), hostLocalConf(ctx.root)))),
    });
  },
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

export const LIBCNI_CACHE: Store = {
  name: "libcni cache",
  steps: (root) => {
    const step = (kind: "add" | "del", pod: Pod): Step => ({
      kind,
      pod,
      run: async () => {
        const list = cacheList(root);
        if (kind === "add") await cni(root).addNetworkList(list, runtimeConf(pod));
        else await cni(root).delNetworkList(list, runtimeConf(pod));
      },
    });
    return scenarioOf(step);
  },
  recover: (ctx) => {
    const list = cacheList(ctx.root);
    return recoverIpam(ctx, {
      del: (p) => cni(ctx.root).delNetworkList(list, runtimeConf(p)),
      gc: (validAttachments) => cni(ctx.root).gcNetworkList(list, { validAttachments }),
      add: async (p) => addressesOf(await cni(ctx.root).addNetworkList(list, runtimeConf(p))),
    });
  },
};

// ---- cluster-ipam: its node's blocks hint, etcd behind it ----------------------------------------------------

/**
 * cluster-ipam keeps one file on the node, the hint of its blocks (rewritten in place); the allocations are in etcd,
 * here an etcd in memory whose state after every step of the scenario is kept, so recovery meets etcd as it was at
 * the crash. An ADD commits to etcd before it writes the hint: a crash before its first file operation may come
 * before or after that commit, and both are explored.
 */
const clusterEtcd = new FakeEtcd();
const clusterSnapshots: FakeEtcdState[] = [];
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

export const CLUSTER_IPAM: Store = {
  name: "cluster-ipam",
  outsideState: true,
  powerPerPoint: 128,
  setup: async () => {
    if (!clusterEtcd.endpoint) await clusterEtcd.start();
    clusterEtcd.restore({ revision: 1, entries: [] });
    clusterInitial = clusterEtcd.save();
  },
  steps: (root) => {
    const step = (kind: "add" | "del", pod: Pod): Step => ({
      kind,
      pod,
      run: async () => {
        const r = await callPlugin("cluster-ipam", podEnv(kind === "add" ? "ADD" : "DEL", pod), clusterConf(root));
        if (r.error) throw r.error;
      },
    });
    return scenarioOf(step).map((s, i) => ({
      ...s,
      run: async (r: string) => {
        await s.run(r);
        clusterSnapshots[i] = clusterEtcd.save();
      },
    }));
  },
  recover: async (ctx) => {
    const before = ctx.stepsDone > 0 ? clusterSnapshots[ctx.stepsDone - 1]! : clusterInitial!;
    const after = clusterSnapshots[ctx.stepsDone];
    const variants = ctx.opsOfInterrupted > 0 ? [after!] : after ? [before, after] : [before];
    const problems: string[] = [];
    for (const [i, state] of variants.entries()) {
      // Each variant on its own copy of the crash state's files.
      const root = variants.length > 1 ? `${ctx.root}.v${i}` : ctx.root;
      if (root !== ctx.root) cpSync(ctx.root, root, { recursive: true });
      clusterEtcd.restore(state);
      const run = async (env: Record<string, string>, conf: unknown) => {
        const r = await callPlugin("cluster-ipam", env, conf);
        if (r.error) throw r.error;
        return r.stdout;
      };
      const found = await recoverIpam(
        { ...ctx, root },
        {
          del: (p) => run(podEnv("DEL", p), clusterConf(root)),
          gc: (valid) => run({ CNI_COMMAND: "GC", CNI_PATH: "/nonexistent" }, clusterConf(root, { "cni.dev/valid-attachments": valid })),
          add: async (p) => addressesOf(JSON.parse(await run(podEnv("ADD", p), clusterConf(root)))),
        },
        clusterAllocations,
      );
      problems.push(...found.map((f) => (variants.length > 1 ? `${i === 0 ? "etcd before" : "etcd after"} the cut-short call's commit: ${f}` : f)));
      if (root !== ctx.root) rmSync(root, { recursive: true, force: true });
    }
    return problems;
  },
  teardown: () => clusterEtcd.stop(),
};

// ---- the dhcp daemon's lease files ---------------------------------------------------------------------------

/** A DHCPv6 lease record of `clientID` (an attachment's second family: its own file), its times moved by `at`. */
function lease6Record(clientID: string, at: number): LeaseRecord {
  return {
    family: "ipv6",
    clientID,
    containerID: clientID.split("/")[0]!,
    network: "net",
    ifName: "eth0",
    netns: `/run/netns/${clientID.split("/")[0]}`,
    send: { duid: Uint8Array.from([0, 4, 1, 2, 3, 4]), iaid: 7, oro: [23, 24] },
    binding: {
      address: "fd09::10",
      serverId: Uint8Array.from([0, 1, 9, 9]),
      server: "00:01:09:09",
      reply: Uint8Array.from([7, 1, 2, 3]),
      boundAt: at,
      renewAt: at + 30_000,
      rebindAt: at + 48_000,
      expiresAt: at + 60_000,
    },
  };
}

/** A DHCPv4 lease record of `clientID`, its times moved by `at`. */
function leaseRecord(clientID: string, at: number): LeaseRecord {
  return {
    family: "ipv4",
    clientID,
    containerID: clientID.split("/")[0]!,
    network: "net",
    ifName: "eth0",
    netns: `/run/netns/${clientID.split("/")[0]}`,
    send: { clientIdOption: Uint8Array.from(Buffer.from(`\0${clientID}`)), options: new Map(), requestList: [1, 3, 6] },
    binding: {
      address: "10.9.0.10",
      server: "10.9.0.1",
      mac: Uint8Array.from([2, 0, 0, 0, 0, 1]),
      ack: Uint8Array.from([1, 2, 3]),
      boundAt: at,
      renewAt: at + 30_000,
      rebindAt: at + 52_500,
      expiresAt: at + 60_000,
    },
  };
}

/** Every lease record the scenario wrote (the base's too): only those may be taken up. */
const written = new Set<string>([encodeLeaseRecord(leaseRecord("old/net/eth0", 1000))]);

export const DHCP_LEASES: Store = {
  name: "dhcp leases",
  powerPerPoint: 128,
  setup: async (root) => {
    const store = new LeaseStore(path.join(root, "leases"));
    await store.init();
    await store.save(leaseRecord("old/net/eth0", 1000));
  },
  steps: (root) => {
    const store = new LeaseStore(path.join(root, "leases"));
    // Leases taken, renewed and dropped over time, one file each.
    const random = seeded(6);
    const held = new Set<string>(["old/net/eth0"]);
    const out: Step[] = [];
    for (let t = 2; out.length < 16; t++) {
      const ids = [...held];
      if (ids.length > 0 && random() < 0.35) {
        const id = ids[Math.floor(random() * ids.length)]!;
        held.delete(id);
        // The attachment goes: its leases of both families.
        out.push({
          kind: "other",
          run: async () => {
            await store.remove(id);
            await store.remove(id, "ipv6");
          },
        });
      } else {
        const id = ids.length > 0 && random() < 0.5 ? ids[Math.floor(random() * ids.length)]! : `c${t}/net/eth0`;
        held.add(id);
        // Dual-stack attachments hold a DHCPv6 lease beside their DHCPv4 one (every third step writes one).
        const record = t % 3 === 0 ? lease6Record(id, t * 1000) : leaseRecord(id, t * 1000);
        written.add(encodeLeaseRecord(record));
        out.push({ kind: "other", run: () => store.save(record) });
      }
    }
    return out;
  },
  recover: async (ctx) => {
    const problems: string[] = [];
    const store = new LeaseStore(path.join(ctx.root, "leases"));
    let loaded: Awaited<ReturnType<LeaseStore["loadAll"]>>;
    try {
      loaded = await store.loadAll();
    } catch (e) {
      return [notCni("the lease store's load", e)];
    }
    for (const r of loaded.records) if (!written.has(encodeLeaseRecord(r))) problems.push(`a lease never written was taken up: ${r.clientID}`);
    // The daemon drops every lease whose interface is gone (all, after a reboot) and removes its file.
    if (ctx.mode === "power") {
      for (const r of loaded.records) await store.remove(r.clientID, r.family);
      const left = readdirSync(store.dir).filter((n) => n.startsWith("lease"));
      if (left.length) problems.push(`lease files left after every lease was dropped: ${left.join(", ")}`);
    }
    return problems;
  },
};

// ---- the firewall plugin's attachment records ---------------------------------------------------------------

const fwRecord = (containerID: string, n: number): AttachmentRecord => ({
  containerID,
  ifName: "eth0",
  backend: "iptables",
  addresses: [`10.88.0.${n}/24`],
});

export const FIREWALL_RECORDS: Store = {
  name: "firewall records",
  powerPerPoint: 128,
  steps: (root) => {
    const dir = path.join(root, "firewall");
    return churn(16, 7, (kind, pod, n) => ({
      kind,
      pod,
      run: async () => (kind === "add" ? writeRecord(dir, "net", fwRecord(pod.id, n)) : removeRecord(dir, "net", pod.id, pod.ifname)),
    }));
  },
  recover: async (ctx) => {
    const dir = path.join(ctx.root, "firewall");
    const problems: string[] = [];
    try {
      const listed = listRecords(dir, "net");
      for (const r of listed) if (!ctx.all.some((p) => p.id === r.containerID)) problems.push(`a record never written: ${r.containerID}`);
      for (const p of ctx.live) {
        const r = readRecord(dir, "net", p.id, p.ifname);
        if (ctx.mode === "kill" && !r) problems.push(`the record of live ${p.id} is gone after a kill`);
      }
      // DEL of everyone (after a reboot; the one cut short after a kill) works with whatever is left.
      for (const p of ctx.mode === "power" ? ctx.all : ctx.interrupted ? [ctx.interrupted] : []) removeRecord(dir, "net", p.id, p.ifname);
      if (ctx.mode === "power" && listRecords(dir, "net").length) problems.push("records left after every DEL");
    } catch (e) {
      problems.push(e instanceof CniError ? `failed: ${e.msg}` : notCni("the records", e));
    }
    return problems;
  },
};

// ---- dnsname's network directory ---------------------------------------------------------------------------

export const DNSNAME_FILES: Store = {
  name: "dnsname files",
  powerPerPoint: 128,
  steps: (root) => {
    const d = networkDir(path.join(root, "dnsname"), "net");
    const rec = (id: string, ip: string) => ({ containerID: id, ifName: "eth0", name: id, aliases: [], addresses: [ip] });
    const locked = (work: () => void): Step => ({ kind: "other", run: async () => void (await withNetworkLock(d, true, async () => work())) });
    const steps: Step[] = [locked(() => void writeConfIfMissing(d, "interface=br0\n"))];
    const random = seeded(12);
    const live: string[] = [];
    for (let n = 2; steps.length < 12; n++) {
      if (live.length > 0 && random() < 0.4) live.splice(Math.floor(random() * live.length), 1);
      else live.push(`p${n}`);
      const now = [...live];
      steps.push(
        locked(() =>
          writeState(
            d,
            now.map((id, i) => `10.88.0.${i + 2}\t${id}`),
            now.map((id, i) => rec(id, `10.88.0.${i + 2}`)),
          ),
        ),
      );
    }
    steps.push(locked(() => removeNetworkDir(d)));
    return steps;
  },
  recover: async (ctx) => {
    const d = networkDir(path.join(ctx.root, "dnsname"), "net");
    try {
      await withNetworkLock(d, false, async () => {
        readState(d);
        writeState(d, [], []);
        removeNetworkDir(d);
      });
      return existsSync(d.dir) ? ["the network's directory is left after its last DEL"] : [];
    } catch (e) {
      return [e instanceof CniError ? `failed: ${e.msg}` : notCni("dnsname's state", e)];
    }
  },
};

// ---- tuning's backups -----------------------------------------------------------------------------------------

export const TUNING_BACKUPS: Store = {
  name: "tuning backups",
  powerPerPoint: 128,
  steps: (root) => {
    const dir = path.join(root, "tuning");
    const save = (id: string, mtu: number): Step => ({
      kind: "add",
      pod: { id, ifname: "eth0" },
      run: async () => {
        const file = backupFile(dir, id, "eth0");
        await writeNetworkOf(file, "net");
        await writeFileAtomic(file, encodeBackup({ mtu }));
      },
    });
    return churn(14, 6, (kind, pod, n) =>
      kind === "add" ? save(pod.id, 1400 + n) : { kind, pod, run: () => removeBackup(backupFile(dir, pod.id, "eth0")) },
    );
  },
  recover: async (ctx) => {
    const dir = path.join(ctx.root, "tuning");
    const problems: string[] = [];
    try {
      for (const p of ctx.all) await readBackup(backupFile(dir, p.id, p.ifname)); // a DEL reads it: never a throw
      const stale = await staleBackups(dir, "net", ctx.mode === "kill" ? ctx.live.map((p) => ({ containerID: p.id, ifname: p.ifname })) : []);
      for (const file of stale) await removeBackup(file);
      for (const p of ctx.mode === "power" ? ctx.all : []) await removeBackup(backupFile(dir, p.id, p.ifname));
      if (ctx.mode === "power" && existsSync(dir) && readdirSync(dir).some((n) => !isTemporaryName(n)))
        problems.push(`backups left: ${readdirSync(dir).join(", ")}`);
    } catch (e) {
      problems.push(e instanceof CniError ? `failed: ${e.msg}` : notCni("tuning's backups", e));
    }
    return problems;
  },
};

// ---- host-device's records, flannel's saved delegate configs, portmap's forwarding records -----------------------

const deviceRecord = (containerID: string, n: number): DeviceRecord => ({
  network: "net",
  containerID,
  ifName: "eth0",
  netns: `/run/netns/${containerID}`,
  host: {
    name: `eth${n}`,
    index: 10 + n,
    mtu: 1500,
    mac: `02:00:00:00:00:${String(n).padStart(2, "0")}`,
    up: true,
    alias: "",
    addresses: [`192.0.2.${n}/24`],
  },
});

export const HOST_DEVICE_RECORDS: Store = {
  name: "host-device records",
  powerPerPoint: 128,
  steps: (root) => {
    const dir = path.join(root, "host-device");
    return churn(14, 6, (kind, pod, n) => ({
      kind,
      pod,
      run: () => (kind === "add" ? deviceWriteRecord(dir, deviceRecord(pod.id, n)) : deviceRemoveRecord(dir, pod.id, pod.ifname)),
    }));
  },
  recover: (ctx) =>
    keyedRecovery(
      ctx,
      "host-device's records",
      async (p) => {
        const dir = path.join(ctx.root, "host-device");
        const r = await deviceReadRecord(dir, p.id, p.ifname);
        await deviceListRecords(dir);
        return r === undefined ? "none" : r === "damaged" ? "damaged" : "ok";
      },
      (p) => deviceRemoveRecord(path.join(ctx.root, "host-device"), p.id, p.ifname),
    ),
};

export const FLANNEL_CONFIGS: Store = {
  name: "flannel configs",
  powerPerPoint: 128,
  steps: (root) => {
    const dir = path.join(root, "flannel");
    return churn(14, 6, (kind, pod, n) => ({
      kind,
      pod,
      run: () =>
        kind === "add"
          ? saveDelegateConfig(dir, pod.id, Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "net", type: "bridge", mtu: 1400 + n })))
          : removeDelegateConfig(dir, pod.id),
    }));
  },
  recover: (ctx) =>
    keyedRecovery(
      ctx,
      "flannel's saved configs",
      async (p) => {
        const bytes = await readDelegateConfig(path.join(ctx.root, "flannel"), p.id).catch((e: unknown) => {
          if (e instanceof CniError) return "damaged" as const; // a DEL then says so, and goes on without it
          throw e;
        });
        return bytes === undefined ? "none" : bytes === "damaged" ? "damaged" : "ok";
      },
      (p) => removeDelegateConfig(path.join(ctx.root, "flannel"), p.id),
    ),
};

export const PORTMAP_RECORDS: Store = {
  name: "portmap records",
  powerPerPoint: 128,
  steps: (root) => {
    const dir = path.join(root, "portmap");
    return churn(14, 6, (kind, pod) => ({
      kind,
      pod,
      run: () => (kind === "add" ? recordForwarding(dir, "net", pod.id) : forgetForwarding(dir, "net", pod.id)),
    }));
  },
  recover: async (ctx) => {
    const dir = path.join(ctx.root, "portmap");
    try {
      const recorded = await recordedContainers(dir, "net");
      const stray = recorded.filter((id) => !isTemporaryName(id) && !ctx.all.some((p) => p.id === id));
      for (const p of ctx.mode === "power" ? ctx.all : ctx.interrupted ? [ctx.interrupted] : []) await forgetForwarding(dir, "net", p.id);
      const missing = ctx.mode === "kill" ? ctx.live.filter((p) => !recorded.includes(p.id)) : [];
      return [...stray.map((id) => `a record never written: ${id}`), ...missing.map((p) => `the record of live ${p.id} is gone after a kill`)];
    } catch (e) {
      return [e instanceof CniError ? `failed: ${e.msg}` : notCni("portmap's records", e)];
    }
  },
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

/**
 * Recovery of a store of one file per attachment: reading each attachment's file is never a throw (a torn one is
 * "damaged", handled by the plugin); after a kill, a live attachment's file is whole; DEL removes what is there.
 */
async function keyedRecovery(
  ctx: CrashContext,
  what: string,
  read: (p: Pod) => Promise<"ok" | "damaged" | "none">,
  remove: (p: Pod) => Promise<void>,
): Promise<string[]> {
  const problems: string[] = [];
  try {
    for (const p of ctx.all) {
      const state = await read(p);
      if (ctx.mode === "kill" && ctx.live.some((l) => l.id === p.id) && state !== "ok")
        problems.push(`the file of live ${p.id} is ${state} after a kill`);
    }
    for (const p of ctx.mode === "power" ? ctx.all : ctx.interrupted ? [ctx.interrupted] : []) await remove(p);
    if (ctx.mode === "power") for (const p of ctx.all) if ((await read(p)) !== "none") problems.push(`the file of ${p.id} is left after its DEL`);
  } catch (e) {
    problems.push(e instanceof CniError ? `failed: ${e.msg}` : notCni(what, e));
  }
  return problems;
}

/** Every store, in the order run.ts reports them. */
export const STORES: readonly Store[] = [
  HOST_LOCAL,
  LIBCNI_CACHE,
  CLUSTER_IPAM,
  DHCP_LEASES,
  FIREWALL_RECORDS,
  DNSNAME_FILES,
  TUNING_BACKUPS,
  HOST_DEVICE_RECORDS,
  FLANNEL_CONFIGS,
  PORTMAP_RECORDS,
];
