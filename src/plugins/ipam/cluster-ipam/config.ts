/**
 * cluster-ipam's configuration: where etcd is (`ipam.etcd`: endpoints, TLS files, user, key prefix, timeouts),
 * the range sets of the pool (`ipam.ranges`, as host-local reads them), the block sizes, this node's name,
 * excluded addresses, routes, DNS, and the attachment's requested addresses. Everything is validated here, before
 * etcd is asked anything; a bad value is code 7 naming the key. The TLS files are read when the client is made
 * (readEtcdFiles), so parsing changes and reads nothing.
 * @module
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import { type Decoded, int, list, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { isJsonObject, type JsonObject } from "#go-json/json.js";
import { type IPAddress, type IPCidr, tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { addressBits } from "#ip/ip-math.js";
import { loadPluginConf } from "#skel/conf.js";
import { type GCAttachment, NET_CONF_FIELDS } from "#spec/config.js";
import { invalidConfig, invalidKey, messageOf } from "#spec/errors.js";
import { compactDNS, type DNS, DNS_TYPE, type Route } from "#spec/result/common.js";
import { decodeConfig } from "../../common/keys.js";
import { checkAddressesPerFamily, IPAM_ARGS_FIELD, parseRoutes, ROUTES_FIELD, requireIpam } from "../ipam-config.js";
import { checkRangeSetsDisjoint, parseRangeSets, parseRequestedIPs, RANGE_SET } from "../ranges.js";
import { BlockPool, excludedFrom } from "./blocks.js";
import type { EtcdConnection } from "./etcd.js";

/** The etcd key prefix of all networks unless `ipam.etcd.prefix` says otherwise. */
export const DEFAULT_PREFIX = "/tscni/ipam";
/** How long connecting to etcd may take unless `ipam.etcd.dialTimeoutMs` says otherwise. */
export const DEFAULT_DIAL_TIMEOUT_MS = 2000;
/** How long one etcd request may take unless `ipam.etcd.requestTimeoutMs` says otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;
/**
 * A call waits this long for etcd before failing: under kubelet's 2-minute runtime request deadline and the
 * resident server's 5-minute call limit, so an overloaded etcd makes calls wait, not fail.
 */
export const DEFAULT_CALL_TIMEOUT_MS = 100_000;
/** The block prefix length of each family unless `ipam.blockSize` / `ipam.blockSizeV6` say otherwise. */
export const DEFAULT_BLOCK_SIZE = { 4: 26, 6: 122 } as const;
/** Block sizes allowed (Calico's limits): at most 4096 addresses per block, which a node reads in one go. */
export const BLOCK_SIZE_LIMITS = { 4: [20, 32], 6: [116, 128] } as const;
/** Where the per-node lock files live (one per network and node name). */
export const DEFAULT_LOCK_DIR = "/run/tscni/cluster-ipam";

const ENDPOINTS_WANT = "want at least one URL such as http://127.0.0.1:2379";

function parseEndpoint(text: string, where: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidKey(where, text, "want a URL such as http://127.0.0.1:2379");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalidKey(where, text, "want an http:// or https:// URL");
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || url.username) {
    throw invalidKey(where, text, "want scheme://host:port and nothing else");
  }
  return `${url.protocol}//${url.host}`;
}

/** `ipam.etcd.endpoints`: one URL or more, each read as `scheme://host:port`. */
const ENDPOINTS = refine(list(string), (values, at) => {
  const endpoints = values.map((e, i) => parseEndpoint(e, `${at}[${i}]`));
  if (endpoints.length === 0) throw invalidKey(at, values, ENDPOINTS_WANT);
  return endpoints;
});

/** A timeout in milliseconds, 1 to 600000; 0 (or absent) reads as `dflt`. */
const timeoutMs = (dflt: number) =>
  withDefault(
    refine(int, (value, at) => {
      if (value === 0) return dflt;
      if (value < 1 || value > 600_000) throw invalidKey(at, value, "want milliseconds from 1 to 600000");
      return value;
    }),
    dflt,
  );

/** `ipam.etcd.prefix`: a key prefix starting with `/`, kept without its trailing slashes. */
const PREFIX = refine(string, (value, at) => {
  if (!value.startsWith("/") || value.includes("\u0000")) throw invalidKey(at, value, "want a key prefix starting with /");
  return value.replace(/\/+$/, "");
});

