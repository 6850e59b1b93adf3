/**
 * The bandwidth plugin's configuration: rates in bits per second and bursts in bits, for traffic into the
 * container (ingress) and out of it (egress), either as top-level keys or from the runtime (capability
 * `bandwidth`, `runtimeConfig.bandwidth`). Top-level keys win when any of them is present, as in the Go plugin.
 * @module
 */

import { type Decoded, hasMember, ptr, struct, uint64, withDefault } from "#go-json/go-decode.js";
import { hashWithPrefix } from "#net/names.js";
import { loadPluginConf } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { decodeSettings } from "../../common/keys.js";

/** A burst's byte count must stay below 2^32 - 1, as in the Go plugin (the kernel keeps it in 32 bits). */
export const MAX_BURST_BITS = (0xffffffff - 1) * 8 + 7;

/**
 * A limit: 0 (or absent) is none. Its checks are in readLimits, run only on the entry that applies (a runtime
 * entry that top-level keys override is not read, as in Go), after the rate-and-burst pairing, in Go's order.
 */
const LIMIT = withDefault(uint64, 0);

/** Go's BandwidthEntry: rates in bits per second, bursts in bits (containerd sends `IngressRate`, ...). */
const BANDWIDTH_ENTRY = struct("BandwidthEntry", { ingressRate: LIMIT, ingressBurst: LIMIT, egressRate: LIMIT, egressBurst: LIMIT });

/** The Go plugin's PluginConf: an embedded *BandwidthEntry (top-level limits) and the runtime's entry. */
export const BANDWIDTH_SCHEMA = struct("PluginConf", {
  ...NET_CONF_FIELDS,
  ...BANDWIDTH_ENTRY.fields,
  runtimeConfig: struct("RuntimeConfig", { bandwidth: ptr(BANDWIDTH_ENTRY) }),
});

/** The limits of one direction or both, as BANDWIDTH_ENTRY declares them (0 is no limit). */
export type BandwidthLimits = Decoded<typeof BANDWIDTH_ENTRY>;

/** A bandwidth config: the limits that apply, from the top-level keys or the runtime. */
export interface BandwidthConf {
  conf: PluginConf;
  /** Undefined when neither the config nor the runtime set any limit key. */
  limits?: BandwidthLimits;
}

const KEYS = ["ingressRate", "ingressBurst", "egressRate", "egressBurst"] as const;

/** Rate and burst go together; a rate must be at least one byte per second; a burst must fit 32 bits in bytes. */
function validatePair(limits: BandwidthLimits, direction: "ingress" | "egress", prefix: string): void {
  const rateKey = `${prefix}${direction}Rate`;
  const burstKey = `${prefix}${direction}Burst`;
  const rate = limits[`${direction}Rate`];
  const burst = limits[`${direction}Burst`];
  if (rate !== 0 && burst === 0) throw invalidKey(rateKey, rate, `if a rate is set, "${burstKey}" must be set too`);
  if (burst !== 0 && rate === 0) throw invalidKey(burstKey, burst, `if a burst is set, "${rateKey}" must be set too`);
  if (rate !== 0 && rate < 8) throw invalidKey(rateKey, rate, "want at least 8 bits per second (rates are applied in whole bytes)");
  if (burst > MAX_BURST_BITS) throw invalidKey(burstKey, burst, `want at most ${MAX_BURST_BITS} bits: the burst cannot be 4 GB or more`);
}

/** The limits of one entry (the config's top level, or the runtime's), each rate with its burst. */
function readLimits(entry: BandwidthLimits, prefix: string): BandwidthLimits {
  for (const key of KEYS) {
    if (entry[key] > Number.MAX_SAFE_INTEGER) throw invalidKey(`${prefix}${key}`, entry[key], `want at most ${Number.MAX_SAFE_INTEGER}`);
  }
  const limits = Object.fromEntries(KEYS.map((key) => [key, entry[key]])) as BandwidthLimits;
  validatePair(limits, "ingress", prefix);
  validatePair(limits, "egress", prefix);
  return limits;
}

/** Parses and validates the config; every error names the key (code 7). */
export function loadBandwidthConf(stdin: Buffer): BandwidthConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeSettings(BANDWIDTH_SCHEMA, raw);
  // Go allocates the embedded entry as soon as one of its keys appears (even as null), and then uses it alone.
  if (KEYS.some((k) => hasMember(raw, k))) return { conf, limits: readLimits(c, "") };
  const fromRuntime = c.runtimeConfig?.bandwidth;
  return fromRuntime ? { conf, limits: readLimits(fromRuntime, "runtimeConfig.bandwidth.") } : { conf };
}

/** The config's network name only (DEL and GC need no more, and must not fail on a bad limit). */
export function loadNetworkOnly(stdin: Buffer): PluginConf {
  return loadPluginConf(stdin).conf;
}

export const hasIngressLimit = (l: BandwidthLimits): boolean => l.ingressRate > 0 && l.ingressBurst > 0;
export const hasEgressLimit = (l: BandwidthLimits): boolean => l.egressRate > 0 && l.egressBurst > 0;

/** The IFB device of an attachment, named as by the Go plugin: `bwp` + sha512(network + containerID), 15 chars. */
export const ifbName = (network: string, containerID: string): string => hashWithPrefix(15, "bwp", network + containerID);

const ALIAS_PREFIX = "cni:bandwidth:";
const MAX_ALIAS = 255;

/**
 * The alias recorded on an IFB we create (`cni:bandwidth:<network>/<containerID>`), so GC can tell which
 * network's attachment it belongs to. Undefined when it would not fit in a link alias.
 */
export function ifbAlias(network: string, containerID: string): string | undefined {
  const alias = `${ALIAS_PREFIX}${network}/${containerID}`;
  return Buffer.byteLength(alias) <= MAX_ALIAS ? alias : undefined;
}

/** The attachment an IFB alias names; undefined when the alias is not ours. */
export function parseIfbAlias(alias: string | undefined): { network: string; containerID: string } | undefined {
  if (!alias?.startsWith(ALIAS_PREFIX)) return undefined;
  const rest = alias.slice(ALIAS_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { network: rest.slice(0, slash), containerID: rest.slice(slash + 1) };
}
