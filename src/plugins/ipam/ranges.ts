/**
 * Address ranges as the IPAM plugins that allocate (host-local, cluster-ipam) read them: Go's `Range` schema
 * (`subnet`, `rangeStart`, `rangeEnd`, `gateway`), range sets (one family each, no overlaps), the checks
 * between range sets, and the requested addresses of an attachment (CNI_ARGS `IP`, `args.cni.ips`,
 * `runtimeConfig.ips`). Pure: parsing and containment only, no allocation policy.
 * @module
 */

import { type Decoded, list, string, struct } from "#go-json/go-decode.js";
import { cidrContains, type IPAddress, type IPCidr, networkOf, tryParseCIDR, tryParseIP } from "#ip/ip.js";
import {
  addressBits,
  compareIP,
  firstAddress,
  hasHostBits,
  intervalsOverlap,
  ipEqual,
  ipToBigInt,
  lastAddress,
  nextIP,
  prevIP,
} from "#ip/ip-math.js";
import { invalidConfig, invalidKey } from "#spec/errors.js";
import { loadIpamArgs, showValue } from "./ipam-config.js";

/** Go's Range (the IPs are net.IP, the subnet a types.IPNet: strings here, parsed by parseRange). */
export const RANGE = struct("Range", { rangeStart: string, rangeEnd: string, subnet: string, gateway: string }, "allocator");
/** Go's RangeSet: the ranges of one family an ADD takes one address from. */
export const RANGE_SET = list(RANGE);

/** One range: a subnet and the inclusive interval allocated from it. */
export interface IPRange {
  /** The network (host bits zero). */
  subnet: IPCidr;
  rangeStart: IPAddress;
  rangeEnd: IPAddress;
  /** Returned as the gateway of addresses from this range, and never allocated. */
  gateway: IPAddress;
  /** Where the range was configured, e.g. `ipam.ranges[0][1]`, for error messages. */
  source: string;
}

/** Ranges of one family; each ADD takes one address from each range set. */
export interface RangeSet {
  ranges: IPRange[];
  source: string;
}

/** Whether `ip` is allocatable from `r` (inside the subnet, between rangeStart and rangeEnd). */
export function rangeContains(r: IPRange, ip: IPAddress): boolean {
  return cidrContains(r.subnet, ip) && compareIP(ip, r.rangeStart) >= 0 && compareIP(ip, r.rangeEnd) <= 0;
}

/** `start-end`, as Go prints a range. */
export const rangeToString = (r: IPRange): string => `${r.rangeStart.text}-${r.rangeEnd.text}`;

/** The range of `set` that contains `ip`. */
export const rangeFor = (set: RangeSet, ip: IPAddress): IPRange | undefined => set.ranges.find((r) => rangeContains(r, ip));

export const rangeSetContains = (set: RangeSet, ip: IPAddress): boolean => rangeFor(set, ip) !== undefined;

/** `start-end,start-end`, as Go prints a range set. */
export const rangeSetToString = (set: RangeSet): string => set.ranges.map(rangeToString).join(",");

/**
 * How many addresses of `set` an ADD could still take, `allocated` being every address taken (others are ignored):
 * each range's rangeStart..rangeEnd without its gateway, less the taken ones among them.
 */
export function freeInRangeSet(set: RangeSet, allocated: readonly IPAddress[]): bigint {
  let free = 0n;
  for (const r of set.ranges) {
    const gatewayInside = rangeContains(r, r.gateway) ? 1n : 0n;
    free += ipToBigInt(r.rangeEnd) - ipToBigInt(r.rangeStart) + 1n - gatewayInside;
  }
  for (const ip of allocated) {
    const r = rangeFor(set, ip);
    if (r && !ipEqual(ip, r.gateway)) free -= 1n;
  }
  return free;
}

/** Whether two ranges share an address. */
export const rangesOverlap = (a: IPRange, b: IPRange): boolean => intervalsOverlap(a.rangeStart, a.rangeEnd, b.rangeStart, b.rangeEnd);

/** An optional IP key of a range; "" means unset, as in Go. */
function rangeIP(text: string | undefined, key: string, source: string): IPAddress | undefined {
  if (text === undefined || text === "") return undefined;
  const ip = tryParseIP(text);
  if (!ip) throw invalidConfig(`invalid range: ${key} ${showValue(text)} is not an IP address (${source})`);
  return ip;
}

/**
 * Parses and completes one range (Go's Range.Canonicalize): the subnet must be a network with room for
 * addresses; gateway defaults to the subnet's first address, rangeStart to the same (the iterator skips the
 * gateway), rangeEnd to the last address (IPv4: the one before broadcast). A gateway outside the subnet is
 * kept, as Go keeps it (it is only returned, never allocated from).
 */
