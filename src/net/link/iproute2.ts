/**
 * The iproute2 backend of the link facade (links.ts): `ip -json` to read; `ip` to change, one process for a
 * step and `ip -batch` for several in one namespace. It can carry every step, so it is the backend of last
 * resort (and the only one under the Node build or with TSCNI_NETLINK=0).
 * @module
 */
import { readFileSync } from "node:fs";
import { atStep, NetOpError } from "../errors.js";
import type { NetNS } from "../netns.js";
import { runIpIn } from "../tools.js";
import type { Address, Link, RouteSpec, ShownLink } from "../types.js";
import { type IpOp, type LinkBackend, opWords } from "./ip-ops.js";

type Json = Record<string, unknown>;

/**
 * A user or group id from what `ip` prints for a tap's owner: the name it resolved from the id (looked up
 * again in `file`, /etc/passwd or /etc/group, as `ip` found it), or the number when it had no name for it.
 */
function numericId(value: unknown, file: string): unknown {
  if (typeof value === "number" || typeof value !== "string") return value;
  if (/^\d+$/.test(value)) return Number(value);
  try {
    const entry = readFileSync(file, "utf8")
      .split("\n")
      .map((l) => l.split(":"))
      .find((f) => f[0] === value);
    if (entry?.[2] !== undefined && /^\d+$/.test(entry[2])) return Number(entry[2]);
  } catch {
    // no such file: keep the name
  }
  return value;
}

/** The kind-specific data of Link.info, from `ip -json -d`'s info_data (none for the kinds Link.info does not list, as the netlink backend). */
function kindInfo(kind: unknown, data: Json): Json | undefined {
  const pick = (...keys: string[]) => Object.fromEntries(keys.filter((k) => data[k] !== undefined).map((k) => [k, data[k]]));
  switch (kind) {
    case "macvlan":
      return pick("mode", "bcqueuelen");
    case "ipvlan":
      return pick("mode");
    case "vlan":
      return pick("id");
    case "tun": {
      const info = pick("type", "pi", "vnet_hdr", "multi_queue", "persist");
      if (data["user"] !== undefined) info["user"] = numericId(data["user"], "/etc/passwd");
      if (data["group"] !== undefined) info["group"] = numericId(data["group"], "/etc/group");
      return info;
    }
    case "vrf":
      return pick("table");
    default:
      return undefined;
  }
}

/** Link details from `ip -json -d link show` output. */
export function linkFromJson(j: Json): Link {
  const linkinfo = (j["linkinfo"] ?? {}) as Json;
  const slave = (linkinfo["info_slave_data"] ?? undefined) as Json | undefined;
  const flags = Array.isArray(j["flags"]) ? (j["flags"] as string[]) : [];
  const link: Link = {
    index: Number(j["ifindex"]),
    name: String(j["ifname"]),
    mtu: Number(j["mtu"] ?? 0),
    mac: String(j["address"] ?? ""),
    up: flags.includes("UP"),
    operstate: String(j["operstate"] ?? "UNKNOWN"),
    // The PROMISC flag is what was asked for (`ip link set promisc on`); promiscuity also counts packet sockets.
    promisc: flags.includes("PROMISC"),
    allmulti: flags.includes("ALLMULTI"),
    txqlen: Number(j["txqlen"] ?? 0), // `ip -json` leaves out a queue length of 0
  };
  if (linkinfo["info_kind"]) link.kind = String(linkinfo["info_kind"]);
  const info = linkinfo["info_data"] ? kindInfo(linkinfo["info_kind"], linkinfo["info_data"] as Json) : undefined;
  if (info) link.info = info;
  if (j["master"]) link.master = String(j["master"]);
  if (j["link_index"] !== undefined) link.peerIndex = Number(j["link_index"]);
  else if (typeof j["link"] === "string") link.peerName = j["link"];
  if (j["ifalias"]) link.alias = String(j["ifalias"]);
  if (linkinfo["info_slave_kind"] === "bridge" && slave) {
    link.bridgePort = { hairpin: slave["hairpin"] === true, isolated: slave["isolated"] === true };
  }
  return link;
}

/** Addresses from `ip -json addr show` output. */
export function addressesFromJson(j: Json): Address[] {
  const infos = (j["addr_info"] ?? []) as Json[];
  return infos.map((a) => ({
    cidr: `${String(a["local"])}/${String(a["prefixlen"])}`,
    family: a["family"] === "inet6" ? 6 : 4,
    scope: String(a["scope"] ?? "global"),
    tentative: a["tentative"] === true,
    dadFailed: a["dadfailed"] === true,
  }));
}