/** etcd's settings: each key with its default and the values it takes (the TLS and user keys are checked together). */
const ETCD = struct("EtcdConfig", {
  endpoints: ENDPOINTS,
  certFile: string,
  keyFile: string,
  caFile: string,
  username: string,
  password: string,
  prefix: withDefault(PREFIX, DEFAULT_PREFIX, { orEmpty: true }),
  dialTimeoutMs: timeoutMs(DEFAULT_DIAL_TIMEOUT_MS),
  requestTimeoutMs: timeoutMs(DEFAULT_REQUEST_TIMEOUT_MS),
  callTimeoutMs: timeoutMs(DEFAULT_CALL_TIMEOUT_MS),
});
type EtcdInput = Decoded<typeof ETCD>;

/** A node name (this host's name when empty), which goes into keys: no slashes, spaces or control characters. */
function nodeName(value: string, at: string): string {
  const node = value || os.hostname();
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$/.test(node)) {
    throw invalidKey(at, node, "want a node name of letters, digits, '.', '_', ':' and '-'");
  }
  return node;
}

/** `ipam.nodeGraceSeconds`: 0 (never) or 1 to 31536000. */
const NODE_GRACE_SECONDS = refine(int, (value, at) => {
  if (value !== 0 && (value < 1 || value > 31_536_000)) throw invalidKey(at, value, "want seconds from 1 to 31536000 (a year), or 0 for never");
  return value;
});

/**
 * cluster-ipam's IPAMConfig. The keys every verb reads carry their defaults and checks; the pool's keys (ranges,
 * block sizes, exclusions) and routes and DNS are read by the verbs that use them (parsePools,
 * parseClusterIpamConfig), so that a DEL does not fail on a key it has no use for.
 */
const IPAM = struct("IPAMConfig", {
  name: string,
  type: string,
  etcd: ptr(ETCD),
  ranges: list(RANGE_SET),
  blockSize: int,
  blockSizeV6: int,
  /** This host's name when absent or empty (see loadInput). */
  nodeName: refine(string, nodeName),
  exclude: list(string),
  routes: ROUTES_FIELD,
  dns: DNS_TYPE,
  lockDir: withDefault(string, DEFAULT_LOCK_DIR, { orEmpty: true }),
  nodeGraceSeconds: withDefault(NODE_GRACE_SECONDS, 0),
});
type IpamInput = Decoded<typeof IPAM>;

/** cluster-ipam's config, in the shape of a Go plugin's struct (keys in any case, as Go reads them). */
export const CLUSTER_IPAM_SCHEMA = struct("Net", {
  ...NET_CONF_FIELDS,
  ipam: ptr(IPAM),
  runtimeConfig: struct("RuntimeConfig", { ips: list(string) }),
  args: IPAM_ARGS_FIELD,
});

type Input = Decoded<typeof CLUSTER_IPAM_SCHEMA>;

/**
 * etcd settings as configured (the TLS files not read yet): the keys as the schema reads them, a TLS file or
 * the user only when set. `callTimeoutMs` is how long a call may wait for etcd in all (its turn, repeats); see
 * EtcdConnection.
 */
export interface EtcdSettings
  extends Pick<EtcdInput, "certFile" | "keyFile" | "caFile" | "username" | "password" | "dialTimeoutMs" | "requestTimeoutMs" | "callTimeoutMs"> {
  endpoints: NonNullable<EtcdInput["endpoints"]>;
}

/** What every verb needs: the network's place in etcd and how to get there. */
export interface PoolLocation extends Pick<IpamInput, "lockDir"> {
  network: string;
  cniVersion: string;
  etcd: EtcdSettings;
  /** The network's key prefix: `<ipam.etcd.prefix>/<network>/`. */
  keyPrefix: string;
  /** `ipam.nodeName`. */
  node: NonNullable<IpamInput["nodeName"]>;
  /**
   * How long a node may go without an ADD, STATUS or GC before its blocks and allocations may be reclaimed by another
   * node's ADD that finds no free block (`ipam.nodeGraceSeconds`; 0: never, the default).
   */
  nodeGraceMs: number;
}

