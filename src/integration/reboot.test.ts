/**
 * A node reboot, end to end (issue 32's point 4), on our plugins in their default mode (a resident server started by
 * the first call) and, beside it, on Debian's Go plugins:
 * - 20 pod sandboxes through a private containerd (its result cache a directory of this test's), and 10 pods through
 *   the pod manager (its own network and cache), on bridge + host-local with portmap and firewall;
 * - then what a reboot does, as far as a test can: containerd, its shims and sandboxes, the manager and our server
 *   killed -9; containerd's state (its /run) and the server's directory wiped; every pod's network namespace gone
 *   (the manager's deleted from /run/netns); iptables and nftables flushed and the bridges deleted in the node's
 *   namespace; 5 cache files of each runtime truncated to zero bytes, as a power loss after Go's libcni leaves them;
 *   and every state file of the old boot dated before this boot began (a test cannot move /proc/stat's btime, so the
 *   files move instead: after a real reboot every file of the old boot is older than the boot);
 * - containerd restarted on its old root lists the 20 sandboxes as NOTREADY, as after a real reboot.
 * Required of ours: one `cnitool gc --cri-endpoint` (and one manager GC, told that no pod is valid) reclaims every
 * address, cache entry, firewall record and host link of the old boot, with no failure; a second run finds nothing;
 * then containerd removes the old sandboxes (as kubelet would) without an error, and 20 new pods (10 through the
 * manager) start with no duplicate address. On Go's plugins there is no node GC: the runtime's own removal of the
 * old sandboxes is all there is, and what it leaves is reported (the test prints it; docs/benchmarks.md has it).
 * Skips when containerd, runc or a static-linking gcc is missing; the resident pass skips it (it runs its own
 * server, in the default mode).
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { bootTimeMs } from "#sys/boot.js";
import { buildPauseImage, containerdSkipReason, linkPluginDir, PrivateContainerd } from "#testing/containerd.js";
import type { PodSandboxConfig } from "#testing/cri-client.js";
import { Cleanup, CNITOOL, GO_BIN, type Netns, OUR_BIN, runTag } from "#testing/harness.js";
import { ManagerClient } from "#testing/manager-client.js";
import { RESIDENT_PASS } from "#testing/resident-host.js";
import { killServers, serverPids } from "#testing/servers.js";

const PODS = 20;
const MANAGER_PODS = 10;
const TORN = 5;
const skip =
  containerdSkipReason() ??
  (existsSync(path.join(GO_BIN, "bridge")) ? undefined : "Debian's containernetworking-plugins (/usr/lib/cni) is not installed") ??
  (RESIDENT_PASS ? "the exec pass runs it, with a server of its own in the default mode" : undefined);
if (skip) console.log(`# skipping the reboot end to end: ${skip}`);

/** What one implementation's reboot left, before the new pods. */
interface Leftovers {
  reservations: number;
  cacheFiles: number;
  sandboxesNotRemoved: number;
  removeErrors: string[];
  hostLinks: string[];
  rulesNamingOldAddresses: number;
  records: number;
}

/** Runs `fn` on `items`, `width` at a time. */
async function inBatches<T, R>(items: readonly T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map((item, j) => fn(item, i + j)))));
  return out;
}

/** Dates `file` an hour before this boot began (see the module comment). */
function ofTheOldBoot(file: string): void {
  const when = new Date((bootTimeMs() ?? Date.now()) - 3_600_000);
  utimesSync(file, when, when);
}

const filesIn = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : []);

/** One node: a host namespace, a private containerd and (ours) a pod manager, for one implementation. */
class Node {
  readonly host: Netns;
  readonly base: string;
  readonly tag = runTag();
  readonly network: string;
  readonly managerNetwork: string;
  readonly dirs: Record<"cache" | "conf" | "ipam" | "records" | "managerCache" | "managerConf" | "bin" | "run", string>;
  ctrd: PrivateContainerd | undefined;
  manager: ManagerClient | undefined;
  /** The manager's pods' namespaces (named, under /run/netns). */
  readonly podNamespaces: Netns[] = [];
  private sandboxImage = "";
  private imageArchive = "";

