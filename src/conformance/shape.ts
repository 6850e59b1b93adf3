/**
 * The rules about an ADD result's content: valid for the requested version (decoded by that version's family, the
 * same cniVersion, no member of another version's shape), internally consistent (IP entries point at listed
 * interfaces, sandboxes name CNI_NETNS), and, for a version older or newer than the config's, the shape the spec's
 * conversion rules give from the config version's result. Results of two attachments differ in what each
 * attachment gets (addresses, MACs, host link names), so shapes are compared with those masked. Pure.
 * @module
 */

import { isJsonObject, type JsonObject, type JsonValue } from "#go-json/json.js";
import { tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { messageOf } from "#spec/errors.js";
import { convertResult, createResult, familyOf, type Result, type ResultFamily, resultToJson } from "#spec/result/index.js";
import { SECTION } from "./output.js";
import type { Problem } from "./report.js";

/** The top-level members each result family has (others are another version's, or nobody's). */
const MEMBERS: Record<ResultFamily, readonly string[]> = {
  "020": ["cniVersion", "ip4", "ip6", "dns"],
  "040": ["cniVersion", "interfaces", "ips", "routes", "dns"],
  "100": ["cniVersion", "interfaces", "ips", "routes", "dns"],
};

const asList = (v: JsonValue | undefined): JsonValue[] => (Array.isArray(v) ? v : []);
const asObjects = (v: JsonValue | undefined): JsonObject[] => asList(v).filter(isJsonObject);

/**
 * Judges `raw` as the result of an ADD asked for `version` in namespace `netns`: decodes it as that version's
 * result, with SPEC §Result types' rules on top of what decoding checks.
 */
export function judgeResult(raw: JsonObject, version: string, netns: string): { problems: Problem[]; result?: Result } {
  const problems: Problem[] = [];
  const rule = SECTION.addSuccess;
  if (raw["cniVersion"] !== version) {
    problems.push({
      rule,
      message: `the result's cniVersion must be the config's, ${JSON.stringify(version)}; it is ${JSON.stringify(raw["cniVersion"] ?? null)}`,
    });
  }
  let result: Result | undefined;
  try {
    result = createResult(version, { ...raw, cniVersion: version });
  } catch (e) {
    problems.push({ rule, message: `not a valid ${version} result: ${messageOf(e)}` });
  }
  const family = familyOf(version);
  if (family) {
    const foreign = Object.keys(raw).filter((k) => !MEMBERS[family].includes(k));
    if (foreign.length) {
      problems.push({
        rule,
        message: `${foreign.map((k) => JSON.stringify(k)).join(", ")} ${foreign.length === 1 ? "is" : "are"} not part of a ${version} result (its members: ${MEMBERS[family].join(", ")})`,
      });
    }
    problems.push(...(family === "020" ? legacyAddressProblems(raw) : ipEntryProblems(raw, family)));
  }
  problems.push(...referenceProblems(raw, netns));
  return { problems, ...(result ? { result } : {}) };
}

/** 0.1.0/0.2.0: `ip4` holds an IPv4 address, `ip6` an IPv6 one. */
function legacyAddressProblems(raw: JsonObject): Problem[] {
  const problems: Problem[] = [];
  for (const [key, family] of [
    ["ip4", 4],
    ["ip6", 6],
  ] as const) {
    const c = raw[key];
    if (!isJsonObject(c) || typeof c["ip"] !== "string") continue;
    const cidr = tryParseCIDR(c["ip"]);
    if (cidr && cidr.ip.family !== family)
      problems.push({ rule: SECTION.addSuccess, message: `${key}.ip ${c["ip"]} is not an IPv${family} address` });
  }
  return problems;
}

/** 0.3.x/0.4.0 IP entries carry `version` "4"/"6" matching the address; 1.x entries have no `version`. */
function ipEntryProblems(raw: JsonObject, family: "040" | "100"): Problem[] {
  const problems: Problem[] = [];
  asObjects(raw["ips"]).forEach((ip, i) => {
    const cidr = typeof ip["address"] === "string" ? tryParseCIDR(ip["address"]) : undefined;
    if (family === "100") {
      if ("version" in ip)
        problems.push({
          rule: SECTION.addSuccess,
          message: `ips[${i}] has "version", which results lost in 1.0.0 (a 0.x shape under a 1.x cniVersion)`,
        });
    } else if (ip["version"] !== "4" && ip["version"] !== "6") {
      problems.push({
        rule: SECTION.addSuccess,
        message: `ips[${i}] needs "version": "4" or "6" in a 0.3.x/0.4.0 result; got ${JSON.stringify(ip["version"] ?? null)}`,
      });
    } else if (cidr && String(cidr.ip.family) !== ip["version"]) {
      problems.push({
        rule: SECTION.addSuccess,
        message: `ips[${i}] says version ${ip["version"]} for the IPv${cidr.ip.family} address ${String(ip["address"])}`,
      });
    }
  });
  return problems;
}

/** IP entries point at listed interfaces; an interface's sandbox is CNI_NETNS (or absent, for a host interface). */
function referenceProblems(raw: JsonObject, netns: string): Problem[] {
  const problems: Problem[] = [];
  const interfaces = asObjects(raw["interfaces"]);
  asObjects(raw["ips"]).forEach((ip, i) => {
    const index = ip["interface"];
    // (-1 means "none" in some 0.3.x plugins; spec-upgrades asks runtimes to tolerate it.)
    if (typeof index === "number" && index !== -1 && (index < 0 || index >= interfaces.length)) {
      problems.push({ rule: SECTION.addSuccess, message: `ips[${i}].interface is ${index}, but the result lists ${interfaces.length} interface(s)` });
    }
  });
  interfaces.forEach((iface, i) => {
    const sandbox = iface["sandbox"];
    if (typeof sandbox === "string" && sandbox !== "" && sandbox !== netns) {
      problems.push({
        rule: SECTION.addSuccess,
        message: `interfaces[${i}] (${String(iface["name"])}) has sandbox ${JSON.stringify(sandbox)}; an interface in the container's namespace names CNI_NETNS, ${JSON.stringify(netns)}`,
      });
    }
  });
  return problems;
}

// ---- shapes ----

/** An address masked to its family (and prefix length): what stays the same from one attachment to the next. */
function maskAddress(value: string): string {
  const cidr = tryParseCIDR(value);
  if (cidr) return `<IPv${cidr.ip.family}>/${cidr.prefix}`;
  const ip = tryParseIP(value);
  return ip ? `<IPv${ip.family}>` : value;
}

/** Drops null members, empty objects and lists (absent and empty mean the same in a result). */
function prune(value: JsonValue): JsonValue | undefined {
  if (value === null) return undefined;
  if (Array.isArray(value)) {
    const items = value.map(prune).filter((v): v is JsonValue => v !== undefined);
    return items.length ? items : undefined;
  }
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) {
      const p = prune(v);
      if (p !== undefined) out[k] = p;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return value;
}

/**
 * A result's JSON with what differs between attachments masked: addresses (to family and prefix), MACs, the
 * sandbox when it is this attachment's `netns`, the names of host-side interfaces; DNS is kept. Empty members are
 * dropped.
 */
export function maskResult(raw: JsonObject, netns: string): JsonObject {
  const mask = (value: JsonValue, key: string): JsonValue => {
    if (typeof value === "string") {
      if (key === "mac") return "<mac>";
      if (key === "sandbox") return value === netns ? "<CNI_NETNS>" : value;
      if (["address", "ip", "gateway", "gw", "dst"].includes(key)) return maskAddress(value);
      return value;
    }
    if (Array.isArray(value)) return value.map((v) => mask(v, key));
    if (isJsonObject(value)) {
      if (key === "dns") return value;
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(value)) out[k] = mask(v, k);
      if (key === "interfaces" && typeof out["name"] === "string" && !out["sandbox"]) out["name"] = "<host link>";
      return out;
    }
    return value;
  };
  return (prune(mask(raw, "")) ?? {}) as JsonObject;
}

