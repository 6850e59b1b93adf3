/**
 * The portmap plugin's configuration: the port mappings the runtime passes (capability `portMappings`), the
 * masquerading options, the backend and its backend-specific keys, and the container addresses taken from
 * the prevResult. Everything is validated before anything is changed; a bad value is a code-7 error naming
 * the key and the value.
 * @module
 */

import { bool, type Decoded, foldKey, int, list, member, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { isJsonObject, type JsonObject } from "#go-json/json.js";
import { type IPCidr, type IPFamily, parseCIDR, tryParseIP } from "#ip/ip.js";
import type { AttachmentRules, NetworkGarbage } from "#net/firewall/firewall-driver.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { type Result, toCurrentResult } from "#spec/result/index.js";
import { decodeSettings, type Settings } from "../../common/keys.js";

/** The protocols a port mapping may forward. */
export const PROTOCOLS = ["tcp", "udp", "sctp"] as const;
/** A port mapping's protocol, lower case. */
export type Protocol = (typeof PROTOCOLS)[number];

/** The backends portmap can forward with. */
export const BACKENDS = ["iptables", "nftables"] as const;
/** One of BACKENDS. */
export type PortMapBackend = (typeof BACKENDS)[number];

/** The mark bit CNI-HOSTPORT-MASQ masquerades on when `markMasqBit` is not given (the Go plugin's). */
export const DEFAULT_MARK_BIT = 13;
/** Where the nftables backend keeps its GC records when `dataDir` is not given. */
export const DEFAULT_DATA_DIR = "/run/cni/portmap";

/** The Go plugin's message when a chained plugin gets no prevResult on ADD. */
export const NOT_CHAINED = "must be called as chained plugin";

const PORT = refine(int, (v, key) => {
  if (v < 1 || v > 65535) throw invalidKey(key, v, "want a port number from 1 to 65535");
  return v;
});

const PROTOCOL_WANT = `want one of ${PROTOCOLS.map((p) => `"${p}"`).join(", ")}`;

/** A protocol in any case, as the lower-case Protocol. */
const PROTOCOL = refine(string, (v, key): Protocol => {
  const protocol = v.toLowerCase() as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw invalidKey(key, v, PROTOCOL_WANT);
  return protocol;
});

/**
 * A mapping's host address: only traffic to it is forwarded, and the mapping applies to its family only. `""`
 * is none, as in the Go plugin.
 */
const HOST_IP = refine(string, (v, key) => {
  if (v === "") return undefined;
  const ip = tryParseIP(v);
  if (!ip) throw invalidKey(key, v, "want an IPv4 or IPv6 address");
  return ip;
});

/** One mapping as the runtime sends it (containerd spells the keys `HostPort`, `ContainerPort`, ...). */
const PORT_MAP_ENTRY = struct("PortMapEntry", { hostPort: PORT, containerPort: PORT, protocol: PROTOCOL, hostIP: HOST_IP });

/** A mapping needs both ports and a protocol (a `null` entry has none); its hostIP only when one is given. */
const PORT_MAPPING = refine(PORT_MAP_ENTRY, ({ hostPort, containerPort, protocol, hostIP }, at) => {
  if (hostPort === undefined) throw invalidKey(`${at}.hostPort`, null, "want a port number from 1 to 65535");
  if (containerPort === undefined) throw invalidKey(`${at}.containerPort`, null, "want a port number from 1 to 65535");
  if (protocol === undefined) throw invalidKey(`${at}.protocol`, null, PROTOCOL_WANT);
  return { hostPort, containerPort, protocol, ...(hostIP ? { hostIP } : {}) };
});

/** One entry of `runtimeConfig.portMappings`, checked. */
export type PortMapping = Decoded<typeof PORT_MAPPING>;

const BACKEND = refine(ptr(string), (v, key) => {
  if (!(BACKENDS as readonly string[]).includes(v)) throw invalidKey(key, v, `want ${BACKENDS.map((b) => `"${b}"`).join(" or ")}`);
  return v as PortMapBackend;
});

/** An iptables chain name that a rule can jump to (it goes into iptables-restore input as one word). */
const CHAIN_NAME = refine(ptr(string), (v, key) => {
  if (!/^[^\s!"'-][^\s"']{0,27}$/.test(v)) throw invalidKey(key, v, "want an iptables chain name: 1 to 28 characters, no whitespace or quotes");
  return v;
});

const MARK_BIT = refine(ptr(int), (v, key) => {
  if (v < 0 || v > 31) throw invalidKey(key, v, "want an integer from 0 to 31");
  return v;
});

/** The Go plugin's PortMapConf (plus `dataDir`, ours): each key with its default and the values it takes. */
export const PORTMAP_SCHEMA = struct("PortMapConf", {
  ...NET_CONF_FIELDS,
  /** Masquerade hairpin and localhost traffic. */
  snat: withDefault(ptr(bool), true),
  /** Extra matches for the entry rules, per family: iptables words or nftables expressions. */
  conditionsV4: withDefault(ptr(list(string)), []),
  /** The same for IPv6. */
  conditionsV6: withDefault(ptr(list(string)), []),
  /** Masquerade all forwarded traffic, not only hairpin and localhost. */
  masqAll: withDefault(bool, false),
  /**
   * The mark bit that asks CNI-HOSTPORT-MASQ to masquerade (iptables). No default here: that it was given is
   * what conflicts with `externalSetMarkChain` (see PortMapConf for the default).
   */
  markMasqBit: MARK_BIT,
  /** A chain of someone else's that marks for masquerading (iptables), instead of CNI-HOSTPORT-SETMARK. */
  externalSetMarkChain: CHAIN_NAME,
  /** The configured backend; unset means "iptables unless only nftables works". */
  backend: BACKEND,
  /** Where the nftables backend records which containers of a network it forwards for (for GC). */
  dataDir: withDefault(string, DEFAULT_DATA_DIR, { orEmpty: true }),
  /** What the runtime passes: the port mappings (capability `portMappings`), none when absent. */
  runtimeConfig: withDefault(struct("RuntimeConfig", { portMappings: withDefault(list(PORT_MAPPING), []) }), { portMappings: [] }),
});

/** A portmap config: its keys as the schema declares them, and what follows from several of them. */
export type PortMapConf = Omit<Settings<typeof PORTMAP_SCHEMA>, "markMasqBit" | "runtimeConfig"> & {
  conf: PluginConf;
  /** `runtimeConfig.portMappings` (capability `portMappings`), checked. */
  mappings: PortMapping[];
  /** `markMasqBit`, else DEFAULT_MARK_BIT (also with `externalSetMarkChain`, as in the Go plugin). */
  markMasqBit: number;
};

/**
 * Which backend a conditions list is written for: iptables words start with `-` or `!` (`-d`, `-m`, `!`),
 * nftables expressions never do. Undefined for an empty list.
 */
export function conditionsBackend(conditions: readonly string[]): PortMapBackend | undefined {
  const first = conditions[0];
  if (!first) return undefined;
  return first.startsWith("-") || first.startsWith("!") ? "iptables" : "nftables";
}

/** The keys that only one backend understands, per backend, in the Go plugin's order. */
export function backendSpecificKeys(n: PortMapConf): Record<PortMapBackend, string[]> {
  const keys: Record<PortMapBackend, string[]> = { iptables: [], nftables: [] };
  if (n.externalSetMarkChain !== undefined) keys.iptables.push("externalSetMarkChain");
  const v4 = conditionsBackend(n.conditionsV4);
  if (v4) keys[v4].push("conditionsV4");
  const v6 = conditionsBackend(n.conditionsV6);
  if (v6) keys[v6].push("conditionsV6");
  return keys;
}

/**
 * Parses and validates the config (not the prevResult, which DEL does not need). With `forDel`, port mappings
 * the runtime sent that are not valid count as none: an ADD with them changed nothing, so DEL has nothing to
 * remove, and failing there would stop the runtime's DEL of the rest of the chain.
 */
export function loadPortMapConf(stdin: Buffer, opts: { forDel?: boolean } = {}): PortMapConf {
  const { conf, raw } = loadPluginConf(stdin);
  try {
    return readPortMapConf(conf, raw);
  } catch (e) {
    const rc = member(raw, "runtimeConfig");
    if (!opts.forDel || !isJsonObject(rc)) throw e;
    const withoutMappings = Object.fromEntries(Object.entries(rc).filter(([k]) => foldKey(k) !== foldKey("portMappings")));
    return readPortMapConf(conf, { ...raw, runtimeConfig: withoutMappings });
  }
}

function readPortMapConf(conf: PluginConf, raw: JsonObject): PortMapConf {
  const { runtimeConfig, markMasqBit, ...c } = decodeSettings(PORTMAP_SCHEMA, raw);
  if (markMasqBit !== undefined && c.externalSetMarkChain !== undefined) {
    throw invalidKey(
      "externalSetMarkChain",
      c.externalSetMarkChain,
      `cannot be used with "markMasqBit" (${markMasqBit}): the external chain sets the mark`,
    );
  }
  return { ...c, conf, mappings: runtimeConfig.portMappings, markMasqBit: markMasqBit ?? DEFAULT_MARK_BIT };
}

/** The container's address per family (with its prefix, as in the prevResult). */
export interface ContainerAddresses {
  v4?: IPCidr;
  v6?: IPCidr;
}

/**
 * The container addresses from the prevResult, as the Go plugin picks them: per family the first IP whose
 * `interface` is absent, out of range, or names `ifName` inside a sandbox.
 */
export function containerAddresses(prev: Result, ifName: string): ContainerAddresses {
  const result = toCurrentResult(prev);
  const found: ContainerAddresses = {};
  for (const ipc of result.ips ?? []) {
    const cidr = parseCIDR(ipc.address);
    const key = cidr.ip.family === 4 ? "v4" : "v6";
    if (found[key]) continue;
    const iface = ipc.interface !== undefined && ipc.interface >= 0 ? result.interfaces?.[ipc.interface] : undefined;
    if (iface && (iface.name !== ifName || !iface.sandbox)) continue;
    found[key] = cidr;
  }
  return found;
}

/** The prevResult (decoded in the config's version), or undefined. */
export const prevResultOf = (n: PortMapConf): Result | undefined => parsePrevResult(n.conf);

/** What a backend needs to forward one family's ports to one container address. */
export interface ForwardTarget {
  network: string;
  containerID: string;
  /** Every mapping (iptables lists all ports in the entry rules of both families, as Go does). */
  mappings: readonly PortMapping[];
  container: IPCidr;
  snat: boolean;
  masqAll: boolean;
  markMasqBit: number;
  externalSetMarkChain?: string;
  conditions: readonly string[];
  /** Where the nftables backend records the container for GC (none: not recorded). */
  dataDir?: string;
  /** Where a backend says what it could not do that does not fail the call. */
  warn?: (msg: string) => void;
}

/** Whose forwarding DEL removes: found by network and container alone (iptables by chain hash, nftables by ID). */
export interface ForwardOwner {
  network: string;
  containerID: string;
  dataDir: string;
  warn?: (msg: string) => void;
}

/** What GC knows: the network, its valid attachments, and where the nftables records are. */
export interface ForwardGarbage extends NetworkGarbage {
  dataDir: string;
}

/** A container's port forwarding in one backend (net/firewall-driver's contract). */
export type PortForwarding = AttachmentRules<ForwardTarget, ForwardOwner, ForwardGarbage>;

export const familyOf = (t: ForwardTarget): IPFamily => t.container.ip.family;

export function forwardTarget(n: PortMapConf, containerID: string, container: IPCidr): ForwardTarget {
  return {
    network: n.conf.name,
    containerID,
    mappings: n.mappings,
    container,
    snat: n.snat,
    masqAll: n.masqAll,
    markMasqBit: n.markMasqBit,
    externalSetMarkChain: n.externalSetMarkChain,
    conditions: container.ip.family === 4 ? n.conditionsV4 : n.conditionsV6,
    dataDir: n.dataDir,
  };
}

/** One forwarding target per family the container has an address in (the prevResult's, as containerAddresses picks them). */
export function forwardTargets(n: PortMapConf, containerID: string, ifName: string, prev: Result): ForwardTarget[] {
  const { v4, v6 } = containerAddresses(prev, ifName);
  return [v4, v6].filter((c): c is IPCidr => c !== undefined).map((c) => forwardTarget(n, containerID, c));
}

/**
 * Whether a mapping applies to a family: one without hostIP applies to both; one with hostIP only to the
 * hostIP's family. Returns the destination to match (`undefined` for any; an unspecified hostIP matches any).
 */
export function mappingFor(m: PortMapping, family: IPFamily): { applies: boolean; destination?: string } {
  if (!m.hostIP) return { applies: true };
  if (m.hostIP.family !== family) return { applies: false };
  const unspecified = m.hostIP.bytes.every((b) => b === 0);
  return { applies: true, destination: unspecified ? undefined : m.hostIP.text };
}