  constructor(
    private readonly cleanup: Cleanup,
    readonly impl: "ours" | "go",
  ) {
    this.host = cleanup.netns(`tscni-rb-${this.tag}`);
    this.base = cleanup.dir("tscni-reboot-");
    this.network = `rb${impl[0]}${this.tag}`;
    this.managerNetwork = `rbm${this.tag}`;
    const d = (name: string) => path.join(this.base, name);
    this.dirs = {
      cache: d("var-lib-cni"),
      conf: d("net.d"),
      ipam: d("ipam"),
      records: d("records"),
      managerCache: d("manager-cache"),
      managerConf: d("manager-net.d"),
      bin: d("cni-bin"),
      run: d("run-tscni"),
    };
    for (const dir of Object.values(this.dirs)) if (dir !== this.dirs.bin) mkdirSync(dir, { recursive: true });
    linkPluginDir(this.dirs.bin, impl === "ours" ? OUR_BIN : GO_BIN);
    const conf = (name: string, bridge: string, subnet: string) =>
      JSON.stringify(
        {
          cniVersion: "1.0.0",
          cniVersions: ["1.0.0", "1.1.0"],
          name,
          plugins: [
            {
              type: "bridge",
              bridge,
              isGateway: true,
              ipMasq: true,
              ipam: { type: "host-local", dataDir: this.dirs.ipam, routes: [{ dst: "0.0.0.0/0" }], ranges: [[{ subnet }]] },
            },
            { type: "portmap", capabilities: { portMappings: true }, dataDir: path.join(this.dirs.records, "portmap") },
            { type: "firewall", dataDir: path.join(this.dirs.records, "firewall") },
          ],
        },
        null,
        2,
      );
    writeFileSync(path.join(this.dirs.conf, `10-${this.network}.conflist`), conf(this.network, `rbc${this.tag}`, "10.239.0.0/24"));
    writeFileSync(
      path.join(this.dirs.managerConf, `10-${this.managerNetwork}.conflist`),
      conf(this.managerNetwork, `rbm${this.tag}`, "10.239.1.0/24"),
    );
  }

  get socket(): string {
    return path.join(this.dirs.run, "plugins.sock");
  }

  async startContainerd(): Promise<PrivateContainerd> {
    if (!this.sandboxImage) {
      this.sandboxImage = `localhost/tscni-pause-${this.tag}:v1`;
      this.imageArchive = buildPauseImage(this.base, this.sandboxImage);
    }
    mkdirSync(path.join(this.base, "containerd"), { recursive: true });
    const c = await PrivateContainerd.start({
      base: path.join(this.base, "containerd"),
      cniBinDir: this.dirs.bin,
      cniConfDir: this.dirs.conf,
      sandboxImage: this.sandboxImage,
      imageArchive: this.imageArchive,
      hostNetns: this.host.path,
      cniCacheDir: this.dirs.cache,
      // Ours as a user gets them: the first call starts a server (here on a socket of the test's).
      env: { TSCNI_RESIDENT: "auto", TSCNI_RESIDENT_SOCKET: this.socket },
    });
    this.ctrd = c;
    this.cleanup.add(() => c.kill());
    return c;
  }

  sandboxConfig(name: string): PodSandboxConfig {
    return {
      metadata: { name, uid: `uid-${this.tag}-${name}`, namespace: `tscni-rb-${this.tag}`, attempt: 0 },
      hostname: name,
      labels: { "tscni-test": this.tag },
      linux: { cgroupParent: this.ctrd?.cgroupParent ?? "" },
    };
  }

