/**
 * The firewall plugin's configuration: the Go plugin's keys (`backend`, `iptablesAdminChainName`,
 * `firewalldZone`, `ingressPolicy`) with their defaults, plus `dataDir` (ours: where attachment records for
 * GC live). Every value is checked before anything is changed; an error names the key and value (code 7).
 * @module
 */

import { refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidKey } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";
import * as path from "#sys/posix-path.js";
import { decodeSettings, type Settings } from "../../common/keys.js";
import { DEFAULT_ADMIN_CHAIN, FORWARD_CHAIN, ISOLATION_STAGE_1, ISOLATION_STAGE_2, type IsolationPolicy } from "./iptables.js";

/** The backends `backend` names. */
export const BACKENDS = ["iptables", "nftables", "firewalld"] as const;
/** A firewall backend. */
export type Backend = (typeof BACKENDS)[number];
/** `ingressPolicy`: open, or one of the isolation policies. */
export type IngressPolicy = "open" | IsolationPolicy;

/** Where attachment records for GC live when `dataDir` is not set. */
export const DEFAULT_DATA_DIR = "/var/lib/cni/firewall";

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

/** `backend`: one of BACKENDS; empty (or absent) is undefined, firewalld when it runs, else iptables (as the Go plugin). */
const BACKEND = refine(string, (v, key): Backend | undefined => {
  if (v === "") return undefined;
  if (!(BACKENDS as readonly string[]).includes(v)) {
    throw invalidKey(
      key,
      v,
      `want one of ${BACKENDS.map((b) => `"${b}"`).join(", ")}, or no backend for firewalld when it runs and iptables otherwise`,
    );
  }
  return v as Backend;
});

/** An iptables chain name that is not taken by iptables or the plugin. */
const ADMIN_CHAIN = refine(string, (name, key) => {
  if (name.length > 28 || !/^[^\s!'"-][^\s'"]*$/.test(name)) {
    throw invalidKey(key, name, "want an iptables chain name: at most 28 characters, no whitespace or quotes, not starting with '-' or '!'");
  }
  if (RESERVED_CHAINS.has(name)) throw invalidKey(key, name, "this name is taken by iptables or the plugin itself");
  return name;
});

/** A firewalld zone name (passed to firewalld as an argument, so not an option). */
const ZONE = refine(string, (zone, key) => {
  if (zone.startsWith("-") || /\s/.test(zone)) throw invalidKey(key, zone, "want a firewalld zone name");
  return zone;
});

/** `ingressPolicy`: how traffic into the container from other networks is treated. */
const INGRESS_POLICY = refine(string, (v, key): IngressPolicy => {
  if (v !== "open" && v !== "same-bridge" && v !== "isolated") throw invalidKey(key, v, 'want "open", "same-bridge" or "isolated"');
  return v;
});

/** `dataDir`: absolute, so records are found whatever the runtime's working directory. */
const DATA_DIR = refine(string, (dir, key) => {
  if (!path.isAbsolute(dir)) throw invalidKey(key, dir, "want an absolute path");
  return dir;
});

/** The Go plugin's FirewallNetConf (plus `dataDir`, ours); an empty string reads as a key's default, as in Go. */
export const FIREWALL_SCHEMA = struct("FirewallNetConf", {
  ...NET_CONF_FIELDS,
  backend: BACKEND,
  iptablesAdminChainName: withDefault(ADMIN_CHAIN, DEFAULT_ADMIN_CHAIN, { orEmpty: true }),
  firewalldZone: withDefault(ZONE, "trusted", { orEmpty: true }),
  ingressPolicy: withDefault(INGRESS_POLICY, "open", { orEmpty: true }),
  dataDir: withDefault(DATA_DIR, DEFAULT_DATA_DIR, { orEmpty: true }),
});

/** A firewall config: its keys as the schema declares them, and the prevResult in the current version. */
export type FirewallConf = Settings<typeof FIREWALL_SCHEMA> & { conf: PluginConf; prevResult?: Result100 };

/** Parses and validates the firewall config (every key before anything is changed). */
export function loadFirewallConf(stdin: Buffer): FirewallConf {
  const { conf, raw } = loadPluginConf(stdin);
  const n: FirewallConf = { ...decodeSettings(FIREWALL_SCHEMA, raw), conf };
  const prev = parsePrevResult(conf);
  if (prev) n.prevResult = toCurrentResult(prev);
  return n;
}
