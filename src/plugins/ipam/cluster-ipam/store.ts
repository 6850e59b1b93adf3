/**
 * cluster-ipam's pool in etcd: the keys, and every operation on them. Under `<prefix>/<network>/`:
 *
 * - `blocks/<block>` → `{"cidr","node","claimed"}`: the block's affinity to a node, created only if absent.
 * - `nodes/<node>/<block>` → `""`: the same claim indexed by node (written in the same transaction), so a node
 *   reads its own blocks with one small range.
 * - `ips/v4/<hex>` (`v6/<hex>`) → `{"ip","containerID","ifname","network","node","block","allocated"}`: one key per
 *   address, created only if absent; the record is the handle, so release is by container ID and ifname.
 * - `handles/<containerID>/<ifname>/<v4|v6>/<hex>` → the same record, written and deleted with the address key in
 *   one transaction, so an attachment's addresses are one range away (retries and DEL look them up first).
 * - `alive/<node>` → `{"node","seen"}`: when the node last said it is alive (its ADDs and STATUS calls rewrite it,
 *   at most every quarter of the grace period, and its GCs), read only with `nodeGraceSeconds` set, to find nodes
 *   gone for good.
 *
 * No operation takes a cluster-wide lock or rewrites a shared object: blocks are claimed and addresses taken by
 * compare-and-swap (create if absent), and a conflict only makes the loser pick again. A node's own calls are
 * serialised by a lock file on the node (main.ts), so they neither race for the same address nor claim blocks
 * they do not need. All of an ADD's addresses (one per range set) are created in one transaction: a dual-stack
 * allocation never half succeeds. Every write is guarded, so a request repeated after a lost answer finds its
 * own record (`containerID` + `ifname` + `network`) and counts it as done.
 * @module
 */

import { type IPAddress, tryParseIP } from "#ip/ip.js";
import { ipFromBigInt, ipToBigInt } from "#ip/ip-math.js";
import type { GCAttachment } from "#spec/config.js";
import { type CniError, failure, tryAgainLater } from "#spec/errors.js";
import { addressKey, addressOfKey, type Block, type BlockPool, blockAddressKeyRange, blockKey, nodeHash, parseBlockKey } from "./blocks.js";
import type { Compare, EtcdClient, KeyValue, RangeOp, RangeResult, RequestOp } from "./etcd.js";

/** An allocation as recorded under its address key (and its handle key). */
export interface AllocationRecord {
  ip: string;
  containerID: string;
  ifname: string;
  network: string;
  node: string;
  /** The block the address lies in (`10.22.0.64-26`), whoever owns it. */
  block: string;
  allocated: string;
}

/** A block's affinity record. */
export interface BlockRecord {
  cidr: string;
  node: string;
  claimed: string;
}

/** An allocation with its address key and value as stored (for guarded deletes). */
export interface StoredAllocation extends AllocationRecord {
  key: string;
  value: string;
}

/** A node's liveness record. */
export interface AliveRecord {
  node: string;
  /** When the node last said it is alive (its clock, ISO 8601). */
  seen: string;
}

/** What reclaiming dead nodes did: per node, the addresses and blocks released. */
export interface Reclaimed {
  node: string;
  allocations: string[];
  blocks: string[];
}

/** A claimed block with what the admin listing shows. */
export interface BlockInfo extends BlockRecord {
  key: string;
  /** Addresses allocated in the block, by any node. */
  used: number;
  /** Of those, addresses allocated by other nodes (borrowed). */
  borrowed: number;
}

/** One address an ADD got: its pool and the address. */
export interface Allocated {
  pool: BlockPool;
  ip: IPAddress;
}

/**
 * One of a node's blocks as the node remembers it between its ADDs: the block's key and, when the last ADD read
 * them, the addresses in use then (addresses released since still count as used: the guess only errs towards a
 * fuller block). Only a hint: etcd's node index and compare-and-swap decide.
 */
export interface BlockMemory {
  block: string;
  used?: ReadonlySet<bigint>;
}

/** An address an ADD guesses is free in one of the node's blocks (from the node's memory). */
interface Guess {
  pool: BlockPool;
  ip: IPAddress;
  block: Block;
}

/**
 * For each pool, the first address the node's memory says is free in one of its blocks; undefined unless every
 * pool has one (only then can one transaction take them all).
 */
function guessFree(
  pools: readonly BlockPool[],
  hinted: ReadonlyArray<{ block: Block; used?: ReadonlySet<bigint> | undefined }>,
): Guess[] | undefined {
  const guesses: Guess[] = [];
  for (const pool of pools) {
    let found: Guess | undefined;
    for (const h of hinted) {
      if (!h.used || !pool.hasBlock(h.block)) continue;
      const n = pool.addresses(h.block).find((a) => !h.used!.has(a));
      if (n !== undefined) {
        found = { pool, ip: ipFromBigInt(n, pool.family)!, block: h.block };
        break;
      }
    }
    if (!found) return undefined;
    guesses.push(found);
  }
  return guesses;
}

