/**
 * What a namespace holds, as `ip -json -details addr show` lists it, and the rules about it: what an ADD result
 * reports is there after ADD; after DEL nothing it made is left; a refused request changes nothing. Pure: the
 * snapshots are read elsewhere (sandbox.ts).
 * @module
 */
import { isJsonObject, type JsonValue, parseJson } from "#go-json/json.js";
import { tryParseCIDR } from "#ip/ip.js";
import type { Result100 } from "#spec/result/index.js";
import { SECTION } from "./output.js";
import type { Problem } from "./report.js";

/** A link and its addresses (canonical `addr/prefix`), as read from the kernel. */
export interface NsLink {
  name: string;
  mac?: string;
  kind?: string;
  /** The bridge (or other master) it is enslaved to. */
  master?: string;
  addresses: string[];
}

/** The links of one namespace, by name. */
export type NsSnapshot = ReadonlyMap<string, NsLink>;

/** Reads `ip -json -details addr show` output. */
export function parseIpAddrJson(text: string): NsSnapshot {
  const links = new Map<string, NsLink>();
  const parsed: JsonValue = text.trim() ? parseJson(text) : [];
  for (const l of Array.isArray(parsed) ? parsed : []) {
    if (!isJsonObject(l) || typeof l["ifname"] !== "string") continue;
    const info = isJsonObject(l["linkinfo"] ?? null) ? (l["linkinfo"] as Record<string, JsonValue>) : {};
    const addresses = (Array.isArray(l["addr_info"]) ? l["addr_info"] : [])
      .filter(isJsonObject)
      .map((a) => tryParseCIDR(`${String(a["local"])}/${String(a["prefixlen"])}`)?.text)
      .filter((a): a is string => a !== undefined);
    links.set(l["ifname"], {
      name: l["ifname"],
      ...(typeof l["address"] === "string" ? { mac: l["address"].toLowerCase() } : {}),
      ...(typeof info["info_kind"] === "string" ? { kind: info["info_kind"] } : {}),
      ...(typeof l["master"] === "string" ? { master: l["master"] } : {}),
      addresses,
    });
  }
  return links;
}

/** Addresses the kernel gives a link on its own (IPv6 link-local; loopback's when lo comes up): never a plugin's. */
export function kernelAssigned(link: NsLink, cidr: string): boolean {
  const c = tryParseCIDR(cidr);
  if (!c) return false;
  if (c.ip.family === 6 && c.ip.bytes[0] === 0xfe && (c.ip.bytes[1]! & 0xc0) === 0x80) return true;
  if (link.kind === undefined && link.name === "lo") return c.text === "::1/128" || (c.ip.family === 4 && c.ip.bytes[0] === 127);
  return false;
}

/** Both namespaces an attachment touches, read at one moment. */
export interface Snapshots {
  container: NsSnapshot;
  host: NsSnapshot;
}

const canonical = (cidr: string): string => tryParseCIDR(cidr)?.text ?? cidr;

/**
 * After ADD: every interface the result reports is there (in the container's namespace when its sandbox is
 * CNI_NETNS, else on the host) with the MAC it reports, and every address with an interface index is on it.
 */
export function presenceProblems(result: Result100, netns: string, now: Snapshots): Problem[] {
  const problems: Problem[] = [];
  const interfaces = result.interfaces ?? [];
  const where = (i: number) => (interfaces[i]!.sandbox ? (interfaces[i]!.sandbox === netns ? "container" : undefined) : "host");
  interfaces.forEach((iface, i) => {
    const side = where(i);
    if (!side) return; // a sandbox that is not CNI_NETNS: reported by the result's own rules
    const link = now[side].get(iface.name);
    if (!link) {
      problems.push({
        rule: SECTION.addSuccess,
        message: `the result reports interface ${iface.name} in the ${side === "container" ? "container's namespace" : "host namespace"}, which has no such link`,
      });
    } else if (iface.mac && link.mac && iface.mac.toLowerCase() !== link.mac) {
      problems.push({ rule: SECTION.addSuccess, message: `the result reports ${iface.name} with MAC ${iface.mac}; the link has ${link.mac}` });
    }
  });
  (result.ips ?? []).forEach((ip, i) => {
    if (ip.interface === undefined || ip.interface < 0 || ip.interface >= interfaces.length) return;
    const side = where(ip.interface);
    const link = side ? now[side].get(interfaces[ip.interface]!.name) : undefined;
    if (link && !link.addresses.includes(canonical(ip.address))) {
      problems.push({
        rule: SECTION.addSuccess,
        message: `ips[${i}]: ${ip.address} is not on ${link.name} (it has ${link.addresses.join(", ") || "no address"})`,
      });
    }
  });
  return problems;
}

