/**
 * host-local's configuration: the range sets to allocate from (runtime `ipRanges`, the legacy single range
 * and `ipam.ranges`, in that order), requested IPs, routes, dataDir and resolvConf. Parsing validates every
 * range once, so the allocator works with complete, typed ranges.
 * @module
 */
import { cidrContains, networkOf, tryParseCIDR, tryParseIP, type IPAddress, type IPCidr } from "../../../spec/ip.js";
import { compareIP, firstAddress, hasHostBits, intervalsOverlap, lastAddress, nextIP, prevIP, addressBits } from "../../../spec/ip-math.js";
import type { Route } from "../../../spec/result/common.js";
import type { JsonObject } from "../../../spec/json.js";
import type { GCAttachment } from "../../../spec/config.js";
import {
  checkAddressesPerFamily, expectObject, field, invalidConfig, loadIpamArgs, loadIpamEnvelope, optionalArray,
  optionalString, optionalStringList, parseRoutes, showValue,
} from "../ipam-config.js";
import { invalidKey } from "../../common/keys.js";

/** The store root when `ipam.dataDir` is unset. */
export const DEFAULT_DATA_DIR = "/var/lib/cni/networks";

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

/** Where the store of a network lives. */
export interface StoreLocation {
  /** The network name (the top-level `name`), the store's directory under dataDir. */
  network: string;
  dataDir: string;
}

export interface HostLocalConfig extends StoreLocation {
  cniVersion: string;
  rangeSets: RangeSet[];
  /** Requested addresses in precedence order (CNI_ARGS `IP`, `args.cni.ips`, `runtimeConfig.ips`), no duplicates. */
  requestedIPs: IPAddress[];
  routes: Route[];
  resolvConf?: string;
}

/** What GC needs: the store and the attachments to keep. */
export interface GCConfig extends StoreLocation {
  validAttachments: GCAttachment[];
}

// ---- ranges -------------------------------------------------------------------------------------------

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

const rangesOverlap = (a: IPRange, b: IPRange): boolean => intervalsOverlap(a.rangeStart, a.rangeEnd, b.rangeStart, b.rangeEnd);

/** An optional IP key of a range; "" means unset, as in Go. */
function rangeIP(obj: JsonObject, key: string, source: string): IPAddress | undefined {
  const text = optionalString(obj, key, `${source}.${key}`);
  if (text === undefined || text === "") return undefined;
  const ip = tryParseIP(text);
  if (!ip) throw invalidConfig(`invalid range: ${key} ${showValue(text)} is not an IP address (${source})`);
  return ip;
}

/**
 * Parses and completes one range (Go's Range.Canonicalize): the subnet must be a network with room for
 * addresses; gateway defaults to the subnet's first address, rangeStart to the same (the iterator skips the
 * gateway), rangeEnd to the last address (IPv4: the one before broadcast).
 */
export function parseRange(value: unknown, source: string): IPRange {
  const obj = expectObject(value, source);
  const bad = (what: string) => invalidConfig(`invalid range: ${what} (${source})`);
  const subnetText = optionalString(obj, "subnet", `${source}.subnet`);
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
  const gateway = inSubnet("gateway", rangeIP(obj, "gateway", source)) ?? first;
  const rangeStart = inSubnet("rangeStart", rangeIP(obj, "rangeStart", source)) ?? first;
  const last = lastAddress(subnet);
  const rangeEnd = inSubnet("rangeEnd", rangeIP(obj, "rangeEnd", source)) ?? (subnet.ip.family === 4 ? prevIP(last)! : last);
  if (compareIP(rangeStart, rangeEnd) > 0) throw bad(`rangeStart ${rangeStart.text} is after rangeEnd ${rangeEnd.text}`);
  return { subnet, rangeStart, rangeEnd, gateway, source };
}