/** What a failed allocation says: no address left (the message names the range set). */
export const noAddresses = (pool: BlockPool, detail: string): CniError =>
  failure(`no IP addresses available in range set ${pool.description}: ${detail}`);

const parseJson = <T>(text: string): T | undefined => {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === "object" ? (v as T) : undefined;
  } catch {
    return undefined;
  }
};

/** How many times an ADD picks again after losing a race before giving up (each loss is another call's win). */
const MAX_ROUNDS = 64;
/** Ranges per read-only transaction (etcd's default --max-txn-ops is 128). */
const MAX_OPS = 100;

export class PoolStore {
  constructor(
    private readonly etcd: EtcdClient,
    private readonly where: { keyPrefix: string; network: string; node: string; nodeGraceMs?: number },
  ) {}

  // ---- keys ----
  private get prefix(): string {
    return this.where.keyPrefix;
  }
  private blockKeyOf = (b: Block | string): string => `${this.prefix}blocks/${typeof b === "string" ? b : blockKey(b)}`;
  private affinityKey = (node: string, b: Block | string): string => `${this.prefix}nodes/${node}/${typeof b === "string" ? b : blockKey(b)}`;
  private ipKey = (ip: IPAddress): string => `${this.prefix}ips/${addressKey(ip)}`;
  private handlePrefix = (containerID: string, ifname: string): string => `${this.prefix}handles/${containerID}/${ifname}/`;
  private aliveKey = (node: string): string => `${this.prefix}alive/${node}`;
  private handleKey = (containerID: string, ifname: string, ip: IPAddress): string => `${this.handlePrefix(containerID, ifname)}${addressKey(ip)}`;

  private record(containerID: string, ifname: string, ip: IPAddress, block: Block): AllocationRecord {
    return {
      ip: ip.text,
      containerID,
      ifname,
      network: this.where.network,
      node: this.where.node,
      block: blockKey(block),
      allocated: new Date().toISOString(),
    };
  }

  private isOurs(value: string, containerID: string, ifname: string): boolean {
    const r = parseJson<AllocationRecord>(value);
    return r?.containerID === containerID && r.ifname === ifname && r.network === this.where.network;
  }

  /** The address a handle or address key names (its last two segments, `v4/<hex>`). */
  private static addressOfKeyTail(key: string): IPAddress | undefined {
    return addressOfKey(key.split("/").slice(-2).join("/"));
  }

  // ---- ADD ----

  /**
   * Allocates one address from each pool for (containerID, ifname): the attachment's existing addresses when it
   * has them (a retry), else the requested ones, else free addresses of this node's blocks, claiming a free block
   * when they are full, and borrowing from other nodes' blocks only when no block is free.
   *
   * `remembered`: this node's blocks as of its last ADD (kept on the node: a hint, never trusted for correctness).
   * When it says where a free address is, the first round trip already tries to take it: a transaction whose
   * comparisons hold only if the address is free and the block still this node's (its node index key exists),
   * and whose other branch reads what the usual first round trip reads, so a wrong guess costs nothing more.
   * Returns what to remember for the next ADD.
   */
  async allocate(
    containerID: string,
    ifname: string,
    pools: readonly BlockPool[],
    requested: readonly IPAddress[],
    remembered: readonly BlockMemory[] = [],
  ): Promise<{ allocated: Allocated[]; remembered: BlockMemory[] }> {
    // The remembered blocks are read along, saving a round trip; the node index read in the same transaction says
    // which of them are still this node's.
    const hinted = remembered
      .flatMap((m) => {
        const block = parseBlockKey(m.block, tryParseIP);
        return block ? [{ block, used: m.used }] : [];
      })
      .slice(0, MAX_OPS - 2);
    const reads: Array<RangeOp["range"]> = [
      { key: this.handlePrefix(containerID, ifname), prefix: true },
      { key: `${this.prefix}nodes/${this.where.node}/`, prefix: true, keysOnly: true },
      ...hinted.map((h) => this.blockAddresses(h.block)),
    ];
    let first: RangeResult[] | undefined;
    const guesses = requested.length === 0 ? guessFree(pools, hinted) : undefined;
    if (guesses) {
      const r = await this.tryGuesses(containerID, ifname, guesses, reads);
      if (Array.isArray(r)) {
        // (A block whose addresses were never read stays without a mask: "none used" would be a guess.)
        const memory = hinted.map((h) => ({ block: blockKey(h.block), ...(h.used ? { used: new Set(h.used) } : {}) }));
        for (const g of r) memory.find((m) => m.block === blockKey(g.block))?.used?.add(ipToBigInt(g.ip));
        return { allocated: r.map((g) => ({ pool: g.pool, ip: g.ip })), remembered: memory };
      }
      first = r.reads;
    }
    first ??= await this.etcd.ranges(reads);
    const [handles, mine, ...hintedUsed] = first;
    const held = handles!.kvs.map((kv) => PoolStore.addressOfKeyTail(kv.key)).filter((ip): ip is IPAddress => ip !== undefined);
    const myBlocks = mine!.kvs
      .map((kv) => kv.key.slice(kv.key.lastIndexOf("/") + 1))
      .map((k) => parseBlockKey(k, tryParseIP))
      .filter((b): b is Block => b !== undefined);
    const search = new BlockSearch(this, pools, myBlocks);
    hinted.forEach((h, i) => {
      if (myBlocks.some((m) => blockKey(m) === blockKey(h.block))) search.preload(h.block, this.usedOf(hintedUsed[i]?.kvs ?? []));
    });
    const allocated = await this.allocateWith(search, containerID, ifname, pools, held, requested);
    for (const a of allocated) {
      const block = a.pool.blockOf(a.ip);
      if (block) search.markTaken(0, block, a.ip);
    }
    return { allocated, remembered: search.memory() };
  }