/**
 * Host links the attachment shares with others, which DEL leaves: a reported host link that another reported
 * link was enslaved to after ADD (a bridge).
 */
export function sharedHostLinks(result: Result100, afterAdd: Snapshots): Set<string> {
  const hostNames = new Set((result.interfaces ?? []).filter((i) => !i.sandbox).map((i) => i.name));
  const shared = new Set<string>();
  for (const link of afterAdd.host.values()) if (link.master && hostNames.has(link.master)) shared.add(link.master);
  return shared;
}

/**
 * After DEL: nothing the ADD reported and made is left. A reported container link that was not there before ADD is
 * gone (when the namespace still exists); on a link that was there before (loopback's lo), the reported addresses
 * it did not have are gone, the kernel's own aside; a reported host link made by the ADD is gone unless shared.
 */
export function leftoverProblems(
  result: Result100,
  netns: string,
  before: Snapshots,
  afterAdd: Snapshots,
  after: { container?: NsSnapshot; host: NsSnapshot },
): Problem[] {
  const problems: Problem[] = [];
  const interfaces = result.interfaces ?? [];
  const shared = sharedHostLinks(result, afterAdd);
  interfaces.forEach((iface, index) => {
    if (iface.sandbox && iface.sandbox !== netns) return;
    const side = iface.sandbox ? "container" : "host";
    const now = after[side];
    const link = now?.get(iface.name);
    if (!now || !link) return;
    const previous = before[side].get(iface.name);
    if (!previous) {
      if (side === "host" && shared.has(iface.name)) return;
      problems.push({
        rule: SECTION.del,
        message: `${iface.name}, which the ADD made and reported, is still in the ${side === "container" ? "container's namespace" : "host namespace"} after DEL`,
      });
      return;
    }
    if (side !== "container") return;
    const reported = (result.ips ?? []).filter((ip) => ip.interface === index).map((ip) => canonical(ip.address));
    const left = reported.filter((a) => link.addresses.includes(a) && !previous.addresses.includes(a) && !kernelAssigned(link, a));
    if (left.length)
      problems.push({
        rule: SECTION.del,
        message: `${left.join(", ")}, which the ADD put on ${iface.name}, ${left.length === 1 ? "is" : "are"} still there after DEL`,
      });
  });
  return problems;
}

/** What appeared in a namespace between two snapshots: new links, and new addresses on links (the kernel's aside). */
export function changesBetween(before: NsSnapshot, after: NsSnapshot): string[] {
  const out: string[] = [];
  for (const link of after.values()) {
    const was = before.get(link.name);
    if (!was) {
      out.push(`new link ${link.name}${link.kind ? ` (${link.kind})` : ""}`);
      continue;
    }
    const added = link.addresses.filter((a) => !was.addresses.includes(a) && !kernelAssigned(link, a));
    if (added.length) out.push(`new address${added.length > 1 ? "es" : ""} ${added.join(", ")} on ${link.name}`);
  }
  return out;
}

/** A snapshot as a diagnostic: one line per link. */
export function describeSnapshot(s: NsSnapshot): string[] {
  return [...s.values()].map(
    (l) => `${l.name}${l.kind ? ` (${l.kind})` : ""}${l.master ? ` master ${l.master}` : ""}: ${l.addresses.join(" ") || "-"}`,
  );
}
