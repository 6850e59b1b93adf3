/**
 * `cnitool network create|ls|inspect|rm|prune`: network management modelled on podman's `network` commands.
 * `create` writes the conflist podman 4.3's CNI backend writes (bridge + host-local, portmap, firewall, tuning,
 * and dnsname when a `dnsname` program is in the plugin directories; or macvlan/ipvlan on a parent), choosing a
 * free bridge name and a free subnet (used by no network of the directory and by no route of the host), so podman
 * lists and uses the networks it writes. Every input is checked before anything is written; an error names the
 * value. `rm` and `prune` also delete a removed bridge network's bridge, as podman does, unless something else
 * still uses it.
 * @module
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { isJsonObject, type JsonObject } from "#go-json/json.js";
import { findInPathSync } from "#invoke/find.js";
import { cidrContains, type IPCidr, parseIP, tryParseCIDR, tryParseIP } from "#ip/ip.js";
import { firstAddress, hasHostBits, intervalsOverlap, lastAddress, nextIP } from "#ip/ip-math.js";
import type { CNIConfig } from "#libcni/api.js";
import { type CachedAttachment, listCachedAttachments } from "#libcni/cache.js";
import { type LoadedNetwork, loadAllNetworks } from "#libcni/conf.js";
import { ip } from "#net/link/links.js";
import { NetNS } from "#net/netns.js";
import { cachedAddresses, removeCachedAttachment } from "#runtime/attachments.js";
import { messageOf } from "#spec/errors.js";
import { validateNetworkName } from "#spec/validate.js";
import { randomBytes } from "#sys/bytes.js";
import { removeStateFile, writeFileAtomic } from "#sys/state.js";
import { table } from "#sys/text-table.js";

export const DRIVERS = ["bridge", "macvlan", "ipvlan"] as const;
type Driver = (typeof DRIVERS)[number];

/** The plugin type podman adds for container name resolution, and the domain it gives it. */
const DNSNAME = "dnsname";
const DNSNAME_DOMAIN = "dns.podman";

/** Whether a `dnsname` program is in `dirs`, found as libcni would find it for an ADD. */
export function hasDnsnamePlugin(dirs: readonly string[]): boolean {
  if (dirs.length === 0) return false;
  try {
    findInPathSync(DNSNAME, dirs);
    return true;
  } catch {
    return false;
  }
}

/** What `network create` is asked for. */
export interface CreateNetworkRequest {
  name: string;
  subnets?: string[];
  gateway?: string;
  ipv6?: boolean;
  internal?: boolean;
  driver?: string;
  /** `-o key=value`: `parent` (macvlan, ipvlan), `mtu`, `mode` (macvlan, ipvlan). */
  options?: string[];
  labels?: string[];
  /** `--disable-dns`: no dnsname plugin even when one is in the plugin directories. */
  disableDns?: boolean;
  /** The plugin directories (CNI_PATH) where a `dnsname` program turns DNS on for a bridge network. */
  pluginDirs?: readonly string[];
}

/** A network as `network ls` and `inspect` show it. */
export interface NetworkSummary {
  name: string;
  driver: string;
  subnets: string[];
  file: string;
  internal: boolean;
  /** Whether the network has a dnsname plugin (podman's `dns_enabled`; the conflist has no other marker). */
  dnsEnabled: boolean;
  labels: Record<string, string>;
}

/** A bad `network` request (nothing was written). */
export class NetworkCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NetworkCommandError";
  }
}
const fail = (msg: string): never => {
  throw new NetworkCommandError(msg);
};

/** The subnets a network's plugins use: host-local ranges and legacy single subnets, runtime ranges excluded. */
export function networkSubnets(network: LoadedNetwork): string[] {
  const out: string[] = [];
  for (const plugin of network.list.plugins) {
    const ipam = plugin.raw["ipam"];
    if (!isJsonObject(ipam)) continue;
    if (typeof ipam["subnet"] === "string") out.push(ipam["subnet"]);
    for (const set of Array.isArray(ipam["ranges"]) ? ipam["ranges"] : []) {
      for (const r of Array.isArray(set) ? set : []) if (isJsonObject(r) && typeof r["subnet"] === "string") out.push(r["subnet"]);
    }
  }
  return out;
}

