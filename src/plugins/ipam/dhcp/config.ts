/**
 * The dhcp plugin's configuration, read as upstream's NetConf/IPAMConfig: `ipam.daemonSocketPath`,
 * `ipam.provide` (options sent to the server: a fixed `value` or one taken from CNI_ARGS with `fromArg`),
 * `ipam.request` (options asked for; `skipDefault` drops the default list) and `ipam.priority` (the metric of
 * every returned route), and tscni's `ipam.families` (which leases to hold: DHCPv4, DHCPv6 or both) and
 * `ipam.duidType` (how the DHCPv6 client names itself). Both the plugin (to fail before calling the daemon) and the
 * daemon (which needs the options) parse it with this module.
 * @module
 */

import { bool, type Decoded, int, list, ptr, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { loadPluginConf } from "#skel/conf.js";
import { type GCAttachment, NET_CONF_FIELDS } from "#spec/config.js";
import { invalidEnv, invalidKey } from "#spec/errors.js";
import { decodeConfig, oneOf } from "../../common/keys.js";
import { requireIpam } from "../ipam-config.js";
import { CLIENT_MANAGED, DEFAULT_REQUESTED, OPTION_NAMES, Option, parseOptionName } from "./option-codes.js";

/** Where the daemon listens unless `ipam.daemonSocketPath` says otherwise. */
export const DEFAULT_SOCKET_PATH = "/run/cni/dhcp.sock";

/** The CNI_ARGS the dhcp plugin reads for the host name it sends. */
export const POD_NAME_ARG = "K8S_POD_NAME";

/** An address family the daemon acquires a lease of. */
export type Family = "ipv4" | "ipv6";
/** The address families, in the order their leases are acquired. */
export const FAMILIES: readonly Family[] = ["ipv4", "ipv6"];

/** How the DHCPv6 client makes its DUID: DUID-LL or DUID-LLT of the interface's hardware address, or DUID-UUID. */
export type DuidKind = "ll" | "llt" | "uuid";
const DUID_KINDS: readonly DuidKind[] = ["ll", "llt", "uuid"];

const OPTION_WANT = `want an option name (${Object.keys(OPTION_NAMES).join(", ")}) or a number from 0 to 255`;

/** An option code from `text`, or a code-7 error naming `key`. */
function optionCode(text: string | undefined, key: string): number {
  const code = parseOptionName(text ?? "");
  if (code === undefined) throw invalidKey(key, text ?? "", OPTION_WANT);
  return code;
}

/**
 * An `ipam.provide` item: the option (one the client does not set itself), its fixed value (at most 255 bytes;
 * none when empty) and the CNI_ARGS key whose value it sends (read per call: see parseDhcpConfig).
 */
const PROVIDE_OPTION = refine(struct("ProvideOption", { option: string, value: string, fromArg: string }), (p, at) => {
  const code = optionCode(p.option, `${at}.option`);
  if (CLIENT_MANAGED.has(code))
    throw invalidKey(`${at}.option`, p.option ?? "", "want an option the client does not set itself (not 0, 50, 52-55, 57 or 255)");
  let value: Uint8Array | undefined;
  if (p.value) {
    const bytes = Buffer.from(p.value, "utf8");
    if (bytes.length > 255) throw invalidKey(`${at}.value`, p.value, "want at most 255 bytes");
    value = Uint8Array.from(bytes);
  }
  return { code, value, fromArg: p.fromArg ?? "" };
});

/** An `ipam.request` item: an option to ask for (none when `option` is empty), and whether to drop the default list. */
const REQUEST_OPTION = refine(struct("RequestOption", { skipDefault: withDefault(bool, false), option: string }), (r, at) => ({
  skipDefault: r.skipDefault,
  code: r.option ? optionCode(r.option, `${at}.option`) : undefined,
}));

/** `ipam.families`: a non-empty list of "ipv4" and "ipv6" without repeats, in IPv4-first order. */
const FAMILIES_KEY = refine(list(string), (value, at): Family[] => {
  if (value.length === 0) throw invalidKey(at, value, 'want "ipv4", "ipv6" or both');
  for (const [i, f] of value.entries()) {
    if (!(FAMILIES as readonly string[]).includes(f)) throw invalidKey(`${at}[${i}]`, f, 'want "ipv4" or "ipv6"');
    if (value.indexOf(f) !== i) throw invalidKey(`${at}[${i}]`, f, "given twice");
  }
  return FAMILIES.filter((f) => value.includes(f));
});

/** The IPAMConfig keys that every verb reads. */
const BASIC_IPAM_FIELDS = { type: string, daemonSocketPath: withDefault(string, DEFAULT_SOCKET_PATH, { orEmpty: true }) };

/** upstream's IPAMConfig, with tscni's `families` and `duidType`: each key with its default and the values it takes. */
const DHCP_IPAM = struct("IPAMConfig", {
  ...BASIC_IPAM_FIELDS,
  provide: withDefault(list(PROVIDE_OPTION), []),
  request: withDefault(list(REQUEST_OPTION), []),
  priority: withDefault(int, 0),
  /** IPv4 alone by default, as before DHCPv6 existed. */
  families: withDefault<Family[]>(FAMILIES_KEY, ["ipv4"]),
  duidType: withDefault(oneOf(DUID_KINDS), "ll", { orEmpty: true }),
});
type DhcpIpam = Decoded<typeof DHCP_IPAM>;

/** upstream's NetConf with its IPAMConfig. */
export const DHCP_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, ipam: ptr(DHCP_IPAM) });

