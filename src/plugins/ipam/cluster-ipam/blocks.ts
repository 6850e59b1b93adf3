/**
 * Block arithmetic of cluster-ipam: how a range set (the pool of one address per ADD) is cut into per-node
 * blocks, which addresses of a block may be handed out, and how blocks and addresses are named in etcd.
 *
 * - A block is the aligned CIDR of prefix length `blockSize` (IPv4 default /26, IPv6 /122) around an address;
 *   a subnet smaller than that is one block (a block never reaches beyond its subnet).
 * - The addresses of a block that may be allocated are those inside one of the set's ranges (rangeStart to
 *   rangeEnd), except every gateway of the set and every `exclude` entry.
 * - Blocks are numbered range by range, in config order; a node starts looking for a free block at a number
 *   derived from its name, so nodes claiming at once rarely want the same block.
 * - Address keys are fixed-width hex per family (`v4/0a160005`), so the addresses of a block are one key range.
 * Pure: no etcd here.
 * @module
 */
import type { IPAddress, IPCidr, IPFamily } from "#ip/ip.js";
import { addressBits, ipFromBigInt, ipToBigInt } from "#ip/ip-math.js";
import { type IPRange, type RangeSet, rangeFor } from "../ranges.js";

/** One block: an aligned CIDR and its first and last address as integers. */
export interface Block {
  cidr: IPCidr;
  family: IPFamily;
  first: bigint;
  last: bigint;
}

/** An interval of addresses that is never allocated: an `exclude` entry or a gateway. */
export interface Excluded {
  family: IPFamily;
  first: bigint;
  last: bigint;
  /** What put it there, for messages: `ipam.exclude[1]`, `gateway of ipam.ranges[0][0]`. */
  source: string;
}

/** The name of a block in etcd keys and in the admin output: `10.22.0.64-26`, `fd00::40-122`. */
export const blockKey = (b: Block): string => `${b.cidr.ip.text}-${b.cidr.prefix}`;

/** The hex key of an address, fixed width per family under its family's folder: `v4/0a160005`. */
export function addressKey(ip: IPAddress): string {
  return `v${ip.family}/${ipToBigInt(ip)
    .toString(16)
    .padStart(ip.family === 4 ? 8 : 32, "0")}`;
}

/** The key range `[start, end)` holding the address keys of a block. */
export function blockAddressKeyRange(b: Block): { start: string; end: string } {
  const width = b.family === 4 ? 8 : 32;
  const hex = (n: bigint) => `v${b.family}/${n.toString(16).padStart(width, "0")}`;
  // Keys are fixed width, so "last key" followed by a NUL byte ends the range right after it.
  return { start: hex(b.first), end: `${hex(b.last)}\u0000` };
}

/** The address of an address key, or undefined when it is not one. */
export function addressOfKey(key: string): IPAddress | undefined {
  const m = /^v([46])\/([0-9a-f]+)$/.exec(key);
  if (!m) return undefined;
  const family = Number(m[1]) as IPFamily;
  if (m[2]!.length !== (family === 4 ? 8 : 32)) return undefined;
  return ipFromBigInt(BigInt(`0x${m[2]}`), family);
}

function makeBlock(start: bigint, prefix: number, family: IPFamily): Block {
  const size = 1n << BigInt(addressBits(family) - prefix);
  const ip = ipFromBigInt(start, family)!;
  return { cidr: { ip, prefix, text: `${ip.text}/${prefix}` }, family, first: start, last: start + size - 1n };
}

/** The block of a given prefix length containing `ip`. */
export function blockContaining(ip: IPAddress, prefix: number): Block {
  const bits = addressBits(ip.family);
  const size = 1n << BigInt(bits - prefix);
  return makeBlock(ipToBigInt(ip) & ~(size - 1n), prefix, ip.family);
}

/** The block named by a block key, or undefined when the key is not one. */
export function parseBlockKey(key: string, parse: (text: string) => IPAddress | undefined): Block | undefined {
  const m = /^(.+)-(\d{1,3})$/.exec(key);
  if (!m) return undefined;
  const ip = parse(m[1]!);
  const prefix = Number(m[2]);
  if (!ip || prefix > addressBits(ip.family)) return undefined;
  const block = blockContaining(ip, prefix);
  return block.first === ipToBigInt(ip) ? block : undefined;
}

/** A stable 32-bit FNV-1a hash of a node name: where its search for a free block starts. */
export function nodeHash(node: string): bigint {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(node, "utf8")) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return BigInt(h);
}

/** A range of the pool with the block prefix its blocks have. */
interface PoolRange {
  range: IPRange;
  start: bigint;
  end: bigint;
  /** max(blockSize, subnet prefix): a block never spans beyond its subnet. */
  blockPrefix: number;
  firstBlock: bigint;
  blockCount: bigint;
}

/**
 * One range set as a pool of blocks: which blocks it has, which of their addresses may be allocated, and
 * why an address may not be.
 */
export class BlockPool {
  readonly family: IPFamily;
  private readonly ranges: PoolRange[];
  private readonly excluded: Excluded[];
  /** Blocks over all ranges (a block shared by two adjacent ranges counts twice; walks skip the repeat). */
  readonly blockCount: bigint;