/** A route from `ip -json route show` output, with the destination as a prefix. */
function routeFromJson(r: Json, family: 4 | 6): RouteSpec {
  let dst = String(r["dst"]);
  if (dst === "default") dst = family === 4 ? "0.0.0.0/0" : "::/0";
  else if (!dst.includes("/")) dst += family === 4 ? "/32" : "/128";
  const route: RouteSpec = { dst };
  if (r["gateway"]) route.gw = String(r["gateway"]);
  if (r["dev"]) route.dev = String(r["dev"]);
  if (r["prefsrc"]) route.src = String(r["prefsrc"]);
  if (r["scope"]) route.scope = String(r["scope"]);
  if (r["table"] !== undefined) route.table = r["table"] === "main" ? 254 : Number(r["table"]);
  if (r["metric"] !== undefined) route.metric = Number(r["metric"]);
  if (r["protocol"]) route.protocol = String(r["protocol"]);
  return route;
}

async function ipJson(ns: NetNS, args: string[], operation: string): Promise<Json[]> {
  const { stdout } = await runIpIn(ns, ["-json", ...args], operation);
  const text = stdout.trim();
  return text ? (JSON.parse(text) as Json[]) : [];
}

/** Runs `lines` as `ip [options] -batch -`; a failure names the line that failed. */
async function runBatch(ns: NetNS, lines: string[][], options: string[], operation: string): Promise<string> {
  const quote = (w: string) => (/^[\w.:/@%+-]+$/.test(w) ? w : `"${w.replace(/(["\\])/g, "\\$1")}"`);
  const input = lines.map((l) => l.map(quote).join(" ")).join("\n") + "\n";
  try {
    return (await runIpIn(ns, [...options, "-batch", "-"], operation, input)).stdout;
  } catch (e) {
    if (!(e instanceof NetOpError)) throw e;
    const failed = e.step !== undefined ? lines[e.step] : undefined;
    throw new NetOpError(failed ? `${operation} (ip ${failed.join(" ")})` : operation, e.reason, e.exitCode, undefined, e.kind, e.step);
  }
}

/** Runs steps with `ip`: one command, or one `ip -batch` (with `-json -d` when something is shown). */
async function runOps(ns: NetNS, ops: readonly IpOp[], operation: string): Promise<ShownLink[]> {
  const lines = ops.map(opWords);
  const shows = ops.filter((op) => op.kind === "show-link" || op.kind === "show-addresses");
  if (shows.length === 0) {
    if (lines.length === 1) await runIpIn(ns, [...lines[0]!], `${operation} (ip ${lines[0]!.join(" ")})`).catch(atStep(0));
    else await runBatch(ns, lines, [], operation);
    return [];
  }
  const stdout = await runBatch(ns, lines, ["-json", "-d"], operation);
  const printed = stdout
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Json[]);
  return shows.map((op, i) => {
    const j = printed[i]?.[0];
    if (!j) throw new NetOpError(operation, `ip printed nothing for "${opWords(op).join(" ")}"`);
    return { link: linkFromJson(j), addresses: op.kind === "show-addresses" ? addressesFromJson(j) : [] };
  });
}

/** Every step and read with iproute2 (see the module comment). */
export const iproute2Backend: LinkBackend = {
  name: "iproute2",
  run: (ns, ops, operation) => runOps(ns, ops, operation),
  listLinks: async (ns, operation, master) =>
    (await ipJson(ns, ["-d", "link", "show", ...(master === undefined ? [] : ["master", master])], operation)).map(linkFromJson),
  getLink: async (ns, name, operation) => {
    const [j] = await ipJson(ns, ["-d", "link", "show", "dev", name], operation);
    if (!j) throw new NetOpError(operation, `Device "${name}" does not exist.`, 1, undefined, "not-found");
    return linkFromJson(j);
  },
  listAddresses: async (ns, name, operation) => (await ipJson(ns, ["addr", "show", "dev", name], operation)).flatMap(addressesFromJson),
  listRoutes: async (ns, family, table, operation) => {
    const args = [`-${family}`, "route", "show"];
    if (table !== undefined) args.push("table", String(table));
    return (await ipJson(ns, args, operation)).map((r) => routeFromJson(r, family));
  },
  routeDevice: async (ns, address, operation) => {
    let routes;
    try {
      routes = await ipJson(ns, ["route", "get", address], operation);
    } catch (e) {
      if (e instanceof NetOpError && e.kind === "unreachable") return {};
      throw e;
    }
    const dev = routes.find((r) => typeof r["dev"] === "string")?.["dev"];
    return typeof dev === "string" ? { dev } : {};
  },
};