/** What DEL, STATUS and GC read: the common keys and the socket. */
const BASICS_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, ipam: ptr(struct("IPAMConfig", BASIC_IPAM_FIELDS)) });

/** The dhcp config as the plugin and the daemon use it: the `ipam` keys as read, the options resolved. */
export interface DhcpConfig {
  cniVersion: string;
  /** The network name (part of the client identifier). */
  name: string;
  /** `ipam.daemonSocketPath`. */
  socketPath: DhcpIpam["daemonSocketPath"];
  /** Options every request carries besides the client's own, by code (a later entry for a code replaces an earlier one). */
  sendOptions: Map<number, Uint8Array>;
  /** The parameter request list (option 55). */
  requestList: number[];
  /** The metric of every returned route (0: none). */
  priority: DhcpIpam["priority"];
  /** `cni.dev/valid-attachments` (GC). */
  validAttachments: GCAttachment[];
  /** The leases to hold, in this order (`ipam.families`). */
  families: DhcpIpam["families"];
  /** The DHCPv6 client's DUID (`ipam.duidType`). */
  duidKind: DhcpIpam["duidType"];
}

/** CNI_ARGS as upstream's dhcp reads them: `;`-separated `key=value` pairs, anything else ignored, no errors. */
function rawCniArgs(cniArgs: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of cniArgs.split(";")) {
    const eq = pair.indexOf("=");
    if (eq >= 0) out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}

/**
 * Parses stdin (and CNI_ARGS, for `fromArg` and the pod name) as the dhcp plugin reads it. Code 6 when it
 * does not decode, code 7 naming the key for a wrong type or a bad option, code 4 for a CNI_ARGS value that
 * cannot be sent.
 */
export function parseDhcpConfig(stdin: Buffer, cniArgs: string): DhcpConfig {
  const { conf, raw } = loadPluginConf(stdin);
  const c = decodeConfig(DHCP_SCHEMA, raw);
  const ipam = requireIpam(c.ipam);
  const args = rawCniArgs(cniArgs);

  const sendOptions = new Map<number, Uint8Array>();
  for (const [i, p] of ipam.provide.entries()) {
    if (p.value) sendOptions.set(p.code, p.value);
    const fromArg = p.fromArg ? args.get(p.fromArg) : undefined;
    if (fromArg !== undefined) {
      const bytes = Buffer.from(fromArg, "utf8");
      if (bytes.length > 255) {
        throw invalidEnv(`CNI_ARGS ${p.fromArg} (for ipam.provide[${i}], option ${p.code}) has ${bytes.length} bytes; an option holds at most 255`);
      }
      sendOptions.set(p.code, Uint8Array.from(bytes));
    }
  }
  // The pod name as host name, unless the config provides one (upstream sends none: #435).
  const podName = args.get(POD_NAME_ARG);
  if (podName && !sendOptions.has(Option.HostName)) sendOptions.set(Option.HostName, Uint8Array.from(Buffer.from(podName, "utf8").subarray(0, 255)));

  const requested = ipam.request.flatMap((r) => (r.code === undefined ? [] : [r.code]));
  const skipDefault = ipam.request.some((r) => r.skipDefault);
  const requestList = [...new Set([...requested, ...(skipDefault ? [] : DEFAULT_REQUESTED)])];

  return {
    cniVersion: conf.cniVersion,
    name: conf.name,
    socketPath: ipam.daemonSocketPath,
    sendOptions,
    requestList,
    priority: ipam.priority,
    validAttachments: conf.validAttachments ?? [],
    families: ipam.families,
    duidKind: ipam.duidType,
  };
}

/** What DEL, STATUS and GC need of the config. */
export type DhcpBasics = Pick<DhcpConfig, "cniVersion" | "name" | "socketPath" | "validAttachments">;

/**
 * The network, the socket and the valid attachments, without looking at `provide` and `request`: a config whose
 * options could never ADD (upstream checks them only when allocating) still DELs what an older config added.
 */
export function parseDhcpBasics(stdin: Buffer): DhcpBasics {
  const { conf, raw } = loadPluginConf(stdin);
  const ipam = requireIpam(decodeConfig(BASICS_SCHEMA, raw).ipam);
  return {
    cniVersion: conf.cniVersion,
    name: conf.name,
    socketPath: ipam.daemonSocketPath,
    validAttachments: conf.validAttachments ?? [],
  };
}