  constructor(
    readonly set: RangeSet,
    blockSize: number,
    exclude: readonly Excluded[],
  ) {
    this.family = set.ranges[0]!.subnet.ip.family;
    const bits = addressBits(this.family);
    this.ranges = set.ranges.map((range) => {
      const blockPrefix = Math.max(blockSize, range.subnet.prefix);
      const size = 1n << BigInt(bits - blockPrefix);
      const start = ipToBigInt(range.rangeStart);
      const end = ipToBigInt(range.rangeEnd);
      const firstBlock = start & ~(size - 1n);
      return { range, start, end, blockPrefix, firstBlock, blockCount: ((end & ~(size - 1n)) - firstBlock) / size + 1n };
    });
    const gateways = set.ranges.map((r): Excluded => {
      const g = ipToBigInt(r.gateway);
      return { family: r.gateway.family, first: g, last: g, source: `the gateway of ${r.source}` };
    });
    this.excluded = [...exclude, ...gateways].filter((x) => x.family === this.family);
    this.blockCount = this.ranges.reduce((n, r) => n + r.blockCount, 0n);
  }

  /** The text of the set, as Go prints it (`start-end,start-end`). */
  get description(): string {
    return this.set.ranges.map((r) => `${r.rangeStart.text}-${r.rangeEnd.text}`).join(",");
  }

  /** Block number `index` (0 <= index < blockCount). */
  blockAt(index: bigint): Block {
    for (const r of this.ranges) {
      if (index < r.blockCount) {
        const size = 1n << BigInt(addressBits(this.family) - r.blockPrefix);
        return makeBlock(r.firstBlock + index * size, r.blockPrefix, this.family);
      }
      index -= r.blockCount;
    }
    throw new RangeError(`block ${index} is past the pool's ${this.blockCount} blocks`);
  }

  /** Every block, once each, starting at block number `start` and wrapping around. */
  *blocksFrom(start: bigint): Generator<Block> {
    const seen = new Set<string>();
    const total = this.blockCount;
    for (let i = 0n; i < total; i++) {
      const block = this.blockAt((start + i) % total);
      const key = blockKey(block);
      if (seen.has(key)) continue;
      seen.add(key);
      yield block;
    }
  }

  /** The block holding `ip` (which must be in one of the set's ranges). */
  blockOf(ip: IPAddress): Block | undefined {
    const range = rangeFor(this.set, ip);
    if (!range) return undefined;
    return blockContaining(ip, this.ranges.find((r) => r.range === range)!.blockPrefix);
  }

  /** Whether `block` is one of this pool's blocks (same CIDR as the block it would have at that place). */
  hasBlock(block: Block): boolean {
    if (block.family !== this.family) return false;
    return this.ranges.some((r) => r.blockPrefix === block.cidr.prefix && block.last >= r.start && block.first <= r.end);
  }

  /** Why `ip` may not be allocated from this set, or undefined when it may. */
  refusal(ip: IPAddress): string | undefined {
    if (ip.family !== this.family) return `${ip.text} is not an IPv${this.family} address`;
    if (!rangeFor(this.set, ip)) return `${ip.text} is not in range set ${this.description}`;
    const n = ipToBigInt(ip);
    const x = this.excluded.find((e) => n >= e.first && n <= e.last);
    return x ? `${ip.text} is excluded (${x.source})` : undefined;
  }

  private isExcluded(n: bigint): boolean {
    return this.excluded.some((e) => n >= e.first && n <= e.last);
  }

  /** The addresses of `block` that may be allocated, lowest first (a block has at most 4096 addresses). */
  addresses(block: Block): bigint[] {
    const out: bigint[] = [];
    for (const r of this.ranges) {
      const lo = block.first > r.start ? block.first : r.start;
      const hi = block.last < r.end ? block.last : r.end;
      for (let n = lo; n <= hi; n++) if (!this.isExcluded(n)) out.push(n);
    }
    return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** How many addresses the whole set may hand out (ranges minus gateways and exclusions). */
  size(): bigint {
    // The excluded intervals, clipped to each range and merged, are subtracted from the range sizes.
    let total = 0n;
    for (const r of this.ranges) {
      const cut = this.excluded
        .map((e) => ({ first: e.first > r.start ? e.first : r.start, last: e.last < r.end ? e.last : r.end }))
        .filter((e) => e.first <= e.last)
        .sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
      let removed = 0n;
      let reach = r.start - 1n;
      for (const e of cut) {
        const from = e.first > reach ? e.first : reach + 1n;
        if (e.last >= from) removed += e.last - from + 1n;
        if (e.last > reach) reach = e.last;
      }
      total += r.end - r.start + 1n - removed;
    }
    return total;
  }

  /** The address with integer value `n` and the result entry's prefix and gateway (of its range). */
  resultFor(n: bigint): { ip: IPAddress; range: IPRange } {
    const ip = ipFromBigInt(n, this.family)!;
    return { ip, range: rangeFor(this.set, ip)! };
  }
}

/** Parses `exclude` entries (a CIDR or a single address); the parser names the bad entry. */
export function excludedFrom(cidrs: ReadonlyArray<{ cidr: IPCidr; source: string }>): Excluded[] {
  return cidrs.map(({ cidr, source }) => {
    const size = 1n << BigInt(addressBits(cidr.ip.family) - cidr.prefix);
    const first = ipToBigInt(cidr.ip) & ~(size - 1n);
    return { family: cidr.ip.family, first, last: first + size - 1n, source };
  });
}