function summarize(n: LoadedNetwork): NetworkSummary {
  const first = n.list.plugins[0]?.raw ?? {};
  const args = isJsonObject(n.list.raw["args"]) ? n.list.raw["args"] : {};
  const labels = isJsonObject(args["podman_labels"]) ? Object.fromEntries(Object.entries(args["podman_labels"]).map(([k, v]) => [k, String(v)])) : {};
  const driver = String(first["type"] ?? "");
  return {
    name: n.list.name,
    driver,
    subnets: networkSubnets(n),
    file: n.file,
    labels,
    internal: driver === "bridge" && first["isGateway"] !== true && first["ipMasq"] !== true,
    dnsEnabled: n.list.plugins.some((p) => p.network.type === DNSNAME),
  };
}

const overlaps = (a: IPCidr, b: IPCidr): boolean =>
  a.ip.family === b.ip.family && intervalsOverlap(firstAddress(a), lastAddress(a), firstAddress(b), lastAddress(b));

/** What is in use on this host: subnets of the directory's networks and of the host's routes, bridge names. */
async function usage(networks: readonly LoadedNetwork[]): Promise<{ subnets: Array<{ cidr: IPCidr; by: string }>; bridges: Set<string> }> {
  const subnets: Array<{ cidr: IPCidr; by: string }> = [];
  for (const n of networks) {
    for (const s of networkSubnets(n)) {
      const cidr = tryParseCIDR(s);
      if (cidr) subnets.push({ cidr, by: `network "${n.list.name}"` });
    }
  }
  for (const family of [4, 6] as const) {
    for (const r of await ip.listRoutes(NetNS.host, family).catch(() => [])) {
      const cidr = tryParseCIDR(r.dst);
      if (cidr && cidr.prefix > 0) subnets.push({ cidr, by: `a route of the host (${r.dst}${r.dev ? ` dev ${r.dev}` : ""})` });
    }
  }
  const bridges = new Set<string>();
  for (const n of networks) for (const p of n.list.plugins) if (typeof p.raw["bridge"] === "string") bridges.add(p.raw["bridge"]);
  for (const l of await ip.listLinks(NetNS.host).catch(() => [])) bridges.add(l.name);
  return { subnets, bridges };
}

/** Parses `k=v` words into a map; an entry without `=` is an error naming it. */
function keyValues(words: readonly string[], what: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const w of words) {
    const i = w.indexOf("=");
    if (i <= 0) fail(`invalid ${what} "${w}": want key=value`);
    out.set(w.slice(0, i), w.slice(i + 1));
  }
  return out;
}

/** A random ULA /64 (fdXX:XXXX:XXXX:XXXX::/64), as podman picks one for --ipv6. */
function randomUla(): string {
  const b = randomBytes(7);
  const hex = (i: number) => ((b[i]! << 8) | b[i + 1]!).toString(16);
  return `fd${b[0]!.toString(16).padStart(2, "0")}:${hex(1)}:${hex(3)}:${hex(5)}::/64`;
}

/**
 * The conflist `network create` writes (see the module comment), keys in the order podman writes them; validates
 * everything first. `warn` is told what podman warns about (an internal network gets no dnsname).
 */
