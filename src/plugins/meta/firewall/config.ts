/**
 * The firewall plugin's configuration: the Go plugin's keys (`backend`, `iptablesAdminChainName`,
 * `firewalldZone`, `ingressPolicy`) with their defaults, plus `dataDir` (ours: where attachment records for
 * GC live). Every value is checked before anything is changed; an error names the key and value (code 7).
 * @module
 */
import * as path from "#sys/posix-path.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { string, struct } from "#go-json/go-decode.js";
import { toCurrentResult, type Result100 } from "#spec/result/index.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { DEFAULT_ADMIN_CHAIN, FORWARD_CHAIN, ISOLATION_STAGE_1, ISOLATION_STAGE_2, type IsolationPolicy } from "./iptables.js";
import { decodeConfig } from "../../common/keys.js";
import { invalidKey } from "#spec/errors.js";

export const BACKENDS = ["iptables", "nftables", "firewalld"] as const;
export type Backend = (typeof BACKENDS)[number];
export type IngressPolicy = "open" | IsolationPolicy;

export const DEFAULT_DATA_DIR = "/var/lib/cni/firewall";
const DEFAULT_ZONE = "trusted";

export interface FirewallConf {
  conf: PluginConf;
  /** Undefined: firewalld when it runs, else iptables (as the Go plugin). */
  backend?: Backend;
  adminChain: string;
  zone: string;
  ingressPolicy: IngressPolicy;
  dataDir: string;
  prevResult?: Result100;
}

/** Names iptables itself uses, and ours: an admin chain with one of them would loop or clash. */
const RESERVED_CHAINS = new Set([
  "ACCEPT",
  "DROP",
  "QUEUE",
  "RETURN",
  "INPUT",
  "FORWARD",
  "OUTPUT",
  "PREROUTING",
  "POSTROUTING",
  FORWARD_CHAIN,
  ISOLATION_STAGE_1,
  ISOLATION_STAGE_2,
]);

/** The Go plugin's FirewallNetConf (plus `dataDir`, ours). */
export const FIREWALL_SCHEMA = struct("FirewallNetConf", {
  ...NET_CONF_FIELDS,
  backend: string,
  iptablesAdminChainName: string,
  firewalldZone: string,
  ingressPolicy: string,
  dataDir: string,
});

function parseAdminChain(name: string | undefined): string {
  if (!name) return DEFAULT_ADMIN_CHAIN;
  if (name.length > 28 || !/^[^\s!'"-][^\s'"]*$/.test(name)) {
    throw invalidKey(
      "iptablesAdminChainName",
      name,
      "want an iptables chain name: at most 28 characters, no whitespace or quotes, not starting with '-' or '!'",
    );
  }
  if (RESERVED_CHAINS.has(name)) throw invalidKey("iptablesAdminChainName", name, "this name is taken by iptables or the plugin itself");
  return name;
}

export function loadFirewallConf(stdin: Buffer): FirewallConf {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(FIREWALL_SCHEMA, raw);
  const backend = c.backend || undefined;
  if (backend !== undefined && !(BACKENDS as readonly string[]).includes(backend)) {
    throw invalidKey(
      "backend",
      backend,
      `want one of ${BACKENDS.map((b) => `"${b}"`).join(", ")}, or no backend for firewalld when it runs and iptables otherwise`,
    );
  }
  const policy = c.ingressPolicy || "open";
  if (policy !== "open" && policy !== "same-bridge" && policy !== "isolated") {
    throw invalidKey("ingressPolicy", policy, 'want "open", "same-bridge" or "isolated"');
  }
  const zone = c.firewalldZone || DEFAULT_ZONE;
  if (zone.startsWith("-") || /\s/.test(zone)) throw invalidKey("firewalldZone", zone, "want a firewalld zone name");
  const dataDir = c.dataDir || DEFAULT_DATA_DIR;
  if (!path.isAbsolute(dataDir)) throw invalidKey("dataDir", dataDir, "want an absolute path");
  const n: FirewallConf = {
    conf,
    backend: backend as Backend | undefined,
    adminChain: parseAdminChain(c.iptablesAdminChainName),
    zone,
    ingressPolicy: policy,
    dataDir,
  };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
