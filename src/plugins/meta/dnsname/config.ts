/**
 * The dnsname plugin's configuration: containers/dnsname's keys (`domainName`, capability `aliases` as
 * `runtimeConfig.aliases[<network>]`), the pod name from CNI_ARGS `K8S_POD_NAME`, and from the prevResult the
 * network's bridge (interface 0) and the container's addresses. Everything a name or path is built from is checked
 * before anything changes; a bad value is a code-7 error naming the key and the value.
 * @module
 */

import { list, map, refine, string, struct, withDefault } from "#go-json/go-decode.js";
import { tryParseCIDR } from "#ip/ip.js";
import { loadPluginConf, parsePrevResult } from "#skel/conf.js";
import { loadCniArgs } from "#spec/args.js";
import { NET_CONF_FIELDS, type PluginConf } from "#spec/config.js";
import { invalidCniArgs, invalidConfig, invalidKey } from "#spec/errors.js";
import { type Result100, toCurrentResult } from "#spec/result/index.js";
import { validateNetworkName } from "#spec/validate.js";
import { decodeSettings, linkName, type Settings } from "../../common/keys.js";

/** What podman writes into its networks' dnsname entry (the Go plugin itself has no default). */
export const DEFAULT_DOMAIN = "dns.podman";

/** The Go plugin's message when ADD gets no prevResult. */
export const NOT_CHAINED = "must be called as chained plugin";

/** The CNI_ARGS key runtimes put the pod's (podman: the container's) name in. */
export const POD_NAME_ARG = "K8S_POD_NAME";

/** The part of a prevResult dnsname works from. */
export interface Attachment {
  /** The host interface dnsmasq listens on: the prevResult's first interface. */
  bridge: string;
  /** The container's addresses, as Go prints them (no prefix). */
  addresses: string[];
}

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** A container name's labels may also hold `_`: podman's generated names do (`exciting_chebyshev`). */
const NAME_LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

const isDnsName = (value: string, label: RegExp): boolean => value.length > 0 && value.length <= 253 && value.split(".").every((l) => label.test(l));

/**
 * A container's name or alias as dnsmasq's hosts file may hold it: dot-separated labels of 1 to 63 letters, digits,
 * hyphens and underscores, not starting or ending with a hyphen, at most 253 characters in all. Anything else
 * (whitespace, `#`, control characters) would change the hosts file's meaning, so it is refused (code 7, naming it).
 */
export function containerName(value: string, key: string): string {
  if (!isDnsName(value, NAME_LABEL)) {
    throw invalidKey(key, value, "want a DNS name: labels of 1 to 63 letters, digits, '-' or '_', not starting or ending with '-', joined by '.'");
  }
  return value;
}

/** A domain name: RFC 1123 labels joined by dots (it goes into dnsmasq.conf as `local=/<domain>/` and `domain=`). */
const DOMAIN_NAME = refine(string, (value, key) => {
  if (!isDnsName(value, LABEL)) {
    throw invalidKey(key, value, "want a domain name: labels of 1 to 63 letters, digits or '-', not starting or ending with '-', joined by '.'");
  }
  return value;
});

/** The Go plugin's DNSNameConf: each key with its default and the values it takes. */
export const DNSNAME_SCHEMA = struct("DNSNameConf", {
  ...NET_CONF_FIELDS,
  /** The search domain dnsmasq answers for; empty is podman's. */
  domainName: withDefault(DOMAIN_NAME, DEFAULT_DOMAIN, { orEmpty: true }),
  /** The container's aliases per network (capability `aliases`); only this network's are read, and checked. */
  runtimeConfig: struct("RuntimeConfig", { aliases: map(list(string)) }),
});

/** A dnsname config: its keys as the schema declares them, and what follows from them, CNI_ARGS and the prevResult. */
export type DnsnameConf = Omit<Settings<typeof DNSNAME_SCHEMA>, "runtimeConfig"> & {
  conf: PluginConf;
  /** This network's aliases of the container (`runtimeConfig.aliases[<network>]`), checked, without repeats. */
  aliases: string[];
  /** CNI_ARGS K8S_POD_NAME, checked. */
  podName: string;
  prevResult: Result100;
  /** What dnsname works from in the prevResult: the bridge and the container's addresses. */
  attachment: Attachment;
};

