/**
 * host-local's configuration: the range sets to allocate from (runtime `ipRanges`, the legacy single range
 * and `ipam.ranges`, in that order), requested IPs, routes, dataDir and resolvConf. Parsing validates every
 * range once, so the allocator works with complete, typed ranges.
 * @module
 */

import { type Decoded, list, ptr, string, struct, withDefault } from "#go-json/go-decode.js";
import type { IPAddress } from "#ip/ip.js";
import { loadPluginConf } from "#skel/conf.js";
import { type GCAttachment, NET_CONF_FIELDS } from "#spec/config.js";
import { invalidConfig } from "#spec/errors.js";
import type { Route } from "#spec/result/common.js";
import { decodeConfig } from "../../common/keys.js";
import { checkAddressesPerFamily, IPAM_ARGS_FIELD, parseRoutes, ROUTES_FIELD, requireIpam } from "../ipam-config.js";
import { checkRangeSetsDisjoint, parseRange, parseRangeSets, parseRequestedIPs, RANGE, RANGE_SET, type RangeSet } from "../ranges.js";

// The range logic is shared with cluster-ipam (../ranges.ts); what host-local's modules and tests use of it:
export {
  freeInRangeSet,
  type IPRange,
  parseRange,
  parseRangeSet,
  type RangeSet,
  rangeContains,
  rangeFor,
  rangeSetContains,
  rangeSetToString,
  rangeToString,
} from "../ranges.js";

/** The store root when `ipam.dataDir` is unset. */
export const DEFAULT_DATA_DIR = "/var/lib/cni/networks";

/**
 * host-local's IPAMConfig (which embeds a *Range: the legacy single range), each key with its default. Routes,
 * ranges and requested IPs are read by ADD, CHECK and DEL only (parseHostLocalConfig): GC and STATUS, which
 * need the store alone, do not fail on them.
 */
const IPAM = struct(
  "IPAMConfig",
  {
    ...RANGE.fields,
    name: string,
    type: string,
    routes: ROUTES_FIELD,
    dataDir: withDefault(string, DEFAULT_DATA_DIR, { orEmpty: true }),
    /** A resolv.conf whose DNS settings ADD returns; unset when empty. */
    resolvConf: string,
    ranges: list(RANGE_SET),
  },
  "allocator",
);
type IpamInput = Decoded<typeof IPAM>;

/** host-local's Go config: Net with its IPAMConfig. */
export const HOST_LOCAL_SCHEMA = struct(
  "Net",
  {
    ...NET_CONF_FIELDS,
    ipam: ptr(IPAM),
    runtimeConfig: struct("RuntimeConfig", { ipRanges: list(RANGE_SET), ips: list(string) }),
    args: IPAM_ARGS_FIELD,
  },
  "allocator",
);

type HostLocalInput = Decoded<typeof HOST_LOCAL_SCHEMA>;

/** Where the store of a network lives: `ipam.dataDir`, and the network's directory in it. */
export interface StoreLocation extends Pick<IpamInput, "dataDir"> {
  /** The network name (the top-level `name`), the store's directory under dataDir. */
  network: string;
}

/** The config of ADD, CHECK and DEL: the store, the range sets to allocate from, and what the attachment gets. */
export interface HostLocalConfig extends StoreLocation, Pick<IpamInput, "resolvConf"> {
  cniVersion: string;
  rangeSets: RangeSet[];
  /** Requested addresses in precedence order (CNI_ARGS `IP`, `args.cni.ips`, `runtimeConfig.ips`), no duplicates. */
  requestedIPs: IPAddress[];
  routes: Route[];
}

/** What GC needs: the store and the attachments to keep. */
export interface GCConfig extends StoreLocation {
  validAttachments: GCAttachment[];
}

// ---- the whole config ---------------------------------------------------------------------------------

/** Decodes stdin (code 6 when it does not decode, 7 for a wrong type) and requires `ipam`. */
function loadHostLocalInput(stdin: Buffer): {
  c: HostLocalInput;
  ipam: IpamInput;
  name: string;
  cniVersion: string;
  validAttachments?: GCAttachment[];
} {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(HOST_LOCAL_SCHEMA, raw);
  return { c, ipam: requireIpam(c.ipam), name: conf.name, cniVersion: conf.cniVersion, validAttachments: conf.validAttachments };
}

function storeLocation(input: ReturnType<typeof loadHostLocalInput>): StoreLocation {
  return { network: input.name, dataDir: input.ipam.dataDir };
}

/** Parses and validates host-local's config for ADD, CHECK and DEL. Invalid values are code 7, CNI_ARGS code 4. */
export function parseHostLocalConfig(stdin: Buffer, cniArgs: string): HostLocalConfig {
  const input = loadHostLocalInput(stdin);
  const { c, ipam } = input;
  const location = storeLocation(input);
  const routes = parseRoutes(ipam.routes);
  const requested = parseRequestedIPs(cniArgs, c.args?.cni?.ips, c.runtimeConfig?.ips);

  const rangeSets = [
    ...parseRangeSets(c.runtimeConfig?.ipRanges, "runtimeConfig.ipRanges"),
    // The legacy single range (subnet, rangeStart, rangeEnd, gateway directly under ipam) is used when it has a subnet.
    ...(ipam.subnet !== undefined ? [{ ranges: [parseRange(ipam, "ipam")], source: "ipam" }] : []),
    ...parseRangeSets(ipam.ranges, "ipam.ranges"),
  ];
  if (rangeSets.length === 0) {
    throw invalidConfig("no IP ranges specified: set ipam.ranges, ipam.subnet or runtimeConfig.ipRanges");
  }
  checkAddressesPerFamily(
    input.cniVersion,
    rangeSets.map((s) => s.ranges[0]!.subnet.ip.family),
  );
  checkRangeSetsDisjoint(rangeSets);
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

/**
 * What STATUS checks: the store, and the range sets of the config itself (the legacy single range and
 * `ipam.ranges`; STATUS gets no runtimeConfig, so `ipRanges` are not known then). Ranges that do not parse are
 * left to ADD to refuse: STATUS then checks the store alone.
 */
export function parseStatusConfig(stdin: Buffer): StoreLocation & { rangeSets: RangeSet[] } {
  const input = loadHostLocalInput(stdin);
  const { ipam } = input;
  let rangeSets: RangeSet[] = [];
  try {
    rangeSets = [
      ...(ipam.subnet !== undefined ? [{ ranges: [parseRange(ipam, "ipam")], source: "ipam" }] : []),
      ...parseRangeSets(ipam.ranges, "ipam.ranges"),
    ];
  } catch {
    /* ADD's to refuse */
  }
  return { ...storeLocation(input), rangeSets };
}
