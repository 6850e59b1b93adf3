/**
 * cluster-ipam: an IPAM plugin whose pool is shared by every node of a cluster through etcd, so pods of several
 * machines on one flat network never get the same address (host-local's pool is per node). Each node claims
 * blocks of the pool (compare-and-swap on a block key) and allocates inside its own blocks (one key per address,
 * created only if absent); it claims another block when its blocks are full and borrows single addresses from
 * other nodes' blocks only when no block is free. There is no cluster-wide lock: a node's own calls queue on a
 * lock file on that node. ADD is idempotent per container ID + ifname (a retry gets the same addresses back),
 * DEL releases by container ID + ifname, CHECK verifies the records, STATUS reports whether etcd answers and the
 * pool has room, GC releases this node's allocations the runtime no longer knows. The keys are in store.ts.
 * @module
 */
import { readFileSync } from "node:fs";
import { parseIP, tryParseIP } from "#ip/ip.js";
import { ipToBigInt } from "#ip/ip-math.js";
import type { CmdArgs, PluginModule } from "#skel/skel.js";
import { CniError, failure, invalidConfig, pluginNotAvailable, tryAgainLater } from "#spec/errors.js";
import { IMPLEMENTED_100, type Result100 } from "#spec/result/types100.js";
import * as path from "#sys/posix-path.js";
import { ensureStateDir, writeFileInPlaceSync } from "#sys/state.js";
import { withLockFile } from "../../common/lock-file.js";
import { parseBlockKey } from "./blocks.js";
import { CLUSTER_IPAM_SCHEMA, type PoolLocation, parseClusterIpamConfig, parseLocation, parsePoolLocation, readEtcdFiles } from "./config.js";
import { EtcdClient, EtcdRequestError, EtcdUnavailableError } from "./etcd.js";
import { type BlockMemory, PoolStore } from "./store.js";

/** The store of a network, with a client made from the config (the TLS files read now). */
export function openStore(location: PoolLocation, opts: { oneRound?: boolean } = {}): PoolStore {
  const connection = readEtcdFiles(location.etcd);
  // One round: each request has `requestTimeoutMs` and is not sent again (no call budget of waits and repeats).
  if (opts.oneRound) delete connection.callTimeoutMs;
  return new PoolStore(new EtcdClient(connection), location);
}

/** gRPC codes for bad credentials and missing permissions: the config's user is wrong, not etcd. */
const AUTH_CODES = new Set([16, 7]);

/** An etcd failure as the CNI error a runtime acts on: unreachable is code 11 (try again later). */
export function etcdFailure(e: unknown, what: string): unknown {
  if (e instanceof EtcdUnavailableError) return tryAgainLater(`cluster-ipam: ${what}: etcd is unreachable: ${e.message}`);
  if (e instanceof EtcdRequestError) {
    return e.auth || AUTH_CODES.has(e.grpcCode)
      ? invalidConfig(`cluster-ipam: ${what}: etcd refused the credentials of "ipam.etcd.username": ${e.message}`)
      : failure(`cluster-ipam: ${what}: etcd refused the request: ${e.message}`);
  }
  return e;
}

async function guarded<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw etcdFailure(e, what);
  }
}

/**
 * Runs `fn` holding this node's lock for the network (a file under `lockDir`): the node's own calls one at a
 * time, so they neither race each other for addresses nor claim blocks they do not need. Other nodes never wait
 * for it. The request timeouts start once the lock is held.
 */
function withNodeLock<T>(location: PoolLocation, fn: () => Promise<T>): Promise<T> {
  const lockPath = path.join(location.lockDir, `${location.network}.${location.node}.lock`);
  return withLockFile(
    lockPath,
    0o600,
    (reason) => `cluster-ipam: cannot open the node lock ${lockPath} ("ipam.lockDir"): ${reason}`,
    fn,
    () => ensureStateDir(location.lockDir, 0o755),
  );
}