export async function buildNetworkConfig(
  req: CreateNetworkRequest,
  networks: readonly LoadedNetwork[],
  warn: (message: string) => void = () => undefined,
): Promise<JsonObject> {
  try {
    validateNetworkName(req.name);
  } catch (e) {
    fail(`invalid network name "${req.name}": ${messageOf(e)}`);
  }
  const existing = networks.find((n) => n.list.name === req.name);
  if (existing) fail(`network "${req.name}" already exists (${existing.file})`);
  const driver = (req.driver ?? "bridge") as Driver;
  if (!DRIVERS.includes(driver)) fail(`unknown driver "${req.driver}": want ${DRIVERS.join(", ")}`);
  const options = keyValues(req.options ?? [], "option");
  const labels = keyValues(req.labels ?? [], "label");
  const known = driver === "bridge" ? ["mtu"] : ["parent", "mtu", "mode"];
  for (const key of options.keys()) if (!known.includes(key)) fail(`unknown option "${key}" for driver ${driver}: want ${known.join(", ")}`);
  const mtu = options.get("mtu");
  if (mtu !== undefined && !/^\d+$/.test(mtu)) fail(`invalid option mtu "${mtu}": want a number`);

  const used = await usage(networks);
  const subnets: IPCidr[] = [];
  for (const text of req.subnets ?? []) {
    const cidr = tryParseCIDR(text);
    if (!cidr) fail(`invalid subnet "${text}": want a CIDR like 10.89.5.0/24`);
    if (hasHostBits(cidr!)) fail(`invalid subnet "${text}": host bits are set (the network is ${firstAddress(cidr!).text}/${cidr!.prefix})`);
    const clash =
      used.subnets.find((u) => overlaps(u.cidr, cidr!)) ??
      subnets.map((s) => ({ cidr: s, by: "another --subnet" })).find((u) => overlaps(u.cidr, cidr!));
    if (clash) fail(`subnet "${text}" overlaps ${clash.cidr.text}, used by ${clash.by}`);
    subnets.push(cidr!);
  }
  if (req.gateway !== undefined) {
    const gw = tryParseIP(req.gateway) ?? fail(`invalid gateway "${req.gateway}": want an IP address`);
    if (!subnets.some((s) => cidrContains(s, gw)))
      fail(`gateway "${req.gateway}" is in none of the subnets (${subnets.map((s) => s.text).join(", ") || "none given"})`);
  }

  // Go's encoder writes podman's top-level map with its keys sorted.
  const config: JsonObject = {};
  if (labels.size) config["args"] = { podman_labels: Object.fromEntries(labels) };
  config["cniVersion"] = "0.4.0";
  config["name"] = req.name;
  if (driver !== "bridge") {
    const parent = options.get("parent") ?? fail(`driver ${driver} needs a parent interface: -o parent=<interface>`);
    if (!(await ip.getLink(NetNS.host, parent))) fail(`parent interface "${parent}" does not exist`);
    const plugin: JsonObject = { type: driver, master: parent };
    plugin["ipam"] = subnets.length ? hostLocal(subnets, req.gateway, !req.internal) : { type: "dhcp" };
    if (mtu) plugin["mtu"] = Number(mtu);
    if (options.has("mode")) plugin["mode"] = options.get("mode")!;
    if (subnets.length) plugin["capabilities"] = { ips: true };
    config["plugins"] = [plugin];
    return config;
  }

  if (subnets.length === 0) subnets.push(freeSubnet(used.subnets));
  if (req.ipv6 && !subnets.some((s) => s.ip.family === 6)) subnets.push(tryParseCIDR(randomUla())!);
  let n = 1;
  while (used.bridges.has(`cni-podman${n}`)) n++;
  const bridge: JsonObject = { type: "bridge", bridge: `cni-podman${n}`, isGateway: !req.internal };
  if (!req.internal) bridge["ipMasq"] = true;
  if (mtu) bridge["mtu"] = Number(mtu);
  bridge["hairpinMode"] = true;
  bridge["ipam"] = hostLocal(subnets, req.gateway, !req.internal);
  bridge["capabilities"] = { ips: true };
  const plugins: JsonObject[] = [
    bridge,
    { type: "portmap", capabilities: { portMappings: true } },
    { type: "firewall", backend: "" },
    { type: "tuning" },
  ];
  if (!req.disableDns && hasDnsnamePlugin(req.pluginDirs ?? [])) {
    if (req.internal) warn(`dnsname and internal networks are incompatible: dnsname plugin not configured for network ${req.name}`);
    else plugins.push({ type: DNSNAME, domainName: DNSNAME_DOMAIN, capabilities: { aliases: true } });
  }
  config["plugins"] = plugins;
  return config;
}

/** host-local over `subnets`, one range set each, with gateways (and default routes) unless internal. */
function hostLocal(subnets: readonly IPCidr[], gateway: string | undefined, routed: boolean): JsonObject {
  const ipam: JsonObject = { type: "host-local" };
  if (routed) ipam["routes"] = [...new Set(subnets.map((s) => s.ip.family))].map((f) => ({ dst: f === 4 ? "0.0.0.0/0" : "::/0" }));
  ipam["ranges"] = subnets.map((s) => {
    const range: JsonObject = { subnet: s.text };
    if (routed) {
      const gw = gateway && cidrContains(s, parseIP(gateway)) ? gateway : nextIP(s.ip)!.text;
      range["gateway"] = gw;
    }
    return [range];
  });
  return ipam;
}