  /** `count` sandboxes through containerd: their IDs and addresses. */
  async runSandboxes(prefix: string, count: number): Promise<Array<{ id: string; ip: string }>> {
    const cri = this.ctrd!.cri;
    const run = async (name: string) => {
      const id = await cri.runPodSandbox(this.sandboxConfig(name));
      return { id, ip: (await cri.podSandboxStatus(id)).status.network?.ip ?? "" };
    };
    // The first alone: Go 1.1.1's firewall creates its shared chains by "list, then -N", which two of its ADDs
    // racing on a flushed table (after the reboot) fail with "File exists"; the rest 5 at a time.
    const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
    const first = names.length ? [await run(names[0]!)] : [];
    return [...first, ...(await inBatches(names.slice(1), 5, run))];
  }

  async startManager(): Promise<ManagerClient> {
    const m = await ManagerClient.start(this.host, {
      confDir: this.dirs.managerConf,
      pluginDirs: [this.dirs.bin],
      cacheDir: this.dirs.managerCache,
      debounceMs: 20,
    });
    this.manager = m;
    this.cleanup.add(() => m.stop());
    await m.call("status");
    return m;
  }

  /** `count` pods through the manager, each in a network namespace of its own: their addresses. */
  async managerPods(prefix: string, count: number): Promise<string[]> {
    return inBatches(
      Array.from({ length: count }, (_, i) => i),
      5,
      async (i) => {
        const ns = this.cleanup.netns(`tscni-rb${prefix}${i}-${this.tag}`);
        this.podNamespaces.push(ns);
        const pod = { id: `${prefix}${i}${this.tag}`.padEnd(64, "0"), name: `${prefix}${i}`, namespace: "rb", netns: ns.path };
        const attached = await this.manager!.call<Array<{ result: { ips?: Array<{ address: string }> } }>>("setUpPod", pod);
        return attached[0]?.result.ips?.[0]?.address.split("/")[0] ?? "";
      },
    );
  }