export function parseRange(r: Decoded<typeof RANGE>, source: string): IPRange {
  const bad = (what: string) => invalidConfig(`invalid range: ${what} (${source})`);
  const subnetText = r.subnet;
  if (subnetText === undefined) throw bad("subnet is missing");
  const parsed = tryParseCIDR(subnetText);
  if (!parsed) throw bad(`subnet ${showValue(subnetText)} is not a valid CIDR`);
  const bits = addressBits(parsed.ip.family);
  if (parsed.prefix > bits - 2) throw bad(`subnet ${parsed.text} is too small to allocate from (a /${bits - 1} or /${bits} has no usable addresses)`);
  if (hasHostBits(parsed)) {
    throw bad(`subnet ${parsed.text} has host bits set; for a prefix length of ${parsed.prefix} the network address is ${firstAddress(parsed).text}`);
  }
  const subnet = networkOf(parsed);
  const inSubnet = (key: string, ip: IPAddress | undefined): IPAddress | undefined => {
    if (ip && !cidrContains(subnet, ip)) throw bad(`${key} ${ip.text} is not in subnet ${subnet.text}`);
    return ip;
  };
  const first = nextIP(subnet.ip)!;
  const gateway = rangeIP(r.gateway, "gateway", source) ?? first;
  const rangeStart = inSubnet("rangeStart", rangeIP(r.rangeStart, "rangeStart", source)) ?? first;
  const last = lastAddress(subnet);
  const rangeEnd = inSubnet("rangeEnd", rangeIP(r.rangeEnd, "rangeEnd", source)) ?? (subnet.ip.family === 4 ? prevIP(last)! : last);
  if (compareIP(rangeStart, rangeEnd) > 0) throw bad(`rangeStart ${rangeStart.text} is after rangeEnd ${rangeEnd.text}`);
  return { subnet, rangeStart, rangeEnd, gateway, source };
}

/** Parses a range set: non-empty, one family, no two ranges overlapping. */
export function parseRangeSet(value: ReadonlyArray<Decoded<typeof RANGE>>, source: string): RangeSet {
  if (value.length === 0) throw invalidConfig(`invalid range set: ${source} is empty`);
  const ranges = value.map((r, i) => parseRange(r, `${source}[${i}]`));
  const family = ranges[0]!.subnet.ip.family;
  const other = ranges.find((r) => r.subnet.ip.family !== family);
  if (other) {
    throw invalidConfig(`invalid range set: ${source} mixes IPv4 and IPv6 ranges (${ranges[0]!.subnet.text} and ${other.subnet.text})`);
  }
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      const [a, b] = [ranges[i]!, ranges[j]!];
      if (rangesOverlap(a, b)) {
        throw invalidConfig(`invalid range set: ranges ${rangeToString(a)} (${a.source}) and ${rangeToString(b)} (${b.source}) overlap`);
      }
    }
  }
  return { ranges, source };
}

/** Parses a list of range sets (`ipam.ranges`, `runtimeConfig.ipRanges`), naming each `source[i]`. */
export function parseRangeSets(value: ReadonlyArray<ReadonlyArray<Decoded<typeof RANGE>>> | undefined, source: string): RangeSet[] {
  return (value ?? []).map((set, i) => parseRangeSet(set, `${source}[${i}]`));
}

/** No range of one set may overlap a range of another: an address belongs to one set at most. */
export function checkRangeSetsDisjoint(rangeSets: readonly RangeSet[]): void {
  for (let i = 0; i < rangeSets.length; i++) {
    for (let j = i + 1; j < rangeSets.length; j++) {
      for (const a of rangeSets[i]!.ranges) {
        const b = rangeSets[j]!.ranges.find((r) => rangesOverlap(a, r));
        if (b) {
          throw invalidConfig(`range set ${i} overlaps with ${j}: ${rangeToString(a)} (${a.source}) and ${rangeToString(b)} (${b.source})`);
        }
      }
    }
  }
}

// ---- requested IPs ------------------------------------------------------------------------------------

/** A requested IP, optionally with a prefix that is ignored (the plugins' ip.IP). */
export function parseRequestedIP(text: string): IPAddress | undefined {
  return text.includes("/") ? tryParseCIDR(text)?.ip : tryParseIP(text);
}

/**
 * The requested addresses of an attachment in precedence order (CNI_ARGS `IP`, `args.cni.ips`,
 * `runtimeConfig.ips`), without duplicates. A bad CNI_ARGS value is code 4, a bad config value code 7.
 */
export function parseRequestedIPs(cniArgs: string, argsIPs: readonly string[] | undefined, runtimeIPs: readonly string[] | undefined): IPAddress[] {
  const fromEnv = loadIpamArgs<{ IP: IPAddress | undefined }>(cniArgs, {
    IP: (v) => {
      if (v === "") return undefined;
      const ip = parseRequestedIP(v);
      if (!ip) throw new Error(`invalid IP address ${v}`);
      return ip;
    },
  });
  const out: IPAddress[] = fromEnv.IP ? [fromEnv.IP] : [];
  const fromConfig = [
    ...(argsIPs ?? []).map((value, i) => ({ value, where: `args.cni.ips[${i}]` })),
    ...(runtimeIPs ?? []).map((value, i) => ({ value, where: `runtimeConfig.ips[${i}]` })),
  ];
  for (const { value, where } of fromConfig) {
    const ip = parseRequestedIP(value);
    if (!ip) throw invalidKey(where, value, "want an IP address");
    out.push(ip);
  }
  const seen = new Set<string>();
  return out.filter((ip) => !seen.has(ip.text) && seen.add(ip.text));
}