  /**
   * The first round trip when the node remembers free addresses: takes them all if each is free and its block is
   * still this node's (one transaction); else answers what `reads` read. Returns the addresses taken, or the reads.
   */
  private async tryGuesses(
    containerID: string,
    ifname: string,
    guesses: readonly Guess[],
    reads: ReadonlyArray<RangeOp["range"]>,
  ): Promise<Guess[] | { reads: RangeResult[] }> {
    const values = guesses.map((g) => JSON.stringify(this.record(containerID, ifname, g.ip, g.block)));
    const handles: RequestOp = { range: { key: this.handlePrefix(containerID, ifname), prefix: true, keysOnly: true } };
    const txn = await this.etcd.txn(
      guesses.flatMap((g): Compare[] => [
        { key: this.ipKey(g.ip), createRevision: 0 },
        { key: this.affinityKey(this.where.node, g.block), createRevision: 0, result: "GREATER" },
      ]),
      [
        ...guesses.flatMap((g, i): RequestOp[] => [
          { put: { key: this.ipKey(g.ip), value: values[i]! } },
          { put: { key: this.handleKey(containerID, ifname, g.ip), value: values[i]! } },
        ]),
        handles,
      ],
      reads.map((range) => ({ range })),
    );
    if (!txn.succeeded) {
      return {
        reads: txn.responses.map((r) =>
          r.kind === "range"
            ? { kvs: r.kvs, count: r.count, more: r.more, revision: txn.revision }
            : { kvs: [], count: 0, more: false, revision: txn.revision },
        ),
      };
    }
    const after = txn.responses.at(-1);
    if (after?.kind === "range" && after.kvs.length === guesses.length) return [...guesses];
    // The attachment held addresses already (a retry of an ADD whose answer was lost): give back the ones just
    // taken — each only while it still holds exactly this record — and let the usual path return the old ones.
    await this.etcd.txn(
      guesses.map((g, i): Compare => ({ key: this.ipKey(g.ip), value: values[i]! })),
      guesses.flatMap((g): RequestOp[] => [
        { deleteRange: { key: this.ipKey(g.ip) } },
        { deleteRange: { key: this.handleKey(containerID, ifname, g.ip) } },
      ]),
    );
    return { reads: await this.etcd.ranges(reads) };
  }

  /** The range read of a block's address keys. */
  private blockAddresses(b: Block, serializable = false): RangeOp["range"] {
    const r = blockAddressKeyRange(b);
    return { key: `${this.prefix}ips/${r.start}`, end: `${this.prefix}ips/${r.end}`, keysOnly: true, ...(serializable ? { serializable } : {}) };
  }

  private usedOf(kvs: readonly KeyValue[]): Set<bigint> {
    return new Set(
      kvs
        .map((kv) => PoolStore.addressOfKeyTail(kv.key))
        .filter((ip) => ip !== undefined)
        .map((ip) => ipToBigInt(ip!)),
    );
  }

