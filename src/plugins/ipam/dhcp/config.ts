/**
 * The dhcp plugin's configuration, read as upstream's NetConf/IPAMConfig: `ipam.daemonSocketPath`,
 * `ipam.provide` (options sent to the server: a fixed `value` or one taken from CNI_ARGS with `fromArg`),
 * `ipam.request` (options asked for; `skipDefault` drops the default list) and `ipam.priority` (the metric of
 * every returned route), and tscni's `ipam.families` (which leases to hold: DHCPv4, DHCPv6 or both) and
 * `ipam.duidType` (how the DHCPv6 client names itself). Both the plugin (to fail before calling the daemon) and the
 * daemon (which needs the options) parse it with this module.
 * @module
 */
import { invalidEnv, invalidKey } from "#spec/errors.js";
import { bool, int, list, ptr, string, struct } from "#go-json/go-decode.js";
import { NET_CONF_FIELDS, type GCAttachment } from "#spec/config.js";
import { loadPluginConf } from "#skel/conf.js";
import { decodeConfig } from "../../common/keys.js";
import { requireIpam } from "../ipam-config.js";
import { CLIENT_MANAGED, DEFAULT_REQUESTED, Option, OPTION_NAMES, parseOptionName } from "./option-codes.js";

/** Where the daemon listens unless `ipam.daemonSocketPath` says otherwise. */
export const DEFAULT_SOCKET_PATH = "/run/cni/dhcp.sock";

const PROVIDE_OPTION = struct("ProvideOption", { option: string, value: string, fromArg: string });
const REQUEST_OPTION = struct("RequestOption", { skipDefault: bool, option: string });

/** upstream's NetConf with its IPAMConfig. */
export const DHCP_SCHEMA = struct("NetConf", {
  ...NET_CONF_FIELDS,
  ipam: ptr(
    struct("IPAMConfig", {
      type: string,
      daemonSocketPath: string,
      provide: list(PROVIDE_OPTION),
      request: list(REQUEST_OPTION),
      priority: int,
      families: list(string),
      duidType: string,
    }),
  ),
});

/** What DEL, STATUS and GC read: the common keys and the socket. */
const BASICS_SCHEMA = struct("NetConf", { ...NET_CONF_FIELDS, ipam: ptr(struct("IPAMConfig", { type: string, daemonSocketPath: string })) });

/** The CNI_ARGS the dhcp plugin reads for the host name it sends. */
export const POD_NAME_ARG = "K8S_POD_NAME";

/** An address family the daemon acquires a lease of. */
export type Family = "ipv4" | "ipv6";
export const FAMILIES: readonly Family[] = ["ipv4", "ipv6"];

/** How the DHCPv6 client makes its DUID: DUID-LL or DUID-LLT of the interface's hardware address, or DUID-UUID. */
export type DuidKind = "ll" | "llt" | "uuid";
const DUID_KINDS: readonly DuidKind[] = ["ll", "llt", "uuid"];

export interface DhcpConfig {
  cniVersion: string;
  /** The network name (part of the client identifier). */
  name: string;
  socketPath: string;
  /** Options every request carries besides the client's own, by code (a later entry for a code replaces an earlier one). */
  sendOptions: Map<number, Uint8Array>;
  /** The parameter request list (option 55). */
  requestList: number[];
  /** The metric of every returned route (0: none). */
  priority: number;
  /** `cni.dev/valid-attachments` (GC). */
  validAttachments: GCAttachment[];
  /** The leases to hold, in this order (`ipam.families`; IPv4 alone by default). */
  families: Family[];
  /** The DHCPv6 client's DUID (`ipam.duidType`; DUID-LL by default). */
  duidKind: DuidKind;
}

const OPTION_WANT = `want an option name (${Object.keys(OPTION_NAMES).join(", ")}) or a number from 0 to 255`;