/** The config of ADD and CHECK: the location, the pools, and what the attachment asks for and gets. */
export interface ClusterIpamConfig extends PoolLocation {
  /** One pool per range set, in config order (one address from each per ADD). */
  pools: BlockPool[];
  requestedIPs: IPAddress[];
  routes: Route[];
  dns: DNS;
  validAttachments?: GCAttachment[];
}

/** The etcd settings and key prefix: the required keys, and the rules between the TLS and user keys. */
function parseEtcd(etcd: EtcdInput | undefined): { settings: EtcdSettings; prefix: string } {
  if (!etcd) throw invalidConfig('missing "ipam.etcd": cluster-ipam needs the etcd endpoints, e.g. {"endpoints": ["http://127.0.0.1:2379"]}');
  const { endpoints, dialTimeoutMs, requestTimeoutMs, callTimeoutMs } = etcd;
  if (endpoints === undefined) throw invalidKey("ipam.etcd.endpoints", null, ENDPOINTS_WANT);
  const settings: EtcdSettings = { endpoints, dialTimeoutMs, requestTimeoutMs, callTimeoutMs };
  if (!!etcd.certFile !== !!etcd.keyFile) {
    const [given, other] = etcd.certFile ? ["certFile", "keyFile"] : ["keyFile", "certFile"];
    throw invalidKey(`ipam.etcd.${other}`, etcd[other as "certFile"] ?? null, `want a file: ${given} is set, and a client certificate needs both`);
  }
  const tlsFiles = (["certFile", "keyFile", "caFile"] as const).filter((k) => etcd[k]);
  if (tlsFiles.length && !endpoints.some((e) => e.startsWith("https:"))) {
    throw invalidKey(`ipam.etcd.${tlsFiles[0]}`, etcd[tlsFiles[0]!], "TLS files need https:// endpoints");
  }
  for (const k of tlsFiles) settings[k] = etcd[k]!;
  if (etcd.password && !etcd.username) throw invalidKey("ipam.etcd.username", etcd.username ?? null, "want a user name: password is set");
  if (etcd.username) {
    settings.username = etcd.username;
    settings.password = etcd.password ?? "";
  }
  return { settings, prefix: etcd.prefix };
}

function blockSize(value: number | undefined, family: 4 | 6): number {
  const key = family === 4 ? "ipam.blockSize" : "ipam.blockSizeV6";
  if (value === undefined || value === 0) return DEFAULT_BLOCK_SIZE[family];
  const [lo, hi] = BLOCK_SIZE_LIMITS[family];
  if (value < lo || value > hi) throw invalidKey(key, value, `want an IPv${family} prefix length from ${lo} to ${hi}`);
  return value;
}

function parseExclude(values: readonly string[] | undefined): Array<{ cidr: IPCidr; source: string }> {
  return (values ?? []).map((text, i) => {
    const where = `ipam.exclude[${i}]`;
    const cidr = text.includes("/") ? tryParseCIDR(text) : undefined;
    if (cidr) return { cidr, source: where };
    const ip = text.includes("/") ? undefined : tryParseIP(text);
    if (!ip) throw invalidKey(where, text, "want a CIDR or an IP address");
    return { cidr: { ip, prefix: addressBits(ip.family), text: ip.text }, source: where };
  });
}

/** Decodes stdin, requires `ipam`, and reads where the pool is (what every verb needs). */
function loadInput(stdin: Buffer): {
  input: Input;
  ipam: IpamInput;
  location: PoolLocation;
  validAttachments?: GCAttachment[];
  prevResult?: JsonObject;
} {
  const { conf, raw } = loadPluginConf(stdin);
  const input = decodeConfig(CLUSTER_IPAM_SCHEMA, raw);
  const ipam = requireIpam(input.ipam);
  const { settings, prefix } = parseEtcd(ipam.etcd);
  const location: PoolLocation = {
    network: conf.name,
    cniVersion: conf.cniVersion,
    etcd: settings,
    keyPrefix: `${prefix}/${conf.name}/`,
    node: ipam.nodeName ?? nodeName("", "ipam.nodeName"),
    lockDir: ipam.lockDir,
    nodeGraceMs: ipam.nodeGraceSeconds * 1000,
  };
  return {
    input,
    ipam,
    location,
    ...(conf.validAttachments ? { validAttachments: conf.validAttachments } : {}),
    ...(conf.prevResult ? { prevResult: conf.prevResult } : {}),
  };
}