  /** The addresses host-local holds for `network`. */
  reservations(network = this.network): string[] {
    return filesIn(path.join(this.dirs.ipam, network)).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f));
  }

  /** Cache files of a network (containerd's go-cni also caches its loopback network's, `cni-loopback`). */
  cacheFiles(dir = this.dirs.cache, network = this.network): string[] {
    return filesIn(path.join(dir, "results")).filter((f) => f.startsWith(`${network}-`));
  }

  /** Every cache file, of any network. */
  allCacheFiles(): string[] {
    return [this.dirs.cache, this.dirs.managerCache].flatMap((d) => filesIn(path.join(d, "results")).map((f) => path.join(d, "results", f)));
  }

  /** Files of the portmap and firewall record directories (ours keep them for reload). */
  records(): string[] {
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const e of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
        if (e.isDirectory()) walk(path.join(dir, e.name));
        else if (!e.name.startsWith(".") && !e.name.endsWith(".lock")) out.push(path.join(dir, e.name));
      }
    };
    walk(this.dirs.records);
    return out;
  }

  hostLinks(): string[] {
    return (this.host.ipJson(["link", "show"]) as Array<{ ifname: string }>)
      .map((l) => l.ifname)
      .filter((n) => n !== "lo")
      .sort();
  }

  rulesNaming(ips: readonly string[]): number {
    const text = `${this.host.exec("iptables-save", [])}\n${this.host.exec("nft", ["list", "ruleset"])}`;
    return text.split("\n").filter((l) => ips.some((ip) => new RegExp(`${ip.replaceAll(".", "\\.")}(/32|:|\\s|$)`).test(l))).length;
  }

  /**
   * The reboot (see the module comment): processes killed -9, /run wiped, namespaces gone, rules flushed, links
   * deleted, `TORN` cache files of each runtime emptied, the old boot's files dated before this boot.
   */
  reboot(): void {
    this.ctrd?.kill();
    this.ctrd = undefined;
    this.manager?.stop();
    this.manager = undefined;
    killServers(this.socket);
    rmSync(path.join(this.base, "containerd", "state"), { recursive: true, force: true });
    rmSync(this.dirs.run, { recursive: true, force: true });
    mkdirSync(this.dirs.run);
    for (const ns of this.podNamespaces.splice(0)) ns.delete();
    for (const cmd of ["iptables", "ip6tables"]) {
      for (const table of ["filter", "nat", "mangle"]) {
        this.host.exec(cmd, ["-t", table, "-F"]);
        this.host.exec(cmd, ["-t", table, "-X"]);
      }
    }
    this.host.exec("nft", ["flush", "ruleset"]);
    for (const link of this.hostLinks()) spawnSync("ip", ["-n", this.host.name, "link", "del", link]);
    for (const [dir, network] of [
      [this.dirs.cache, this.network],
      [this.dirs.managerCache, this.managerNetwork],
    ] as const) {
      for (const f of this.cacheFiles(dir, network).slice(0, TORN)) truncateSync(path.join(dir, "results", f), 0);
    }
    for (const f of this.allCacheFiles()) ofTheOldBoot(f);
    for (const network of [this.network, this.managerNetwork]) {
      for (const f of this.reservations(network)) ofTheOldBoot(path.join(this.dirs.ipam, network, f));
    }
  }

  /** What kubelet does with the old sandboxes after a reboot: stop and remove each; those it could not remove. */
  async removeOldSandboxes(ids: readonly string[]): Promise<{ notRemoved: number; errors: string[] }> {
    const cri = this.ctrd!.cri;
    const errors: string[] = [];
    await inBatches(ids, 5, async (id) => {
      try {
        await cri.stopPodSandbox(id);
        await cri.removePodSandbox(id);
      } catch (e) {
        errors.push((e as Error).message);
      }
    });
    const listed = new Set((await cri.listPodSandbox({ "tscni-test": this.tag })).map((s) => s.id));
    return { notRemoved: ids.filter((id) => listed.has(id)).length, errors };
  }

  leftovers(oldIps: readonly string[], removal: { notRemoved: number; errors: string[] }): Leftovers {
    return {
      reservations: this.reservations().filter((ip) => oldIps.includes(ip)).length,
      cacheFiles: this.allCacheFiles().length,
      sandboxesNotRemoved: removal.notRemoved,
      removeErrors: [...new Set(removal.errors.map((e) => e.replace(/[0-9a-f]{64}/g, "<id>").slice(0, 300)))],
      hostLinks: this.hostLinks(),
      rulesNamingOldAddresses: this.rulesNaming(oldIps),
      records: this.records().length,
    };
  }
}