/** The first 10.89.N.0/24 no network and no route of the host uses (podman's choice). */
function freeSubnet(used: ReadonlyArray<{ cidr: IPCidr }>): IPCidr {
  for (let n = 0; n < 256; n++) {
    const candidate = tryParseCIDR(`10.89.${n}.0/24`)!;
    if (!used.some((u) => overlaps(u.cidr, candidate))) return candidate;
  }
  return fail("no free subnet in 10.89.0.0/16: give one with --subnet");
}

/** Adds the `network` commands to cnitool. */
export function addNetworkCommands(
  program: Command,
  ctx: {
    confDir: () => string;
    cni: () => CNIConfig;
    pluginDirs: () => string[];
    cacheDir: () => string;
    out: (s: string) => void;
    err: (s: string) => void;
  },
): void {
  const network = program.command("network").description("Manage networks (podman-style): create, ls, inspect, rm, prune");
  const load = () => loadAllNetworks(ctx.confDir());
  const attachmentsOf = async (name: string) => (await listCachedAttachments(ctx.cacheDir())).filter((a) => a.networkName === name);
  const pick = (networks: readonly LoadedNetwork[], name: string) =>
    networks.find((n) => n.list.name === name) ?? fail(`network "${name}" not found in ${ctx.confDir()}`);
  const find = async (name: string) => pick((await load()).networks, name);
  const collect = (v: string, prev: string[]) => [...prev, v];
  const warn = (message: string) => ctx.err(`Warning: ${message}\n`);

  network
    .command("create")
    .description(
      "Write a new network's conflist (bridge + host-local, portmap, firewall, tuning, and dnsname when CNI_PATH has it; or macvlan/ipvlan)",
    )
    .argument("<name>", "network name")
    .option("--subnet <cidr>", "subnet (repeatable; default: a free 10.89.N.0/24)", collect, [])
    .option("--gateway <ip>", "gateway address in one of the subnets")
    .option("--ipv6", "also an IPv6 subnet (a random ULA /64 unless --subnet gives one)")
    .option("--internal", "no gateway, no masquerading, no default route")
    .option("-d, --driver <driver>", `driver: ${DRIVERS.join(", ")}`, "bridge")
    .option("-o, --opt <key=value>", "driver option: parent, mtu, mode (repeatable)", collect, [])
    .option("--label <key=value>", "label (repeatable)", collect, [])
    .option("--disable-dns", "no dnsname plugin, even when CNI_PATH has one")
    .action(
      async (
        name: string,
        o: {
          subnet: string[];
          gateway?: string;
          ipv6?: boolean;
          internal?: boolean;
          driver: string;
          opt: string[];
          label: string[];
          disableDns?: boolean;
        },
      ) => {
        const { networks } = await load();
        const config = await buildNetworkConfig(
          {
            name,
            subnets: o.subnet,
            gateway: o.gateway,
            ipv6: o.ipv6,
            internal: o.internal,
            driver: o.driver,
            options: o.opt,
            labels: o.label,
            disableDns: o.disableDns,
            pluginDirs: ctx.pluginDirs(),
          },
          networks,
          warn,
        );
        const file = path.join(ctx.confDir(), `${name}.conflist`);
        if (existsSync(file)) fail(`${file} exists already`);
        await writeNetworkFile(file, config);
        ctx.out(`${name}\n`);
      },
    );

  network
    .command("ls")
    .description("List the networks")
    .option("--format <format>", "table or json", "table")
    .action(async (o: { format: string }) => {
      const { networks } = await load();
      const rows = networks.map(summarize);
      if (o.format === "json") return ctx.out(JSON.stringify(rows, null, 2) + "\n");
      if (o.format !== "table") fail(`unknown format "${o.format}": want table or json`);
      ctx.out(
        table(
          ["NAME", "DRIVER", "SUBNETS", "FILE"],
          rows.map((r) => [r.name, r.driver, r.subnets.join(",") || "-", r.file]),
        ),
      );
    });

  network
    .command("inspect")
    .description("Show a network's config and the containers attached to it (from the result cache)")
    .argument("<name>", "network name")
    .action(async (name: string) => {
      const n = await find(name);
      const containers = (await attachmentsOf(name)).map((a) => ({
        containerID: a.containerID,
        ifName: a.ifName,
        netns: a.netns ?? "",
        addresses: cachedAddresses(a),
      }));
      ctx.out(JSON.stringify({ ...summarize(n), config: n.list.raw, containers }, null, 2) + "\n");
    });

  network
    .command("rm")
    .description("Remove a network and its bridge (refused while containers are attached, unless --force tears them down)")
    .argument("<name>", "network name")
    .option("-f, --force", "tear down the attachments first")
    .action(async (name: string, o: { force?: boolean }) => {
      const { networks } = await load();
      const n = pick(networks, name);
      await removeNetwork(n, await attachmentsOf(name), ctx.cni(), o.force ?? false);
      await removeBridge(
        n,
        networks.filter((x) => x !== n),
        warn,
      );
      ctx.out(`${name}\n`);
    });

  network
    .command("prune")
    .description("Remove every network no container is attached to, and their bridges")
    .action(async () => {
      const cached = await listCachedAttachments(ctx.cacheDir());
      let remaining = (await load()).networks;
      for (const n of [...remaining]) {
        if (cached.some((a) => a.networkName === n.list.name)) continue;
        removeNetworkFile(n.file);
        remaining = remaining.filter((x) => x !== n);
        await removeBridge(n, remaining, warn);
        ctx.out(`${n.list.name}\n`);
      }
    });
}