/** The pools of the ranges; blockSize and exclusions checked. */
function parsePools(ipam: IpamInput, cniVersion: string): BlockPool[] {
  const sets = parseRangeSets(ipam.ranges, "ipam.ranges");
  if (sets.length === 0) throw invalidConfig('no IP ranges specified: set "ipam.ranges", e.g. [[{"subnet": "10.22.0.0/16"}]]');
  checkAddressesPerFamily(
    cniVersion,
    sets.map((s) => s.ranges[0]!.subnet.ip.family),
  );
  checkRangeSetsDisjoint(sets);
  const sizes = { 4: blockSize(ipam.blockSize, 4), 6: blockSize(ipam.blockSizeV6, 6) };
  const excluded = excludedFrom(parseExclude(ipam.exclude));
  return sets.map((set) => new BlockPool(set, sizes[set.ranges[0]!.subnet.ip.family], excluded));
}

/** Parses and validates the config for ADD, CHECK and DEL (CNI_ARGS errors are code 4, config errors code 7). */
export function parseClusterIpamConfig(stdin: Buffer, cniArgs: string): ClusterIpamConfig {
  const { input, ipam, location, validAttachments } = loadInput(stdin);
  const pools = parsePools(ipam, location.cniVersion);
  const requestedIPs = parseRequestedIPs(cniArgs, input.args?.cni?.ips, input.runtimeConfig?.ips);
  return {
    ...location,
    pools,
    requestedIPs,
    routes: parseRoutes(ipam.routes),
    dns: compactDNS(ipam.dns),
    ...(validAttachments ? { validAttachments } : {}),
  };
}

/**
 * What DEL and GC need: where the pool is, and GC's valid attachments. The ranges are not read (a DEL must not
 * fail on a range it has no use for).
 */
export function parseLocation(stdin: Buffer): PoolLocation & { validAttachments: GCAttachment[]; prevAddresses: IPAddress[] } {
  const { location, validAttachments, prevResult } = loadInput(stdin);
  return { ...location, validAttachments: validAttachments ?? [], prevAddresses: addressesOf(prevResult) };
}

/**
 * The addresses of a prevResult (`ips[].address`, as 0.3.0 and later write it), for DEL's first round trip; an
 * entry that does not parse is left out, and a prevResult of another shape gives none (DEL then reads etcd).
 */
function addressesOf(prevResult: JsonObject | undefined): IPAddress[] {
  const ips = prevResult?.["ips"];
  if (!Array.isArray(ips)) return [];
  return ips.flatMap((entry): IPAddress[] => {
    const address = isJsonObject(entry) ? entry["address"] : undefined;
    const ip = typeof address === "string" ? tryParseIP(address.split("/")[0]!) : undefined;
    return ip ? [ip] : [];
  });
}

/** What STATUS needs: the location and the pools (to tell a full range set). */
export function parsePoolLocation(stdin: Buffer): PoolLocation & { pools: BlockPool[] } {
  const { ipam, location } = loadInput(stdin);
  return { ...location, pools: parsePools(ipam, location.cniVersion) };
}

/** The connection settings with the TLS files read (code 7 naming the key when one cannot be read). */
export function readEtcdFiles(settings: EtcdSettings): EtcdConnection {
  const conn: EtcdConnection = {
    endpoints: settings.endpoints,
    dialTimeoutMs: settings.dialTimeoutMs,
    requestTimeoutMs: settings.requestTimeoutMs,
    callTimeoutMs: settings.callTimeoutMs,
  };
  if (settings.username !== undefined) {
    conn.username = settings.username;
    conn.password = settings.password ?? "";
  }
  const read = (key: "certFile" | "keyFile" | "caFile"): Buffer | undefined => {
    const file = settings[key];
    if (!file) return undefined;
    try {
      return readFileSync(file);
    } catch (e) {
      throw invalidKey(`ipam.etcd.${key}`, file, `cannot read it: ${(e as NodeJS.ErrnoException).code ?? messageOf(e)}`);
    }
  };
  const cert = read("certFile");
  const key = read("keyFile");
  const ca = read("caFile");
  if (cert || key || ca) conn.tls = { ...(cert ? { cert } : {}), ...(key ? { key } : {}), ...(ca ? { ca } : {}) };
  return conn;
}
