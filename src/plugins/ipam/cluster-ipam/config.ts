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
import { tryParseCIDR, tryParseIP, type IPAddress, type IPCidr } from "#ip/ip.js";
import { addressBits } from "#ip/ip-math.js";
import { compactDNS, DNS_TYPE, type DNS, type Route } from "#spec/result/common.js";
import { NET_CONF_FIELDS, type GCAttachment } from "#spec/config.js";
import { isJsonObject, type JsonObject } from "#go-json/json.js";
import { int, list, ptr, string, struct, type Decoded } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { checkAddressesPerFamily, IPAM_ARGS_FIELD, parseRoutes, requireIpam, ROUTES_FIELD } from "../ipam-config.js";
import { checkRangeSetsDisjoint, parseRangeSets, parseRequestedIPs, RANGE_SET } from "../ranges.js";
import { decodeConfig } from "../../common/keys.js";
import { BlockPool, excludedFrom } from "./blocks.js";
import type { EtcdConnection } from "./etcd.js";
import { invalidConfig, invalidKey, messageOf } from "#spec/errors.js";

const ETCD = struct("EtcdConfig", {
  endpoints: list(string),
  certFile: string,
  keyFile: string,
  caFile: string,
  username: string,
  password: string,
  prefix: string,
  dialTimeoutMs: int,
  requestTimeoutMs: int,
  callTimeoutMs: int,
});

/** cluster-ipam's config, in the shape of a Go plugin's struct (keys in any case, as Go reads them). */
export const CLUSTER_IPAM_SCHEMA = struct("Net", {
  ...NET_CONF_FIELDS,
  ipam: ptr(
    struct("IPAMConfig", {
      name: string,
      type: string,
      etcd: ptr(ETCD),
      ranges: list(RANGE_SET),
      blockSize: int,
      blockSizeV6: int,
      nodeName: string,
      exclude: list(string),
      routes: ROUTES_FIELD,
      dns: DNS_TYPE,
      lockDir: string,
      nodeGraceSeconds: int,
    }),
  ),
  runtimeConfig: struct("RuntimeConfig", { ips: list(string) }),
  args: IPAM_ARGS_FIELD,
});

type Input = Decoded<typeof CLUSTER_IPAM_SCHEMA>;
type IpamInput = NonNullable<Input["ipam"]>;

export const DEFAULT_PREFIX = "/tscni/ipam";
export const DEFAULT_DIAL_TIMEOUT_MS = 2000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;
/**
 * A call waits this long for etcd before failing: under kubelet's 2-minute runtime request deadline and the
 * resident server's 5-minute call limit, so an overloaded etcd makes calls wait, not fail.
 */
export const DEFAULT_CALL_TIMEOUT_MS = 100_000;
export const DEFAULT_BLOCK_SIZE = { 4: 26, 6: 122 } as const;
/** Block sizes allowed (Calico's limits): at most 4096 addresses per block, which a node reads in one go. */
export const BLOCK_SIZE_LIMITS = { 4: [20, 32], 6: [116, 128] } as const;
/** Where the per-node lock files live (one per network and node name). */
export const DEFAULT_LOCK_DIR = "/run/tscni/cluster-ipam";

/** etcd settings as configured (the TLS files not read yet). */
export interface EtcdSettings {
  endpoints: string[];
  certFile?: string;
  keyFile?: string;
  caFile?: string;
  username?: string;
  password?: string;
  dialTimeoutMs: number;
  requestTimeoutMs: number;
  /** How long a call may wait for etcd in all (its turn, repeats); see EtcdConnection. */
  callTimeoutMs: number;
}

/** What every verb needs: the network's place in etcd and how to get there. */
export interface PoolLocation {
  network: string;
  cniVersion: string;
  etcd: EtcdSettings;
  /** The network's key prefix: `<ipam.etcd.prefix>/<network>/`. */
  keyPrefix: string;
  node: string;
  lockDir: string;
  /**
   * How long a node may go without an ADD, STATUS or GC before its blocks and allocations may be reclaimed by another
   * node's ADD that finds no free block (`ipam.nodeGraceSeconds`; 0: never, the default).
   */
  nodeGraceMs: number;
}

export interface ClusterIpamConfig extends PoolLocation {
  /** One pool per range set, in config order (one address from each per ADD). */
  pools: BlockPool[];
  requestedIPs: IPAddress[];
  routes: Route[];
  dns: DNS;
  validAttachments?: GCAttachment[];
}

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

function timeout(value: number | undefined, key: string, dflt: number): number {
  if (value === undefined || value === 0) return dflt;
  if (value < 1 || value > 600_000) throw invalidKey(key, value, "want milliseconds from 1 to 600000");
  return value;
}

function parseEtcd(etcd: Decoded<typeof ETCD> | undefined): { settings: EtcdSettings; prefix: string } {
  if (!etcd) throw invalidConfig('missing "ipam.etcd": cluster-ipam needs the etcd endpoints, e.g. {"endpoints": ["http://127.0.0.1:2379"]}');
  const endpoints = (etcd.endpoints ?? []).map((e, i) => parseEndpoint(e, `ipam.etcd.endpoints[${i}]`));
  if (endpoints.length === 0) throw invalidKey("ipam.etcd.endpoints", etcd.endpoints ?? null, "want at least one URL such as http://127.0.0.1:2379");
  const settings: EtcdSettings = {
    endpoints,
    dialTimeoutMs: timeout(etcd.dialTimeoutMs, "ipam.etcd.dialTimeoutMs", DEFAULT_DIAL_TIMEOUT_MS),
    requestTimeoutMs: timeout(etcd.requestTimeoutMs, "ipam.etcd.requestTimeoutMs", DEFAULT_REQUEST_TIMEOUT_MS),
    callTimeoutMs: timeout(etcd.callTimeoutMs, "ipam.etcd.callTimeoutMs", DEFAULT_CALL_TIMEOUT_MS),
  };
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
  let prefix = etcd.prefix || DEFAULT_PREFIX;
  if (!prefix.startsWith("/") || prefix.includes("\u0000")) throw invalidKey("ipam.etcd.prefix", prefix, "want a key prefix starting with /");
  prefix = prefix.replace(/\/+$/, "");
  return { settings, prefix };
}

/** Node names go into keys: no slashes, spaces or control characters. */
function parseNodeName(value: string | undefined): string {
  const node = value || os.hostname();
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$/.test(node)) {
    throw invalidKey("ipam.nodeName", node, "want a node name of letters, digits, '.', '_', ':' and '-'");
  }
  return node;
}

/** The grace period of a silent node, in ms (0: off). */
function nodeGrace(value: number | undefined): number {
  if (value === undefined || value === 0) return 0;
  if (value < 1 || value > 31_536_000) throw invalidKey("ipam.nodeGraceSeconds", value, "want seconds from 1 to 31536000 (a year), or 0 for never");
  return value * 1000;
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
    node: parseNodeName(ipam.nodeName),
    lockDir: ipam.lockDir || DEFAULT_LOCK_DIR,
    nodeGraceMs: nodeGrace(ipam.nodeGraceSeconds),
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