  private async allocateWith(
    search: BlockSearch,
    containerID: string,
    ifname: string,
    pools: readonly BlockPool[],
    held: readonly IPAddress[],
    requested: readonly IPAddress[],
  ): Promise<Allocated[]> {
    const result: Array<IPAddress | undefined> = pools.map(() => undefined);
    const wanted: Array<IPAddress | undefined> = pools.map(() => undefined);
    const left = new Set(requested.map((ip) => ip.text));
    for (const [i, pool] of pools.entries()) {
      const has = held.find((ip) => pool.blockOf(ip) !== undefined);
      const req = requested.find((ip) => left.has(ip.text) && pool.blockOf(ip) !== undefined);
      if (req) {
        left.delete(req.text);
        const why = pool.refusal(req);
        if (why) throw failure(`requested IP ${req.text} cannot be allocated: ${why}`);
      }
      if (has) {
        // A retry of an ADD that already got its addresses: the same ones, never a second set.
        if (req && req.text !== has.text) {
          throw failure(
            `${has.text} has been allocated to ${containerID} (${ifname}), so ${req.text} cannot be; duplicate allocation is not allowed`,
          );
        }
        result[i] = has;
      } else {
        wanted[i] = req;
      }
    }
    if (left.size > 0) {
      throw failure(
        `failed to allocate all requested IPs: ${[...left].join(" ")} (in none of the range sets ${pools.map((p) => p.description).join("; ")})`,
      );
    }

    for (let round = 0; round < MAX_ROUNDS; round++) {
      const todo = pools.map((_, i) => i).filter((i) => result[i] === undefined);
      if (todo.length === 0) return pools.map((pool, i) => ({ pool, ip: result[i]! }));
      const picks = new Map<number, { ip: IPAddress; block: Block }>();
      for (const i of todo) {
        const pool = pools[i]!;
        const req = wanted[i];
        if (req) picks.set(i, { ip: req, block: pool.blockOf(req)! });
        else picks.set(i, await search.pick(i));
      }
      const entries = [...picks.entries()];
      const ops: RequestOp[] = entries.flatMap(([, p]): RequestOp[] => {
        const value = JSON.stringify(this.record(containerID, ifname, p.ip, p.block));
        return [{ put: { key: this.ipKey(p.ip), value } }, { put: { key: this.handleKey(containerID, ifname, p.ip), value } }];
      });
      const txn = await this.etcd.txn(
        entries.map(([, p]): Compare => ({ key: this.ipKey(p.ip), createRevision: 0 })),
        ops,
        // On a conflict: who has each address, and what the block holds now, so the next pick is a fresh one
        // (under contention a whole block fills while a used set read once gets older).
        entries.flatMap(([, p]): RequestOp[] => [{ range: { key: this.ipKey(p.ip) } }, { range: this.blockAddresses(p.block) }]),
      );
      if (txn.succeeded) {
        for (const [i, p] of entries) result[i] = p.ip;
        continue;
      }
      for (const [n, [i, p]] of entries.entries()) {
        const resp = txn.responses[2 * n];
        const now = txn.responses[2 * n + 1];
        if (now?.kind === "range") search.refresh(p.block, this.usedOf(now.kvs));
        const kv = resp?.kind === "range" ? resp.kvs[0] : undefined;
        if (!kv) continue; // free: only another address of this transaction was taken
        if (this.isOurs(kv.value, containerID, ifname)) {
          result[i] = p.ip; // our own earlier attempt, whose answer was lost
        } else if (wanted[i]) {
          const owner = parseJson<AllocationRecord>(kv.value);
          throw failure(
            `requested IP address ${p.ip.text} is already allocated` +
              (owner ? ` to container ${owner.containerID} (${owner.ifname}) on node ${owner.node}` : ""),
          );
        } else {
          search.markTaken(i, p.block, p.ip);
        }
      }
    }
    throw tryAgainLater(`could not allocate after ${MAX_ROUNDS} rounds of conflicts with other allocations; try again`);
  }

  // ---- what BlockSearch needs ----

  /** The addresses in use in each block (one read-only transaction per 100 blocks). */
  async usedIn(blocks: readonly Block[]): Promise<Array<Set<bigint>>> {
    const out: Array<Set<bigint>> = [];
    for (let i = 0; i < blocks.length; i += MAX_OPS) {
      // Serializable: a stale answer only costs a lost compare-and-swap and another pick.
      const results = await this.etcd.ranges(blocks.slice(i, i + MAX_OPS).map((b) => this.blockAddresses(b, true)));
      for (const r of results) out.push(this.usedOf(r.kvs));
    }
    return out;
  }

  /** Every claimed block's key and owner. */
  async claimedBlocks(withValues = false): Promise<Map<string, string>> {
    const r = await this.etcd.range({ key: `${this.prefix}blocks/`, prefix: true, keysOnly: !withValues });
    return new Map(r.kvs.map((kv) => [kv.key.slice(`${this.prefix}blocks/`.length), kv.value]));
  }

  /**
   * Claims `block` for this node if no one has (create-if-absent on its key, with the node index), reading its
   * addresses in the same transaction. Returns the addresses in use, or the owner when someone else has it.
   */
  async claim(block: Block): Promise<{ used: Set<bigint> } | { owner: string }> {
    const record: BlockRecord = { cidr: block.cidr.text, node: this.where.node, claimed: new Date().toISOString() };
    const readIPs: RequestOp = { range: this.blockAddresses(block) };
    const txn = await this.etcd.txn(
      [{ key: this.blockKeyOf(block), createRevision: 0 }],
      [
        { put: { key: this.blockKeyOf(block), value: JSON.stringify(record) } },
        { put: { key: this.affinityKey(this.where.node, block), value: "" } },
        readIPs,
      ],
      [{ range: { key: this.blockKeyOf(block) } }, readIPs],
    );
    const ips = txn.responses[txn.succeeded ? 2 : 1];
    const used = this.usedOf(ips?.kind === "range" ? ips.kvs : []);
    if (txn.succeeded) return { used };
    const current = txn.responses[0]?.kind === "range" ? txn.responses[0].kvs[0] : undefined;
    const owner = parseJson<BlockRecord>(current?.value ?? "")?.node ?? "";
    if (owner === this.where.node) {
      // Ours already (an earlier attempt whose answer was lost): make sure the node index has it too.
      await this.etcd.txn([], [{ put: { key: this.affinityKey(this.where.node, block), value: "" } }]);
      return { used };
    }
    return { owner };
  }

