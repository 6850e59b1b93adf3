/**
 * A test "host" for main-plugin integration tests: a namespace the plugins treat as the host, with its own
 * network-config, result-cache and IPAM directories. Attachments go through cnitool (our libcni) run inside
 * it, or through a plugin binary run directly (for what a runtime would never send, like an empty CNI_NETNS).
 * Everything is registered with a Cleanup, so it goes away even when a test fails.
 * @module
 */
import { existsSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { containerIdForNetns } from "#runtime/container-ids.js";
import { type Cleanup, CNITOOL, GO_BIN, type Netns, OUR_BIN, writeJson } from "./harness.js";
import { RESIDENT_PASS, startResidentHost } from "./resident-host.js";

/** Ours first, so our plugins win and Go's fill the gaps. */
export const MIXED_PATH = `${OUR_BIN}:${GO_BIN}`;

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Iface {
  name: string;
  mac?: string;
  sandbox?: string;
}
export interface IPConf {
  address: string;
  gateway?: string;
  interface?: number;
  version?: string;
}
export interface Route {
  dst: string;
  gw?: string;
}
export interface Result {
  cniVersion: string;
  interfaces?: Iface[];
  ips?: IPConf[];
  routes?: Route[];
  dns?: Record<string, unknown>;
}

/** What a failed plugin printed: a CNI error object. */
export interface CniErrorJson {
  code: number;
  msg: string;
  details?: string;
}

export interface AttachEnv {
  CNI_ARGS?: string;
  CAP_ARGS?: string;
  CNI_IFNAME?: string;
  /** "0": the plugins reach the kernel through `ip` instead of netlink (src/net/link/rtnetlink-backend.ts). */
  TSCNI_NETLINK?: string;
}

export class Host {
  readonly ns: Netns;
  readonly confDir: string;
  readonly cacheDir: string;
  readonly dataDir: string;

  /** `name` must be unique (use runTag()); `cniPath` is the default CNI_PATH of this host's calls. */
  constructor(
    private readonly cleanup: Cleanup,
    readonly name: string,
    readonly cniPath = MIXED_PATH,
  ) {
    this.ns = cleanup.netns(name);
    this.confDir = cleanup.dir("tscni-conf-");
    this.cacheDir = cleanup.dir("tscni-cache-");
    this.dataDir = cleanup.dir("tscni-ipam-");
    if (RESIDENT_PASS) {
      const resident = startResidentHost(name, cleanup.dir("tscni-rs-"), CNITOOL);
      cleanup.add(() => resident.stop());
      this.ns.mountNs = resident.mountNs;
      this.ns.residentSocket = resident.socket;
    }
  }

  /** A container namespace, deleted at cleanup. */
  container(name: string): Netns {
    return this.cleanup.netns(name);
  }

  /** Writes a conflist (`plugins`) or a single-plugin `.conf`, keyed by the network name. */
  writeNetwork(conf: Record<string, unknown>): string {
    const name = String(conf["name"]);
    writeJson(path.join(this.confDir, `${name}.${"plugins" in conf ? "conflist" : "conf"}`), conf);
    return name;
  }

  /** host-local IPAM over `subnets` (one range set each), with this host's data dir. */
  hostLocal(subnets: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { type: "host-local", dataDir: this.dataDir, ranges: subnets.map((subnet) => [{ subnet }]), ...extra };
  }

  /** Runs cnitool (our libcni) in this host. */
  cnitool(verb: string, network: string, ctr: Netns | string, env: AttachEnv = {}, cniPath = this.cniPath): Promise<RunResult> {
    const netns = typeof ctr === "string" ? ctr : ctr.path;
    return this.ns.run(CNITOOL, ["--cache-dir", this.cacheDir, verb, network, netns], {
      env: { ...process.env, NETCONFPATH: this.confDir, CNI_PATH: cniPath, ...env },
    });
  }

  /** cnitool ADD that must succeed; its result. */
  async add<T extends Result = Result>(network: string, ctr: Netns, env: AttachEnv = {}, cniPath = this.cniPath): Promise<T> {
    const r = await this.cnitool("add", network, ctr, env, cniPath);
    if (r.code !== 0) throw new Error(`ADD ${network} in ${ctr.name} failed (${r.code}): ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout) as T;
  }

  /** cnitool CHECK, DEL, STATUS or GC that must succeed. */
  async must(
    verb: "check" | "del" | "status" | "gc",
    network: string,
    ctr: Netns | string,
    env: AttachEnv = {},
    cniPath = this.cniPath,
  ): Promise<void> {
    const r = await this.cnitool(verb, network, ctr, env, cniPath);
    if (r.code !== 0) throw new Error(`${verb.toUpperCase()} ${network} failed (${r.code}): ${r.stderr}${r.stdout}`);
  }

  /** Runs a plugin binary directly in this host with a CNI environment. */
  plugin(binary: string, command: string, conf: unknown, env: Record<string, string>): Promise<RunResult> {
    return this.ns.run(binary, [], {
      env: { ...process.env, CNI_COMMAND: command, CNI_PATH: this.cniPath, CNI_CONTAINERID: "ctr-direct", CNI_IFNAME: "eth0", CNI_ARGS: "", ...env },
      input: JSON.stringify(conf),
    });
  }

  /** The IPAM allocations (host-local files named by IP) of a network, in this host's store or in `dataDir`. */
  allocations(network: string, dataDir = this.dataDir): string[] {
    const dir = path.join(dataDir, network);
    return existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => /^[0-9a-f.:]+$/i.test(f) && /[.:]/.test(f))
          .sort()
      : [];
  }

  /** `ip -json` in this host. */
  ipJson<T = Array<Record<string, unknown>>>(args: string[]): T {
    return this.ns.ipJson(args) as T;
  }

  /** Host links whose name starts with `veth`. */
  veths(): string[] {
    return this.ipJson(["link", "show"])
      .map((l) => String(l["ifname"]))
      .filter((n) => n.startsWith("veth"));
  }

  /** `iptables-save -t nat` and `ip6tables-save -t nat` of this host, without comments and counters. */
  natRules(): string {
    const save = (cmd: string) =>
      this.ns
        .exec(cmd, ["-t", "nat"])
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .join("\n");
    return `${save("iptables-save")}\n${save("ip6tables-save")}`;
  }

  /** The `-A` rules of one family's nat table. */
  natRuleLines(family: 4 | 6): string[] {
    return this.ns
      .exec(family === 4 ? "iptables-save" : "ip6tables-save", ["-t", "nat"])
      .split("\n")
      .filter((l) => l.startsWith("-A "));
  }

  /** The per-address rules of the nftables ipMasq chain (`... saddr ... masquerade`). */
  nftMasqRules(): string {
    const r = this.ns.exec("sh", ["-c", "nft list chain inet cni_plugins_masquerade masq_checks 2>/dev/null || true"]);
    return r
      .split("\n")
      .filter((l) => /masquerade/.test(l) && /saddr/.test(l))
      .join("\n");
  }

  /** `nft list ruleset` of this host (empty when there is none). */
  nftRuleset(): string {
    return this.ns.exec("nft", ["list", "ruleset"]);
  }

  /** A host sysctl. */
  sysctl(key: string): string {
    return this.ns.sysctl(key);
  }
}

/** The container ID cnitool uses for a container namespace. */
export const containerIdOf = (ctr: Netns): string => containerIdForNetns(ctr.path);

/** A directory of symlinks that makes a CNI_PATH with exactly these plugins (`type` -> binary path). */
export function pluginDir(cleanup: Cleanup, plugins: Record<string, string>): string {
  const dir = cleanup.dir("tscni-path-");
  mkdirSync(dir, { recursive: true });
  for (const [type, binary] of Object.entries(plugins)) symlinkSync(binary, path.join(dir, type));
  return dir;
}

/** `ip -json` inside a container namespace. */
export const ipIn = <T = Array<Record<string, unknown>>>(ns: Netns, args: string[]): T => ns.ipJson(args) as T;

/** Pings `target` from `ns` until it answers (IPv6 DAD on the far side can take a moment); false after `tries`. */
export async function pingable(ns: Netns, target: string, tries = 20): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    const r = await ns.run("ping", ["-c", "1", "-W", "1", "-n", target]);
    if (r.code === 0) return true;
    await sleep(200);
  }
  return false;
}

/** Parses a failed plugin's stdout as a CNI error. */
export function cniError(r: RunResult): CniErrorJson {
  try {
    return JSON.parse(r.stdout) as CniErrorJson;
  } catch {
    throw new Error(`not a CNI error (exit ${r.code}): stdout=${r.stdout} stderr=${r.stderr}`);
  }
}
