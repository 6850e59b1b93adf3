/**
 * Reading plugin-specific config keys into typed values: each plugin decodes its config into a schema that
 * mirrors the Go plugin's struct (go-json/go-decode.ts) and is each key's one declaration: its type, its default
 * (`withDefault`) and what values it takes (`refine`, with the checks below). The plugin's config type is
 * derived from the schema (`Settings`). A wrong type or value is a CNI error (code 7, invalid network config)
 * whose message names the key and the value, e.g. `invalid "mtu": "abc" (want an integer)`.
 * @module
 */

import { type Decoded, DecodeError, decodeGo, type GoType, int, ptr, refine, string } from "#go-json/go-decode.js";
import type { JsonObject } from "#go-json/json.js";
import type { IPMasqBackend } from "#net/firewall/ipmasq.js";
import { loadCniArgs } from "#spec/args.js";
import { NET_CONF_FIELDS } from "#spec/config.js";
import { invalidCniArgs, invalidKey } from "#spec/errors.js";

/**
 * Decodes a plugin's config object into its Go-shaped schema with Go's rules (go-json/go-decode.ts): keys in
 * any case, null as absent, integers as Go reads them. A value of the wrong type is code 7 naming the key.
 */
export function decodeConfig<T>(schema: GoType<T>, raw: JsonObject): T {
  try {
    return decodeGo(schema, raw);
  } catch (e) {
    if (e instanceof DecodeError && e.path) throw invalidKey(e.path, e.value, `want ${e.want}`);
    throw e;
  }
}

/** The keys every config has: they are decoded into `PluginConf` (skel/conf.ts), not into a plugin's settings. */
type Common = typeof NET_CONF_FIELDS;

/** The keys of Common that schema `S` takes as NET_CONF_FIELDS declares them (a plugin may redefine one: flannel's `ipam`). */
type CommonKeysOf<S> = S extends { fields: infer F }
  ? { [K in keyof Common & keyof F]: [F[K]] extends [Common[K]] ? K : never }[keyof Common & keyof F]
  : never;

/** A plugin's own keys as its schema declares them (defaults filled in, refined values converted). */
export type Settings<S extends GoType<unknown>> = Omit<Decoded<S>, CommonKeysOf<S>>;

/** Decodes a plugin's own keys (see Settings): decodeConfig, without the common keys the schema takes as they are. */
export function decodeSettings<S extends GoType<unknown>>(schema: S, raw: JsonObject): Settings<S> {
  const decoded = decodeConfig(schema, raw) as Record<string, unknown>;
  for (const [key, type] of Object.entries(NET_CONF_FIELDS)) if (schema.fields?.[key] === type) delete decoded[key];
  return decoded as Settings<S>;
}

const MAC_PATTERN = /^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/;

/** A MAC address in canonical lower-case colon form; throws naming `key` when it is not one. */
function parseMac(value: string, key: string): string {
  if (!MAC_PATTERN.test(value)) throw invalidKey(key, value, "want a MAC address like 0a:58:0a:f4:00:01");
  return value.toLowerCase().replaceAll("-", ":");
}

/** A MAC for an interface: a valid MAC (see parseMac) that is not a multicast address. */
function unicastMac(value: string, key: string): string {
  const mac = parseMac(value, key);
  if (parseInt(mac.slice(0, 2), 16) & 1) throw invalidKey(key, value, "a multicast MAC cannot be an interface's address");
  return mac;
}

/**
 * The MAC an interface is to get, from several places a config or runtime can give it, lowest priority first
 * (`[key as messages name it, value]`): the last one set wins, and must be a unicast MAC.
 */
export function chooseMac(sources: ReadonlyArray<readonly [string, string | undefined]>): string | undefined {
  const chosen = sources.filter(([, value]) => value).at(-1);
  return chosen ? unicastMac(chosen[1]!, chosen[0]) : undefined;
}

/** CNI_ARGS `MAC` (the only key these plugins read; others need IgnoreUnknown, as in Go). Bad CNI_ARGS are code 4. */
export function cniArgsMac(cniArgs: string): string | undefined {
  try {
    return loadCniArgs(cniArgs, { MAC: (v: string) => v }).MAC;
  } catch (e) {
    throw invalidCniArgs(e);
  }
}

/** A link name as the kernel takes it: 1 to 15 bytes, not `.` or `..`, no `/`, `:` or whitespace. */
export function linkName(value: string, key: string): string {
  if (!value || Buffer.byteLength(value) > 15 || value === "." || value === ".." || /[/:\s]/.test(value)) {
    throw invalidKey(key, value, "want a link name: 1 to 15 characters, no '/', ':' or whitespace");
  }
  return value;
}

/** `ipMasqBackend`: "iptables" or "nftables"; undefined (absent) lets the network layer choose. */
function ipMasqBackend(value: string | undefined, key = "ipMasqBackend"): IPMasqBackend | undefined {
  if (value !== undefined && value !== "iptables" && value !== "nftables") throw invalidKey(key, value, 'want "iptables" or "nftables"');
  return value;
}

/**
 * An interface MTU: 0 (or absent) for the default (`zeroMeans` words what that is), else 68 (IPv4's minimum) to
 * 65535; undefined for the default.
 */
function interfaceMtu(value: number | undefined, key = "mtu", zeroMeans = "the default"): number | undefined {
  if (value !== undefined && value !== 0 && (value < 68 || value > 65535)) throw invalidKey(key, value, `want 0 for ${zeroMeans}, or 68 to 65535`);
  return value || undefined;
}

// ---- refined key types, for schemas -------------------------------------------------------------------------

/** A link name (see linkName). */
export const LINK_NAME = refine(string, linkName);

/** `ipMasqBackend` (see ipMasqBackend): a pointer, so `null` is unset. */
export const IP_MASQ_BACKEND = refine(ptr(string), ipMasqBackend);

/** An interface MTU (see interfaceMtu): 0 reads as undefined, the default that `zeroMeans` words. */
export const mtuKey = (zeroMeans = "the default") => refine(int, (v, key) => interfaceMtu(v, key, zeroMeans));

/** A string that is one of `values` (quoted in the message), as the union of them. */
export function oneOf<const V extends string>(values: readonly V[]): GoType<V> {
  return refine(string, (v, key) => {
    if (!(values as readonly string[]).includes(v)) throw invalidKey(key, v, `want one of ${values.map((m) => `"${m}"`).join(", ")}`);
    return v as V;
  });
}