  get node(): string {
    return this.where.node;
  }

  // ---- liveness, dead nodes ----

  /** Every node's liveness record, by node. */
  async liveness(): Promise<Map<string, AliveRecord>> {
    const r = await this.etcd.range({ key: `${this.prefix}alive/`, prefix: true });
    return new Map(
      r.kvs.flatMap((kv) => {
        const rec = parseJson<AliveRecord>(kv.value);
        return rec ? [[kv.key.slice(`${this.prefix}alive/`.length), rec] as const] : [];
      }),
    );
  }

  /** When this node's liveness record says it was last seen (undefined: no record). */
  async lastSeen(): Promise<string | undefined> {
    const r = await this.etcd.range({ key: this.aliveKey(this.where.node) });
    return r.kvs[0] ? parseJson<AliveRecord>(r.kvs[0].value)?.seen : undefined;
  }

  /** Records that this node is alive now (one write). */
  async markAlive(now = new Date()): Promise<void> {
    const record: AliveRecord = { node: this.where.node, seen: now.toISOString() };
    await this.etcd.txn([], [{ put: { key: this.aliveKey(this.where.node), value: JSON.stringify(record) } }]);
  }

  /**
   * Releases the blocks and allocations of every node gone longer than `nodeGraceMs` (off when 0): nodes that own
   * blocks and whose liveness record, block claims and allocations are all older than the grace period (a node
   * that never wrote a record — one running an older version — is judged by its claims and allocations alone).
   * Each deletion holds only while the node's liveness record is exactly as read, so a node that comes back
   * meanwhile keeps what it has. Returns what was released, per node.
   */
  async reclaimDeadNodes(now = Date.now()): Promise<Reclaimed[]> {
    const grace = this.where.nodeGraceMs ?? 0;
    if (grace <= 0) return [];
    const [alive, blocks] = await this.etcd.ranges([
      { key: `${this.prefix}alive/`, prefix: true },
      { key: `${this.prefix}blocks/`, prefix: true },
    ]);
    const old = (iso: string | undefined) => {
      const t = iso ? Date.parse(iso) : NaN;
      return !Number.isNaN(t) && now - t > grace;
    };
    const records = new Map(alive!.kvs.map((kv) => [kv.key.slice(`${this.prefix}alive/`.length), kv]));
    // A node is recent when its record is (or, without one, when any block claim of it is); an unreadable time
    // counts as recent.
    const recentNodes = new Set<string>();
    const blocksOf = new Map<string, Array<{ key: string; value: string }>>();
    for (const kv of blocks!.kvs) {
      const rec = parseJson<BlockRecord>(kv.value);
      if (!rec?.node || rec.node === this.where.node) continue;
      const kvAlive = records.get(rec.node);
      if (kvAlive ? !old(parseJson<AliveRecord>(kvAlive.value)?.seen) : !old(rec.claimed)) recentNodes.add(rec.node);
      blocksOf.set(rec.node, [...(blocksOf.get(rec.node) ?? []), { key: kv.key.slice(`${this.prefix}blocks/`.length), value: kv.value }]);
    }
    const dead = [...blocksOf].filter(([node]) => !recentNodes.has(node)).map(([node, list]) => ({ node, blocks: list }));
    if (dead.length === 0) return [];
    // Its allocations must be old too: a node that allocated within the grace period is not gone.
    const allocations = await this.allocations();
    const out: Reclaimed[] = [];
    for (const d of dead) {
      const mine = allocations.filter((a) => a.node === d.node);
      if (mine.some((a) => !old(a.allocated))) continue;
      const kvAlive = records.get(d.node);
      // Unchanged liveness: the record as read (its last change), or still absent.
      const unchanged: Compare = kvAlive
        ? { key: this.aliveKey(d.node), modRevision: kvAlive.modRevision }
        : { key: this.aliveKey(d.node), createRevision: 0 };
      const released: Reclaimed = { node: d.node, ...(await this.releaseHeld(d.node, mine, d.blocks, [unchanged])) };
      // Its liveness record goes too (if still as read), so the admin listing no longer shows it.
      await this.etcd.txn([unchanged], [{ deleteRange: { key: this.aliveKey(d.node) } }]);
      if (released.allocations.length + released.blocks.length > 0) out.push(released);
    }
    return out;
  }

  // ---- DEL, CHECK ----