/** Removes a network's file; its attachments must be none, or are torn down with `force`. */
async function removeNetwork(n: LoadedNetwork, attachments: readonly CachedAttachment[], cni: CNIConfig, force: boolean): Promise<void> {
  if (attachments.length && !force) {
    fail(
      `network "${n.list.name}" is in use by ${attachments.map((a) => `${a.containerID} (${a.ifName})`).join(", ")}: use --force to tear them down`,
    );
  }
  for (const a of attachments) await removeCachedAttachment(cni, a);
  removeNetworkFile(n.file);
}

/**
 * Writes a network's config file durably (docs/state.md: a network made is expected to stay): the data synced
 * before the rename, the directory after it. A power loss leaves the old file or the new one, whole.
 */
export async function writeNetworkFile(file: string, config: unknown): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(config, null, 3), { mode: 0o644, durable: true });
}

/** Removes a network's config file durably (its directory synced after). */
export function removeNetworkFile(file: string): void {
  removeStateFile(file, { durable: true });
}

/** The bridge a network's first plugin names, when that plugin is a bridge (podman's rule for a bridge network). */
function networkBridge(n: LoadedNetwork): string | undefined {
  const first = n.list.plugins[0];
  const name = first?.raw["bridge"];
  return first?.network.type === "bridge" && typeof name === "string" && name !== "" ? name : undefined;
}

/**
 * Deletes a removed bridge network's bridge from the host (its addresses and routes go with it), as podman's
 * `network rm` does. Left in place, with a warning, when it is not a bridge, still has ports (containers this
 * cache does not know), or another network in `others` names it; a failure to delete is a warning too.
 */
async function removeBridge(n: LoadedNetwork, others: readonly LoadedNetwork[], warn: (message: string) => void): Promise<void> {
  const name = networkBridge(n);
  if (!name) return;
  const link = await ip.getLink(NetNS.host, name);
  if (!link) return;
  const sharing = others.filter((o) => o.list.plugins.some((p) => p.network.type === "bridge" && p.raw["bridge"] === name));
  if (sharing.length) return warn(`bridge ${name} left in place: network ${sharing.map((o) => `"${o.list.name}"`).join(", ")} uses it too`);
  if (link.kind !== "bridge") return warn(`${name} left in place: it is a ${link.kind ?? "physical"} link, not a bridge`);
  const ports = (await ip.listLinks(NetNS.host)).filter((l) => l.master === name).map((l) => l.name);
  if (ports.length) return warn(`bridge ${name} left in place: interfaces ${ports.join(", ")} are still attached to it`);
  try {
    await ip.deleteLink(NetNS.host, name);
  } catch (e) {
    warn(`bridge ${name} could not be deleted: ${messageOf(e)}`);
  }
}