/** What an ADD for `version` should print, given the config version's result `reference` (from namespace `netns`). */
export type ExpectedShape = { shape: JsonObject } | { conversionError: string };

/** The shape the spec's conversion rules give `reference` in `version`'s format (or why there is none). */
export function expectedShape(reference: Result, netns: string, version: string): ExpectedShape {
  try {
    return { shape: maskResult(resultToJson(convertResult(reference, version)), netns) };
  } catch (e) {
    return { conversionError: messageOf(e) };
  }
}

/** Where two masked shapes differ, as `path: expected X, got Y` lines (at most `max`). */
export function shapeDifferences(expected: JsonValue | undefined, actual: JsonValue | undefined, path = "", max = 8): string[] {
  const out: string[] = [];
  const show = (v: JsonValue | undefined) => (v === undefined ? "nothing" : JSON.stringify(v));
  const walk = (e: JsonValue | undefined, a: JsonValue | undefined, at: string) => {
    if (out.length >= max) return;
    if (isJsonObject(e ?? null) && isJsonObject(a ?? null)) {
      const eo = e as JsonObject;
      const ao = a as JsonObject;
      for (const k of new Set([...Object.keys(eo), ...Object.keys(ao)])) walk(eo[k], ao[k], at ? `${at}.${k}` : k);
      return;
    }
    if (Array.isArray(e) && Array.isArray(a)) {
      for (let i = 0; i < Math.max(e.length, a.length); i++) walk(e[i], a[i], `${at}[${i}]`);
      return;
    }
    if (JSON.stringify(e) !== JSON.stringify(a)) out.push(`${at || "(the result)"}: expected ${show(e)}, got ${show(a)}`);
  };
  walk(expected, actual, path);
  return out;
}