  /** The attachment's allocations (from its handle keys). */
  async allocationsOf(containerID: string, ifname: string): Promise<StoredAllocation[]> {
    const r = await this.etcd.range({ key: this.handlePrefix(containerID, ifname), prefix: true });
    return r.kvs.flatMap((kv) => {
      const ip = PoolStore.addressOfKeyTail(kv.key);
      const rec = parseJson<AllocationRecord>(kv.value);
      return ip && rec ? [{ ...rec, key: `${this.prefix}ips/${addressKey(ip)}`, value: kv.value }] : [];
    });
  }

  /**
   * Releases the attachment's addresses; nothing to release is success. Returns the addresses released.
   *
   * `known`: the addresses the runtime says the ADD gave (its prevResult). Then the first round trip already
   * deletes them, in one transaction whose comparisons hold only if each one's handle key and address key exist:
   * the two are only ever written and deleted together (every write of this file), so while the handle exists
   * the address key holds this attachment's record. Anything else (an address not ours, others left) takes the
   * usual path: read the handles, then delete what still holds exactly their record.
   */
  async release(containerID: string, ifname: string, known: readonly IPAddress[] = []): Promise<string[]> {
    // (At most 60 addresses: 2 comparisons and 2 operations each must stay under etcd's --max-txn-ops, 128.)
    if (known.length > 0 && known.length <= 60) {
      const exists = (key: string): Compare => ({ key, createRevision: 0, result: "GREATER" });
      const txn = await this.etcd.txn(
        known.flatMap((ip) => [exists(this.handleKey(containerID, ifname, ip)), exists(this.ipKey(ip))]),
        [
          ...known.flatMap((ip): RequestOp[] => [
            { deleteRange: { key: this.ipKey(ip) } },
            { deleteRange: { key: this.handleKey(containerID, ifname, ip) } },
          ]),
          { range: { key: this.handlePrefix(containerID, ifname), prefix: true, countOnly: true } },
        ],
      );
      const left = txn.responses.at(-1);
      if (txn.succeeded && left?.kind === "range" && left.count === 0) return known.map((ip) => ip.text);
      if (txn.succeeded) return [...known.map((ip) => ip.text), ...(await this.release(containerID, ifname))];
    }
    const held = await this.allocationsOf(containerID, ifname);
    if (held.length === 0) return [];
    const handleOf = (a: StoredAllocation) => this.handleKey(containerID, ifname, tryParseIP(a.ip)!);
    const txn = await this.etcd.txn(
      held.map((a): Compare => ({ key: a.key, value: a.value })),
      held.flatMap((a): RequestOp[] => [{ deleteRange: { key: a.key } }, { deleteRange: { key: handleOf(a) } }]),
      held.map((a): RequestOp => ({ range: { key: a.key } })),
    );
    if (txn.succeeded) return held.map((a) => a.ip);
    // Some address key no longer holds exactly our record: release one by one, never someone else's address.
    const released: string[] = [];
    for (const [n, a] of held.entries()) {
      const resp = txn.responses[n];
      const kv = resp?.kind === "range" ? resp.kvs[0] : undefined;
      const ops: RequestOp[] = [{ deleteRange: { key: handleOf(a) } }];
      if (kv && this.isOurs(kv.value, containerID, ifname)) {
        const r = await this.etcd.txn([{ key: a.key, modRevision: kv.modRevision }], [...ops, { deleteRange: { key: a.key } }]);
        if (r.succeeded) released.push(a.ip);
      } else {
        await this.etcd.txn([], ops);
      }
    }
    return released;
  }

  /** The attachment's addresses whose address keys still hold its record. */
  async verify(containerID: string, ifname: string): Promise<{ ok: StoredAllocation[]; stale: StoredAllocation[] }> {
    const held = await this.allocationsOf(containerID, ifname);
    const current = await this.etcd.ranges(held.map((a) => ({ key: a.key })));
    const ok: StoredAllocation[] = [];
    const stale: StoredAllocation[] = [];
    held.forEach((a, i) => (current[i]?.kvs[0] && this.isOurs(current[i]!.kvs[0]!.value, containerID, ifname) ? ok : stale).push(a));
    return { ok, stale };
  }

  // ---- GC, admin ----

  /** Every allocation of the network (optionally of one node). */
  async allocations(node?: string): Promise<StoredAllocation[]> {
    const r = await this.etcd.range({ key: `${this.prefix}ips/`, prefix: true });
    return r.kvs.flatMap((kv) => {
      const rec = parseJson<AllocationRecord>(kv.value);
      return rec && (node === undefined || rec.node === node) ? [{ ...rec, key: kv.key, value: kv.value }] : [];
    });
  }

  /**
   * Deletes an allocation and its handle if the address key still holds exactly `a.value` (and `guard` holds);
   * true when it did.
   */
  async releaseStored(a: StoredAllocation, guard: readonly Compare[] = []): Promise<boolean> {
    const ip = tryParseIP(a.ip);
    if (!ip) return false;
    const r = await this.etcd.txn(
      [...guard, { key: a.key, value: a.value }],
      [{ deleteRange: { key: a.key } }, { deleteRange: { key: this.handleKey(a.containerID, a.ifname, ip) } }],
    );
    return r.succeeded;
  }