/** CNI_ARGS K8S_POD_NAME as given (undefined when absent); unknown keys need IgnoreUnknown, as Go's LoadArgs. Code 4 when unreadable. */
export function podNameArg(cniArgs: string): string | undefined {
  try {
    return loadCniArgs(cniArgs, { [POD_NAME_ARG]: (v: string) => v })[POD_NAME_ARG];
  } catch (e) {
    throw invalidCniArgs(e);
  }
}

/**
 * Parses and checks the config and CNI_ARGS as ADD and CHECK need them (nothing is read from the system): the
 * prevResult is required, and so is a pod name.
 */
export function loadDnsnameConf(stdin: Buffer, cniArgs: string): DnsnameConf {
  const { conf, raw } = loadPluginConf(stdin);
  validateNetworkName(conf.name);
  const { runtimeConfig, ...c } = decodeSettings(DNSNAME_SCHEMA, raw);
  const key = `runtimeConfig.aliases[${JSON.stringify(conf.name)}]`;
  const aliases = [...new Set((runtimeConfig?.aliases?.get(conf.name) ?? []).map((a, i) => containerName(a, `${key}[${i}]`)))];
  const podName = podNameArg(cniArgs);
  if (podName === undefined || podName === "") {
    throw invalidConfig(
      `dnsname needs the container's name in CNI_ARGS ${POD_NAME_ARG}`,
      `runtimes pass it as "IgnoreUnknown=1;${POD_NAME_ARG}=<name>"`,
    );
  }
  const prev = parsePrevResult(conf);
  if (!prev) throw invalidConfig(NOT_CHAINED, "dnsname must follow the plugin that made the network's bridge (prevResult missing)");
  const prevResult = toCurrentResult(prev);
  return { ...c, conf, aliases, podName: containerName(podName, POD_NAME_ARG), prevResult, attachment: attachmentOf(prevResult) };
}

/**
 * What DEL can learn from its input, never failing on what it does not need: the network name, the pod name when
 * CNI_ARGS holds a valid one, the prevResult when there is a readable one.
 */
export function loadDelConf(stdin: Buffer, cniArgs: string): { network: string; podName?: string; prevResult?: Result100 } {
  const { conf } = loadPluginConf(stdin);
  validateNetworkName(conf.name);
  const out: { network: string; podName?: string; prevResult?: Result100 } = { network: conf.name };
  try {
    const name = podNameArg(cniArgs);
    if (name) out.podName = containerName(name, POD_NAME_ARG);
  } catch {
    /* unreadable or invalid: ADD refused it, so no line carries it */
  }
  try {
    const prev = parsePrevResult(conf);
    if (prev) out.prevResult = toCurrentResult(prev);
  } catch {
    /* unreadable: the attachment record still names the addresses */
  }
  return out;
}

/**
 * The bridge and the container's addresses in a prevResult. As Go: with one address, that address; with more,
 * those on interfaces in a sandbox (ours also takes addresses that name no interface); none is an error.
 */
export function attachmentOf(prev: Result100): Attachment {
  const first = prev.interfaces?.[0];
  if (!first?.name) {
    throw invalidConfig(
      "dnsname needs the network's bridge as the prevResult's first interface, and it has none",
      "chain dnsname after the bridge plugin",
    );
  }
  if (first.sandbox) {
    throw invalidConfig(
      `the prevResult's first interface ${JSON.stringify(first.name)} is in the container (${first.sandbox}), not a host bridge`,
      "chain dnsname after the bridge plugin",
    );
  }
  const bridge = linkName(first.name, "prevResult.interfaces[0].name");
  const ips = prev.ips ?? [];
  const addresses: string[] = [];
  ips.forEach((ipc, i) => {
    const cidr = tryParseCIDR(ipc.address);
    if (!cidr) throw invalidKey(`prevResult.ips[${i}].address`, ipc.address, "want an address with its prefix length");
    const index = ipc.interface;
    if (ips.length > 1 && index !== undefined) {
      const iface = prev.interfaces?.[index];
      if (!iface) throw invalidKey(`prevResult.ips[${i}].interface`, index, `want an index into the ${prev.interfaces?.length ?? 0} interfaces`);
      if (!iface.sandbox) return;
    }
    if (!addresses.includes(cidr.ip.text)) addresses.push(cidr.ip.text);
  });
  if (addresses.length === 0) throw invalidConfig("no ip address was found in the network", "the prevResult gives the container no address");
  return { bridge, addresses };
}
