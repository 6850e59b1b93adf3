/**
 * host-local's configuration: the range sets to allocate from (runtime `ipRanges`, the legacy single range
 * and `ipam.ranges`, in that order), requested IPs, routes, dataDir and resolvConf. Parsing validates every
 * range once, so the allocator works with complete, typed ranges.
 * @module
 */
import { cidrContains, networkOf, tryParseCIDR, tryParseIP, type IPAddress, type IPCidr } from "../../../spec/ip.js";
import { compareIP, firstAddress, hasHostBits, intervalsOverlap, lastAddress, nextIP, prevIP, addressBits } from "../../../spec/ip-math.js";
import type { Route } from "../../../spec/result/common.js";
import { NET_CONF_FIELDS, type GCAttachment } from "../../../spec/config.js";
import { list, ptr, string, struct, type Decoded } from "../../../spec/go-decode.js";
import { loadPluginConf } from "../../../skel/conf.js";
import {
  checkAddressesPerFamily, invalidConfig, IPAM_ARGS_FIELD, loadIpamArgs, parseRoutes, requireIpam, ROUTES_FIELD, showValue,
} from "../ipam-config.js";
import { decodeConfig, invalidKey } from "../../common/keys.js";

/** Go's Range (the IPs are net.IP, the subnet a types.IPNet: strings here, parsed by parseRange). */
const RANGE = struct("Range", { rangeStart: string, rangeEnd: string, subnet: string, gateway: string }, "allocator");
const RANGE_SET = list(RANGE);

/** host-local's Go config: Net with its IPAMConfig (which embeds a *Range: the legacy single range). */
export const HOST_LOCAL_SCHEMA = struct("Net", {
  ...NET_CONF_FIELDS,
  ipam: ptr(struct("IPAMConfig", {
    ...RANGE.fields, name: string, type: string, routes: ROUTES_FIELD, dataDir: string, resolvConf: string, ranges: list(RANGE_SET),
  }, "allocator")),
  runtimeConfig: struct("RuntimeConfig", { ipRanges: list(RANGE_SET), ips: list(string) }),
  args: IPAM_ARGS_FIELD,
}, "allocator");

type HostLocalInput = Decoded<typeof HOST_LOCAL_SCHEMA>;

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

function parseRangeSets(value: ReadonlyArray<ReadonlyArray<Decoded<typeof RANGE>>> | undefined, source: string): RangeSet[] {
  return (value ?? []).map((set, i) => parseRangeSet(set, `${source}[${i}]`));
}

// ---- requested IPs ------------------------------------------------------------------------------------

/** A requested IP, optionally with a prefix that is ignored (the plugins' ip.IP). */
function parseRequestedIP(text: string): IPAddress | undefined {
  return text.includes("/") ? tryParseCIDR(text)?.ip : tryParseIP(text);
}

function requestedIPs(c: HostLocalInput, cniArgs: string): IPAddress[] {
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
    ...(c.args?.cni?.ips ?? []).map((value, i) => ({ value, where: `args.cni.ips[${i}]` })),
    ...(c.runtimeConfig?.ips ?? []).map((value, i) => ({ value, where: `runtimeConfig.ips[${i}]` })),
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

/** Decodes stdin (code 6 when it does not decode, 7 for a wrong type) and requires `ipam`. */
function loadHostLocalInput(stdin: Buffer): { c: HostLocalInput; ipam: NonNullable<HostLocalInput["ipam"]>; name: string; cniVersion: string; validAttachments?: GCAttachment[] } {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(HOST_LOCAL_SCHEMA, raw);
  return { c, ipam: requireIpam(c.ipam), name: conf.name, cniVersion: conf.cniVersion, validAttachments: conf.validAttachments };
}

function storeLocation(input: ReturnType<typeof loadHostLocalInput>): StoreLocation {
  return { network: input.name, dataDir: input.ipam.dataDir || DEFAULT_DATA_DIR };
}

/** Parses and validates host-local's config for ADD, CHECK and DEL. Invalid values are code 7, CNI_ARGS code 4. */
export function parseHostLocalConfig(stdin: Buffer, cniArgs: string): HostLocalConfig {
  const input = loadHostLocalInput(stdin);
  const { c, ipam } = input;
  const location = storeLocation(input);
  const routes = parseRoutes(ipam.routes);
  const requested = requestedIPs(c, cniArgs);

  const rangeSets = [
    ...parseRangeSets(c.runtimeConfig?.ipRanges, "runtimeConfig.ipRanges"),
    // The legacy single range (subnet, rangeStart, rangeEnd, gateway directly under ipam) is used when it has a subnet.
    ...(ipam.subnet !== undefined ? [{ ranges: [parseRange(ipam, "ipam")], source: "ipam" }] : []),
    ...parseRangeSets(ipam.ranges, "ipam.ranges"),
  ];
  if (rangeSets.length === 0) {
    throw invalidConfig("no IP ranges specified: set ipam.ranges, ipam.subnet or runtimeConfig.ipRanges");
  }
  checkAddressesPerFamily(input.cniVersion, rangeSets.map((s) => s.ranges[0]!.subnet.ip.family));
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
  const conf: HostLocalConfig = { ...location, cniVersion: input.cniVersion, rangeSets, requestedIPs: requested, routes };
  if (ipam.resolvConf) conf.resolvConf = ipam.resolvConf;
  return conf;
}

/** The store and attachments GC needs; ranges are not required (GC gets no runtimeConfig). */
export function parseGCConfig(stdin: Buffer): GCConfig {
  const input = loadHostLocalInput(stdin);
  // libcni sends no key (cnitool) or null when the runtime has no attachments: nothing is valid then.
  return { ...storeLocation(input), validAttachments: input.validAttachments ?? [] };
}

/** The store STATUS checks. */
export function parseStoreLocation(stdin: Buffer): StoreLocation {
  return storeLocation(loadHostLocalInput(stdin));
}