/** Parses a range set: non-empty, one family, no two ranges overlapping. */
export function parseRangeSet(value: unknown, source: string): RangeSet {
  if (!Array.isArray(value)) throw invalidKey(source, value, "want an array of ranges");
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

function parseRangeSets(value: unknown[] | undefined, source: string): RangeSet[] {
  return (value ?? []).map((set, i) => parseRangeSet(set, `${source}[${i}]`));
}

// ---- requested IPs ------------------------------------------------------------------------------------

/** A requested IP, optionally with a prefix that is ignored (the plugins' ip.IP). */
function parseRequestedIP(text: string): IPAddress | undefined {
  return text.includes("/") ? tryParseCIDR(text)?.ip : tryParseIP(text);
}

function requestedIPs(envelope: ReturnType<typeof loadIpamEnvelope>, cniArgs: string): IPAddress[] {
  const fromEnv = loadIpamArgs<{ IP: IPAddress | undefined }>(cniArgs, {
    IP: (v) => {
      if (v === "") return undefined;
      const ip = parseRequestedIP(v);
      if (!ip) throw new Error(`invalid IP address ${v}`);
      return ip;
    },
  });
  const list: IPAddress[] = fromEnv.IP ? [fromEnv.IP] : [];
  const fromConfig = [
    ...(envelope.argsCni ? optionalStringList(envelope.argsCni, "ips", "args.cni.ips") ?? [] : []),
    ...(envelope.runtimeConfig ? optionalStringList(envelope.runtimeConfig, "ips", "runtimeConfig.ips") ?? [] : []),
  ];
  for (const { value, where } of fromConfig) {
    const ip = parseRequestedIP(value);
    if (!ip) throw invalidKey(where, value, "want an IP address");
    list.push(ip);
  }
  const seen = new Set<string>();
  return list.filter((ip) => !seen.has(ip.text) && seen.add(ip.text));
}

// ---- the whole config ---------------------------------------------------------------------------------

function storeLocation(envelope: ReturnType<typeof loadIpamEnvelope>): StoreLocation {
  const dataDir = optionalString(envelope.ipam, "dataDir", "ipam.dataDir");
  return { network: envelope.name, dataDir: dataDir || DEFAULT_DATA_DIR };
}

/** Parses and validates host-local's config for ADD, CHECK and DEL. Invalid values are code 7, CNI_ARGS code 4. */
export function parseHostLocalConfig(stdin: Buffer, cniArgs: string): HostLocalConfig {
  const envelope = loadIpamEnvelope(stdin);
  const { ipam } = envelope;
  const location = storeLocation(envelope);
  const resolvConf = optionalString(ipam, "resolvConf", "ipam.resolvConf");
  const routes = parseRoutes(ipam);
  const requested = requestedIPs(envelope, cniArgs);

  const runtimeRanges = envelope.runtimeConfig && optionalArray(envelope.runtimeConfig, "ipRanges", "runtimeConfig.ipRanges");
  const rangeSets = [
    ...parseRangeSets(runtimeRanges, "runtimeConfig.ipRanges"),
    // The legacy single range (subnet, rangeStart, rangeEnd, gateway directly under ipam) is used when it has a subnet.
    ...(field(ipam, "subnet") !== undefined ? [{ ranges: [parseRange(ipam, "ipam")], source: "ipam" }] : []),
    ...parseRangeSets(optionalArray(ipam, "ranges", "ipam.ranges"), "ipam.ranges"),
  ];
  if (rangeSets.length === 0) {
    throw invalidConfig("no IP ranges specified: set ipam.ranges, ipam.subnet or runtimeConfig.ipRanges");
  }
  checkAddressesPerFamily(envelope.cniVersion, rangeSets.map((s) => s.ranges[0]!.subnet.ip.family));
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
  const conf: HostLocalConfig = { ...location, cniVersion: envelope.cniVersion, rangeSets, requestedIPs: requested, routes };
  if (resolvConf) conf.resolvConf = resolvConf;
  return conf;
}

/** The store and attachments GC needs; ranges are not required (GC gets no runtimeConfig). */
export function parseGCConfig(stdin: Buffer): GCConfig {
  const envelope = loadIpamEnvelope(stdin);
  // libcni sends no key (cnitool) or null when the runtime has no attachments: nothing is valid then.
  return { ...storeLocation(envelope), validAttachments: envelope.validAttachments ?? [] };
}

/** The store STATUS checks. */
export function parseStoreLocation(stdin: Buffer): StoreLocation {
  return storeLocation(loadIpamEnvelope(stdin));
}