/**
 * The node's blocks as of its last ADD, kept beside its lock (`<lockDir>/<network>.<node>.blocks`, rewritten under
 * the lock): one line per block, `<block> <hex>`, the hex a bit mask of the block's addresses in use then (bit n:
 * the block's first address + n), absent when they were not read; with `nodeGraceSeconds`, a line `alive <ms>`:
 * when this node last wrote its liveness record. Only a hint: it lets ADD take a free address in its first round
 * trip (store.ts) and write the record once per quarter grace period; etcd's node index and compare-and-swap decide.
 */
const blocksHintFile = (location: PoolLocation): string => path.join(location.lockDir, `${location.network}.${location.node}.blocks`);

/** The hint's lines; a line that does not parse is left out (a torn write, another version's format). */
export function parseBlocksHint(text: string): BlockMemory[] {
  return text.split("\n").flatMap((line): BlockMemory[] => {
    const m = /^(\S+-\d{1,3})(?: ([0-9a-f]{1,1024}))?$/.exec(line);
    if (!m) return [];
    const block = parseBlockKey(m[1]!, tryParseIP);
    if (!block) return [];
    if (m[2] === undefined) return [{ block: m[1]! }];
    const mask = BigInt(`0x${m[2]}`);
    const used = new Set<bigint>();
    for (let n = 0n, bits = mask; bits > 0n; n++, bits >>= 1n) if (bits & 1n) used.add(block.first + n);
    return [{ block: m[1]!, used }];
  });
}

/** The hint's text for `memory`. */
export function formatBlocksHint(memory: readonly BlockMemory[]): string {
  return memory
    .map((m) => {
      const block = parseBlockKey(m.block, tryParseIP);
      if (!block || !m.used) return `${m.block}\n`;
      let mask = 0n;
      for (const a of m.used) if (a >= block.first && a <= block.last) mask |= 1n << (a - block.first);
      return `${m.block} ${mask.toString(16)}\n`;
    })
    .join("");
}

function readBlocksHint(location: PoolLocation): { text: string; memory: BlockMemory[]; aliveAt?: number } {
  try {
    const text = readFileSync(blocksHintFile(location), "utf8");
    const alive = /^alive (\d{1,15})$/m.exec(text);
    return { text, memory: parseBlocksHint(text), ...(alive ? { aliveAt: Number(alive[1]) } : {}) };
  } catch {
    return { text: "", memory: [] };
  }
}

/**
 * With `nodeGraceSeconds`, rewrites the node's liveness record when `aliveAt` (the hint's for an ADD, the
 * record's own for STATUS) is more than a quarter of the grace period ago (or unknown, or in the future): one write
 * per node per quarter period.
 * Returns when it was written (for the hint), or undefined when off.
 */
async function keepAlive(store: PoolStore, location: PoolLocation, aliveAt: number | undefined): Promise<number | undefined> {
  if (location.nodeGraceMs <= 0) return undefined;
  const now = Date.now();
  if (aliveAt !== undefined && aliveAt <= now && now - aliveAt < location.nodeGraceMs / 4) return aliveAt;
  await store.markAlive(new Date(now));
  return now;
}

export async function add(args: CmdArgs): Promise<Result100> {
  const conf = parseClusterIpamConfig(args.stdinData, args.args);
  const store = openStore(conf);
  const allocated = await withNodeLock(conf, async () => {
    const hint = readBlocksHint(conf);
    const aliveAt = await guarded("ADD", () => keepAlive(store, conf, hint.aliveAt));
    const r = await guarded("ADD", () => store.allocate(args.containerID, args.ifName, conf.pools, conf.requestedIPs, hint.memory));
    const text = formatBlocksHint(r.remembered) + (aliveAt !== undefined ? `alive ${aliveAt}\n` : "");
    if (text !== hint.text) {
      try {
        writeFileInPlaceSync(blocksHintFile(conf), text, 0o600);
      } catch {
        /* only a hint */
      }
    }
    return r.allocated;
  });
  const ips = allocated.map(({ pool, ip }) => {
    const { range } = pool.resultFor(ipToBigInt(ip));
    return { address: `${ip.text}/${range.subnet.prefix}`, gateway: range.gateway.text };
  });
  return { cniVersion: IMPLEMENTED_100, ips, routes: conf.routes, dns: conf.dns };
}