/** CNI_ARGS as upstream's dhcp reads them: `;`-separated `key=value` pairs, anything else ignored, no errors. */
function rawCniArgs(cniArgs: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of cniArgs.split(";")) {
    const eq = pair.indexOf("=");
    if (eq >= 0) out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}

/** An option code from `text`, or a code-7 error naming `key`. */
function optionCode(text: string | undefined, key: string): number {
  const code = parseOptionName(text ?? "");
  if (code === undefined) throw invalidKey(key, text ?? "", OPTION_WANT);
  return code;
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
  for (const [i, p] of (ipam.provide ?? []).entries()) {
    const key = `ipam.provide[${i}]`;
    const code = optionCode(p.option, `${key}.option`);
    if (CLIENT_MANAGED.has(code))
      throw invalidKey(`${key}.option`, p.option ?? "", "want an option the client does not set itself (not 0, 50, 52-55, 57 or 255)");
    if (p.value) {
      const bytes = Buffer.from(p.value, "utf8");
      if (bytes.length > 255) throw invalidKey(`${key}.value`, p.value, "want at most 255 bytes");
      sendOptions.set(code, Uint8Array.from(bytes));
    }
    const fromArg = p.fromArg ? args.get(p.fromArg) : undefined;
    if (fromArg !== undefined) {
      const bytes = Buffer.from(fromArg, "utf8");
      if (bytes.length > 255) {
        throw invalidEnv(`CNI_ARGS ${p.fromArg} (for ${key}, option ${code}) has ${bytes.length} bytes; an option holds at most 255`);
      }
      sendOptions.set(code, Uint8Array.from(bytes));
    }
  }
  // The pod name as host name, unless the config provides one (upstream sends none: #435).
  const podName = args.get(POD_NAME_ARG);
  if (podName && !sendOptions.has(Option.HostName)) sendOptions.set(Option.HostName, Uint8Array.from(Buffer.from(podName, "utf8").subarray(0, 255)));

  const requested: number[] = [];
  let skipDefault = false;
  for (const [i, r] of (ipam.request ?? []).entries()) {
    if (r.skipDefault) skipDefault = true;
    if (!r.option) continue;
    requested.push(optionCode(r.option, `ipam.request[${i}].option`));
  }
  const requestList = [...new Set([...requested, ...(skipDefault ? [] : DEFAULT_REQUESTED)])];
  const families = parseFamilies(ipam.families);
  const duidKind = ipam.duidType || "ll";
  if (!(DUID_KINDS as readonly string[]).includes(duidKind))
    throw invalidKey("ipam.duidType", duidKind, `want one of ${DUID_KINDS.map((k) => JSON.stringify(k)).join(", ")}`);

  return {
    cniVersion: conf.cniVersion,
    name: conf.name,
    socketPath: ipam.daemonSocketPath || DEFAULT_SOCKET_PATH,
    sendOptions,
    requestList,
    priority: ipam.priority ?? 0,
    validAttachments: conf.validAttachments ?? [],
    families,
    duidKind: duidKind as DuidKind,
  };
}

/** `ipam.families`: a non-empty list of "ipv4" and "ipv6" without repeats (IPv4 alone when absent), in IPv4-first order. */
function parseFamilies(value: string[] | undefined): Family[] {
  if (value === undefined) return ["ipv4"];
  if (value.length === 0) throw invalidKey("ipam.families", value, 'want "ipv4", "ipv6" or both');
  for (const [i, f] of value.entries()) {
    if (!(FAMILIES as readonly string[]).includes(f)) throw invalidKey(`ipam.families[${i}]`, f, 'want "ipv4" or "ipv6"');
    if (value.indexOf(f) !== i) throw invalidKey(`ipam.families[${i}]`, f, "given twice");
  }
  return FAMILIES.filter((f) => value.includes(f));
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
    socketPath: ipam.daemonSocketPath || DEFAULT_SOCKET_PATH,
    validAttachments: conf.validAttachments ?? [],
  };
}