  /** GC: releases this node's allocations whose attachment is not valid. Returns the addresses released. */
  async collectGarbage(valid: readonly GCAttachment[]): Promise<string[]> {
    const keep = new Set(valid.map((a) => `${a.containerID}\n${a.ifname}`));
    const stale = (await this.allocations(this.where.node)).filter((a) => !keep.has(`${a.containerID}\n${a.ifname}`));
    const released: string[] = [];
    for (let i = 0; i < stale.length; i += 16) {
      const done = await Promise.all(stale.slice(i, i + 16).map(async (a) => ((await this.releaseStored(a)) ? a.ip : undefined)));
      released.push(...done.filter((ip): ip is string => ip !== undefined));
    }
    return released;
  }

  /** The claimed blocks with their owners and use. */
  async blocks(): Promise<BlockInfo[]> {
    const [blocks, ips] = await this.etcd.ranges([
      { key: `${this.prefix}blocks/`, prefix: true },
      { key: `${this.prefix}ips/`, prefix: true },
    ]);
    const use = new Map<string, { used: number; borrowed: number }>();
    const owners = new Map<string, string>();
    const infos = blocks!.kvs.map((kv): BlockInfo => {
      const key = kv.key.slice(`${this.prefix}blocks/`.length);
      const rec = parseJson<BlockRecord>(kv.value) ?? { cidr: key, node: "", claimed: "" };
      owners.set(key, rec.node);
      return { ...rec, key, used: 0, borrowed: 0 };
    });
    for (const kv of ips!.kvs) {
      const rec = parseJson<AllocationRecord>(kv.value);
      if (!rec) continue;
      const u = use.get(rec.block) ?? { used: 0, borrowed: 0 };
      u.used++;
      if (owners.get(rec.block) !== rec.node) u.borrowed++;
      use.set(rec.block, u);
    }
    return infos.map((b) => ({ ...b, ...use.get(b.key) }));
  }

  /**
   * Releases a (dead) node: its allocations, then its blocks (each only if it still names the node). Addresses
   * other nodes borrowed inside those blocks stay allocated; the blocks become free for any node to claim.
   */
  async releaseNode(node: string): Promise<{ allocations: string[]; blocks: string[] }> {
    const blocks = [...(await this.claimedBlocks(true))]
      .filter(([, value]) => parseJson<BlockRecord>(value)?.node === node)
      .map(([key, value]) => ({ key, value }));
    const released = await this.releaseHeld(node, await this.allocations(node), blocks);
    // Index entries without a block record (from an interrupted claim) go too.
    await this.etcd.txn([], [{ deleteRange: { key: `${this.prefix}nodes/${node}/`, prefix: true } }]);
    return released;
  }

  /**
   * Deletes `node`'s allocations, then its blocks (block key and node index together), each only if unchanged
   * since read and while `guard` holds. Returns what it deleted.
   */
  private async releaseHeld(
    node: string,
    allocations: readonly StoredAllocation[],
    blocks: ReadonlyArray<{ key: string; value: string }>,
    guard: readonly Compare[] = [],
  ): Promise<{ allocations: string[]; blocks: string[] }> {
    const released = { allocations: [] as string[], blocks: [] as string[] };
    for (const a of allocations) if (await this.releaseStored(a, guard)) released.allocations.push(a.ip);
    for (const b of blocks) {
      const r = await this.etcd.txn(
        [...guard, { key: this.blockKeyOf(b.key), value: b.value }],
        [{ deleteRange: { key: this.blockKeyOf(b.key) } }, { deleteRange: { key: this.affinityKey(node, b.key) } }],
      );
      if (r.succeeded) released.blocks.push(b.key);
    }
    return released;
  }

  /** STATUS: per pool, how many addresses are allocated (one read-only transaction). */
  async allocatedCounts(pools: readonly BlockPool[]): Promise<number[]> {
    const results = await this.etcd.ranges(
      pools.flatMap((pool) =>
        pool.set.ranges.map((r) => ({
          key: `${this.prefix}ips/${addressKey(r.rangeStart)}`,
          end: `${this.prefix}ips/${addressKey(r.rangeEnd)}\u0000`,
          countOnly: true,
        })),
      ),
    );
    let n = 0;
    return pools.map((pool) => pool.set.ranges.reduce((sum) => sum + (results[n++]?.count ?? 0), 0));
  }
}

/**
 * The search for a free address of one ADD, pool by pool: this node's blocks first (their used addresses read
 * once), then a newly claimed free block, then — only when every block is claimed — other nodes' blocks.
 */
class BlockSearch {
  private readonly used = new Map<string, Set<bigint>>();
  private claimed: Map<string, string> | undefined;
  private readonly exhausted = new Set<number>();
  private reclaimTried = false;