describe("a node reboot: one GC pass reclaims the old boot (ours), beside Go's plugins", { skip }, () => {
  const cleanup = new Cleanup();
  const nodes: Node[] = [];

  before(() => {
    for (const impl of ["ours", "go"] as const) nodes.push(new Node(cleanup, impl));
  });

  after(async () => {
    for (const n of nodes) {
      await n.ctrd?.stop();
      n.manager?.stop();
      killServers(n.socket);
    }
    cleanup.run();
  });

  test("ours: 20 sandboxes and 10 manager pods, a reboot, one GC, then 20 + 10 new pods with no duplicate", async (t) => {
    const n = nodes[0]!;
    await n.startContainerd();
    const old = await n.runSandboxes("old", PODS);
    assert.equal(new Set(old.map((s) => s.ip)).size, PODS, `distinct addresses: ${old.map((s) => s.ip)}`);
    assert.ok(serverPids(n.socket).length > 0, "the first call started a server (the default mode)");
    await n.startManager();
    const oldManagerIps = await n.managerPods("o", MANAGER_PODS);
    assert.equal(n.cacheFiles().length, PODS);
    assert.equal(n.cacheFiles(n.dirs.managerCache, n.managerNetwork).length, MANAGER_PODS);
    assert.ok(n.records().length > 0, "firewall records of the running pods");

    n.reboot();
    assert.equal(serverPids(n.socket).length, 0);
    await n.startContainerd();
    const listed = await n.ctrd!.cri.listPodSandbox({ "tscni-test": n.tag });
    assert.deepEqual(
      listed.map((s) => s.state),
      Array(PODS).fill("SANDBOX_NOTREADY"),
      "containerd lists the old sandboxes, not ready",
    );

    const gc = () =>
      n.host.run(CNITOOL, ["gc", "--cri-endpoint", `unix://${n.ctrd!.socket}`, "--cache-dir", n.dirs.cache], {
        env: { ...process.env, NETCONFPATH: n.dirs.conf, CNI_PATH: n.dirs.bin },
      });
    const t0 = Date.now();
    const first = await gc();
    const gcMs = Date.now() - t0;
    assert.equal(first.code, 0, first.stdout + first.stderr);
    // Each sandbox's attachment to the network and to go-cni's own loopback network.
    assert.equal(first.stdout.split("\n").filter((l) => l.startsWith("removed: ")).length, 2 * PODS, first.stdout);
    assert.doesNotMatch(first.stdout, /^failed/m, first.stdout);
    assert.deepEqual(n.reservations(), [], "every address of the old boot is free");
    assert.deepEqual(
      n.allCacheFiles().filter((f) => f.startsWith(n.dirs.cache)),
      [],
      "no cache entry of the old boot, torn or whole, of any network",
    );
    const second = await gc();
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.doesNotMatch(second.stdout, /^(removed|failed)/m, "a second run finds nothing");

    await n.startManager();
    const managerGc = await n.manager!.call<{ removed: unknown[]; errors: string[] }>("gc", []);
    assert.deepEqual(managerGc.errors, []);
    assert.equal(managerGc.removed.length, MANAGER_PODS);
    assert.deepEqual(n.reservations(n.managerNetwork), [], "the manager's addresses of the old boot are free");
    assert.deepEqual(n.allCacheFiles(), []);

    const removal = await n.removeOldSandboxes(old.map((s) => s.id));
    const left = n.leftovers([...old.map((s) => s.ip), ...oldManagerIps], removal);
    t.diagnostic(`ours after one GC (${gcMs} ms) and the runtime's removal: ${JSON.stringify(left)}`);
    assert.deepEqual(left, {
      reservations: 0,
      cacheFiles: 0,
      sandboxesNotRemoved: 0,
      removeErrors: [],
      hostLinks: [],
      rulesNamingOldAddresses: 0,
      records: 0,
    });

    const fresh = await n.runSandboxes("new", PODS);
    const freshManager = await n.managerPods("n", MANAGER_PODS);
    const ips = [...fresh.map((s) => s.ip), ...freshManager];
    assert.ok(
      ips.every((ip) => /^10\.239\.[01]\.\d+$/.test(ip)),
      ips.join(" "),
    );
    assert.equal(new Set(ips).size, PODS + MANAGER_PODS, `no duplicate: ${ips.join(" ")}`);
    assert.equal(n.reservations().length, PODS);
    assert.equal(n.reservations(n.managerNetwork).length, MANAGER_PODS);
  });

  test("Go's plugins: the same reboot, the runtime's removal only; what it leaves is reported", async (t) => {
    const n = nodes[1]!;
    await n.startContainerd();
    const old = await n.runSandboxes("old", PODS);
    assert.equal(new Set(old.map((s) => s.ip)).size, PODS);
    n.reboot();
    await n.startContainerd();
    const removal = await n.removeOldSandboxes(old.map((s) => s.id));
    const left = n.leftovers(
      old.map((s) => s.ip),
      removal,
    );
    t.diagnostic(`Go's plugins after the runtime's removal: ${JSON.stringify(left)}`);
    const fresh = await n.runSandboxes("new", PODS);
    assert.equal(new Set(fresh.map((s) => s.ip)).size, PODS, "no duplicate among the new pods");
    t.diagnostic(`Go's new pods: ${fresh.length}, host-local holds ${n.reservations().length} addresses (${PODS} live)`);
  });
});