export async function check(args: CmdArgs): Promise<void> {
  const conf = parseClusterIpamConfig(args.stdinData, args.args);
  const store = openStore(conf);
  const { ok, stale } = await guarded("CHECK", () => store.verify(args.containerID, args.ifName));
  const who = `container ${args.containerID} (${args.ifName}) in network ${conf.network}`;
  if (ok.length === 0 && stale.length === 0) throw failure(`cluster-ipam: no address is allocated to ${who}`);
  if (stale.length > 0) {
    throw failure(`cluster-ipam: ${stale.map((a) => a.ip).join(", ")} of ${who} no longer hold its record (released by GC or release-node?)`);
  }
  for (const pool of conf.pools) {
    if (!ok.some((a) => pool.blockOf(parseIP(a.ip)) !== undefined)) {
      throw failure(`cluster-ipam: ${who} has no address from range set ${pool.description}`);
    }
  }
}

/** Releases the attachment's addresses; nothing to release is success, so DEL can be repeated. */
export async function del(args: CmdArgs): Promise<void> {
  const location = parseLocation(args.stdinData);
  const store = openStore(location);
  await guarded("DEL", () => store.release(args.containerID, args.ifName, location.prevAddresses));
}

/** With `nodeGraceSeconds`: rewrites the node's liveness record when it is older than a quarter grace period. */
async function statusKeepAlive(store: PoolStore, location: PoolLocation): Promise<void> {
  if (location.nodeGraceMs <= 0) return;
  const seen = Date.parse((await store.lastSeen()) ?? "");
  await keepAlive(store, location, Number.isNaN(seen) ? undefined : seen);
}

/**
 * Ready when etcd answers and every range set has a free address (code 50 otherwise, as the spec asks). Bounded:
 * one read-only transaction (and with nodeGraceSeconds at most one liveness write), each sent once with
 * `requestTimeoutMs`, never the ADD's call budget of repeats (`callTimeoutMs`, 100 s by default).
 */
export async function status(args: CmdArgs): Promise<void> {
  const location = parsePoolLocation(args.stdinData);
  const store = openStore(location, { oneRound: true });
  let counts: number[];
  try {
    // STATUS is what runtimes poll (containerd asks for the network's status every few seconds): with
    // nodeGraceSeconds it keeps the node's liveness record fresh too, so an idle node is not taken for dead.
    [counts] = await Promise.all([store.allocatedCounts(location.pools), statusKeepAlive(store, location)]);
  } catch (e) {
    const err = CniError.from(etcdFailure(e, "STATUS"));
    throw pluginNotAvailable(err.msg);
  }
  const full = location.pools.filter((pool, i) => BigInt(counts[i] ?? 0) >= pool.size());
  if (full.length > 0) {
    throw pluginNotAvailable(
      `cluster-ipam: no free address in range set ${full.map((p) => `${p.description} (${p.size()} addresses, all allocated)`).join("; ")}`,
    );
  }
}

/** Releases this node's allocations whose attachment is not in `cni.dev/valid-attachments`. */
export async function gc(args: CmdArgs): Promise<void> {
  const location = parseLocation(args.stdinData);
  const store = openStore(location);
  await guarded("GC", async () => {
    if (location.nodeGraceMs > 0) await store.markAlive();
    return store.collectGarbage(location.validAttachments);
  });
}

export const plugin: PluginModule = {
  funcs: { add, check, del, status, gc },
  config: { schema: CLUSTER_IPAM_SCHEMA, parse: parseClusterIpamConfig },
};