  constructor(
    private readonly store: PoolStore,
    private readonly pools: readonly BlockPool[],
    readonly mine: Block[],
  ) {}

  /** The used addresses of one of this node's blocks, read already. */
  preload(block: Block, used: Set<bigint>): void {
    this.used.set(blockKey(block), used);
  }

  /**
   * The used addresses of `block` as just read after a lost race for one of its addresses. A race lost in another
   * node's block means borrowers compete for the last free addresses of the pool: every other node's block read
   * before is forgotten, so the next pick reads them again (one round trip) instead of trying stale ones one by one.
   */
  refresh(block: Block, used: Set<bigint>): void {
    const key = blockKey(block);
    if (!this.mine.some((m) => blockKey(m) === key)) {
      for (const k of [...this.used.keys()]) if (!this.mine.some((m) => blockKey(m) === k)) this.used.delete(k);
    }
    this.used.set(key, used);
  }

  markTaken(_pool: number, block: Block, ip: IPAddress): void {
    this.used.get(blockKey(block))?.add(ipToBigInt(ip));
  }

  /** What the node remembers for its next ADD: its blocks, with the addresses in use where they were read. */
  memory(): BlockMemory[] {
    return this.mine.map((b) => {
      const used = this.used.get(blockKey(b));
      return used ? { block: blockKey(b), used } : { block: blockKey(b) };
    });
  }

  /** The first free address of `blocks` (whose used sets are loaded), or undefined. */
  private freeIn(pool: BlockPool, blocks: readonly Block[]): { ip: IPAddress; block: Block } | undefined {
    for (const block of blocks) {
      const used = this.used.get(blockKey(block))!;
      const n = pool.addresses(block).find((a) => !used.has(a));
      if (n !== undefined) return { ip: ipFromBigInt(n, pool.family)!, block };
    }
    return undefined;
  }

  /**
   * A free address of `blocks` picked at random: nodes that borrow at once (a pool nearly full) would otherwise
   * all want the same first free address, and each lost compare-and-swap is one more round for all but one.
   */
  private randomFreeIn(pool: BlockPool, blocks: readonly Block[]): { ip: IPAddress; block: Block } | undefined {
    const free: Array<{ n: bigint; block: Block }> = [];
    for (const block of blocks) {
      const used = this.used.get(blockKey(block))!;
      for (const n of pool.addresses(block)) if (!used.has(n)) free.push({ n, block });
    }
    if (free.length === 0) return undefined;
    const pick = free[Math.floor(Math.random() * free.length)]!;
    return { ip: ipFromBigInt(pick.n, pool.family)!, block: pick.block };
  }

  private async load(blocks: readonly Block[]): Promise<void> {
    const missing = blocks.filter((b) => !this.used.has(blockKey(b)));
    const sets = await this.store.usedIn(missing);
    missing.forEach((b, i) => this.used.set(blockKey(b), sets[i]!));
  }

  async pick(index: number): Promise<{ ip: IPAddress; block: Block }> {
    const pool = this.pools[index]!;
    // 1. This node's blocks.
    const own = this.mine.filter((b) => pool.hasBlock(b));
    await this.load(own);
    const fromOwn = this.freeIn(pool, own);
    if (fromOwn) return fromOwn;

    // 2. A free block, claimed for this node: the walk starts at a place derived from the node's name.
    this.claimed ??= await this.store.claimedBlocks();
    if (!this.exhausted.has(index)) {
      for (const block of pool.blocksFrom(nodeHash(this.store.node) % pool.blockCount)) {
        const key = blockKey(block);
        if (this.claimed.has(key) || pool.addresses(block).length === 0) continue;
        const r = await this.store.claim(block);
        if ("owner" in r) {
          this.claimed.set(key, r.owner); // lost the race for it: the next one
          continue;
        }
        this.claimed.set(key, this.store.node);
        this.mine.push(block);
        this.used.set(key, r.used);
        const got = this.freeIn(pool, [block]);
        if (got) return got;
      }
      this.exhausted.add(index);
      // No block is free: the blocks of nodes gone longer than the grace period go back to the pool (once per ADD).
      if (!this.reclaimTried) {
        this.reclaimTried = true;
        if ((await this.store.reclaimDeadNodes()).some((r) => r.blocks.length > 0)) {
          this.claimed = undefined;
          this.exhausted.delete(index);
          return this.pick(index);
        }
      }
    }

    // 3. No block is free: borrow an address from another node's block.
    const others = [...this.claimed.keys()]
      .map((k) => parseBlockKey(k, tryParseIP))
      .filter((b): b is Block => b !== undefined && pool.hasBlock(b) && !this.mine.some((m) => blockKey(m) === blockKey(b)));
    await this.load(others);
    const borrowed = this.randomFreeIn(pool, others);
    if (borrowed) return borrowed;
    throw noAddresses(pool, `all ${pool.size()} addresses are allocated (every block is claimed and full)`);
  }
}
